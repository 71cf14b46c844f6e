"""``gradcli hvp``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gradcli.commands.common import (AtOption, BatchSizeOption, DType, DTypeOption, FileOption, FormatWithLatexOption,
                                     GridOption, HtmlOption, OutputFormat, PointsOption, ShowCodeOption, StrictOption,
                                     SvgOption, SymbolicTimeoutOption, handle_errors, refuse_show_code_for_many,
                                     run_many, writes_latex)
from gradcli.commands.common import DigitsOption


@handle_errors
@writes_latex
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
             "three: tape), fd-of-gradient (fd), symbolic; default all.")] = None,
    dtype: DTypeOption = DType.float64,
    output: FormatWithLatexOption = OutputFormat.table,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = 10.0,
    batch_size: BatchSizeOption = 4096,
    strict: StrictOption = False,
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

    text = expression_text(expression, file)
    if show_code:
        refuse_show_code_for_many(points, grid)
        from gradcli.programs.hvp import program_hvp

        print(program_hvp(text, at=at, along=along, dtype=dtype.value), end="")
        return
    from gradcli.compute.batch.hvp import HvpBatch

    core = HvpBatch(text, along=along, methods=method, dtype=dtype.value, symbolic_time_limit=symbolic_timeout)
    run_many(core, points=points, grid=grid, at=at, output=output, batch_size=batch_size, strict=strict)
