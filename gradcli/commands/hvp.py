"""``gradcli hvp``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gradcli.commands.common import ENGINE_DEFAULT, EngineOption, SchedulerOption, WorkersOption
from gradcli.commands.common import (AtOption, BatchSizeOption, DigitsOption, DType, DTypeOption, FileOption,
                                     FormatWithParquetOption, GridOption, HtmlOption, OutputFormat, OutputPathOption,
                                     PointsOption, ShowCodeOption, StrictOption, SvgOption, SymbolicTimeoutOption,
                                     handle_errors, refuse_show_code_for_many, writes_latex, writes_parquet)
from gradcli.library.requests import HvpRequest

@handle_errors
@writes_latex
@writes_parquet
def hvp(
    expression: Annotated[Optional[str], typer.Argument(
        metavar="EXPR", help="The expression, e.g. \"(x1+5)*x2**2\".", show_default=False)] = None,
    *,
    file: FileOption = None,
    at: AtOption = None,
    points: PointsOption = None,
    grid: GridOption = None,
    along: Annotated[Optional[list[str]], typer.Option(
        "--along", metavar="X=V,...", help="The direction v, e.g. x1=1,x2=2 (variables not named: 0).  [required]",
        show_default=False)] = None,
    method: Annotated[Optional[str], typer.Option(
        "--method", "-m", metavar="METHODS",
        help="Any of forward-over-reverse (for), reverse-over-reverse (ror), reverse-over-forward (rof) (all "
             "three: tape), fd-of-gradient (fd), symbolic; default all.")] = HvpRequest.method,
    dtype: DTypeOption = DType(HvpRequest.dtype),
    output: FormatWithParquetOption = OutputFormat.table,
    output_path: OutputPathOption = None,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = HvpRequest.symbolic_timeout,
    batch_size: BatchSizeOption = HvpRequest.batch_size,
    engine: EngineOption = ENGINE_DEFAULT,
    workers: WorkersOption = None,
    scheduler: SchedulerOption = None,
    strict: StrictOption = HvpRequest.strict,
) -> None:
    """H·v, the Hessian times a direction, without the Hessian: three compositions of forward and reverse mode,
    fd of the tape gradient, and the exact value, each with its time and error. --points/--grid: one record
    per point, the same v at each, a chunk at a time.

    Examples:

    \b
      gradcli hvp "(x1+5)*x2**2" --at x1=2,x2=3 --along x1=1,x2=2
      gradcli hvp "x**2*y + sin(x*y)" --at x=1,y=2 --along x=1 -m for,ror -f json
      gradcli hvp "x**2*y" --grid x=0:2:3,y=1:2:2 --along x=1,y=1 -f jsonl
    """
    from gradcli.commands.expression_file import expression_text

    request = HvpRequest(expression=expression_text(expression, file), at=at, along=along, points=points,
                         grid=grid, method=method, dtype=dtype.value, symbolic_timeout=symbolic_timeout,
                         batch_size=batch_size,
                          engine=engine.value, workers=workers, scheduler=scheduler, strict=strict)
    if show_code:
        refuse_show_code_for_many(points, grid)
        from gradcli.programs.hvp import program_hvp

        print(program_hvp(request.expression, at=at, along=along, dtype=request.dtype), end="")
        return
    from gradcli.commands.library_run import run_request

    run_request(request, output, rules=None, output_path=output_path)
