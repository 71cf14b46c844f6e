"""One start (``--from``) as a person or a script reads it: the core runs it as a batch of one, and this
writer turns the run's header, that start's record and the run's notes into one document.

``-f json`` prints the document: the header's run-level keys, then the record's keys exactly as
``--points`` writes them (``start``, ``runs``, ``warnings``), then ``every`` and the ``trajectory`` (with
``--every`` or ``--plot``), ``setup_seconds`` and the notes. The table is a view of the same document (the race, a row per
optimizer, and the trajectories); ``-f latex`` its tabulars (gradcli.render.descend_latex); ``-f csv`` is the
rows ``--points`` writes (a row per run) or, with ``--every``, the trajectory; ``-f jsonl`` the record.
``--plot`` draws f by step from the kept trajectory (``--plot-file``: gradcli.render.descend_pictures).
"""

from __future__ import annotations

import math
import sys

from rich.markup import escape
from rich.text import Text

from gradcli.render.common import number, print_diagnostics, stdout_console, to_csv, to_json
from gradcli.library.run import point_document
from gradcli.render.layout import FORMULA, SECONDARY, Column, FittedTable, print_line, print_table

_STATUS_STYLE = {"converged": "green", "max_steps": "yellow", "oscillating": "yellow", "diverged": "red",
                 "unbounded": "red"}
# One marker per line so that the plot stays readable without colour (a pipe, a log file).
_MARKERS = ["•", "+", "x", "o", "*", "#", "@", "%", "&", "$", "=", "~", "^"]


def start_document(header: dict, record: dict, summary: dict, notes: list[str], every: int | None) -> dict:
    """The one-start ``-f json`` document: run-level keys, the start's record, ``every`` (--every as given)
    and the trajectory when one was kept (--every, or --plot's spacing), TensorFlow's one-time setup, the
    notes."""
    run = {"every": every}
    if summary.get("trajectory"):  # kept for --every or --plot
        run["trajectory"] = {name: [row.to_dict() for row in rows] for name, rows in summary["trajectory"].items()}
    run["setup_seconds"] = summary.get("setup_seconds", 0.0)
    document = point_document({**header, **record}, run, notes)
    return document


class StartSink:
    """The writer of one start: ``output`` json (the document), table (its view), latex (its tabulars) or
    csv with ``--every`` (the trajectory); ``plot``: a file to draw f by step on, or None. jsonl and csv without --every are the batch
    writers' (the record, the rows --points writes)."""

    def __init__(self, output: str, *, every: int | None, plot=None, inner=None):
        self.output = output
        self.every = every
        self.plot = plot
        self.inner = inner  # the batch writer (jsonl, csv), or None
        self.header: dict = {}
        self.records: list[dict] = []

    def start(self, header: dict) -> None:
        self.header = header
        if self.inner is not None:
            self.inner.start(header)

    def write(self, batch) -> None:
        from gradcli.render.sinks import records_of

        self.records += records_of(batch)
        if self.inner is not None:
            self.inner.write(batch)

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        (record,) = self.records  # one start, one record
        document = self.document = start_document(self.header, record, summary, notes, self.every)
        if self.output == "json":
            print(descend_json(document))
        elif self.output == "table":
            descend_table(document)
        elif self.output == "latex":
            from gradcli.render.descend_latex import descend_latex

            print(descend_latex(document), end="")
        elif self.output == "csv" and self.inner is None:
            print(trajectory_csv(document), end="")
        sys.stdout.flush()  # a write failure shows now, before the plot, the diagnostics and the exit code
        if self.plot is not None:
            descend_plot(document, file=self.plot)
        print_diagnostics(record["warnings"], notes)


def start_sink(output: str, plan, *, plot=None) -> StartSink:
    """The one-start writer for ``output``; jsonl, and csv without --every, write the record and the rows
    --points writes (the batch writers)."""
    inner = None
    if output == "jsonl" or (output == "csv" and plan.every is None):
        from gradcli.render.descend_batch import descend_sink

        inner = descend_sink(output, variables=plan.names)
    return StartSink(output, every=plan.every, plot=plot, inner=inner)


def descend_json(document: dict) -> str:
    return to_json(document)


def descend_table(document: dict) -> None:
    """The race: a line of settings, a row per optimizer, then each run's trajectory when --every kept one."""
    console = stdout_console()
    start = ", ".join(f"{k} = {number(v)}" for k, v in document["start"].items())
    goal = "maximise" if document["maximize"] else "minimise"
    print_line(console, f"[bold]{goal}[/bold]  {escape(document['expression'])}    [bold]from[/bold]  {start}    "
                        f"[bold]dtype[/bold]  {document['dtype']}")
    runs = document["runs"]
    rates = {run["learning_rate"] for run in runs}
    lr = f"{document['learning_rate']:g}" if rates <= {document["learning_rate"]} else "per optimizer"
    # each run's time is its own; TensorFlow's one-time start is shown once, here
    print_line(console, f"[bold]lr[/bold]  {lr}    [bold]steps[/bold]  at most "
                        f"{document['max_steps']}    [bold]tol[/bold]  |grad| < {document['tol']:g}    "
                        f"[bold]setup[/bold]  {document['setup_seconds']:.2f} s")
    print_table(console, _race_table(document))
    names = document["variables"]
    kept = document.get("trajectory") if document["every"] is not None else None
    for name, rows in (kept or {}).items():
        traj = FittedTable([Column("step"), *[Column(v) for v in names], Column("f"), Column("|grad f|")],
                           title=f"{name}: every {document['every']} steps")
        for h in rows:
            traj.add_row(str(h["step"]), *[number(h["point"].get(v)) for v in names], number(h["value"]),
                         _short(h["gradient_norm"]))
        print_table(console, traj)


def _stationary_cell(run: dict) -> str:
    s = run.get("nearest_stationary_point")
    if s is None:
        return "-"
    where = ", ".join(f"{k}={number(v)}" for k, v in s["point"].items())
    distance = "" if s.get("distance") is None else f" (distance {s['distance']:.2g})"
    return f"{s.get('kind') or 'unclassified'} at {where}{distance}"


def _basin_cell(run: dict) -> str:
    b = run.get("basin")
    if b is None:
        return "- (not converged)" if run["status"] != "converged" else "-"
    return f"{b['index']}: {b.get('kind') or 'unclassified'}"


def _race_table(document: dict) -> FittedTable:
    """A row per optimizer: how it ended, where, and (when SymPy found them) the nearest stationary point."""
    names = document["variables"]
    # Narrow terminals: the status under the optimizer, |grad f| under f, the time under the steps.
    columns = [Column("optimizer", "left", "bold"), Column("status", "left", role=SECONDARY, under="optimizer"),
               Column("steps"), *[Column(v) for v in names], Column("f"),
               Column("|grad f|", role=SECONDARY, under="f")]
    sympy = document["stationary_points"] is not None
    if sympy:
        columns.append(Column("nearest stationary point (SymPy)", "left", role=FORMULA))
    else:  # the end point, grouped as many starts' are (a start alone founds its own basin)
        columns.append(Column("basin (end points)", "left", role=FORMULA))
    columns.append(Column("time", role=SECONDARY, under="steps"))
    where = "stationary point" if sympy else "basin"
    table = FittedTable(columns, title=f"gradient descent (a run ends at a {where} within "
                                       f"{document['stationary_tolerance']:g} x max(1, |p|) of it)")
    runs = document["runs"]
    per_optimizer_rates = len({run["learning_rate"] for run in runs}) > 1  # -o sgd:0.1,adam:0.01
    for run in runs:
        name = f"{run['optimizer']} lr={run['learning_rate']:g}" if per_optimizer_rates else run["optimizer"]
        row = [name, Text(run["status"], style=_STATUS_STYLE.get(run["status"], "")), str(run["steps"]),
               *[number(run["final"].get(v)) for v in names], number(run["value"]), _short(run["gradient_norm"])]
        row.append(_stationary_cell(run) if sympy else _basin_cell(run))
        row.append(f"{run['seconds']:.2f} s")
        table.add_row(*row)
    return table


def _short(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "undefined"
    return f"{x:.3g}"


def trajectory_csv(document: dict) -> str:
    """``-f csv --every K``: a row per kept step per run, ``status`` on each run's last row."""
    names = document["variables"]
    header = ["optimizer", "learning_rate", "step", *names, "value", "gradient_norm", "status"]
    rows = []
    for run in document["runs"]:
        history = document["trajectory"].get(run["optimizer"], [])
        for i, h in enumerate(history):
            rows.append([run["optimizer"], run["learning_rate"], h["step"], *[h["point"].get(v) for v in names],
                         h["value"], h["gradient_norm"], run["status"] if i == len(history) - 1 else ""])
    return to_csv(header, rows)


def decade_ticks(low: float, high: float, height: int) -> list[int]:
    """Whole powers of ten from ``low`` to ``high`` (log10 values), about one per 4 rows, at round multiples
    (1e-40, 1e-20, 1e0, not 1e-31)."""
    lo, hi = math.floor(low), math.ceil(high)
    raw = (hi - lo) / max(2, height // 4)
    every = next(m * 10 ** e for e in range(0, 6) for m in (1, 2, 5) if m * 10 ** e >= raw)
    return [t for t in range(lo, hi + 1) if t % every == 0] or [lo, hi]


def descend_plot(document: dict, *, file=None) -> None:
    """f against the step, one line per optimizer, drawn with plotext at the terminal's width; the title
    above it and the legend under it, so no step is hidden. f spanning more than 3 decades is drawn on a
    log axis labelled in powers of ten (1e-4), as ``steps`` labels its axes."""
    import plotext as plt

    from gradcli.render import terminal_plot as tp

    file = file or sys.stdout
    runs = document["runs"]
    trajectories = document.get("trajectory") or {}
    series = [[(h["step"], h["value"]) for h in trajectories.get(run["optimizer"], [])
               if h["value"] is not None and math.isfinite(h["value"])] for run in runs]
    values = [v for points in series for _, v in points]
    if not values:
        print("gradcli: note: nothing to plot (no finite values recorded)", file=sys.stderr)
        return
    # Descent shrinks f by orders of magnitude: on a linear axis everything after the first steps is flat.
    from gradcli.render.descend_pictures import log_scale as spans_decades

    log_scale = spans_decades(values)
    fig = plt.figure
    fig.clear()
    markers = tp.markers(file, _MARKERS)
    legend = []
    for i, (run, points) in enumerate(zip(runs, series)):
        if not points:
            continue
        marker = markers[i % len(markers)]
        ys = [math.log10(v) if log_scale else v for _, v in points]
        signal = fig.signal([p[0] for p in points], ys, marker=marker)
        signal.lines()
        fig.draw(signal)
        legend.append((marker, f"{run['optimizer']} ({run['status']})"))
    width = tp.plot_width(file)
    height = 20
    ticks = tp.integer_ticks(max(step for points in series for step, _ in points), width)
    fig.ruler("x").ticks(ticks, [str(t) for t in ticks])
    fig.label("step", axis="x")
    if log_scale:
        logs = [math.log10(v) for v in values]
        decades = decade_ticks(min(logs), max(logs), height)
        fig.ruler("y").ticks(decades, [f"1e{t}" for t in decades])
        fig.label("f (log scale)", axis="y")
    tp.print_title(f"f = {document['expression']}", file=file, width=width)
    tp.print_figure(fig, file=file, width=width, height=height)
    tp.print_legend(legend, file=file, width=width)
