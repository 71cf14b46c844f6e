"""``gradcli hessian``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gradcli.commands.common import (AtOption, DType, DTypeOption, FormatOption, OutputFormat, ShowCodeOption,
                                     SymbolicTimeoutOption, finish, handle_errors)


@handle_errors
def hessian(
    expression: Annotated[str, typer.Argument(help="The expression, e.g. \"(x1+5)*x2**2\".", show_default=False)],
    *,
    at: AtOption = None,
    wrt: Annotated[Optional[str], typer.Option(
        "--wrt", help="The Hessian in these variables only (comma-separated); the others are held fixed.")] = None,
    method: Annotated[str, typer.Option(
        "--method", "-m", help="Comma-separated subset of symbolic,tape,fd.")] = "symbolic,tape,fd",
    eps: Annotated[Optional[float], typer.Option(
        "--eps", help="Fixed second-difference step (default: eps^(1/4)*max(1,|x|) for the dtype; shown).")] = None,
    dtype: DTypeOption = DType.float64,
    output: FormatOption = OutputFormat.table,
    formulas: Annotated[bool, typer.Option("--formulas", help="Show SymPy's second-derivative formulas.")] = False,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = 10.0,
) -> None:
    """The Hessian at a point three ways (nested GradientTapes, finite differences, SymPy), and what it
    says there: eigenvalues, definiteness, the kind of critical point, condition number, 2/lambda_max.
    """
    from gradcli.hessian import compute_hessian
    from gradcli.render.common import print_diagnostics

    report = compute_hessian(expression, at=at, wrt=wrt, methods=method, eps=eps, dtype=dtype.value,
                             formulas=formulas, symbolic_time_limit=symbolic_timeout)
    if show_code:
        from gradcli.expr import parse
        from gradcli.hessian import show_code_hessian
        from gradcli.points import parse_point

        print(show_code_hessian(parse(expression).tree, report.expression, parse_point(at).values,
                                report.variables, report.dtype), end="")
    elif output is OutputFormat.json:
        from gradcli.render.hessian import hessian_json

        print(hessian_json(report))
    elif output is OutputFormat.csv:
        from gradcli.render.hessian import hessian_csv

        print(hessian_csv(report), end="")
    else:
        from gradcli.render.hessian import hessian_table

        hessian_table(report)
    print_diagnostics(report.warnings, report.notes)
    finish(report.failed)
