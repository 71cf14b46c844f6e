"""What every command shares: option types, output formats, and the one place where gradcli's
exceptions become exit codes (0 ok, 1 cannot be computed, 2 usage or parse error)."""

from __future__ import annotations

import contextlib
import enum
import functools
import math
import sys
from typing import Annotated, Callable, Optional

import typer

from gradcli.errors import GradcliError, printable
from gradcli.library.requests import BATCH_SIZES, ENGINE, SYMBOLIC_TIMEOUTS, WORKERS
from gradcli.streams import BROKEN_PIPE_EXIT, OutputWriteError


class OutputFormat(str, enum.Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    latex = "latex"
    parquet = "parquet"


class DType(str, enum.Enum):
    float64 = "float64"
    float32 = "float32"


AT_HELP = "The point, e.g. x1=2,x2=3 or x=pi/4 (repeatable)."


def at_option(requirement: str):
    """``--at`` with what it is needed for (Click's own [required] cannot say "unless")."""
    return Annotated[Optional[list[str]], typer.Option(
        "--at", metavar="X=V,...", help=f"{AT_HELP}  [{requirement}]", show_default=False)]


AtOption = at_option("required unless --points/--grid")


FormatOption = Annotated[OutputFormat, typer.Option(
    "--format", "-f", case_sensitive=False, metavar="FORMAT",
    help="table, json, jsonl (per point) or csv.")]
FormatWithLatexOption = Annotated[OutputFormat, typer.Option(
    "--format", "-f", case_sensitive=False, metavar="FORMAT",
    help="table, json, jsonl (per point), csv or latex (a tabular).")]
FormatWithParquetOption = Annotated[OutputFormat, typer.Option(
    "--format", "-f", case_sensitive=False, metavar="FORMAT",
    help="table, json, jsonl (per point), csv, parquet (with --output) or latex.")]


def export_path(value: str | None) -> str | None:
    """--svg/--html/--plot-file: a file that can be created or replaced, checked before anything is computed
    (gradcli.output_files)."""
    if value is None:
        return None
    from gradcli.errors import UsageError
    from gradcli.output_files import check_output_path

    try:
        return check_output_path(value)
    except UsageError as exc:
        raise typer.BadParameter(str(exc)) from None


SvgOption = Annotated[Optional[str], typer.Option(
    "--svg", metavar="FILE", callback=export_path, show_default=False,
    help="Also save what is shown as an SVG image.")]
HtmlOption = Annotated[Optional[str], typer.Option(
    "--html", metavar="FILE", callback=export_path, show_default=False,
    help="Also save what is shown as an HTML page.")]
OutputPathOption = Annotated[Optional[str], typer.Option(
    "--output", metavar="FILE", callback=export_path, show_default=False,
    help="Write to FILE (whole or not at all), not stdout.")]
PointsOption = Annotated[Optional[str], typer.Option(
    "--points", metavar="FILE|-", help="Many points: CSV, JSONL, Parquet; '-': stdin.",
    show_default=False)]
GridOption = Annotated[Optional[str], typer.Option(
    "--grid", metavar="X=A:B:N,...", help="Many points: all of x=-2:2:41,y=-1:3:41.",
    show_default=False)]




def in_range(low: float, high: float):
    """A callback that refuses a value outside [low, high] (NaN too) as Click's min/max would, without the range
    line min/max add to every --help. The range is the library's (gradcli.library.requests), which checks it
    for the Python API: written once."""
    def check(value):
        if value is not None and not low <= value <= high:
            raise typer.BadParameter(f"{value} is not in the range {low}<=x<={high}")
        return value

    return check


class Engine(str, enum.Enum):
    local = "local"
    dask = "dask"


# The Dask engine (gradcli.dask_engine): declared once, taken by every command that computes at many points.
EngineOption = Annotated[Engine, typer.Option(
    "--engine", case_sensitive=False, metavar="ENGINE", show_default=False,
    help="local (default), or dask: on a Dask cluster.")]
WorkersOption = Annotated[Optional[int], typer.Option(
    "--workers", metavar="N", callback=in_range(*WORKERS), show_default=False,
    help="dask: local worker processes (default: cores).")]
SchedulerOption = Annotated[Optional[str], typer.Option(
    "--scheduler", metavar="ADDRESS", show_default=False,
    help="dask: a cluster's ($DASK_SCHEDULER_ADDRESS).")]
ENGINE_DEFAULT = Engine(ENGINE)


BatchSizeOption = Annotated[int, typer.Option(
    "--batch-size", callback=in_range(*BATCH_SIZES), metavar="N", help="Points per batch (1 to 10^6).")]
DigitsOption = Annotated[Optional[int], typer.Option(
    "--digits", metavar="N", callback=in_range(1, 17), show_default=False,
    help="-f latex: values to N significant digits.")]
DTypeOption = Annotated[DType, typer.Option(
    "--dtype", case_sensitive=False, metavar="DTYPE", help="float64 or float32.")]
ShowCodeOption = Annotated[
    bool, typer.Option("--show-code", help="Print the TensorFlow program of the tape column.")
]
METHOD_HELP = "symbolic,tape,fd (complex: 1st derivatives)."
FileOption = Annotated[Optional[str], typer.Option(
    "--file", metavar="FILE|-", help="EXPR from a file ('-': stdin); # comments.", show_default=False)]


def seconds_option(value: float | None) -> float | None:
    """A time bound: finite (infinity overflows the thread's timer)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number of seconds, not {value}")
    return value


SymbolicTimeoutOption = Annotated[
    float, typer.Option("--symbolic-timeout", callback=in_range(*SYMBOLIC_TIMEOUTS), metavar="SECONDS",
                        help="SymPy's limit (0.1 to 86400).")
]


RuleOption = Annotated[Optional[list[str]], typer.Option(
    "--rule", metavar="RULE", help="\"NAME(u, ...) = BODY; d/du = FORMULA; ...\": a function, its "
    "derivative checked (repeatable).", show_default=False)]
StrictOption = Annotated[bool, typer.Option(
    "--strict", help="Exit 1 on any warning too (for CI and scripts).")]


def report_error(exc: GradcliError) -> None:
    from gradcli.commands.expression_file import file_error_lines

    say(*(file_error_lines(exc) or [f"gradcli: error: {exc.one_line()}", *exc.caret_lines()]))


def say(*lines: str) -> None:
    """Lines on stderr; a stderr that cannot be written (closed, full) loses them, never the exit code."""
    try:
        print(*lines, sep="\n", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def handle_errors(fn: Callable) -> Callable:
    """Map gradcli's exceptions to exit codes; no traceback ever reaches the user."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            refuse_latex(fn, kwargs)
            refuse_parquet(fn, kwargs)
            with export_of(fn, kwargs), latex_digits(kwargs):
                return fn(*args, **kwargs)
        except GradcliError as exc:
            report_error(exc)
            raise typer.Exit(exc.exit_code) from None
        except (typer.Exit, typer.Abort, OutputWriteError):
            raise  # OutputWriteError: stdout failed; the launcher says so and exits (gradcli.streams)
        except BrokenPipeError:
            # A pipe's reader left outside the guarded stdout (in-process runs): the same code, quietly.
            raise typer.Exit(BROKEN_PIPE_EXIT) from None
        except KeyboardInterrupt:  # in-process runs; the console script ends in gradcli.interrupts
            say("gradcli: interrupted")
            raise typer.Exit(130) from None
        except RecursionError:
            say("gradcli: error: expression too deeply nested to compute")
            raise typer.Exit(2) from None
        except MemoryError:
            say("gradcli: error: out of memory")
            raise typer.Exit(1) from None
        except Exception as exc:  # a bug in gradcli: still one line, still no traceback
            # the exception's text may quote what the user typed: escaped like every other message
            say(f"gradcli: internal error: {type(exc).__name__}: {printable(str(exc))} (please report this)")
            raise typer.Exit(1) from None

    return wrapper


def writes_latex(command: Callable) -> Callable:
    """Mark a command whose ``-f latex`` is written (by gradcli.render.latex); every other refuses it,
    whatever its format option lists. Put it below ``@handle_errors``, which reads the mark."""
    command.writes_latex = True
    return command


def writes_parquet(command: Callable) -> Callable:
    """Mark a command whose ``-f parquet`` is written (gradcli.render.parquet, with ``--output``); every other
    refuses it. Put it below ``@handle_errors``, which reads the mark."""
    command.writes_parquet = True
    return command


def refuse_parquet(command: Callable, options: dict) -> None:
    if getattr(options.get("output"), "value", None) == "parquet" and not getattr(command, "writes_parquet", False):
        from gradcli.errors import UsageError

        name = command.__name__.split("_")[0]
        raise UsageError(f"-f parquet is not available for {name}: use -f csv (or -f jsonl)")


@contextlib.contextmanager
def output_to(path: str | None, output):
    """``--output FILE``: stdout's text written to FILE instead (-f parquet: the binary file, yielded for its
    writer), through a temporary name renamed when the run ends with its output complete (exit 0, or exit 1
    after writing what could be computed); nothing is left of a run that failed or was interrupted. Without
    it, stdout (None is yielded); -f parquet then is refused: it is no text for a terminal or a pipe."""
    parquet = getattr(output, "value", output) == "parquet"
    if path is None:
        if parquet:
            from gradcli.errors import UsageError

            raise UsageError("-f parquet writes a file: give --output FILE.parquet")
        yield None
        return
    from gradcli.output_files import writing_whole

    with writing_whole(path, binary=parquet,
                       complete=lambda exc: isinstance(exc, typer.Exit) and exc.exit_code in (0, 1)) as file:
        if parquet:
            yield file
        else:
            with contextlib.redirect_stdout(file):
                yield file


def refuse_latex(command: Callable, options: dict) -> None:
    if getattr(options.get("output"), "value", None) == "latex" and not getattr(command, "writes_latex", False):
        from gradcli.errors import UsageError

        name = command.__name__.split("_")[0]  # eval's function is eval_value: eval is a builtin
        raise UsageError(f"-f latex is not available for {name} yet: use table, json, jsonl or csv")


def latex_digits(options: dict):
    """A command's ``--digits`` (DigitsOption): the significant digits of the values its ``-f latex`` writes
    (gradcli.render.latex), refused with any other format, which has digits of its own."""
    digits = options.get("digits")
    if digits is None:
        return contextlib.nullcontext()
    if getattr(options.get("output"), "value", None) != "latex":
        from gradcli.errors import UsageError

        raise UsageError("--digits sets the digits of -f latex: add -f latex (the table shows every digit, "
                         "json and csv write them all)")
    from gradcli.render.latex import value_digits

    return value_digits(digits)


def export_of(command: Callable, options: dict):
    """A command with ``svg``/``html`` parameters (SvgOption, HtmlOption) records what it shows and saves it
    there (gradcli.render.common.exporting); its ``output`` says whether that is a table (or text) at all."""
    svg, html, plot_file = options.get("svg"), options.get("html"), options.get("plot_file")
    if plot_file is not None or svg is not None or html is not None or options.get("output_path") is not None:
        from gradcli.output_files import refuse_inputs

        refuse_inputs({"--plot-file": plot_file, "--svg": svg, "--html": html, "--output": options.get("output_path")},
                      [options.get("points"), options.get("file")])
    if svg is None and html is None:
        return contextlib.nullcontext()
    from gradcli.render.common import exporting

    # the function's name is the command's (eval's is eval_value: eval is a builtin)
    title = "gradcli " + command.__name__.split("_")[0]
    return exporting(svg, html, output=options.get("output"), title=title,
                     shown=lambda exc: isinstance(exc, typer.Exit) and exc.exit_code in (0, 1))


# A batch run estimated (gradcli.compute.work) to take longer than this shows a progress bar on a terminal.
PROGRESS_MIN_SECONDS = 5.0


def run_many(computation, *, points: str | None, grid: str | None, at: list[str] | None,
             output: OutputFormat, batch_size: int, strict: bool = False) -> None:
    """Compute ``computation`` (a gradcli.compute.batch core) at every point of ``--points``/``--grid``, or at
    the ``--at`` point as a batch of one (its table and JSON: gradcli.render.detail), writing each batch's
    records as it finishes; exit 1 when a point's value or derivative is undefined (``strict``: when any
    point has a warning). A long run shows a progress bar on a terminal's stderr (shows_progress)."""
    from gradcli.compute.batch.engine import run_batch
    from gradcli.compute.batch.points import point_chunks
    from gradcli.render.batch import sink_for

    chunks = point_chunks(computation, points=points, grid=grid, at=at, batch_size=batch_size)
    one_point = points is None and grid is None
    sink = sink_for(computation.command, output.value, one_point=one_point)
    if shows_progress(chunks.seconds, output):
        tracked = with_progress(chunks, chunks.total)
        try:
            summary = run_batch(computation, tracked, sink)
        finally:
            tracked.close()  # the bar is gone before an error's line
    else:
        summary = run_batch(computation, chunks, sink)
    finish(summary.failed or (strict and summary.with_warnings > 0))


def shows_progress(seconds: float | None, output: OutputFormat, *, stderr=None, stdout=None) -> bool:
    """Whether a batch run shows a progress bar: on stderr only when it is a terminal, only for a run
    estimated past PROGRESS_MIN_SECONDS (a stream's, unknown up front: never), and never where the bar would
    mix with records written as they come (json, jsonl, csv on the same terminal; a table is printed at the
    end)."""
    stderr = sys.stderr if stderr is None else stderr
    stdout = sys.stdout if stdout is None else stdout
    if seconds is None or seconds < PROGRESS_MIN_SECONDS or not _is_terminal(stderr):
        return False
    return output is OutputFormat.table or not _is_terminal(stdout)


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # closed or not a file
        return False


def with_progress(chunks, total: int, console=None):
    """``chunks`` as they are computed, a rich progress bar of the points done on ``console`` (default: stderr)
    meanwhile; the bar goes away when the chunks end or the generator is closed."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    from gradcli.render.common import stderr_console

    with Progress(TextColumn("points"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=console or stderr_console(), transient=True,
                  redirect_stdout=False, redirect_stderr=False) as bar:
        task = bar.add_task("points", total=total)
        for chunk in chunks:
            yield chunk  # computed and written by run_batch before the next is asked for
            bar.advance(task, len(chunk))


def as_batch(*, points: str | None, grid: str | None, output: OutputFormat) -> bool:
    """Whether the batch core computes: --points/--grid, or -f csv / -f jsonl at one point (a batch of one:
    its row or record is exactly the one --points would write, one layout per command)."""
    return points is not None or grid is not None or output in (OutputFormat.csv, OutputFormat.jsonl)


def refuse_show_code_for_many(points: str | None, grid: str | None, point_option: str = "--at") -> None:
    if points is not None or grid is not None:
        from gradcli.errors import UsageError

        raise UsageError(f"--show-code prints the program for one point: drop --points/--grid and give "
                         f"{point_option}")


def emit(output: OutputFormat, *, json: Callable[[], str], table: Callable[[], None],
         csv: Callable[[], str] | None = None, latex: Callable[[], str] | None = None) -> None:
    """Print the report in the chosen format (the renderers are passed in, already bound to it). grad,
    derivative and hessian have no ``csv``: their CSV at one point comes from the batch core (as_batch)."""
    if output is OutputFormat.json:
        print(json())
    elif output is OutputFormat.latex:
        print(latex(), end="")
    elif output is OutputFormat.jsonl:  # one point: its document on one line
        import json as json_module

        print(json_module.dumps(json_module.loads(json()), allow_nan=False))
    elif output is OutputFormat.csv:
        print(csv(), end="")
    else:
        table()
    sys.stdout.flush()  # a write failure shows now, before the diagnostics and the exit code


def conclude(report) -> None:
    """Warnings and notes on stderr, then exit 1 if part of the result could not be computed."""
    from gradcli.render.common import print_diagnostics

    print_diagnostics(report.warnings, report.notes)
    finish(report.failed)


def finish(failed: bool) -> None:
    """Exit 1 after printing when part of the result could not be computed."""
    if failed:
        raise typer.Exit(1)
