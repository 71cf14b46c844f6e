"""``gradcli jvp``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gradcli.commands.common import ENGINE_DEFAULT, EngineOption, SchedulerOption, WorkersOption
from gradcli.commands.common import (AtOption, BatchSizeOption, DigitsOption, DType, DTypeOption,
                                     FormatWithParquetOption, GridOption, HtmlOption, OutputFormat, OutputPathOption,
                                     PointsOption, ShowCodeOption, StrictOption, SvgOption, SymbolicTimeoutOption,
                                     handle_errors, refuse_show_code_for_many, writes_latex, writes_parquet)
from gradcli.library.requests import JvpRequest

@handle_errors
@writes_latex
@writes_parquet
def jvp(
    expressions: Annotated[Optional[list[str]], typer.Argument(
        metavar="EXPR...", help="One or more expressions, e.g. \"(x1+5)*x2**2\".", show_default=False)] = None,
    *,
    at: AtOption = None,
    along: Annotated[Optional[list[str]], typer.Option(
        "--along", metavar="X=V,...", help="The direction v, e.g. x1=1,x2=2 (variables not named: 0).  [required]",
        show_default=False)] = None,
    points: PointsOption = None,
    grid: GridOption = None,
    method: Annotated[str, typer.Option(
        "--method", "-m", metavar="METHODS", help="Any of symbolic,tape,fd,complex (comma-separated).")
    ] = JvpRequest.method,
    dtype: DTypeOption = DType(JvpRequest.dtype),
    output: FormatWithParquetOption = OutputFormat.table,
    output_path: OutputPathOption = None,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = JvpRequest.symbolic_timeout,
    batch_size: BatchSizeOption = JvpRequest.batch_size,
    engine: EngineOption = ENGINE_DEFAULT,
    workers: WorkersOption = None,
    scheduler: SchedulerOption = None,
    strict: StrictOption = JvpRequest.strict,
) -> None:
    """J·v, the derivative along a direction v: ForwardAccumulator, exact, fd along v and the complex step.

    fd differentiates t -> f(x + t v) at t = 0 with a central stencil (and its error estimate); the complex step
    takes Im f(x + i h v)/h. Several expressions: one row each (the Jacobian times v). --points/--grid: one
    record per point, the same v at each.

    Examples:

    \b
      gradcli jvp "(x1+5)*x2**2" --at x1=2,x2=3 --along x1=1,x2=2
      gradcli jvp "sin(x)*y" "x*y**2" --at x=1,y=2 --along x=1 -f json
      gradcli jvp "x**2*y" --grid x=0:2:5 --at y=3 --along x=1 -f csv
    """
    request = JvpRequest(expressions=expressions or [], at=at, along=along, points=points, grid=grid,
                         method=method, dtype=dtype.value, symbolic_timeout=symbolic_timeout, batch_size=batch_size,
                          engine=engine.value, workers=workers, scheduler=scheduler,
                         strict=strict)
    if show_code:
        refuse_show_code_for_many(points, grid)
        from gradcli.programs.jvp import program_jvp

        print(program_jvp(request.expressions, at=at, along=along, dtype=request.dtype), end="")
        return
    from gradcli.commands.library_run import run_request

    run_request(request, output, rules=None, output_path=output_path)
