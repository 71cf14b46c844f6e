"""``gradcli descend``."""

from __future__ import annotations

import contextlib
import math
import sys
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (DigitsOption, DType, DTypeOption, FileOption, HtmlOption, OutputFormat,
                                     RuleOption, StrictOption, SvgOption, finish, handle_errors, in_range,
                                     refuse_show_code_for_many, writes_latex)
from gradcli.commands.completion import complete_optimizers
from gradcli.commands.expression_file import expression_text
from gradcli.commands.plot_file import plot_file_path, refuse_same_file
from gradcli.library.requests import STARTS_BATCH_SIZES, DescendRequest
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
    "--optimizer", "-o", metavar="OPT[:LR],...", autocompletion=complete_optimizers, show_default=False,
    help="manual (default), sgd, momentum, nesterov, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, "
         "lion, ftrl, all; several race.")]
LearningRateOption = Annotated[float, typer.Option(
    "--lr", metavar="LR", help="Of optimizers without :LR.")]
StepsOption = Annotated[int, typer.Option(
    "--steps", metavar="N", help="Step limit (then: max_steps).")]
TolOption = Annotated[Optional[float], typer.Option(
    "--tol", metavar="G", help="Stop (converged) below this gradient norm (default 1e-10, float32 1e-6; "
         "0: never).")]
MaximizeOption = Annotated[bool, typer.Option("--maximize", help="Climb instead: descend on -f.")]
MomentumOption = Annotated[Optional[float], typer.Option(
    "--momentum", metavar="M", help="Of momentum and nesterov (default 0.9).")]
EveryOption = Annotated[Optional[int], typer.Option(
    "--every", metavar="K", help=f"Keep every K-th step (at most {TRAJECTORY_MAX_ROWS:,} rows).")]
PlotOption = Annotated[bool, typer.Option("--plot", help="Plot f by step (on stderr with -f json/csv).")]
DescendFormatOption = Annotated[OutputFormat, typer.Option(
    "--format", "-f", case_sensitive=False, metavar="FORMAT",
    help="table, json, jsonl, latex, csv (a row per run; --every: a row per step).")]
ShowProgramOption = Annotated[bool, typer.Option("--show-code", help="Print the TensorFlow program; run nothing.")]
StationaryTimeoutOption = Annotated[float, typer.Option(
    "--stationary-timeout", metavar="SECONDS", show_default=False,  # its range: check_stationary_time_limit
    help="SymPy's time for grad f = 0 (2 s; 0: skip).")]
StartsBatchSizeOption = Annotated[int, typer.Option(
    "--batch-size", callback=in_range(*STARTS_BATCH_SIZES), metavar="N", help="Starts run together.")]
# Not plot_file's own option: its help names the picture descend draws (and fits one line of --help).
DescendPlotFileOption = Annotated[Optional[str], typer.Option(
    "--plot-file", metavar="FILE", callback=plot_file_path, show_default=False,
    help="Draw f (many starts: basins) in FILE.png|.svg.")]


@handle_errors
@writes_latex
def descend(
    expression: ExpressionArgument = None, *, file: FileOption = None, start: StartOption = None,
    points: StartsFileOption = None, grid: StartsGridOption = None,
    optimizer: OptimizerOption = DescendRequest.optimizer, lr: LearningRateOption = DescendRequest.lr,
    steps: StepsOption = DescendRequest.steps, tol: TolOption = None,
    maximize: MaximizeOption = DescendRequest.maximize, momentum: MomentumOption = None, every: EveryOption = None,
    plot: PlotOption = False, plot_file: DescendPlotFileOption = None,
    dtype: DTypeOption = DType(DescendRequest.dtype), output: DescendFormatOption = OutputFormat.table,
    digits: DigitsOption = None,
    svg: SvgOption = None, html: HtmlOption = None, show_code: ShowProgramOption = False,
    stationary_timeout: StationaryTimeoutOption = DescendRequest.stationary_timeout,
    batch_size: StartsBatchSizeOption = DescendRequest.batch_size, rule: RuleOption = None,
    strict: StrictOption = DescendRequest.strict,
) -> None:
    """Gradient descent: the guide's loop and Keras optimizers, compiled; exit 1 when a run
    diverges. --points/--grid: many starts and their basins. The first example is the guide's: all 100
    steps in float32 (--tol 0 never stops early), ending at x = -0.3333333.

    Examples:

    \b
      gradcli descend "3*x**2+2*x-1" -o manual,sgd --steps 100 \\
          --dtype float32 --tol 0
      gradcli descend "(1-x)**2+100*(y-x**2)**2" --from x=-1.2,y=1 -o adam:0.01
      gradcli descend "x**2+3*y**2" -o sgd:0.1,adam:0.05 -f csv --every 10
    """
    from gradcli.expression.rules import define_rules

    checked = define_rules(rule)  # a wrong rule: exit 1, with a counterexample
    expression = expression_text(expression, file)
    refuse_same_file(plot_file, svg, html)
    many = points is not None or grid is not None
    if show_code and many:
        refuse_show_code_for_many(points, grid, "--from")
    from gradcli.compute.descend.options import check_stationary_time_limit, refuse_for_many_starts

    if many:
        refuse_for_many_starts(start=start, every=every)
        if output is OutputFormat.latex:
            from gradcli.render.batch import refuse_latex_for_many

            refuse_latex_for_many(many=True, point="start", option="--from")
    request = DescendRequest(expression=expression, start=start, points=points, grid=grid, optimizer=optimizer,
                             lr=lr, steps=steps, tol=tol, maximize=maximize, momentum=momentum, every=every,
                             dtype=dtype.value, stationary_timeout=stationary_timeout, batch_size=batch_size,
                             rule=rule, strict=strict)
    plan = request.plan()
    check_stationary_time_limit(stationary_timeout)
    if show_code:
        from gradcli.programs.descend import show_code_descend

        print(show_code_descend(plan), end="")
        return
    if many:
        _descend_many(request, plan, plot=plot, picture=plot_file, output=output, rules=checked)
    else:
        _descend_one(request, plan, plot=plot, picture=plot_file, output=output, rules=checked)


def _descend_one(request, plan, *, plot: bool, picture: str | None, output: OutputFormat, rules) -> None:
    """--from (or every variable at 0): one start, a batch of one; its document and views (render.descend);
    ``picture``: --plot-file's path, drawn after the views (also when a run diverged: exit 1 after it)."""
    from gradcli.render.descend import start_sink

    record_every = plan.every
    if record_every is None and (plot or picture):
        record_every = max(1, math.ceil(plan.steps / PLOT_POINTS))
    # The plot is data the user asked for, but JSON and CSV on stdout must stay parseable.
    plot_to = (sys.stdout if output is OutputFormat.table else sys.stderr) if plot else None
    sink = start_sink(output.value, plan, plot=plot_to)
    with _progress(plan.steps) as progress_factory:
        run = request.run(sink, rules=rules, plan=plan, every=record_every, progress_factory=progress_factory)
    if picture:
        from gradcli.render.descend_pictures import descend_panels
        from gradcli.render.plot_file import write_plot_file

        write_plot_file(descend_panels(sink.document), picture)
    finish(run.failed)


def _descend_many(request, plan, *, plot: bool, picture: str | None, output: OutputFormat, rules) -> None:
    """--points/--grid: every start in batches (gradcli.compute.descend.core), records written per batch."""
    from gradcli.errors import UsageError

    names = plan.names
    if plot and len(names) != 2:
        raise UsageError(f"--plot with --points/--grid draws the starts in the plane: it needs a function of two "
                         f"variables, and {plan.expression.text} has {len(names)} ({', '.join(names)})")
    if picture and len(names) not in (1, 2):
        raise UsageError(f"--plot-file with --points/--grid draws the starts' basins: it needs a function of one "
                         f"or two variables, and {plan.expression.text} has {len(names)}"
                         + (f" ({', '.join(names)})" if names else ""))
    from gradcli.render.descend_batch import descend_sink

    made = []  # the writer, made once the starts are read (a bad --points file is refused first)

    def sink():
        made.append(descend_sink(output.value, variables=names, plot=plot, picture=picture is not None))
        return made[0]

    run = request.run(sink, rules=rules, plan=plan)
    if picture:
        from gradcli.render.plot_file import write_plot_file

        write_plot_file(made[0].picture_panels(), picture)
    finish(run.failed)


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
