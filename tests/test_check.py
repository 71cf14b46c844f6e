"""gradcli check: hand-derived derivatives against SymPy's exact ones."""

from __future__ import annotations

import json

import pytest


def test_right_derivatives_pass(invoke):
    result = invoke("check", "x**2*y", "--expect", "x=2*x*y", "--expect", "y=x**2")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("ok: every expected derivative (x, y) matches")
    assert result.stdout.rstrip().endswith("(SymPy proves the difference is 0)")


def test_a_wrong_derivative_gives_the_first_counterexample(invoke):
    result = invoke("check", "x**2*y", "--expect", "x=2*x", "--expect", "y=x**2", "-f", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    c = doc["counterexample"]
    assert doc["passed"] is False and c["variable"] == "x" and c["expected_formula"] == "2*x"
    x, y = c["point"]["x"], c["point"]["y"]
    assert c["exact"] == pytest.approx(2 * x * y) and c["expected"] == pytest.approx(2 * x)
    assert c["difference"] == pytest.approx(abs(2 * x - 2 * x * y))
    text = invoke("check", "x**2*y", "--expect", "x=2*x").stdout
    assert text.startswith("mismatch: derivative by x at x=") and "exact     2*x*y" in text


def test_higher_orders_and_commas_inside_calls(invoke):
    assert invoke("check", "sin(x)", "-n", "2", "--expect", "x=-sin(x)").exit_code == 0
    assert invoke("check", "atan2(y, x)", "--expect", "x=-y/(x**2+y**2),y=x/(x**2+y**2)").exit_code == 0
    assert invoke("check", "exp(2*x)", "-n", "3", "--expect", "x=4*exp(2*x)").exit_code == 1


def test_points_where_the_expression_is_undefined_are_skipped(invoke):
    from gradcli.compute.check import DENSE

    doc = json.loads(invoke("check", "log(x)", "--expect", "x=1/x", "-f", "json").stdout)
    # 20 random samples, then the ladder and the sweep: only their half where log(x) is real counts
    assert doc["passed"] is True and 20 + DENSE // 2 < doc["points_checked"] < 20 + DENSE


def test_at_grid_and_points(invoke, tmp_path):
    assert json.loads(invoke("check", "x*y", "--expect", "x=y", "--at", "x=1,y=2", "-f", "json").stdout
                      )["points_checked"] == 1
    assert json.loads(invoke("check", "x*y", "--expect", "x=y", "--grid", "x=0:1:3,y=0:1:3", "-f", "json").stdout
                      )["points_checked"] == 9
    path = tmp_path / "p.csv"
    path.write_text("x,y\n1,2\n3,4\n")
    result = invoke("check", "x*y", "--expect", "y=x", "--points", str(path), "-f", "json")
    assert json.loads(result.stdout)["points_checked"] == 2


def test_the_same_seed_gives_the_same_points(invoke):
    one = invoke("check", "x**3", "--expect", "x=x**2", "-f", "json").stdout
    assert one == invoke("check", "x**3", "--expect", "x=x**2", "-f", "json").stdout
    assert one != invoke("check", "x**3", "--expect", "x=x**2", "-f", "json", "--seed", "1").stdout


@pytest.mark.parametrize("args, words", [
    (["x*y"], "give at least one --expect"),
    (["x*y", "--expect", "z=1"], "'z' is not a variable"),
    (["x*y", "--expect", "x=y*w"], "uses 'w'"),
    (["x*y", "--expect", "x"], "not of the form VAR=FORMULA"),
    (["x*y", "--expect", "x=y", "--expect", "x=y"], "given twice"),
    (["x*y", "--expect", "x=y", "--at", "x=1,y=1", "--grid", "x=0:1:2,y=0:1:2"], "give one of"),
    (["x*y", "--expect", "x=y", "--box", "2:1"], "--box must be LOW:HIGH"),
    (["x*y", "--expect", "x=(y"], ""),
])
def test_usage_errors(invoke, args, words):
    result = invoke("check", *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("gradcli: error:") and words in result.stderr


@pytest.mark.parametrize("expression, expect, where", [
    ("exp(-1e4*x**2)", "x=0", 0.0),  # a narrow band at the centre: the ladder closes in on it
    ("exp(-1e4*(x - 0.7)**2)", "x=0", 0.7),  # a narrow band off centre: the sweep finds it
    ("exp(-1e12*x**2)", "x=0", 0.0),  # narrower than the sweep's spacing
])
def test_a_formula_wrong_only_in_a_narrow_band_is_caught(invoke, expression, expect, where):
    result = invoke("check", expression, "--expect", expect, "-f", "json")
    assert result.exit_code == 1, result.stdout
    c = json.loads(result.stdout)["counterexample"]
    assert abs(c["point"]["x"] - where) < 0.05 and c["difference"] > 1e-3


def test_a_right_formula_is_not_failed_by_cancellation_in_float64(invoke):
    # 1e20*(1 - cos(x)) loses every digit in float64 at |x| < 1e-5; the exact values agree
    result = invoke("check", "1e20*(x - sin(x))", "--expect", "x=2e20*sin(x/2)**2", "--box", "-1e-5:1e-5",
                    "-f", "json")
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)
    assert doc["passed"] is True and doc["proof"] == {"x": "equal"}


def test_sympy_proves_an_identity_and_a_constant_offset(invoke):
    assert json.loads(invoke("check", "sin(x)**2", "--expect", "x=sin(2*x)", "-f", "json").stdout
                      )["proof"] == {"x": "equal"}
    result = invoke("check", "x**2", "--expect", "x=2*x + 1", "-f", "json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and doc["proof"] == {"x": "different"} and doc["passed"] is False


def test_counterexamples_use_exact_values(invoke):
    from gradcli.compute.check import Expectation, _exact_difference
    from gradcli.expression import parse

    exact = parse("1e20 - 1e20*cos(x)").tree
    right = Expectation("x", parse("2e20*sin(x/2)**2"), "2e20*sin(x/2)**2")
    assert _exact_difference(right, exact, {"x": 2.7392337464290868e-06}) is None  # float64 says 9244 apart
    wrong = Expectation("x", parse("2e20*sin(x/2)**2 + 1e12"), "")
    got, want = _exact_difference(wrong, exact, {"x": 0.5})
    assert got - want == pytest.approx(1e12, rel=1e-3)


def test_an_exact_derivative_with_sign_is_evaluated_exactly(invoke):
    # SymPy's d/dx abs(x) is sign(x), a function of its formulas only: the exact re-check must know it
    result = invoke("check", "abs(x)", "--expect", "x=1", "-f", "json")
    assert result.exit_code == 1 and "internal error" not in result.stderr
    c = json.loads(result.stdout)["counterexample"]
    assert c["point"]["x"] < 0 and c["exact"] == -1.0 and c["difference"] == 2.0


# --- --rtol / --atol ---------------------------------------------------------------------------
def test_the_default_tolerance_is_in_the_json(invoke):
    doc = json.loads(invoke("check", "x**2", "--expect", "x=2*x", "--at", "x=3", "-f", "json").stdout)
    assert doc["rtol"] == 1e-9 and doc["atol"] == 1e-9
    assert doc["tolerance"] == "|expected - exact| <= atol + rtol * |exact|"


def test_atol_accepts_an_approximation_the_default_refuses(invoke):
    # cos(x) - (1 - x**2/2) is x**4/24 and less: up to 4.2e-6 in the box
    args = ("check", "sin(x)", "--expect", "x=1 - x**2/2", "--box", "-0.1:0.1")
    strict = invoke(*args, "-f", "json")
    assert strict.exit_code == 1
    c = json.loads(strict.stdout)["counterexample"]
    assert c["difference"] > c["allowed"] == pytest.approx(1e-9 + 1e-9 * abs(c["exact"]))
    loose = invoke(*args, "--atol", "1e-5", "-f", "json")
    assert loose.exit_code == 0, loose.stdout
    doc = json.loads(loose.stdout)
    assert doc["passed"] is True and doc["atol"] == 1e-5 and doc["counterexample"] is None
    text = invoke(*args, "--atol", "1e-5")
    assert text.exit_code == 0 and "within --rtol 1e-09 --atol 1e-05" in text.stdout
    assert "(more than the" in invoke(*args).stdout


def test_rtol_scales_with_the_exact_value(invoke):
    # off by one part in 10 million everywhere: within --rtol 1e-6, outside it at --rtol 1e-8
    args = ("check", "exp(x)", "--expect", "x=exp(x)*(1 + 1e-7)", "--box", "0:10")
    assert invoke(*args, "--rtol", "1e-6", "--atol", "0").exit_code == 0
    result = invoke(*args, "--rtol", "1e-8", "--atol", "0", "-f", "json")
    assert result.exit_code == 1 and json.loads(result.stdout)["counterexample"] is not None


def test_the_tolerance_is_atol_plus_rtol_times_the_exact_value():
    from gradcli.compute.check import Expectation, _exact_difference
    from gradcli.expression import parse

    exact = parse("2*x").tree
    off = Expectation("x", parse("2*x + 0.25"), "")
    # at x = 1: exact 2, off by 0.25; atol + rtol*|exact| = 0.05 + 0.1*2 = 0.25 just holds, 0.2499 not
    assert _exact_difference(off, exact, {"x": 1.0}, rtol=0.1, atol=0.05) is None
    assert _exact_difference(off, exact, {"x": 1.0}, rtol=0.1, atol=0.0499) is not None


def test_a_proven_constant_offset_fails_whatever_the_tolerance(invoke):
    # the tolerance absorbs rounding and approximations; SymPy's proof of a constant offset is a wrong formula
    result = invoke("check", "x**2", "--expect", "x=2*x + 1e-12", "--atol", "1e-6", "-f", "json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and doc["proof"] == {"x": "different"}


@pytest.mark.parametrize("option, value", [("--rtol", "-1"), ("--atol", "nan"), ("--atol", "inf"),
                                           ("--rtol", "abc")])
def test_a_bad_tolerance_is_a_usage_error(capsys, option, value):
    from gradcli.launcher import run_command

    assert run_command(["check", "x**2", "--expect", "x=2*x", option, value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and option in err


def test_the_api_takes_rtol_and_atol():
    import gradcli.api as api

    loose = api.check("sin(x)", expect={"x": "1 - x**2/2"}, box="-0.1:0.1", atol=1e-5)
    assert not loose.failed and loose.to_dict()["atol"] == 1e-5
    assert api.check("sin(x)", expect={"x": "1 - x**2/2"}, box="-0.1:0.1").failed
    with pytest.raises(api.UsageError):
        api.check("x**2", expect="x=2*x", rtol=-1.0)
