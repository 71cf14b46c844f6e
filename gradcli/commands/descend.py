"""``gradcli descend``."""

from __future__ import annotations

import contextlib
import math
import sys
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (DType, DTypeOption, FileOption, OutputFormat, conclude, emit, finish,
                                     handle_errors, refuse_show_code_for_many)
from gradcli.commands.completion import complete_optimizers
from gradcli.commands.expression_file import expression_text
from gradcli.limits import TRAJECTORY_MAX_ROWS

# Runs allowed at least this many steps get a progress bar (on a terminal); shorter ones end too soon to need one.
PROGRESS_MIN_STEPS = 50_000
# Points a --plot line gets when --every does not say (runs that converge early have fewer).
PLOT_POINTS = 500


ExpressionArgument = Annotated[Optional[str], typer.Argument(
    metavar="EXPR", help="The function to minimise, e.g. \"x**2+y**2\".", show_default=False)]
StartOption = Annotated[Optional[list[str]], typer.Option(
    "--from", metavar="X=V,...", help="Start point (variables left out start at 0).")]
StartsFileOption = Annotated[Optional[str], typer.Option(
    "--points", metavar="FILE|-", help="Many starts: CSV or JSON Lines ('-': stdin).")]
StartsGridOption = Annotated[Optional[str], typer.Option(
    "--grid", metavar="X=A:B:N,...", help="Many starts: every combination.")]
OptimizerOption = Annotated[str, typer.Option(
    "--optimizer", "-o", metavar="OPT[:LR],...", autocompletion=complete_optimizers,
    help="manual (the guide's loop), sgd, momentum, nesterov, adam, adamw, rmsprop, adagrad, adadelta, "
         "adamax, nadam, lion, ftrl, or all; several race.")]
LearningRateOption = Annotated[float, typer.Option(
    "--lr", metavar="LR", help="Learning rate of optimizers without :LR.")]
StepsOption = Annotated[int, typer.Option(
    "--steps", metavar="N", help="At most this many steps (then status max_steps).")]
TolOption = Annotated[Optional[float], typer.Option(
    "--tol", metavar="G", help="Stop (converged) below this gradient norm (default 1e-10, float32 1e-6; "
         "0: never).")]
MaximizeOption = Annotated[bool, typer.Option("--maximize", help="Climb instead: descend on -f.")]
MomentumOption = Annotated[Optional[float], typer.Option(
    "--momentum", metavar="M", help="Of momentum and nesterov (default 0.9).")]
EveryOption = Annotated[Optional[int], typer.Option(
    "--every", metavar="K", help=f"Keep the trajectory every K steps (at most {TRAJECTORY_MAX_ROWS:,} "
    "rows per run: thinned evenly).")]
PlotOption = Annotated[bool, typer.Option("--plot", help="Plot f by step (on stderr with -f json/csv).")]
DescendFormatOption = Annotated[OutputFormat, typer.Option(
    "--format", "-f", case_sensitive=False, metavar="FORMAT",
    help="table, json, jsonl or csv (a row per run; with --every the trajectory).")]
ShowProgramOption = Annotated[bool, typer.Option("--show-code", help="Print the TensorFlow program; run nothing.")]
StationaryTimeoutOption = Annotated[float, typer.Option(
    "--stationary-timeout", min=0.0, metavar="SECONDS", help="SymPy's time to solve grad f = 0 (0: skip).")]
StartsBatchSizeOption = Annotated[int, typer.Option(
    "--batch-size", min=1, max=100_000, metavar="N", help="Starts run together (--points/--grid).")]


@handle_errors
def descend(
    expression: ExpressionArgument = None, *, file: FileOption = None, start: StartOption = None,
    points: StartsFileOption = None, grid: StartsGridOption = None, optimizer: OptimizerOption = "manual",
    lr: LearningRateOption = 0.1, steps: StepsOption = 1000, tol: TolOption = None,
    maximize: MaximizeOption = False, momentum: MomentumOption = None, every: EveryOption = None,
    plot: PlotOption = False, dtype: DTypeOption = DType.float64, output: DescendFormatOption = OutputFormat.table,
    show_code: ShowProgramOption = False, stationary_timeout: StationaryTimeoutOption = 2.0,
    batch_size: StartsBatchSizeOption = 1024,
) -> None:
    """Gradient descent: the guide's hand-written loop and Keras optimizers, compiled; a diverged or
    unbounded run exits 1. Many starts (--points/--grid): a record per start and optimizer, or the basins.

    The guide's loops run all 100 steps in float32 (--tol 0 never stops early): the first example ends
    at their x = -0.3333333.

    Examples:

    \b
      gradcli descend "3*x**2+2*x-1" -o manual,sgd --steps 100 \\
          --dtype float32 --tol 0
      gradcli descend "(1-x)**2+100*(y-x**2)**2" --from x=-1.2,y=1 -o adam:0.01
      gradcli descend "x**2+3*y**2" -o sgd:0.1,adam:0.05 -f csv --every 10
    """
    expression = expression_text(expression, file)
    shared = dict(optimizer=optimizer, lr=lr, steps=steps, tol=tol, maximize=maximize, momentum=momentum,
                  every=every, plot=plot, dtype=dtype.value, output=output, show_code=show_code,
                  stationary_timeout=stationary_timeout)
    if points is not None or grid is not None:
        _descend_many(expression, points=points, grid=grid, start=start, batch_size=batch_size, **shared)
    else:
        _descend_one(expression, start=start, **shared)


def _descend_one(expression: str, *, start, optimizer, lr, steps, tol, maximize, momentum, every, plot, dtype,
                 output: OutputFormat, show_code, stationary_timeout) -> None:
    """--from (or every variable at 0): one start, each optimizer's run reported whole."""
    from gradcli.compute.descend import check_stationary_time_limit, plan_descent, run_plan

    plan = plan_descent(expression, start=start, optimizers=optimizer, lr=lr, steps=steps, tol=tol,
                        maximize=maximize, dtype=dtype, momentum=momentum, every=every)
    stationary_timeout = check_stationary_time_limit(stationary_timeout)
    if show_code:
        from gradcli.programs.descend import show_code_descend

        print(show_code_descend(plan), end="")
        return
    record_every = None
    if plan.every is None and plot:
        record_every = max(1, math.ceil(plan.steps / PLOT_POINTS))
    with _progress(plan.steps) as progress_factory:
        report = run_plan(plan, record_every=record_every, stationary_time_limit=stationary_timeout,
                          progress_factory=progress_factory)
    from gradcli.render import descend as render
    from gradcli.render.descend_csv import descend_summary_csv, descend_trajectory_csv

    # CSV: a row per run (the summary), or with --every the trajectory (gradcli.render.descend_csv).
    csv = descend_summary_csv if plan.every is None else descend_trajectory_csv
    emit(output, json=lambda: render.descend_json(report), csv=lambda: csv(report),
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
    from gradcli.compute.descend.options import refuse_for_many_starts
    from gradcli.errors import UsageError

    if show_code:
        refuse_show_code_for_many(points, grid, "--from")
    refuse_for_many_starts(start=start, every=every)
    plan = plan_descent(expression, start=None, optimizers=optimizer, lr=lr, steps=steps, tol=tol,
                        maximize=maximize, dtype=dtype, momentum=momentum)
    names = list(plan.expression.variables)
    if plot and len(names) != 2:
        raise UsageError(f"--plot with --points/--grid draws the starts in the plane: it needs a function of two "
                         f"variables, and {plan.expression.text} has {len(names)} ({', '.join(names)})")
    from gradcli.compute.descend.batch import DescentBatch, run_starts

    from gradcli.compute.batch.points import start_chunks

    batch = DescentBatch(plan, stationary_time_limit=stationary_timeout)
    chunks = start_chunks(points=points, grid=grid, names=names, batch_size=batch_size, dtype=plan.dtype)
    from gradcli.render.descend_batch import sink_for

    summary = run_starts(batch, chunks, sink_for(output.value, variables=names, plot=plot))
    finish(summary.failed)


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
