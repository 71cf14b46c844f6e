"""``gradcli hessian``."""

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
from gradcli.library.requests import HessianRequest


@handle_errors
@writes_latex
@writes_parquet
def hessian(
    expression: Annotated[Optional[str], typer.Argument(
        metavar="EXPR", help="The expression, e.g. \"(x1+5)*x2**2\".", show_default=False)] = None,
    *,
    file: FileOption = None,
    at: AtOption = None,
    points: PointsOption = None,
    grid: GridOption = None,
    wrt: Annotated[Optional[str], typer.Option(
        "--wrt", metavar="X,...", help="Only these variables (the others held fixed).")] = None,
    method: Annotated[str, typer.Option(
        "--method", "-m", metavar="METHODS", help=METHOD_HELP, autocompletion=complete_methods)
    ] = HessianRequest.method,
    eps: Annotated[Optional[float], typer.Option(
        "--eps", metavar="H", help="Fixed fd step (default: eps^(1/4)*max(1,|x|)).")] = None,
    dtype: DTypeOption = DType(HessianRequest.dtype),
    output: FormatWithParquetOption = OutputFormat.table,
    output_path: OutputPathOption = None,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    formulas: Annotated[bool, typer.Option("--formulas", help="Show SymPy's formulas.")] = HessianRequest.formulas,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = HessianRequest.symbolic_timeout,
    batch_size: BatchSizeOption = HessianRequest.batch_size,
    engine: EngineOption = ENGINE_DEFAULT,
    workers: WorkersOption = None,
    scheduler: SchedulerOption = None,
    rule: RuleOption = None,
    strict: StrictOption = HessianRequest.strict,
) -> None:
    """The Hessian at a point three ways (nested GradientTapes, finite differences, SymPy), and what it
    says there: eigenvalues, definiteness, the kind of critical point, condition number, 2/lambda_max.

    Examples:

    \b
      gradcli hessian "(x1+5)*x2**2" --at x1=2,x2=3
      gradcli hessian "x**2-y**2" --at x=0,y=0 --formulas
      gradcli hessian "x**3*y" --points pts.csv -f jsonl
    """
    from gradcli.expression.rules import define_rules

    checked = define_rules(rule, time_limit=symbolic_timeout)  # a wrong rule: exit 1, with a counterexample
    expression = expression_text(expression, file)
    if show_code:  # the program only: checked like a computation, but nothing is computed
        refuse_show_code_for_many(points, grid)
        from gradcli.programs.hessian import program_hessian

        print(program_hessian(expression, at=at, wrt=wrt, methods=method, eps=eps, dtype=dtype.value,
                              formulas=formulas), end="")
        return
    from gradcli.commands.library_run import run_request

    request = HessianRequest(expression=expression, at=at, points=points, grid=grid, wrt=wrt, method=method,
                             eps=eps, dtype=dtype.value, formulas=formulas, symbolic_timeout=symbolic_timeout,
                             batch_size=batch_size,
                          engine=engine.value, workers=workers, scheduler=scheduler, rule=rule, strict=strict)
    run_request(request, output, rules=checked, output_path=output_path)
