"""gradcli check: hand-derived derivatives against SymPy's exact ones, proved where SymPy can, else compared
with exact values at points chosen from both formulas' features."""

from __future__ import annotations

import json

import pytest


def test_right_derivatives_pass(invoke):
    result = invoke("check", "x**2*y", "--expect", "x=2*x*y", "--expect", "y=x**2")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["ok: every expected derivative (x, y) matches the exact one",
                                          "  x  proved equal by SymPy", "  y  proved equal by SymPy"]


def test_a_wrong_derivative_gives_the_first_counterexample(invoke):
    result = invoke("check", "x**2*y", "--expect", "x=2*x", "--expect", "y=x**2", "-f", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    c = doc["counterexample"]
    assert doc["passed"] is False and c["variable"] == "x" and c["expected_formula"] == "2*x"
    assert doc["decision"] == "differs" and [e["decision"] for e in doc["expectations"]] == ["differs", "proved equal"]
    x, y = c["point"]["x"], c["point"]["y"]
    assert c["exact"] == pytest.approx(2 * x * y) and c["expected"] == pytest.approx(2 * x)
    assert c["difference"] == pytest.approx(abs(2 * x - 2 * x * y))
    text = invoke("check", "x**2*y", "--expect", "x=2*x").stdout
    assert text.startswith("differs: derivative by x at x=") and "exact     2*x*y" in text
    assert text.rstrip().endswith("x  differs at the point above")


def test_higher_orders_and_commas_inside_calls(invoke):
    assert invoke("check", "sin(x)", "-n", "2", "--expect", "x=-sin(x)").exit_code == 0
    assert invoke("check", "atan2(y, x)", "--expect", "x=-y/(x**2+y**2),y=x/(x**2+y**2)").exit_code == 0
    assert invoke("check", "exp(2*x)", "-n", "3", "--expect", "x=4*exp(2*x)").exit_code == 1


def _comparison(expression: str, variable: str, expected: str, exact: str, rtol=1e-9, atol=1e-9):
    from gradcli.compute.check import Expectation
    from gradcli.compute.check_values import ExactComparison
    from gradcli.expression import parse

    expr = parse(expression)
    return ExactComparison(expr.tree, [Expectation(variable, parse(expected), expected)],
                           {variable: parse(exact).tree}, list(expr.variables), 1, rtol, atol)


def test_points_where_the_expression_is_undefined_are_skipped():
    import numpy as np

    outcome = _comparison("log(x)", "x", "1/x", "1/x").compare({"x": np.array([-1.0, 0.5, 2.0, -3.0])}, 4)
    assert outcome.checked == 2 and outcome.counterexample is None and outcome.left == 0


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


@pytest.mark.parametrize("expression, expect, where, box", [
    ("exp(-1e4*x**2)", "x=0", 0.0, "-2:2"),  # a narrow band at the centre ("ok at 20 points" once)
    ("exp(-1e4*(x - 0.7)**2)", "x=0", 0.7, "-2:2"),  # off centre: where the exponent's argument is -1
    ("exp(-1e12*x**2)", "x=0", 0.0, "-2:2"),  # narrower than the sweep's spacing
    # a band 1e-12 wide at a kink off centre: found by the kink's and the exponent's features
    ("abs(x - 0.3)", "x=where(x > 0.3, 1, -1) + 1e-3*exp(-1e24*(x - 0.3)**2)", 0.3, "-2:2"),
    # a pole off centre, the formula wrong (by 1e-3 of it) within 1e-6 of it only
    ("1/(x - 1.3)", "x=-(1 + 1e-3*exp(-1e12*(x - 1.3)**2))/(x - 1.3)**2", 1.3, "-1:3"),
])
def test_a_formula_wrong_only_in_a_narrow_band_is_caught(invoke, expression, expect, where, box):
    result = invoke("check", expression, "--expect", expect, "--box", box, "-f", "json")
    assert result.exit_code == 1, result.stdout
    doc = json.loads(result.stdout)
    c = doc["counterexample"]
    assert doc["decision"] == "differs" and doc["proof"] == {"x": "unknown"}
    assert abs(c["point"]["x"] - where) < 0.05 and c["difference"] > 5e-4 and c["difference"] > c["allowed"]


def test_a_right_formula_is_not_failed_by_cancellation_in_float64(invoke):
    # 1e20*(1 - cos(x)) loses every digit in float64 at |x| < 1e-5: SymPy proves the formulas equal
    result = invoke("check", "1e20*(x - sin(x))", "--expect", "x=2e20*sin(x/2)**2", "--box", "-1e-5:1e-5",
                    "-f", "json")
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)
    assert doc["passed"] is True and doc["proof"] == {"x": "equal"} and doc["decision"] == "proved equal"
    assert doc["expectations"][0]["decision"] == "proved equal" and doc["points_checked"] == 0


def test_where_sympy_cannot_prove_it_the_exact_values_decide(monkeypatch):
    # SymPy does not prove sign(x - sin(x)) = sign(x); float64's 1 - cos(x) is 0 or 1.1e-16 here, the exact
    # value 5e-13 and less: every point is decided at 30 digits
    from gradcli.compute import check_values
    from gradcli.compute.check import check_derivatives

    monkeypatch.setattr(check_values, "EXACT_POINTS", 40)
    report = check_derivatives("1e20*abs(x - sin(x))", expect=["x=2e20*where(x > 0, 1, -1)*sin(x/2)**2"],
                               box="-1e-6:1e-6", samples=8, symbolic_time_limit=2.0)
    doc = report.to_dict()
    assert not report.failed and doc["decision"] == "sampled" and doc["proof"] == {"x": "unknown"}
    assert 0 < doc["points_checked"] and doc["points_exact"] == 40 and doc["points_undecided"] > 0
    assert "not counted as checked" in doc["notes"][-1]
    # and a formula 1.5 times too large there, which float64 evaluates to 0 as it does the exact derivative
    report = check_derivatives("1e20*abs(x - sin(x))", expect=["x=3e20*where(x > 0, 1, -1)*sin(x/2)**2"],
                               box="-1e-6:1e-6", samples=8, symbolic_time_limit=2.0)
    c = report.counterexample
    assert report.failed and c["expected"] == pytest.approx(1.5 * c["exact"], rel=1e-12) and c["exact"] != 0


def test_a_cancellation_float64_hides_is_found(invoke):
    # both formulas are 0 in float64 at |x| < 1e-8 (cos(x) rounds to 1); the exact values differ by half
    result = invoke("check", "1e20*(x - sin(x))", "--expect", "x=1.5e20*(1 - cos(x))", "--box", "-1e-8:1e-8",
                    "-f", "json")
    assert result.exit_code == 1, result.stdout
    c = json.loads(result.stdout)["counterexample"]
    assert c["expected"] == pytest.approx(1.5 * c["exact"], rel=1e-12) and c["exact"] > 0


def test_a_formula_sympy_cannot_prove_passes_on_points_and_says_so(invoke):
    result = invoke("check", "where(x > 0, x**3, -x**3)", "--expect", "x=3*x*abs(x)")
    assert result.exit_code == 0, result.stdout
    first, how = result.stdout.splitlines()
    assert first == "ok: every expected derivative (x) matches the exact one"
    assert how.startswith("  x  equal at ") and how.endswith(" sampled points, not proved")


def test_a_kink_s_own_point_is_no_counterexample(invoke):
    # at x == y (on the ladder, every point) abs has no derivative: SymPy's sign(0) = 0 is a convention, and
    # the formula's choice there is not wrong; beside it, the exact values decide
    result = invoke("check", "abs(x - y)", "--expect", "x=where(x > y, 1, -1)", "-f", "json")
    assert result.exit_code == 0, result.stdout
    assert json.loads(result.stdout)["decision"] == "sampled"
    # exp(x) - 1 at 0: float64's bound cannot vouch for its 0 (exp rounds), the exact value is 0
    assert invoke("check", "abs(exp(x) - 1)", "--expect", "x=where(x > 0, exp(x), -exp(x))").exit_code == 0
    # x - sin(x) is 0 in float64 near 0 but not exactly: those points are no kink
    from gradcli.compute.check import check_derivatives

    report = check_derivatives("1e30*abs(x - sin(x))", expect=["x=3e30*where(x > 0, 1, -1)*sin(x/2)**2"],
                               box="-1e-8:1e-8", samples=4, symbolic_time_limit=2.0)
    c = report.counterexample
    assert report.failed and c["expected"] == pytest.approx(1.5 * c["exact"], rel=1e-12) and c["exact"] != 0


def test_features_are_found_where_the_formulas_have_them():
    from gradcli.compute.check_points import feature_functions, feature_points, minima_of_abs
    from gradcli.expression import parse

    import numpy as np

    functions = feature_functions([parse("exp(-1e4*(x - 0.7)**2) + 1/(x + 1.5) + abs(x - 0.25)").tree])
    line = np.linspace(-2, 2, 4097)
    found = sorted(x for g in functions for x in minima_of_abs(g, {"x": line}, "x", line))
    for feature in (0.7 - 0.01, 0.7 + 0.01, -1.5, 0.25):  # |exponent| = 1, a pole, a kink
        assert min(abs(x - feature) for x in found) < 1e-12
    points = feature_points(functions, ["x"], (-2.0, 2.0), [{"x": 0.0}], lambda a: a)["x"]
    assert np.any(np.abs(points - 0.25) < 1e-10) and np.any(np.abs(points - 0.25) > 0.5)


def test_sympy_proves_an_identity_and_a_constant_offset(invoke):
    assert json.loads(invoke("check", "sin(x)**2", "--expect", "x=sin(2*x)", "-f", "json").stdout
                      )["proof"] == {"x": "equal"}
    result = invoke("check", "x**2", "--expect", "x=2*x + 1", "-f", "json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and doc["proof"] == {"x": "different"} and doc["passed"] is False
    entry, c = doc["expectations"][0], doc["counterexample"]
    assert entry["decision"] == "proved different" and entry["sympy_difference"] == "1"
    assert c["expected"] - c["exact"] == pytest.approx(1.0) and c["exact"] == pytest.approx(2 * c["point"]["x"])
    text = invoke("check", "x**2", "--expect", "x=2*x + 1").stdout
    assert "(SymPy proves expected - exact = 1, not 0)" in text and "x  proved different by SymPy" in text


def test_counterexamples_use_exact_values():
    import numpy as np

    right = _comparison("x", "x", "2e20*sin(x/2)**2", "1e20 - 1e20*cos(x)")
    outcome = right.compare({"x": np.array([2.7392337464290868e-06])}, 1)  # float64 says 9244 apart
    assert outcome.checked == outcome.exact == 1 and outcome.counterexample is None
    wrong = _comparison("x", "x", "2e20*sin(x/2)**2 + 1e12", "1e20 - 1e20*cos(x)")
    c = wrong.compare({"x": np.array([0.5])}, 1).counterexample
    assert c["expected"] - c["exact"] == pytest.approx(1e12, rel=1e-3)


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
    import numpy as np

    # at x = 1: exact 2, off by 0.25; atol + rtol*|exact| = 0.05 + 0.1*2 = 0.25 just holds, 0.2499 not
    at_one = {"x": np.array([1.0])}
    assert _comparison("x", "x", "2*x + 0.25", "2*x", rtol=0.1, atol=0.05).compare(at_one, 1).checked == 1
    assert _comparison("x", "x", "2*x + 0.25", "2*x", rtol=0.1, atol=0.0499).compare(at_one, 1).counterexample


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


def test_float32_is_judged_by_float32_tolerances(invoke):
    # cos(x) - (1 - x**2/2 + x**4/24) is x**6/720 and less: up to 1e-6 in the box, beyond float64's 1e-9
    args = ("check", "sin(x)", "--expect", "x=1 - x**2/2 + x**4/24", "--box", "-0.3:0.3", "-f", "json")
    assert invoke(*args).exit_code == 1
    result = invoke(*args, "--dtype", "float32")
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)
    assert doc["dtype"] == "float32" and doc["rtol"] == doc["atol"] == 1e-5 and doc["decision"] == "sampled"
    import numpy as np

    c = json.loads(invoke(*args[:3], "x=1 - x**2/2", *args[4:], "--dtype", "float32").stdout)["counterexample"]
    assert float(np.float32(c["point"]["x"])) == c["point"]["x"]  # a float32 point


def test_a_rule_s_function_can_be_checked(invoke):
    rule = "g(u) = u**3; d/du = 3*u**2"
    doc = json.loads(invoke("check", "g(x)*y", "--rule", rule, "--expect", "x=3*x**2*y,y=g(x)", "-f", "json").stdout)
    assert doc["passed"] is True and doc["proof"] == {"x": "equal", "y": "equal"}
    result = invoke("check", "g(x)", "--rule", rule, "--expect", "x=3*x**2 + 1e-6*exp(-1e6*(x - 0.5)**2)",
                    "-f", "json")
    assert result.exit_code == 1
    c = json.loads(result.stdout)["counterexample"]
    assert abs(c["point"]["x"] - 0.5) < 1e-2 and c["exact"] == pytest.approx(3 * c["point"]["x"] ** 2)
    wrong_rule = invoke("check", "g(x)", "--rule", "g(u) = u**3; d/du = 3*u", "--expect", "x=3*x")
    assert wrong_rule.exit_code == 1 and "rule g is wrong" in wrong_rule.stderr


def test_an_exact_value_beyond_float64_agrees_only_with_the_same_infinity(invoke):
    assert invoke("check", "exp(x)", "--expect", "x=where(x > 0, exp(x), 1)", "--at", "x=800").exit_code == 0
    result = invoke("check", "exp(x)", "--expect", "x=1e300", "--at", "x=800")
    assert result.exit_code == 1 and "the exact value is beyond float64's range" in result.stdout


def test_more_points_go_where_the_formulas_come_closest_to_differing():
    # within the tolerance at the first points, but growing toward 0.3: the refinement closes in on it
    import numpy as np

    from gradcli.compute.check import SampledPoints
    from gradcli.compute.check_points import around

    sampled = SampledPoints(_comparison("sin(x)", "x", "cos(x) + 1e-11/(x - 0.3)**2", "cos(x)"))
    assert not sampled.add({"x": np.array([1.0, 0.2, 0.5, -1.0])}, 4)
    assert sampled.checked == 4 and sampled.closest[0][1] == {"x": 0.2}
    batch = around([p for _, p in sampled.closest], ["x"], (-2.0, 2.0), 0, lambda a: a)
    assert sampled.add(batch, len(batch["x"]))
    c = sampled.counterexample
    assert abs(c["point"]["x"] - 0.3) < 0.1 and c["difference"] > c["allowed"]
