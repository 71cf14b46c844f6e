"""``gradcli check``."""

from __future__ import annotations

import enum
from typing import Annotated, Optional

import typer

from gradcli.commands.common import (FileOption, GridOption, PointsOption, SymbolicTimeoutOption, at_option,
                                     handle_errors)
from gradcli.commands.expression_file import expression_text


class CheckFormat(str, enum.Enum):
    text = "text"
    json = "json"


@handle_errors
def check(
    expression: Annotated[Optional[str], typer.Argument(
        metavar="EXPR", help="The expression, e.g. \"x**2*y\".", show_default=False)] = None,
    *,
    file: FileOption = None,
    expect: Annotated[list[str], typer.Option(
        "--expect", "-e", metavar="X=FORMULA", help="Your derivative by X (repeatable).",
        show_default=False)] = None,
    order: Annotated[int, typer.Option("--order", "-n", metavar="N", help="Check the N-th derivatives.")] = 1,
    at: at_option("else --points/--grid, else random points in --box") = None,
    points: PointsOption = None,
    grid: GridOption = None,
    box: Annotated[str, typer.Option("--box", metavar="LOW:HIGH",
                                     help="Else: random points (where defined) in this box.")] = "-2:2",
    samples: Annotated[int, typer.Option("--samples", min=1, max=100_000, metavar="N",
                                         help="How many random points.")] = 20,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Seed of the random points.")] = 0,
    output: Annotated[CheckFormat, typer.Option("--format", "-f", case_sensitive=False, metavar="FORMAT",
                                                help="text, or json for scripts.")] = CheckFormat.text,
    rtol: Annotated[float, typer.Option("--rtol", metavar="R", help="Agree where |expected - exact| <= "
                                        "ATOL + R*|exact| (numpy's isclose).")] = 1e-9,
    atol: Annotated[float, typer.Option("--atol", metavar="A", help="The absolute part of that tolerance.")] = 1e-9,
    symbolic_timeout: SymbolicTimeoutOption = 10.0,
) -> None:
    """Check hand-derived derivatives against SymPy's exact ones: exit 0 when every --expect matches at
    every point, 1 with the first counterexample (point, expected, exact, difference).

    Examples:

    \b
      gradcli check "x**2*y" --expect x=2*x*y --expect y=x**2
      gradcli check "sin(x)" -e "x=-sin(x)" -n 2 --at x=1
      gradcli check "log(x)" -e x=1/x --box 0.1:5 -f json
      gradcli check "sin(x)" -e "x=1 - x**2/2" --box -0.1:0.1 --atol 1e-5
    """
    expression = expression_text(expression, file)
    from gradcli.compute.check import check_derivatives

    report = check_derivatives(expression, expect=expect or [], order=order, at=at, points=points, grid=grid,
                               box=box, samples=samples, seed=seed, symbolic_time_limit=symbolic_timeout,
                               rtol=rtol, atol=atol)
    if output is CheckFormat.json:
        from gradcli.render.common import to_json

        print(to_json(report.to_dict()))
    else:
        _print_text(report)
    from gradcli.commands.common import conclude

    conclude(report)


def _print_text(report) -> None:
    what = "derivative" if report.order == 1 else f"derivative of order {report.order}"
    c = report.counterexample
    if c is None and report.passed:
        names = ", ".join(e["variable"] for e in report.expectations)
        proved = all(p == "equal" for p in report.proof.values())
        how = "SymPy proves the difference is 0" if proved else "SymPy could not prove it for every formula"
        within = "" if (report.rtol, report.atol) == (1e-9, 1e-9) else \
            f" within --rtol {report.rtol:g} --atol {report.atol:g}"
        print(f"ok: every expected {what} ({names}) matches the exact one{within} at {report.points_checked:,} "
              f"points ({how})")
        return
    if c is None:
        return
    point = ", ".join(f"{k}={v!r}" for k, v in c["point"].items())
    exact = next(e["exact"] for e in report.expectations if e["variable"] == c["variable"])
    print(f"mismatch: {what} by {c['variable']} at {point}")
    print(f"  expected  {c['expected_formula']} = {c['expected'] if c['expected'] is not None else 'undefined'}")
    print(f"  exact     {exact} = {c['exact']!r}")
    allowed = f" (more than the {c['allowed']:.3g} that --rtol {report.rtol:g} and --atol {report.atol:g} allow)"
    print(f"  difference {c['difference']!r}{allowed}" if c["difference"] is not None
          else "  difference: undefined")
