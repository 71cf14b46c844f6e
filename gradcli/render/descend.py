"""Rendering of :class:`gradcli.compute.descend.DescentReport`: the race table, trajectories, JSON, CSV, the plot."""

from __future__ import annotations

import math
import sys

from gradcli.compute.descend import DescentReport, DescentRun
from gradcli.render.common import number, stdout_console, to_csv, to_json

_STATUS_STYLE = {"converged": "green", "max_steps": "yellow", "oscillating": "yellow", "diverged": "red",
                 "unbounded": "red"}
# One marker per line so that the plot stays readable without colour (a pipe, a log file).
_MARKERS = ["•", "+", "x", "o", "*", "#", "@", "%", "&", "$", "=", "~", "^"]


def descend_json(report: DescentReport) -> str:
    return to_json(report.to_dict())


def descend_csv(report: DescentReport) -> str:
    """The trajectory: one row per recorded step per optimizer (every step unless --every says otherwise)."""
    header = ["optimizer", "step", *report.variables, "value", "gradient_norm", "status"]
    rows = []
    for run in report.runs:
        for h in run.history:
            rows.append([run.optimizer, h.step, *[h.point.get(v) for v in report.variables], h.value,
                         h.gradient_norm, run.status if h is run.history[-1] else ""])
    return to_csv(header, rows)


def _stationary_cell(run: DescentRun) -> str:
    s = run.nearest_stationary
    if s is None:
        return "-"
    where = ", ".join(f"{k}={number(v)}" for k, v in s.point.items())
    distance = "" if s.distance is None else f" (distance {s.distance:.2g})"
    return f"{s.kind or 'unclassified'} at {where}{distance}"


def descend_table(report: DescentReport) -> None:
    from rich.table import Table

    console = stdout_console()
    start = ", ".join(f"{k} = {number(v)}" for k, v in report.start.items())
    goal = "maximise" if report.maximize else "minimise"
    console.print(f"[bold]{goal}[/bold]  {report.expression}    [bold]from[/bold]  {start}    "
                  f"[bold]dtype[/bold]  {report.dtype}")
    console.print(f"[bold]lr[/bold]  {report.learning_rate:g}    [bold]steps[/bold]  at most {report.max_steps}    "
                  f"[bold]tol[/bold]  |grad| < {report.tol:g}")
    table = Table(title="gradient descent", title_justify="left")
    table.add_column("optimizer", style="bold")
    table.add_column("status")
    table.add_column("steps", justify="right")
    for v in report.variables:
        table.add_column(v, justify="right")
    table.add_column("f", justify="right")
    table.add_column("|grad f|", justify="right")
    if report.stationary_points is not None:
        table.add_column("nearest stationary point (SymPy)", overflow="fold")
    table.add_column("time", justify="right")
    for run in report.runs:
        style = _STATUS_STYLE.get(run.status, "")
        row = [run.optimizer, f"[{style}]{run.status}[/{style}]", str(run.steps),
               *[number(run.final.get(v)) for v in report.variables], number(run.value),
               _short(run.gradient_norm)]
        if report.stationary_points is not None:
            row.append(_stationary_cell(run))
        row.append(f"{run.seconds:.2f} s")
        table.add_row(*row)
    console.print(table)
    if report.every is not None:
        for run in report.runs:
            traj = Table(title=f"{run.optimizer}: every {report.every} steps", title_justify="left")
            traj.add_column("step", justify="right")
            for v in report.variables:
                traj.add_column(v, justify="right")
            traj.add_column("f", justify="right")
            traj.add_column("|grad f|", justify="right")
            for h in run.history:
                traj.add_row(str(h.step), *[number(h.point.get(v)) for v in report.variables], number(h.value),
                             _short(h.gradient_norm))
            console.print(traj)


def _short(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "undefined"
    return f"{x:.3g}"


def descend_plot(report: DescentReport, *, file=None) -> None:
    """f against the step, one line per optimizer, drawn with plotext (colour only on a terminal)."""
    import plotext as plt

    file = file or sys.stdout
    fig = plt.figure
    fig.clear()
    series = [[(h.step, h.value) for h in run.history if h.value is not None and math.isfinite(h.value)]
              for run in report.runs]
    values = [v for points in series for _, v in points]
    # Descent shrinks f by orders of magnitude: on a linear axis everything after the first steps is flat.
    log_scale = bool(values) and min(values) > 0 and max(values) / min(values) > 1e3
    drawn = 0
    for i, (run, points) in enumerate(zip(report.runs, series)):
        if not points:
            continue
        ys = [math.log10(v) if log_scale else v for _, v in points]
        signal = fig.signal([p[0] for p in points], ys, marker=_MARKERS[i % len(_MARKERS)])
        signal.label(f"{run.optimizer} ({run.status})")
        signal.lines()
        fig.draw(signal)
        drawn += 1
    if not drawn:
        print("gradcli: note: nothing to plot (no finite values recorded)", file=sys.stderr)
        return
    fig.title(f"f = {report.expression}")
    fig.label("step", axis="x")
    if log_scale:
        fig.label("log10 f", axis="y")
    width, height = 80, 20
    if file.isatty():
        import shutil

        width = max(40, min(shutil.get_terminal_size().columns, 120))
    fig.plot_size(width, height)
    print(fig.build().string(colorless=not file.isatty()), file=file)
