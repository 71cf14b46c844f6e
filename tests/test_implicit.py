"""gradcli implicit: dy/dx of a curve F = G three ways, against references computed here with mpmath (the
curve's y(x) found by mpmath's root finder at 50 digits, differentiated by mpmath.diff), not by gradcli."""

from __future__ import annotations

import mpmath
import pytest

import gradcli
from gradcli.errors import ComputeError, ParseError, UsageError
from gradcli.curves.equation import read_equation

mpmath.mp.dps = 50


def curve_derivatives(F, x0, y0, order: int) -> list:
    """d^k y/dx^k of the branch of F(x, y) = 0 through (x0, y0), k = 1..order, by mpmath alone."""
    def y_of(x):
        return mpmath.findroot(lambda y: F(x, y), mpmath.mpf(y0))
    return [mpmath.diff(y_of, mpmath.mpf(x0), k) for k in range(1, order + 1)]


CASES = [
    ("x**2 + y**2 = 1", "x=0.6,y=0.8", lambda x, y: x**2 + y**2 - 1, (0.6, 0.8)),
    ("x**3 + y**3 = 3*x*y", "x=2/3,y=4/3", lambda x, y: x**3 + y**3 - 3*x*y, (mpmath.mpf(2)/3, mpmath.mpf(4)/3)),
    ("y*exp(y) = x*exp(x)", "x=-2,y=-0.4063757399599599",
     lambda x, y: y*mpmath.exp(y) - x*mpmath.exp(x), (-2, -0.4063757399599599)),
    ("sin(x*y) = y - x", "x=0,y=0", lambda x, y: mpmath.sin(x*y) - y + x, (0, 0)),
    ("exp(y) + y = x**2 + 1", "x=1,y=0.4428544010023886", lambda x, y: mpmath.exp(y) + y - x**2 - 1,
     (1, 0.4428544010023886)),
]


@pytest.mark.parametrize("equation, at, F, point", CASES, ids=[c[0] for c in CASES])
def test_three_methods_agree_with_an_independent_reference(equation, at, F, point):
    r = gradcli.implicit(equation, at=at, order=2)
    assert not r.warnings and not r.failed
    reference = curve_derivatives(F, *point, 2)
    for method, tolerance in (("symbolic", 1e-14), ("tape", 1e-12), ("fd", 1e-5)):
        for got, want in zip(r.derivatives[method]["x"], reference):
            assert abs(got - float(want)) <= tolerance * max(1.0, abs(float(want))), (method, got, want)
    for row in r.to_dict()["derivatives"]:  # fd within its own estimate
        assert abs(row["fd"] - float(reference[row["order"] - 1])) <= row["fd_estimate"]


def test_the_circle_gives_minus_three_quarters_and_its_formula():
    r = gradcli.implicit("x**2 + y**2 = 1", at="x=0.6,y=0.8", order=3)
    doc = r.to_dict()
    assert doc["derivatives"][0]["symbolic"] == -0.75 and doc["derivatives"][0]["formula"] == "-x/y"
    assert r.derivatives["tape"]["x"][:2] == pytest.approx([-0.75, -1.953125], rel=1e-15)
    assert r.derivatives["tape"]["x"][2] is None  # the tape's formulas stop at the second order
    assert doc["derivatives"][2]["symbolic"] == pytest.approx(-5.4931640625, rel=1e-15)
    assert doc["residual"] == 0.0 and doc["status"] == "ok"


def test_several_independent_variables_give_the_partials_by_each():
    r = gradcli.implicit("x*y*z = 1", at="x=1,y=2,z=0.5", dependent="z", order=2)
    assert r.derivatives["symbolic"] == {"x": [-0.5, 1.0], "y": [-0.25, 0.25]}


@pytest.mark.parametrize("equation, at, why", [
    ("x**2 + y**2 = 1", "x=1,y=0", "vertical tangent"),
    ("x**3 + y**3 = 3*x*y", "x=0,y=0", "singular point"),
    ("y**2 = x**3", "x=0,y=0", "singular point"),
])
def test_a_point_where_y_is_no_function_of_x_is_refused_with_its_reason(equation, at, why):
    with pytest.raises(ComputeError, match=why):
        gradcli.implicit(equation, at=at)


def test_a_point_off_the_curve_is_refused_with_its_residual_and_the_y_on_it():
    with pytest.raises(ComputeError, match=r"not on the curve: \|F - G\| = 0.0161.*y=0\.8 is on it"):
        gradcli.implicit("x**2 + y**2 = 1", at="x=0.6,y=0.81")


def test_the_level_curve_is_followed_without_the_exact_column():
    r = gradcli.implicit("x**2 + y**2 = 1", at="x=0.6,y=0.8", method="tape,fd", order=2)
    assert r.derivatives["fd"]["x"] == pytest.approx([-0.75, -1.953125], rel=1e-6)


def test_a_wrong_tape_is_caught_by_the_judge(monkeypatch):
    from gradcli.curves import report

    def planted(partials, order):
        return [-0.7, -1.953125][:order]

    monkeypatch.setattr(report, "tape_derivatives", planted)
    r = gradcli.implicit("x**2 + y**2 = 1", at="x=0.6,y=0.8", order=2)
    assert len(r.warnings) == 1 and r.warnings[0].startswith("tape and symbolic disagree on dy/dx")


@pytest.mark.parametrize("text, position", [("x**2 + y**2 = 1 = 2", 16), ("x**2 + = 1", 7), ("= 1", 0)])
def test_equation_errors_name_their_column(text, position):
    with pytest.raises(ParseError) as caught:
        read_equation(text)
    assert caught.value.position == position


def test_no_equals_sign_means_equal_to_zero_and_options_are_checked():
    assert gradcli.implicit("x**2 + y**2 - 1", at="x=0.6,y=0.8").derivatives["symbolic"]["x"] == [-0.75]
    with pytest.raises(UsageError, match="no variable 'z'"):
        gradcli.implicit("x + y = 1", at="x=0,y=1", dependent="z")
    with pytest.raises(UsageError, match="--order"):
        gradcli.implicit("x + y = 1", at="x=0,y=1", order=5)


def test_the_cli_prints_the_table_and_exits_one_off_the_curve(invoke):
    ok = invoke("implicit", "x**2 + y**2 = 1", "--at", "x=0.6,y=0.8")
    assert ok.exit_code == 0 and "dy/dx" in ok.stdout and "-0.75" in ok.stdout
    off = invoke("implicit", "x**2 + y**2 = 1", "--at", "x=0.6,y=0.9")
    assert off.exit_code == 1 and "not on the curve" in off.stderr and off.stdout == ""
