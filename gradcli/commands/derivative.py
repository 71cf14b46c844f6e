"""``gradcli derivative``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gradcli.commands.common import ENGINE_DEFAULT, EngineOption, SchedulerOption, WorkersOption
from gradcli.commands.common import (METHOD_HELP, AtOption, BatchSizeOption, DType, DTypeOption, FileOption,
                                     FormatWithParquetOption, GridOption, HtmlOption, OutputFormat, OutputPathOption,
                                     PointsOption, RuleOption, ShowCodeOption, StrictOption, SvgOption,
                                     SymbolicTimeoutOption, handle_errors, refuse_show_code_for_many, writes_latex,
                                     writes_parquet)
from gradcli.commands.common import DigitsOption
from gradcli.commands.completion import complete_methods
from gradcli.commands.expression_file import expression_text
from gradcli.library.requests import DerivativeRequest


@handle_errors
@writes_latex
@writes_parquet
def derivative(
    expression: Annotated[Optional[str], typer.Argument(
        metavar="EXPR", help="The expression, e.g. \"sin(x)\".", show_default=False)] = None,
    *,
    file: FileOption = None,
    at: AtOption = None,
    points: PointsOption = None,
    grid: GridOption = None,
    order: Annotated[int, typer.Option("--order", "-n", metavar="N", help="Derivatives 1..N (N up to 10).")] = DerivativeRequest.order,
    wrt: Annotated[Optional[str], typer.Option(
        "--wrt", metavar="X", help="The variable, when there are several (others fixed).")] = None,
    method: Annotated[str, typer.Option(
        "--method", "-m", metavar="METHODS", help=METHOD_HELP, autocompletion=complete_methods)
    ] = DerivativeRequest.method,
    eps: Annotated[Optional[float], typer.Option(
        "--eps", metavar="H", help="Fixed fd step for every order (default: per order).")] = None,
    accuracy: Annotated[int, typer.Option(
        "--accuracy", metavar="P", help="fd stencil order: 2, 4, 6 or 8 (error ~ h^P).")] = DerivativeRequest.accuracy,
    dtype: DTypeOption = DType(DerivativeRequest.dtype),
    output: FormatWithParquetOption = OutputFormat.table,
    output_path: OutputPathOption = None,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    formulas: Annotated[bool, typer.Option("--formulas", help="Show SymPy's formula for each order.")] = DerivativeRequest.formulas,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = DerivativeRequest.symbolic_timeout,
    batch_size: BatchSizeOption = DerivativeRequest.batch_size,
    engine: EngineOption = ENGINE_DEFAULT,
    workers: WorkersOption = None,
    scheduler: SchedulerOption = None,
    rule: RuleOption = None,
    strict: StrictOption = DerivativeRequest.strict,
) -> None:
    """The first N derivatives of a one-variable function: SymPy, nested GradientTapes and fd stencils.

    Examples:

    \b
      gradcli derivative "sin(x)" --at x=1 -n 4
      gradcli derivative "exp(x)*cos(x)" --at x=0.5 -n 3 --formulas
      gradcli derivative "x**3" --grid x=-1:1:5 -f csv
    """
    from gradcli.expression.rules import define_rules

    checked = define_rules(rule, time_limit=symbolic_timeout)  # a wrong rule: exit 1, with a counterexample
    expression = expression_text(expression, file)
    request = DerivativeRequest(expression=expression, at=at, points=points, grid=grid, order=order, wrt=wrt,
                                method=method, eps=eps, accuracy=accuracy, dtype=dtype.value, formulas=formulas,
                                symbolic_timeout=symbolic_timeout, batch_size=batch_size,
                          engine=engine.value, workers=workers, scheduler=scheduler, rule=rule, strict=strict)
    if show_code:  # the program only: checked like a computation, but nothing is computed
        core = request.make_core()
        refuse_show_code_for_many(points, grid)
        from gradcli.programs.derivative import program_derivative

        print(program_derivative(core, at), end="")
        return
    from gradcli.commands.library_run import run_request

    run_request(request, output, rules=checked, output_path=output_path)
