"""``gradcli descend``."""

from __future__ import annotations

import contextlib
import math
import sys
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (DType, DTypeOption, FormatOption, GridOption, OutputFormat, PointsOption,
                                     conclude, emit, finish, handle_errors, refuse_show_code_for_many)

# Runs allowed at least this many steps get a progress bar (on a terminal); shorter ones end too soon to need one.
PROGRESS_MIN_STEPS = 50_000
# Points a --plot line gets when --every does not say (runs that converge early have fewer).
PLOT_POINTS = 500
# Rows a CSV trajectory gets at most when --every does not say.
CSV_MAX_ROWS = 100_000


@handle_errors
def descend(
    expression: Annotated[str, typer.Argument(help="The function to minimise, e.g. \"3*x**2+2*x-1\".",
                                              show_default=False)],
    *,
    start: Annotated[Optional[list[str]], typer.Option(
        "--from", help="Start point: name=value pairs (x=0,y=1). Variables left out start at 0 (and a note says "
                       "so). Repeatable.")] = None,
    points: PointsOption = None,
    grid: GridOption = None,
    optimizer: Annotated[str, typer.Option(
        "--optimizer", "-o",
        help="One or a comma-separated list (they race from the same start): manual (the guide's "
             "x.assign_sub(lr * dz_dx) loop), sgd, momentum, nesterov, adam, adamw, rmsprop, adagrad, adadelta, "
             "adamax, nadam, lion, ftrl (Keras 3's optimizers), or all.")] = "manual",
    lr: Annotated[float, typer.Option("--lr", help="Learning rate (the guide's 0.1 by default); must be > 0.")] = 0.1,
    steps: Annotated[int, typer.Option("--steps", help="At most this many steps; a run stops sooner once "
                                                         "converged, diverged or unbounded.")] = 1000,
    tol: Annotated[Optional[float], typer.Option(
        "--tol", help="Converged when the gradient norm falls below this (default 1e-10 in float64, 1e-6 in "
                      "float32); 0 runs every step.")] = None,
    maximize: Annotated[bool, typer.Option("--maximize", help="Climb instead: descend on -f, report f.")] = False,
    momentum: Annotated[Optional[float], typer.Option(
        "--momentum", help="Momentum of the momentum and nesterov optimizers (default 0.9).")] = None,
    every: Annotated[Optional[int], typer.Option(
        "--every", help="Show (table, JSON 'history') the trajectory every K steps.")] = None,
    plot: Annotated[bool, typer.Option(
        "--plot", help="Plot f against the step in the terminal, one line per optimizer (on stdout; on stderr "
                       "with --format json or csv). With --points/--grid (two variables): the starts in the "
                       "plane, marked by where they ended.")] = False,
    dtype: DTypeOption = DType.float64,
    output: FormatOption = OutputFormat.table,
    show_code: Annotated[bool, typer.Option(
        "--show-code", help="Print the runnable TensorFlow program (hand-written loop or Keras optimizer loop) "
                            "instead of running it.")] = False,
    stationary_timeout: Annotated[float, typer.Option(
        "--stationary-timeout", min=0.0,
        help="Seconds SymPy may take to solve grad f = 0 for the nearest stationary point (0: skip). With "
             "--points/--grid, past it (or when SymPy finds none) the basins come from the end points.")] = 2.0,
    batch_size: Annotated[int, typer.Option(
        "--batch-size", min=1, max=100_000,
        help="With --points/--grid: starts run together in one compiled loop (records are written per "
             "batch).")] = 1024,
) -> None:
    """Gradient descent from a start point, the guide's hand-written loop and Keras optimizers, compiled.

    Statuses: converged, max_steps, oscillating, diverged, unbounded (the last two exit 1).

    Many starts (--points FILE|- or --grid x=-5:5:21,y=-5:5:21; every variable comes from them): all of
    a batch in one compiled loop per optimizer, a record per start and optimizer (jsonl, csv, json) or
    where the starts ended (table: the basins of SymPy's stationary points, or, when SymPy gives none
    within --stationary-timeout, of the converged end points grouped). Exits 1 if any start
    diverged or went unbounded (f not finite at its start point included), as one start does.
    --every and --show-code are for one start.
    """
    from gradcli.compute.descend import check_stationary_time_limit, plan_descent, run_plan

    if points is not None or grid is not None:
        _descend_many(expression, points=points, grid=grid, start=start, optimizer=optimizer, lr=lr, steps=steps,
                      tol=tol, maximize=maximize, momentum=momentum, every=every, plot=plot, dtype=dtype.value,
                      output=output, show_code=show_code, stationary_timeout=stationary_timeout,
                      batch_size=batch_size)
        return

    plan = plan_descent(expression, start=start, optimizers=optimizer, lr=lr, steps=steps, tol=tol,
                        maximize=maximize, dtype=dtype.value, momentum=momentum, every=every)
    stationary_timeout = check_stationary_time_limit(stationary_timeout)
    if show_code:
        from gradcli.programs.descend import show_code_descend

        print(show_code_descend(plan), end="")
        return
    record_every = None
    if plan.every is None and output is OutputFormat.csv:
        record_every = max(1, math.ceil(plan.steps / CSV_MAX_ROWS))
    elif plan.every is None and plot:
        record_every = max(1, math.ceil(plan.steps / PLOT_POINTS))
    with _progress(plan.steps) as progress_factory:
        report = run_plan(plan, record_every=record_every, stationary_time_limit=stationary_timeout,
                          progress_factory=progress_factory)
    if record_every is not None and record_every > 1 and output is OutputFormat.csv:
        report.notes.append(f"the CSV trajectory has every {record_every}th step (--every sets it)")
    from gradcli.render import descend as render

    emit(output, json=lambda: render.descend_json(report), csv=lambda: render.descend_csv(report),
         table=lambda: render.descend_table(report))
    if plot:
        from gradcli.render.descend import descend_plot

        # The plot is data the user asked for, but JSON and CSV on stdout must stay parseable.
        descend_plot(report, file=sys.stdout if output is OutputFormat.table else sys.stderr)
    conclude(report)


def _descend_many(expression: str, *, points, grid, start, optimizer, lr, steps, tol, maximize, momentum, every,
                  plot, dtype, output: OutputFormat, show_code, stationary_timeout, batch_size) -> None:
    """--points/--grid: every start in batches (gradcli.compute.descend.batch), records written per batch."""
    from gradcli.compute.descend import plan_descent
    from gradcli.errors import UsageError

    if show_code:
        refuse_show_code_for_many(points, grid, "--from")
    if points is not None and grid is not None:
        raise UsageError("give --points or --grid, not both")
    if start:
        raise UsageError("--from gives one start and --points/--grid many: drop one of them")
    if every is not None:
        raise UsageError("--every records a trajectory, which many starts do not keep: drop --every, or run "
                         "one start with --from")
    plan = plan_descent(expression, start=None, optimizers=optimizer, lr=lr, steps=steps, tol=tol,
                        maximize=maximize, dtype=dtype, momentum=momentum)
    names = list(plan.expression.variables)
    if plot and len(names) != 2:
        raise UsageError(f"--plot with --points/--grid draws the starts in the plane: it needs a function of two "
                         f"variables, and {plan.expression.text} has {len(names)} ({', '.join(names)})")
    from gradcli.compute.descend.batch import DescentBatch, run_starts

    batch = DescentBatch(plan, stationary_time_limit=stationary_timeout)
    source = _open_starts(points, grid, names, batch_size)
    from gradcli.render.descend_batch import sink_for

    summary = run_starts(batch, source.chunks(), sink_for(output.value, variables=names, plot=plot))
    finish(summary.failed)


def _open_starts(points, grid, names, batch_size):
    """The starts' source. descend takes every variable from the starts: it has no --at to suggest."""
    from gradcli.expression.sources import grid_points, open_points

    if points is not None:
        return open_points(points, variables=names, chunk_size=batch_size, fixed_option=None)
    return grid_points(grid, variables=names, chunk_size=batch_size, fixed_option=None)


@contextlib.contextmanager
def _progress(steps: int):
    """A rich progress bar on stderr, only when stderr is a terminal and the runs may be long."""
    if steps < PROGRESS_MIN_STEPS or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gradcli.render.common import stderr_console

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=stderr_console(), transient=True) as bar:
        def factory(optimizer: str, total: int):
            task = bar.add_task(optimizer, total=total)

            def update(done: int, total_: int) -> None:
                bar.update(task, completed=done)
            return update

        yield factory
