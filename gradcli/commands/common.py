"""What every command shares: option types, output formats, and the one place where gradcli's
exceptions become exit codes (0 ok, 1 cannot be computed, 2 usage or parse error)."""

from __future__ import annotations

import enum
import functools
import math
import sys
from typing import Annotated, Callable, Optional

import typer

from gradcli.errors import GradcliError


class OutputFormat(str, enum.Enum):
    table = "table"
    json = "json"
    csv = "csv"


class DType(str, enum.Enum):
    float64 = "float64"
    float32 = "float32"


AtOption = Annotated[
    Optional[list[str]],
    typer.Option("--at", help="The point: name=value pairs, comma-separated (x1=2,x2=3; x=pi/4). Repeatable."),
]
FormatOption = Annotated[OutputFormat, typer.Option("--format", "-f", help="table for people; json or csv for scripts.")]
DTypeOption = Annotated[DType, typer.Option("--dtype", help="Floating-point type of the tape and fd computations.")]
ShowCodeOption = Annotated[
    bool, typer.Option("--show-code", help="Print a runnable TensorFlow program that reproduces the tape column.")
]
def seconds_option(value: float | None) -> float | None:
    """A time bound: finite (NaN passes Click's range check, infinity overflows the thread's timer)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number of seconds, not {value}")
    return value


SymbolicTimeoutOption = Annotated[
    float, typer.Option("--symbolic-timeout", min=0.1, max=86_400.0, callback=seconds_option,
                        help="Seconds gradcli waits for SymPy, counted from its start (it runs alongside the "
                        "other methods); past that its column is left out with a note.")
]


def report_error(exc: GradcliError) -> None:
    print(f"gradcli: error: {exc.one_line()}", file=sys.stderr)
    for line in exc.caret_lines():
        print(line, file=sys.stderr)


def handle_errors(fn: Callable) -> Callable:
    """Map gradcli's exceptions to exit codes; no traceback ever reaches the user."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except GradcliError as exc:
            report_error(exc)
            raise typer.Exit(exc.exit_code) from None
        except (typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:
            # `gradcli ... | head`: the reader left; say nothing, and keep Python from complaining at exit.
            import os

            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            print("gradcli: interrupted", file=sys.stderr)
            raise typer.Exit(130) from None
        except RecursionError:
            print("gradcli: error: expression too deeply nested to compute", file=sys.stderr)
            raise typer.Exit(2) from None
        except MemoryError:
            print("gradcli: error: out of memory", file=sys.stderr)
            raise typer.Exit(1) from None
        except Exception as exc:  # a bug in gradcli: still one line, still no traceback
            print(f"gradcli: internal error: {type(exc).__name__}: {exc} (please report this)", file=sys.stderr)
            raise typer.Exit(1) from None

    return wrapper


def emit(output: OutputFormat, *, json: Callable[[], str], csv: Callable[[], str], table: Callable[[], None]) -> None:
    """Print the report in the chosen format (the renderers are passed in, already bound to it)."""
    if output is OutputFormat.json:
        print(json())
    elif output is OutputFormat.csv:
        print(csv(), end="")
    else:
        table()


def conclude(report) -> None:
    """Warnings and notes on stderr, then exit 1 if part of the result could not be computed."""
    from gradcli.render.common import print_diagnostics

    print_diagnostics(report.warnings, report.notes)
    finish(report.failed)


def finish(failed: bool) -> None:
    """Exit 1 after printing when part of the result could not be computed."""
    if failed:
        raise typer.Exit(1)
