"""``gradcli steps``."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (FileOption, FormatWithLatexOption, HtmlOption, OutputFormat, StrictOption,
                                     SvgOption, SymbolicTimeoutOption, at_option, conclude, emit, finish, handle_errors,
                                     writes_latex)
from gradcli.commands.common import DigitsOption
from gradcli.commands.completion import complete_dtypes
from gradcli.commands.expression_file import expression_text
from gradcli.commands.plot_file import PlotFileOption, refuse_same_file
from gradcli.library.requests import StepsRequest


@handle_errors
@writes_latex
def steps(
    expression: Annotated[Optional[str], typer.Argument(
        metavar="EXPR", help="The expression, e.g. \"sin(x)\".", show_default=False)] = None,
    *,
    file: FileOption = None,
    at: at_option("required") = None,
    wrt: Annotated[Optional[str], typer.Option(
        "--wrt", metavar="X", help="The variable, when there are several (others fixed).")] = None,
    order: Annotated[int, typer.Option("--order", "-n", metavar="N", help="Derivative order, 1 to 4.")
                     ] = StepsRequest.order,
    dtype: Annotated[str, typer.Option(
        "--dtype", metavar="DTYPES", help="float64, float32, or both: float32,float64.",
        autocompletion=complete_dtypes)] = StepsRequest.dtype,
    formula_names: Annotated[Optional[str], typer.Option(
        "--formulas", metavar="NAMES", help="Only these, in this order, e.g. "
        "central,forward,complex (default: all those named above).", show_default=False)] = None,
    output: FormatWithLatexOption = OutputFormat.table,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    plot: Annotated[bool, typer.Option(
        "--plot", help="Also draw the errors against h, log-log (on stderr with -f json/csv).")] = False,
    plot_file: PlotFileOption = None,
    symbolic_timeout: SymbolicTimeoutOption = StepsRequest.symbolic_timeout,
    strict: StrictOption = StepsRequest.strict,
) -> None:
    """The error of every difference formula against the step h, from 1e-1 down to the dtype's eps.

    Truncation falls with h, rounding rises: each formula's V, with gradcli's default step, the best
    step and theory's optimal step marked. Complex step too, at order 1. Formulas: forward, backward,
    central, stencil4, stencil6, stencil8, richardson, complex.

    Examples:

    \b
      gradcli steps "sin(x)" --at x=1 --plot
      gradcli steps "sin(x)" --at x=1 --formulas central,forward,complex
      gradcli steps "exp(x)" --at x=1 --dtype float32,float64
      gradcli steps "log(x)" --at x=2 -n 2 -f csv
    """
    expression = expression_text(expression, file)
    refuse_same_file(plot_file, svg, html)
    report = StepsRequest(expression=expression, at=at, wrt=wrt, order=order, dtype=dtype, formulas=formula_names,
                          symbolic_timeout=symbolic_timeout, strict=strict).run()
    from gradcli.render import steps as render
    from gradcli.render.steps_latex import steps_latex

    emit(output, json=lambda: render.steps_json(report), csv=lambda: render.steps_csv(report),
         table=lambda: render.steps_table(report), latex=lambda: steps_latex(report.to_dict()))
    if plot:  # as descend --plot: JSON and CSV on stdout stay parseable
        render.steps_plot(report, file=sys.stdout if output is OutputFormat.table else sys.stderr)
    if plot_file:
        from gradcli.render.plot_file import write_plot_file

        write_plot_file(render.plot_panels(report), plot_file)
    conclude(report)
    finish(strict and bool(report.warnings))  # --strict: a warning fails the run too
