"""``gradcli jvp``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gradcli.commands.common import (DType, DTypeOption, FormatOption, OutputFormat, ShowCodeOption,
                                     SymbolicTimeoutOption, at_option, handle_errors)


@handle_errors
def jvp(
    expressions: Annotated[Optional[list[str]], typer.Argument(
        metavar="EXPR...", help="One or more expressions, e.g. \"(x1+5)*x2**2\".", show_default=False)] = None,
    *,
    at: at_option("required") = None,
    along: Annotated[Optional[list[str]], typer.Option(
        "--along", metavar="X=V,...", help="The direction v, e.g. x1=1,x2=2 (variables not named: 0).  [required]",
        show_default=False)] = None,
    points: Annotated[Optional[str], typer.Option(
        "--points", metavar="FILE|-", help="Not taken: jvp is for one point (exit 2).", show_default=False)] = None,
    grid: Annotated[Optional[str], typer.Option(
        "--grid", metavar="X=A:B:N,...", help="Not taken: jvp is for one point (exit 2).", show_default=False)] = None,
    method: Annotated[str, typer.Option(
        "--method", "-m", metavar="METHODS", help="Any of symbolic,tape,fd,complex (comma-separated).")
    ] = "symbolic,tape,fd,complex",
    dtype: DTypeOption = DType.float64,
    output: FormatOption = OutputFormat.table,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = 10.0,
) -> None:
    """J·v, the derivative along a direction v: ForwardAccumulator, exact, fd along v and the complex step.

    fd differentiates t -> f(x + t v) at t = 0 with a central stencil (and its error estimate); the complex step
    takes Im f(x + i h v)/h. Several expressions: one row each (the Jacobian times v).

    Examples:

    \b
      gradcli jvp "(x1+5)*x2**2" --at x1=2,x2=3 --along x1=1,x2=2
      gradcli jvp "sin(x)*y" "x*y**2" --at x=1,y=2 --along x=1 -f json
    """
    from gradcli.errors import UsageError

    if points is not None or grid is not None:
        raise UsageError("jvp computes at one point: drop --points/--grid and give --at (one command per point)")
    if output in (OutputFormat.csv, OutputFormat.jsonl):
        raise UsageError("jvp writes table or json (-f csv/jsonl are for --points/--grid, which jvp does not take)")
    if not expressions:
        raise UsageError("give at least one expression, e.g. gradcli jvp \"x**2\" --at x=3 --along x=1")
    if show_code:
        from gradcli.programs.jvp import program_jvp

        print(program_jvp(expressions, at=at, along=along, dtype=dtype.value), end="")
        return
    from gradcli.commands.common import conclude, emit
    from gradcli.compute.jvp import compute_jvp
    from gradcli.render import jvp as render

    report = compute_jvp(expressions, at=at, along=along, dtype=dtype.value, methods=method,
                         symbolic_time_limit=symbolic_timeout)
    emit(output, json=lambda: render.jvp_json(report), table=lambda: render.jvp_table(report))
    conclude(report)
