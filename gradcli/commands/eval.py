"""``gradcli eval``."""

from __future__ import annotations

import enum
from typing import Annotated, Optional

import typer

from gradcli.commands.common import ENGINE_DEFAULT, EngineOption, SchedulerOption, WorkersOption
from gradcli.commands.common import (BatchSizeOption, DigitsOption, DType, DTypeOption, FileOption, GridOption,
                                     HtmlOption, OutputPathOption, PointsOption, StrictOption, SvgOption, at_option,
                                     finish, handle_errors, output_to, writes_latex, writes_parquet)
from gradcli.commands.expression_file import expression_text
from gradcli.library.requests import EvalRequest


class ValueFormat(str, enum.Enum):
    plain = "plain"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    table = "table"
    latex = "latex"
    parquet = "parquet"


@handle_errors
@writes_latex
@writes_parquet
def eval_value(
    expression: Annotated[Optional[str], typer.Argument(
        metavar="EXPR", help="The expression, e.g. \"x**2 + sin(y)\".", show_default=False)] = None,
    *,
    file: FileOption = None,
    at: at_option("required when EXPR has variables, unless --points/--grid") = None,
    points: PointsOption = None,
    grid: GridOption = None,
    dtype: DTypeOption = DType(EvalRequest.dtype),
    output: Annotated[ValueFormat, typer.Option(
        "--format", "-f", case_sensitive=False, metavar="FORMAT",
        help="plain: the number alone (many points: one a line, empty where undefined); json, jsonl (per "
             "point), csv, parquet (with --output), table, or latex (one point: a tabular).")
    ] = ValueFormat.plain,
    output_path: OutputPathOption = None,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    batch_size: BatchSizeOption = EvalRequest.batch_size,
    engine: EngineOption = ENGINE_DEFAULT,
    workers: WorkersOption = None,
    scheduler: SchedulerOption = None,
    strict: StrictOption = EvalRequest.strict,
) -> None:
    """The value alone, computed operation by operation in the dtype (no SymPy, no TensorFlow).

    Examples:

    \b
      gradcli eval "x**2 + sin(y)" --at x=2,y=0       prints 4.0
      gradcli eval "exp(x)" --at x=1 --dtype float32  prints 2.718282
      gradcli eval "log(x)" --grid x=1:3:3 -f csv
    """
    expression = expression_text(expression, file)
    from gradcli.expression.points import has_uncertainty

    if has_uncertainty(at):  # x=2±0.1: the value's uncertainty, propagate's table
        from gradcli.commands.propagate import eval_propagation

        eval_propagation(expression, at=at, points=points, grid=grid, dtype=dtype.value, output=output.value,
                         output_path=output_path, strict=strict)
        return
    from gradcli.render.value import value_sink

    request = EvalRequest(expression=expression, at=at, points=points, grid=grid, dtype=dtype.value,
                          batch_size=batch_size,
                          engine=engine.value, workers=workers, scheduler=scheduler, strict=strict)
    with output_to(output_path, output) as target:
        sink = value_sink(output.value, one_point=request.one_point, file=target)
        finish(request.run(sink).failed)
