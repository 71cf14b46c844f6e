"""Rendering of :class:`gradcli.compute.descend.DescentReport`: the race table, trajectories, JSON, CSV, the plot."""

from __future__ import annotations

import math
import sys

from rich.markup import escape
from rich.text import Text

from gradcli.compute.descend import DescentReport, DescentRun
from gradcli.render.common import number, stdout_console, to_json
from gradcli.render.layout import (
    FORMULA,
    SECONDARY,
    Column,
    FittedTable,
    print_line,
    print_table,
)

_STATUS_STYLE = {"converged": "green", "max_steps": "yellow", "oscillating": "yellow", "diverged": "red",
                 "unbounded": "red"}
# One marker per line so that the plot stays readable without colour (a pipe, a log file).
_MARKERS = ["•", "+", "x", "o", "*", "#", "@", "%", "&", "$", "=", "~", "^"]


def descend_json(report: DescentReport) -> str:
    return to_json(report.to_dict())


def _stationary_cell(run: DescentRun) -> str:
    s = run.nearest_stationary
    if s is None:
        return "-"
    where = ", ".join(f"{k}={number(v)}" for k, v in s.point.items())
    distance = "" if s.distance is None else f" (distance {s.distance:.2g})"
    return f"{s.kind or 'unclassified'} at {where}{distance}"


def descend_table(report: DescentReport) -> None:
    console = stdout_console()
    start = ", ".join(f"{k} = {number(v)}" for k, v in report.start.items())
    goal = "maximise" if report.maximize else "minimise"
    print_line(console, f"[bold]{goal}[/bold]  {escape(report.expression)}    [bold]from[/bold]  {start}    "
                        f"[bold]dtype[/bold]  {report.dtype}")
    rates = {run.learning_rate for run in report.runs}
    lr = f"{report.learning_rate:g}" if rates <= {report.learning_rate} else "per optimizer"
    # each run's time is its own; TensorFlow's one-time start is shown once, here
    print_line(console, f"[bold]lr[/bold]  {lr}    [bold]steps[/bold]  at most "
                        f"{report.max_steps}    [bold]tol[/bold]  |grad| < {report.tol:g}    "
                        f"[bold]setup[/bold]  {report.setup_seconds:.2f} s")
    print_table(console, _race_table(report))
    if report.every is not None:
        for run in report.runs:
            traj = FittedTable([Column("step"), *[Column(v) for v in report.variables], Column("f"),
                                Column("|grad f|")], title=f"{run.optimizer}: every {report.every} steps")
            for h in run.history:
                traj.add_row(str(h.step), *[number(h.point.get(v)) for v in report.variables], number(h.value),
                             _short(h.gradient_norm))
            print_table(console, traj)


def _race_table(report: DescentReport) -> FittedTable:
    """A row per optimizer: how it ended, where, and (when SymPy found them) the nearest stationary point."""
    # Narrow terminals: the status under the optimizer, |grad f| under f, the time under the steps.
    columns = [Column("optimizer", "left", "bold"), Column("status", "left", role=SECONDARY, under="optimizer"),
               Column("steps"), *[Column(v) for v in report.variables], Column("f"),
               Column("|grad f|", role=SECONDARY, under="f")]
    if report.stationary_points is not None:
        columns.append(Column("nearest stationary point (SymPy)", "left", role=FORMULA))
    columns.append(Column("time", role=SECONDARY, under="steps"))
    table = FittedTable(columns, title="gradient descent")
    per_optimizer_rates = len({run.learning_rate for run in report.runs}) > 1  # -o sgd:0.1,adam:0.01
    for run in report.runs:
        name = f"{run.optimizer} lr={run.learning_rate:g}" if per_optimizer_rates else run.optimizer
        row = [name, Text(run.status, style=_STATUS_STYLE.get(run.status, "")), str(run.steps),
               *[number(run.final.get(v)) for v in report.variables], number(run.value), _short(run.gradient_norm)]
        if report.stationary_points is not None:
            row.append(_stationary_cell(run))
        row.append(f"{run.seconds:.2f} s")
        table.add_row(*row)
    return table


def _short(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "undefined"
    return f"{x:.3g}"


def descend_plot(report: DescentReport, *, file=None) -> None:
    """f against the step, one line per optimizer, drawn with plotext at the terminal's width; the title
    above it and the legend under it, so no step is hidden."""
    import plotext as plt

    from gradcli.render import terminal_plot as tp

    file = file or sys.stdout
    series = [[(h.step, h.value) for h in run.history if h.value is not None and math.isfinite(h.value)]
              for run in report.runs]
    values = [v for points in series for _, v in points]
    if not values:
        print("gradcli: note: nothing to plot (no finite values recorded)", file=sys.stderr)
        return
    # Descent shrinks f by orders of magnitude: on a linear axis everything after the first steps is flat.
    log_scale = min(values) > 0 and max(values) / min(values) > 1e3
    fig = plt.figure
    fig.clear()
    markers = tp.markers(file, _MARKERS)
    legend = []
    for i, (run, points) in enumerate(zip(report.runs, series)):
        if not points:
            continue
        marker = markers[i % len(markers)]
        ys = [math.log10(v) if log_scale else v for _, v in points]
        signal = fig.signal([p[0] for p in points], ys, marker=marker)
        signal.lines()
        fig.draw(signal)
        legend.append((marker, f"{run.optimizer} ({run.status})"))
    width = tp.plot_width(file)
    ticks = tp.integer_ticks(max(step for points in series for step, _ in points), width)
    fig.ruler("x").ticks(ticks, [str(t) for t in ticks])
    fig.label("step", axis="x")
    if log_scale:
        fig.label("log10 f", axis="y")
    tp.print_title(f"f = {report.expression}", file=file, width=width)
    tp.print_figure(fig, file=file, width=width, height=20)
    tp.print_legend(legend, file=file, width=width)
