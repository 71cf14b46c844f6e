"""``gradcli check``."""

from __future__ import annotations

import enum
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (DigitsOption, DType, DTypeOption, FileOption, GridOption, HtmlOption,
                                     PointsOption, RuleOption, StrictOption, SvgOption, SymbolicTimeoutOption,
                                     at_option, handle_errors, writes_latex)
from gradcli.commands.expression_file import expression_text
from gradcli.library.requests import SAMPLES_RANGE, CheckRequest


class CheckFormat(str, enum.Enum):
    text = "text"
    json = "json"
    latex = "latex"


@handle_errors
@writes_latex
def check(
    expression: Annotated[Optional[str], typer.Argument(
        metavar="EXPR", help="The expression, e.g. \"x**2*y\".", show_default=False)] = None,
    *,
    file: FileOption = None,
    expect: Annotated[list[str], typer.Option(
        "--expect", "-e", metavar="X=FORMULA", help="Your derivative by X (repeatable).",
        show_default=False)] = None,
    order: Annotated[int, typer.Option("--order", "-n", metavar="N", help="Check the N-th derivatives.")] = CheckRequest.order,
    at: at_option("else --points/--grid, else random points in --box") = None,
    points: PointsOption = None,
    grid: GridOption = None,
    box: Annotated[str, typer.Option("--box", metavar="LOW:HIGH",
                                     help="Else: points sampled (where defined) in this box.")] = CheckRequest.box,
    samples: Annotated[int, typer.Option("--samples", min=SAMPLES_RANGE[0], max=SAMPLES_RANGE[1], metavar="N",
                                         help="How many random points.")] = CheckRequest.samples,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Seed of the random points.")] = CheckRequest.seed,
    output: Annotated[CheckFormat, typer.Option(
        "--format", "-f", case_sensitive=False, metavar="FORMAT",
        help="text, json for scripts, or latex (tabulars).")] = CheckFormat.text,
    digits: DigitsOption = None,
    svg: SvgOption = None,
    html: HtmlOption = None,
    rtol: Annotated[Optional[float], typer.Option(
        "--rtol", metavar="R", help="Agree where |expected - exact| <= ATOL + R*|exact| (numpy's isclose; "
        "default 1e-9, float32: 1e-5).", show_default=False)] = None,
    atol: Annotated[Optional[float], typer.Option(
        "--atol", metavar="A", help="The absolute part of that tolerance (same default).",
        show_default=False)] = None,
    dtype: DTypeOption = DType(CheckRequest.dtype),
    symbolic_timeout: SymbolicTimeoutOption = CheckRequest.symbolic_timeout,
    rule: RuleOption = None,
    strict: StrictOption = CheckRequest.strict,
) -> None:
    """Check hand-derived derivatives against SymPy's exact ones: proved equal by SymPy, or equal at
    every point sampled (exit 0), or a counterexample with exact values (exit 1).

    Examples:

    \b
      gradcli check "x**2*y" --expect x=2*x*y --expect y=x**2
      gradcli check "sin(x)" -e "x=-sin(x)" -n 2 --at x=1
      gradcli check "log(x)" -e x=1/x --box 0.1:5 -f json
      gradcli check "sin(x)" -e "x=1 - x**2/2" --box -0.1:0.1 --atol 1e-5
    """
    from gradcli.expression.rules import define_rules

    checked = define_rules(rule, time_limit=symbolic_timeout)  # a wrong rule: exit 1, with a counterexample
    expression = expression_text(expression, file)
    request = CheckRequest(expression=expression, expect=expect, order=order, at=at, points=points, grid=grid,
                           box=box, samples=samples, seed=seed, symbolic_timeout=symbolic_timeout, rtol=rtol,
                           atol=atol, dtype=dtype.value, rule=rule, strict=strict)
    report = request.run(rules=checked)
    if output is CheckFormat.json:
        from gradcli.render.common import to_json

        print(to_json(report.to_dict()))
    elif output is CheckFormat.latex:
        from gradcli.render.check_latex import check_latex

        print(check_latex(report.to_dict()), end="")
    else:
        _print_text(report)
    from gradcli.commands.common import conclude

    conclude(report)


def _print_text(report) -> None:
    """The verdict first (ok, differs, or nothing checked), then how each formula was decided."""
    from gradcli.compute.check import (DIFFERS, NOT_CHECKED, PROVED_DIFFERENT, PROVED_EQUAL, SAMPLED,
                                       TOLERANCES)

    what = "derivative" if report.order == 1 else f"derivative of order {report.order}"
    c = report.counterexample
    defaults = (TOLERANCES[report.dtype],) * 2
    within = "" if (report.rtol, report.atol) == defaults else f" within --rtol {report.rtol:g} --atol {report.atol:g}"
    if report.passed:
        names = ", ".join(e["variable"] for e in report.expectations)
        print(f"ok: every expected {what} ({names}) matches the exact one{within}")
    elif c is not None:
        point = ", ".join(f"{k}={v!r}" for k, v in c["point"].items())
        entry = next(e for e in report.expectations if e["variable"] == c["variable"])
        print(f"differs: {what} by {c['variable']} at {point}")
        print(f"  expected  {c['expected_formula']} = {c['expected'] if c['expected'] is not None else 'undefined'}")
        print(f"  exact     {entry['exact']} = {c['exact']!r}")
        if c["expected"] is None:
            print("  difference: undefined (the expected formula has no number here)")
        elif c["difference"] is None:
            print("  difference: the exact value is beyond float64's range, the expected one is not")
        elif entry["decision"] == PROVED_DIFFERENT:
            print(f"  difference {c['difference']!r} (SymPy proves expected - exact = {entry['sympy_difference']}, "
                  "not 0)")
        else:
            print(f"  difference {c['difference']!r} (more than the {c['allowed']:.3g} that --rtol {report.rtol:g} "
                  f"and --atol {report.atol:g} allow)")
    else:
        print(f"not decided: no point where {report.expression} and its exact {what} are defined could be checked")
    sampled = f"equal at {report.points_checked:,} sampled point{'s' if report.points_checked != 1 else ''}"
    if report.points_exact:
        sampled += f" ({report.points_exact:,} at 30 digits)"
    how = {PROVED_EQUAL: "proved equal by SymPy", PROVED_DIFFERENT: "proved different by SymPy",
           DIFFERS: "differs at the point above", SAMPLED: f"{sampled}, not proved",
           NOT_CHECKED: "not decided" + (" (the check stopped at the first counterexample)" if c else "")}
    width = max(len(e["variable"]) for e in report.expectations)
    for e in report.expectations:
        print(f"  {e['variable']:<{width}}  {how[e['decision']]}")
