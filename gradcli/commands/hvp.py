"""``gradcli hvp``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gradcli.commands.common import (AtOption, DType, DTypeOption, FileOption, FormatWithLatexOption, GridOption,
                                     HtmlOption, OutputFormat, PointsOption, ShowCodeOption, SvgOption,
                                     SymbolicTimeoutOption, handle_errors, writes_latex)


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
        help="Any of forward-over-reverse (for), reverse-over-reverse (ror), reverse-over-forward (rof), "
             "fd-of-gradient (fd), exact (symbolic); default all.")] = None,
    dtype: DTypeOption = DType.float64,
    output: FormatWithLatexOption = OutputFormat.table,
    svg: SvgOption = None,
    html: HtmlOption = None,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = 10.0,
) -> None:
    """H·v, the Hessian times a direction, without the Hessian: three compositions of forward and reverse mode,
    fd of the tape gradient, and the exact value, each with its time and error. --points/--grid: one record
    per point, the same v at each (at most 10,000 points, a chunk at a time).

    Examples:

    \b
      gradcli hvp "(x1+5)*x2**2" --at x1=2,x2=3 --along x1=1,x2=2
      gradcli hvp "x**2*y + sin(x*y)" --at x=1,y=2 --along x=1 -m for,ror -f json
      gradcli hvp "x**2*y" --grid x=0:2:3,y=1:2:2 --along x=1,y=1 -f jsonl
    """
    from gradcli.commands.common import as_batch, refuse_show_code_for_many
    from gradcli.commands.expression_file import expression_text

    text = expression_text(expression, file)
    if show_code:
        refuse_show_code_for_many(points, grid)
        from gradcli.programs.hvp import program_hvp

        print(program_hvp(text, at=at, along=along, dtype=dtype.value), end="")
        return
    if as_batch(points=points, grid=grid, output=output):
        from gradcli.commands.common import finish
        from gradcli.compute.along_points import hvp_many
        from gradcli.render import hvp as render
        from gradcli.render.jvp import write_many

        run = hvp_many(text, points=points, grid=grid, at=at, along=along, dtype=dtype.value, methods=method,
                       symbolic_time_limit=symbolic_timeout)
        write_many(run, output.value, render.hvp_csv_rows, render.hvp_table_row, render.hvp_title)
        finish(run.failed)
        return
    from gradcli.commands.common import conclude, emit
    from gradcli.compute.hvp import compute_hvp
    from gradcli.render import hvp as render
    from gradcli.render.latex import hvp_latex

    report = compute_hvp(text, at=at, along=along, dtype=dtype.value, methods=method,
                         symbolic_time_limit=symbolic_timeout)
    emit(output, json=lambda: render.hvp_json(report), table=lambda: render.hvp_table(report),
         latex=lambda: hvp_latex(report.to_dict()))
    conclude(report)
