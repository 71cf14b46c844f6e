"""``gradcli eval``."""

from __future__ import annotations

import enum
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (DType, DTypeOption, FileOption, HtmlOption, SvgOption, at_option, conclude,
                                     handle_errors, writes_latex)
from gradcli.commands.expression_file import expression_text


class ValueFormat(str, enum.Enum):
    plain = "plain"
    json = "json"
    latex = "latex"


@handle_errors
@writes_latex
def eval_value(
    expression: Annotated[Optional[str], typer.Argument(
        metavar="EXPR", help="The expression, e.g. \"x**2 + sin(y)\".", show_default=False)] = None,
    *,
    file: FileOption = None,
    at: at_option("required when EXPR has variables") = None,
    dtype: DTypeOption = DType.float64,
    output: Annotated[ValueFormat, typer.Option(
        "--format", "-f", case_sensitive=False, metavar="FORMAT",
        help="plain: the number alone; json: with the point and dtype; latex: a tabular.")
    ] = ValueFormat.plain,
    svg: SvgOption = None,
    html: HtmlOption = None,
) -> None:
    """The value alone, computed operation by operation in the dtype (no SymPy, no TensorFlow).

    Examples:

    \b
      gradcli eval "x**2 + sin(y)" --at x=2,y=0       prints 4.0
      gradcli eval "exp(x)" --at x=1 --dtype float32  prints 2.718282
      gradcli eval "log(x)" --at x=2 -f json
    """
    expression = expression_text(expression, file)
    from gradcli.compute.value import compute_value

    report = compute_value(expression, at=at, dtype=dtype.value)
    if output is ValueFormat.json:
        from gradcli.render.common import to_json

        print(to_json(report.to_dict()))
    elif output is ValueFormat.latex:
        from gradcli.render.latex import eval_latex

        print(eval_latex(report.to_dict()), end="")
    elif report.value is not None:
        print(repr(report.value))
    conclude(report)
