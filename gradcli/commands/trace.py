"""``gradcli trace``."""

from __future__ import annotations

import enum
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (DType, DTypeOption, HtmlOption, RuleOption, ShowCodeOption, StrictOption,
                                     SvgOption, SymbolicTimeoutOption, at_option, finish, handle_errors, writes_latex)
from gradcli.commands.common import DigitsOption
from gradcli.library.requests import TraceRequest


class TraceFormat(str, enum.Enum):
    table = "table"
    json = "json"
    dot = "dot"
    latex = "latex"


@handle_errors
@writes_latex
def trace(
    expressions: Annotated[Optional[list[str]], typer.Argument(
        metavar="EXPR...", help="One or more expressions, e.g. \"(x1+5)*x2**2\".", show_default=False)] = None,
    *,
    at: at_option("required") = None,
    along: Annotated[Optional[list[str]], typer.Option(
        "--along", metavar="X=V,...", help="Also the forward sweep along this direction: each node's tangent "
        "(variables not named: 0).", show_default=False)] = None,
    points: Annotated[Optional[str], typer.Option("--points", metavar="FILE|-", hidden=True)] = None,
    grid: Annotated[Optional[str], typer.Option("--grid", metavar="X=A:B:N,...", hidden=True)] = None,
    dtype: DTypeOption = DType(TraceRequest.dtype),
    output: Annotated[TraceFormat, typer.Option(
        "--format", "-f", case_sensitive=False, metavar="FORMAT",
        help="table, json, latex or dot (Graphviz: values and adjoints on the nodes).")] = TraceFormat.table,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    show_code: ShowCodeOption = False,
    symbolic_timeout: SymbolicTimeoutOption = TraceRequest.symbolic_timeout,
    rule: RuleOption = None,
    strict: StrictOption = TraceRequest.strict,
) -> None:
    """The computation as the tape records it: each node's value, its adjoint, and its tangent along a direction.

    One row per operation of the expression (inputs first, children before parents). The reverse sweep writes
    out each node's adjoint as the sum over the nodes that use it; the forward sweep along --along each node's
    tangent. Every value is checked: values against SymPy's exact ones, adjoints against TensorFlow's
    tape.gradient(z, intermediates), tangents against ForwardAccumulator.jvp. A value that is not finite (or
    far from exact) where the exact one is finite: the first node where it went wrong, and why.

    Examples:

    \b
      gradcli trace "(x1+5)*x2**2" --at x1=2,x2=3
      gradcli trace "3*x" "x**2" --at x=5
      gradcli trace "log(1+exp(x))" --at x=100 --dtype float32
      gradcli trace "(x1+5)*x2**2" --at x1=2,x2=3 --along x1=1,x2=2 -f dot
    """
    request = TraceRequest(expressions=expressions or [], at=at, along=along, points=points, grid=grid,
                           dtype=dtype.value, symbolic_timeout=symbolic_timeout, rule=rule, strict=strict)
    from gradcli.expression.rules import define_rules

    checked = define_rules(rule, time_limit=symbolic_timeout)  # a wrong rule: exit 1, with a counterexample
    if show_code:
        from gradcli.programs.trace import program_trace

        print(program_trace(expressions, at=at, dtype=dtype.value, along=along), end="")
        return
    from gradcli.compute.batch.engine import run_batch
    from gradcli.compute.batch.points import point_chunks
    from gradcli.render import trace as render
    from gradcli.render.detail import DetailSink

    core = request.make_core()
    core.notes += checked.notes
    views = {TraceFormat.json: None, TraceFormat.table: lambda doc: render.trace_table(core.report),
             TraceFormat.dot: lambda doc: print(render.trace_dot(core.report), end="")}
    if output is TraceFormat.latex:
        from gradcli.render.latex import trace_latex

        views[TraceFormat.latex] = lambda doc: print(trace_latex(doc), end="")
    summary = run_batch(core, point_chunks(core, points=None, grid=None, at=at, batch_size=1),
                        DetailSink(views[output]))
    finish(core.failed or (strict and summary.with_warnings > 0))  # --strict: a warning fails the run too
