"""``gradcli descend``."""

from __future__ import annotations

import contextlib
import math
import sys
from typing import Annotated, Optional

import typer

from gradcli.commands.common import DType, DTypeOption, FormatOption, OutputFormat, conclude, emit, handle_errors

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
                       "with --format json or csv).")] = False,
    dtype: DTypeOption = DType.float64,
    output: FormatOption = OutputFormat.table,
    show_code: Annotated[bool, typer.Option(
        "--show-code", help="Print the runnable TensorFlow program (hand-written loop or Keras optimizer loop) "
                            "instead of running it.")] = False,
    stationary_timeout: Annotated[float, typer.Option(
        "--stationary-timeout", min=0.0,
        help="Seconds SymPy may take to solve grad f = 0 for the nearest stationary point (0: skip).")] = 2.0,
) -> None:
    """Gradient descent from a start point, the guide's hand-written loop and Keras optimizers, compiled.

    Statuses: converged, max_steps, oscillating, diverged, unbounded (the last two exit 1).
    """
    from gradcli.descend import check_stationary_time_limit, plan_descent, run_plan

    plan = plan_descent(expression, start=start, optimizers=optimizer, lr=lr, steps=steps, tol=tol,
                        maximize=maximize, dtype=dtype.value, momentum=momentum, every=every)
    stationary_timeout = check_stationary_time_limit(stationary_timeout)
    if show_code:
        from gradcli.descend import show_code_descend

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
