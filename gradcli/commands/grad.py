"""``gradcli grad``."""

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
from gradcli.commands.expression_file import expressions_from
from gradcli.errors import UsageError
from gradcli.library.requests import GradRequest
from gradcli.methods.fd_schemes import Scheme


@handle_errors
@writes_latex
@writes_parquet
def grad(
    expressions: Annotated[Optional[list[str]], typer.Argument(
        metavar="EXPR...", help="One or more expressions, e.g. \"(x1+5)*x2**2\".", show_default=False)] = None,
    *,
    file: FileOption = None,
    at: AtOption = None,
    points: PointsOption = None,
    grid: GridOption = None,
    wrt: Annotated[Optional[str], typer.Option(
        "--wrt", metavar="X,...", help="Only these variables (the rest are constants).")] = None,
    constants: Annotated[Optional[str], typer.Option(
        "--constants", metavar="X,...",
        help="As tf.constant: the tape gives None (one point).")
    ] = None,
    watch: Annotated[Optional[str], typer.Option(
        "--watch", metavar="X,...",
        help="tape.watch() these --constants (the fix).")] = None,
    one_shot: Annotated[bool, typer.Option(
        "--one-shot", help="No persistent=True: a 2nd tape.gradient fails.")] = GradRequest.one_shot,
    method: Annotated[str, typer.Option(
        "--method", "-m", metavar="METHODS", help=METHOD_HELP, autocompletion=complete_methods)
    ] = GradRequest.method,
    scheme: Annotated[Scheme, typer.Option(
        "--scheme", case_sensitive=False, metavar="SCHEME",
        help="fd formula: central, forward, backward or richardson.")] = Scheme(GradRequest.scheme),
    eps: Annotated[Optional[float], typer.Option(
        "--eps", metavar="H", help="Fixed fd step (default: from dtype and scheme).")] = None,
    dtype: DTypeOption = DType(GradRequest.dtype),
    output: FormatWithParquetOption = OutputFormat.table,
    output_path: OutputPathOption = None,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = GradRequest.symbolic_timeout,
    batch_size: BatchSizeOption = GradRequest.batch_size,
    engine: EngineOption = ENGINE_DEFAULT,
    workers: WorkersOption = None,
    scheduler: SchedulerOption = None,
    reduce: Annotated[Optional[str], typer.Option(
        "--reduce", metavar="KIND", help="sum or mean of the gradient over the rows.",
        show_default=False)] = None,
    rule: RuleOption = None,
    strict: StrictOption = GradRequest.strict,
) -> None:
    """The gradient at a point: SymPy's exact value, TensorFlow's GradientTape and finite differences;
    of several expressions, the Jacobian and the sum the tape returns. --show-code: a program per column.

    Examples:

    \b
      gradcli grad "(x1+5)*x2**2" --at x1=2,x2=3
      gradcli grad "3*x" "x**2" --at x=5 -m tape,fd
      gradcli grad "x**2*y" --grid x=-1:1:5,y=0:1:3 -f csv
    """
    from gradcli.expression.rules import define_rules

    checked = define_rules(rule, time_limit=symbolic_timeout)  # a wrong rule: exit 1, with a counterexample
    expressions = expressions_from(expressions, file)
    if show_code:  # the programs only: neither tape nor SymPy runs
        refuse_show_code_for_many(points, grid)
        from gradcli.programs.grad import program_grad as grad_program

        print(grad_program(expressions, at=at, wrt=wrt, dtype=dtype.value, methods=method, scheme=scheme.value,
                           eps=eps, constants=constants, watch=watch), end="")
        return
    from gradcli.commands.library_run import run_request

    request = GradRequest(expressions=expressions, at=at, points=points, grid=grid, wrt=wrt, constants=constants,
                          watch=watch, method=method, scheme=scheme.value, eps=eps, dtype=dtype.value,
                          symbolic_timeout=symbolic_timeout, batch_size=batch_size,
                          engine=engine.value, workers=workers, scheduler=scheduler, rule=rule, strict=strict,
                          one_shot=one_shot, reduce=reduce)
    if request.reduce is not None:
        from gradcli.commands.common import finish, output_to
        from gradcli.render.common import print_diagnostics
        from gradcli.render.reduce import write_reduction

        if output.value not in ("table", "json"):
            raise UsageError(f"--reduce writes one result: -f table or -f json, not -f {output.value}")
        report = request.reduced(rules=checked)
        with output_to(output_path, output):
            write_reduction(report.to_dict(), output.value)
        print_diagnostics(report.warnings, report.notes)
        finish(report.failed)
        return
    run_request(request, output, rules=checked, output_path=output_path)
