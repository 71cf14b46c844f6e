"""``gradcli eval``."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from gradcli.commands.common import AtOption, DType, DTypeOption, conclude, handle_errors


class ValueFormat(str, enum.Enum):
    plain = "plain"
    json = "json"


@handle_errors
def eval_value(
    expression: Annotated[str, typer.Argument(help="The expression, e.g. \"x**2 + sin(y)\".", show_default=False)],
    *,
    at: AtOption = None,
    dtype: DTypeOption = DType.float64,
    output: Annotated[ValueFormat, typer.Option(
        "--format", "-f", help="plain: the number alone (for scripts); json: with the point and dtype.")
    ] = ValueFormat.plain,
) -> None:
    """The value alone, computed operation by operation in the dtype (no SymPy, no TensorFlow).

    gradcli eval "x**2 + sin(y)" --at x=2,y=0    prints 4.0
    """
    from gradcli.compute.value import compute_value

    report = compute_value(expression, at=at, dtype=dtype.value)
    if output is ValueFormat.json:
        from gradcli.render.common import to_json

        print(to_json(report.to_dict()))
    elif report.value is not None:
        print(repr(report.value))
    conclude(report)
