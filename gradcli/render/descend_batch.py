"""Writers for ``descend --points/--grid`` (records from :mod:`gradcli.compute.descend.core`): the batch
writers of :mod:`gradcli.render.batch`, with descend's rows and tables.

- ``jsonl``: a record per start (its runs, one per optimizer), a line each, flushed as each batch of starts
  finishes;
- ``csv``: one header, a row per start and optimizer (the start's coordinates under the variables' names,
  so the file can be read back with --points; the end point as ``final_<name>``);
- ``json``: one document, written as it goes: the header's keys, ``starts`` (the records), then
  ``summary``, ``basins``, ``warnings`` and ``notes``;
- ``table``: per optimizer, where the starts ended (the basins: a row per stationary point reached, or
  per basin of end points when SymPy gave no stationary points, then elsewhere and diverged), and a
  compact table of the first :data:`TABLE_STARTS` starts.

``--plot`` (two variables): the starts in the plane, one marker per basin, a legend naming the
stationary points (or the basins' representative end points). ``--plot-file`` draws the same sample into
a picture (gradcli.render.descend_pictures; one variable: each start against its end point). The summary
line, warnings and notes go to stderr. Memory: one batch of records, the first TABLE_STARTS starts, and at
most PLOT_STARTS sampled starts per optimizer.
"""

from __future__ import annotations

import random
import sys
from typing import Any

from gradcli.errors import printable
from gradcli.render.basins import basin_places, starts_per_key, stationary_label
from gradcli.render.common import number
from gradcli.render.sinks import TableSink, print_batch_diagnostics

# Starts the table shows (all their optimizers' records).
TABLE_STARTS = 20
# Starts a plot draws per optimizer at most (a uniform sample of all of them beyond that).
PLOT_STARTS = 5000
_STATUS_STYLE = {"converged": "green", "max_steps": "yellow", "oscillating": "yellow", "diverged": "red",
                 "unbounded": "red"}
# One marker per basin, so that the plot stays readable without colour.
_MARKERS = ["o", "x", "+", "*", "#", "@", "%", "&", "$", "=", "~", "^", "•"]
_ELSEWHERE_MARKER = "?"
_DIVERGED_MARKER = "!"


def _ended_at(record: dict) -> str:
    s = record.get("stationary_point") or record.get("basin")
    if s is not None:
        return stationary_label(s)
    return "-"


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------
def csv_rows(header: dict, record: dict) -> list[list[tuple[str, Any]]]:
    """A row per run (optimizer) of a start: its coordinates, the run, where it ended. One start (--from)
    and many write the same rows."""
    names = header["variables"]
    rows = []
    for run in record["runs"]:
        row: list[tuple[str, Any]] = [(k, v) for k, v in record.get("fields", {}).items()]
        row += [(v, record["start"][v]) for v in names]
        if "line" in record:  # files: the line each start came from (a grid has none)
            row.append(("line", record["line"]))
        row += [("optimizer", run["optimizer"]), ("learning_rate", run.get("learning_rate")),
                ("status", run["status"]), ("steps", run["steps"])]
        row += [(f"final_{v}", run["final"].get(v)) for v in names]
        row += [("value", run["value"]), ("gradient_norm", run["gradient_norm"]),
                ("end_point_kind", run.get("end_point_kind"))]
        s = run.get("stationary_point") or {}
        row += [("stationary_kind", s.get("kind"))]
        row += [(f"stationary_{v}", (s.get("point") or {}).get(v)) for v in names]
        row += [("stationary_value", s.get("value")), ("stationary_distance", s.get("distance"))]
        b = run.get("basin") or {}
        row += [("basin", b.get("index")), ("basin_kind", b.get("kind")), ("message", run["message"]),
                ("seconds", round(run["seconds"], 3) if run.get("seconds") is not None else None)]
        rows.append(row)
    return rows


def summary_and_basins(summary: dict) -> dict:
    """descend's JSON tail: the counts under ``summary``, the basins beside them."""
    summary = dict(summary)
    basins = summary.pop("basins")
    return {"summary": summary, "basins": basins}


# ---------------------------------------------------------------------------------------------
# Table: the basins per optimizer, then the first starts
# ---------------------------------------------------------------------------------------------
class BasinsTableSink(TableSink):
    """Per optimizer where the starts ended (the basins), then the batch table of the first TABLE_STARTS
    starts (a row per start and optimizer)."""

    def __init__(self):
        super().__init__(_start_rows, lambda header: f"the first {min(self.starts, TABLE_STARTS)} starts",
                         _start_columns)
        self.starts = 0

    def write(self, batch) -> None:
        from gradcli.render.sinks import records_of

        for r in records_of(batch):
            self.starts += 1
            if self.starts <= TABLE_STARTS:
                self.kept += self.row(self.header, r)
        self.count = self.starts

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        self.draw(summary)
        if self.starts > TABLE_STARTS:
            notes = [f"the table shows the first {TABLE_STARTS} of {self.starts} starts: use --format jsonl or csv "
                     "for every start"] + notes
        print_batch_diagnostics(summary_text, warnings, notes)

    def draw(self, summary: dict) -> None:
        """The settings, the basins per optimizer and the first starts, on stdout's console."""
        from rich.markup import escape

        from gradcli.render.common import stdout_console
        from gradcli.render.layout import print_line, print_table

        console = stdout_console()
        h = self.header
        goal = "maximise" if h["maximize"] else "minimise"
        print_line(console, f"[bold]{goal}[/bold]  {escape(h['expression'])}    [bold]from[/bold]  {summary['starts']} "
                            f"starts    [bold]dtype[/bold]  {h['dtype']}")
        print_line(console, f"[bold]lr[/bold]  {h['learning_rate']:g}    [bold]steps[/bold]  at most "
                            f"{h['max_steps']}    [bold]tol[/bold]  |grad| < {h['tol']:g}")
        for name, basin in summary["basins"].items():
            print_table(console, _basins_table(name, basin, h["variables"], h.get("basins_from") == "end points"))
        if self.kept:
            print_table(console, self.table())


def _basins_table(name: str, basin: dict, names: list[str], from_end_points: bool):
    """Where one optimizer's starts ended: a row per stationary point or basin, then elsewhere, diverged."""
    from rich.text import Text

    from gradcli.render.layout import Column, FittedTable

    how = " (basins of the end points, not SymPy's stationary points)" if from_end_points else ""
    table = FittedTable([Column("ended at", "left", "bold"), *[Column(v) for v in names], Column("f"),
                         Column("starts")], title=f"{name}: where the {basin['starts']} starts ended{how}")
    for s in basin["stationary_points"] + basin.get("basins", []):
        table.add_row(s.get("kind") or "stationary point", *[number(s["point"].get(v)) for v in names],
                      number(s.get("value")), str(s["starts"]))
    if basin["elsewhere"]:
        elsewhere = "elsewhere (not converged)" if from_end_points else "elsewhere"
        table.add_row(elsewhere, *["" for _ in names], "", str(basin["elsewhere"]))
    if basin["diverged"]:
        table.add_row(Text("diverged or unbounded", style="red"), *["" for _ in names], "", str(basin["diverged"]))
    return table


def _start_columns(names: list[str]) -> list:
    """The first starts' columns: the file's fields left-aligned, the status under the optimizer (or the
    steps), where each run ended as a formula."""
    from gradcli.render.layout import FORMULA, SECONDARY, Column

    fields = next((i for i, name in enumerate(names) if name.endswith(" (start)")), 0)
    several = "optimizer" in names
    columns = [Column(name, "left") for name in names[:fields]]
    for name in names[fields:]:
        if name == "optimizer":
            columns.append(Column(name, "left", "bold"))
        elif name == "status":
            columns.append(Column(name, "left", role=SECONDARY, under="optimizer" if several else "steps"))
        elif name == "ended at":
            columns.append(Column(name, "left", role=FORMULA))
        else:
            columns.append(Column(name))
    return columns


def _start_rows(header: dict, record: dict) -> list[list[tuple[str, Any]]]:
    """The table's rows of one start: a row per optimizer (cells: the file's text escaped)."""
    from rich.text import Text

    names = header["variables"]
    several = len(header["optimizers"]) > 1
    rows = []
    for run in record["runs"]:
        row = [(printable(str(k)), printable(str(v))) for k, v in record.get("fields", {}).items()]
        row += [(f"{v} (start)", number(record["start"][v])) for v in names]
        if several:
            row.append(("optimizer", run["optimizer"]))
        row += [("status", Text(run["status"], style=_STATUS_STYLE.get(run["status"], ""))),
                ("steps", str(run["steps"]))]
        row += [(v, number(run["final"].get(v))) for v in names]
        row += [("f", number(run["value"])), ("ended at", _ended_at(run))]
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# --plot: the starts in the plane, marked by where they ended
# ---------------------------------------------------------------------------------------------
class PlotSink:
    """Passes records on to another sink and keeps a uniform sample of the starts for the plot (``file``:
    where --plot draws it; None for --plot-file alone) and the picture (:meth:`picture_panels`). A sample is
    (x, y, basin key): the start in the plane with two variables; with one, the start and where it ended."""

    def __init__(self, inner, variables: list[str], *, file=None, terminal: bool = True):
        self.inner = inner
        self.variables = variables
        self.file = (file or sys.stdout) if terminal else None
        self.samples: dict[str, list[tuple[float, float | None, str]]] = {}
        self.seen: dict[str, int] = {}
        self.random = random.Random(0)
        self.summary: dict = {}

    def start(self, header: dict) -> None:
        self.header = header
        self.inner.start(header)

    def write(self, batch) -> None:
        from gradcli.compute.descend.records import basin_key
        from gradcli.render.sinks import records_of

        self.inner.write(batch)
        names = self.variables
        for record in records_of(batch):
            for r in record["runs"]:
                if len(names) == 2:
                    x, y = record["start"][names[0]], record["start"][names[1]]
                else:  # one variable: the start, and where it ended (None: no finite end point)
                    x, y = record["start"][names[0]], _finite(r["final"].get(names[0]))
                self._sample(r["optimizer"], (x, y, basin_key(r)))

    def _sample(self, name: str, item: tuple[float, float, str]) -> None:
        kept = self.samples.setdefault(name, [])
        seen = self.seen[name] = self.seen.get(name, 0) + 1
        if len(kept) < PLOT_STARTS:  # reservoir sampling: every start equally likely to be drawn
            kept.append(item)
        else:
            j = self.random.randrange(seen)
            if j < PLOT_STARTS:
                kept[j] = item

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        self.summary = summary
        self.inner.finish(summary, summary_text, warnings, notes)
        if self.file is not None:
            plot_starts(self.header, summary, self.samples, self.seen, file=self.file)

    def picture_panels(self) -> list:
        """The sample as --plot-file draws it (after :meth:`finish`)."""
        from gradcli.render.descend_pictures import basin_panels

        return basin_panels(self.header, self.summary, self.samples, self.seen)


def _finite(v):
    import math

    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def plot_starts(header: dict, summary: dict, samples: dict, seen: dict, *, file) -> None:
    """Per optimizer, the starts in the plane marked by where they ended: the title above the plot and the
    legend under it, at the terminal's width, in its encoding and (only on a terminal) in colour."""
    import plotext as plt

    from gradcli.render import terminal_plot as tp

    a, b = header["variables"]
    if not any(samples.values()):
        print("gradcli: note: nothing to plot (no starts)", file=sys.stderr)
        return
    symbols = tp.markers(file, _MARKERS)
    markers, labels = _basin_markers(header, summary, symbols)
    width = tp.plot_width(file)
    for name, kept in samples.items():
        fig = plt.figure
        fig.clear()
        by_key: dict[str, list[tuple[float, float]]] = {}
        for x, y, key in kept:
            by_key.setdefault(key, []).append((x, y))
        for key, pts in by_key.items():
            marker = markers.setdefault(key, symbols[len(markers) % len(symbols)])
            fig.draw(fig.signal([p[0] for p in pts], [p[1] for p in pts], marker=marker))
        sampled = f", {len(kept)} of {seen[name]} drawn" if seen[name] > len(kept) else ""
        fig.label(a, axis="x")
        fig.label(b, axis="y")
        tp.print_title(f"{name}: the starts, marked by where they ended{sampled}", file=file, width=width)
        tp.print_figure(fig, file=file, width=width, height=24)
        reached = starts_per_key(summary["basins"][name])
        tp.print_legend([(marker, f"{labels.get(key, key)}: {reached[key]} start{'s' if reached[key] != 1 else ''}")
                         for key, marker in markers.items() if reached.get(key)], file=file, width=width)


def _basin_markers(header: dict, summary: dict, symbols: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """One marker per basin key, the same in every optimizer's plot, and a label for each."""
    markers: dict[str, str] = {}
    labels: dict[str, str] = {}
    fixed = {"elsewhere": _ELSEWHERE_MARKER, "diverged": _DIVERGED_MARKER}
    for key, _, label in basin_places(header, summary):
        markers[key] = fixed.get(key) or symbols[len(markers) % len(symbols)]
        labels[key] = label
    return markers, labels


def descend_sink(output: str, *, variables: list[str], plot: bool = False, picture: bool = False):
    """The writer of many starts for ``output`` (table, json, jsonl, csv), wrapped for --plot and
    --plot-file (``picture``: keep the sample for :meth:`PlotSink.picture_panels`) when asked."""
    from gradcli.render.sinks import CsvSink, JsonlSink, JsonSink

    if output == "jsonl":
        sink = JsonlSink()
    elif output == "json":
        sink = JsonSink(list_key="starts", split_summary=summary_and_basins)
    elif output == "csv":
        sink = CsvSink(csv_rows)
    else:
        sink = BasinsTableSink()
    if plot or picture:
        # The plot is data the user asked for, but JSON, JSON Lines and CSV on stdout must stay parseable.
        sink = PlotSink(sink, variables, file=sys.stdout if output == "table" else sys.stderr, terminal=plot)
    return sink
