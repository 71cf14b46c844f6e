"""``gradcli implicit``."""

from __future__ import annotations

import enum
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (OutputPathOption, RuleOption, StrictOption, SymbolicTimeoutOption, at_option,
                                     finish, handle_errors, output_to)
from gradcli.library.implicit_request import IMPLICIT_ORDERS, ImplicitRequest


ImplicitAtOption = at_option("required: a point on the curve")


class ImplicitFormat(str, enum.Enum):
    table = "table"
    json = "json"


@handle_errors
def implicit(
    equation: Annotated[Optional[str], typer.Argument(
        metavar="EQUATION", help="The curve, e.g. \"x**2 + y**2 = 1\" (no '=': F = 0).", show_default=False)] = None,
    *,
    at: ImplicitAtOption = None,
    dependent: Annotated[str, typer.Option(
        "--dependent", "-y", metavar="NAME", help="The variable that is a function of the others.")
    ] = ImplicitRequest.dependent,
    order: Annotated[int, typer.Option(
        "--order", "-n", metavar="N", min=IMPLICIT_ORDERS[0], max=IMPLICIT_ORDERS[1],
        help=f"Derivatives 1..N (N up to {IMPLICIT_ORDERS[1]}).")] = ImplicitRequest.order,
    method: Annotated[str, typer.Option(
        "--method", "-m", metavar="METHODS", help="Any of symbolic,tape,fd (comma-separated).")
    ] = ImplicitRequest.method,
    output: Annotated[ImplicitFormat, typer.Option(
        "--format", "-f", case_sensitive=False, metavar="FORMAT", help="table or json.")] = ImplicitFormat.table,
    output_path: OutputPathOption = None,
    symbolic_timeout: SymbolicTimeoutOption = ImplicitRequest.symbolic_timeout,
    rule: RuleOption = None,
    strict: StrictOption = ImplicitRequest.strict,
) -> None:
    """Implicit derivatives dy/dx of a curve F = G: SymPy's idiff, the tape's -F_x/F_y and fd along the curve.

    The point must be on the curve (its residual |F - G| is shown); F_y = 0 there is refused with its reason
    (a vertical tangent, or a singular point). Several independent variables: the partials by each.

    Examples:

    \b
      gradcli implicit "x**2 + y**2 = 1" --at x=0.6,y=0.8
      gradcli implicit "x**3 + y**3 = 3*x*y" --at x=2/3,y=4/3 -n 2
      gradcli implicit "x*y*z = 1" --at x=1,y=2,z=0.5 --dependent z -f json
    """
    from gradcli.render.common import print_diagnostics
    from gradcli.render.implicit import write

    if equation is None:
        raise typer.BadParameter("give the equation, e.g. \"x**2 + y**2 = 1\"", param_hint="EQUATION")
    request = ImplicitRequest(equation=equation, at=at, dependent=dependent, order=order, method=method,
                              symbolic_timeout=symbolic_timeout, rule=rule, strict=strict)
    report = request.run()
    with output_to(output_path, output):
        write(report.to_dict(), output.value)
    print_diagnostics(report.warnings, report.notes)
    finish(report.failed)
