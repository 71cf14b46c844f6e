"""propagate: uncertain inputs through linear, second-order, Monte Carlo and interval propagation, the verdict,
the documents, and the points parser's ± (refused by every other command). References are closed forms and
the mpmath oracle (tests/oracle.py), never gradcli's own engines."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import gradcli
from gradcli.errors import UsageError
from oracle import oracle_gradient, oracle_hessian
from record_schemas import SCHEMAS

Z = 4.5  # Monte Carlo agreement, in its standard errors (the seed is fixed: a figure passes or not, always)


def within_mc(value: float, mc_value: float, se: float) -> bool:
    return abs(value - mc_value) <= Z * se


# ---------------------------------------------------------------------------------------------
# the cases
# ---------------------------------------------------------------------------------------------
def test_square_at_zero_plus_minus_ten_is_flagged():
    r = gradcli.propagate("x**2", at="x=0±10")
    assert r.mean["linear"] == 0 and r.sd["linear"] == 0
    assert r.sd["linear_tape"] == 0 and r.sd["linear_fd"] == 0
    assert r.mean["second_order"] == 100 and r.sd["second_order"] == pytest.approx(100 * math.sqrt(2), rel=1e-14)
    mc = r.monte_carlo
    assert within_mc(100.0, mc["mean"], mc["se_mean"])
    assert within_mc(100 * math.sqrt(2), mc["sd"], mc["se_sd"])
    assert not r.verdict["linear_holds"] and r.verdict["blame"] == "x"
    assert "linear propagation is unreliable here" in r.verdict["text"]
    assert any("unreliable" in w for w in r.warnings)


def test_x_minus_x_is_exactly_zero_plus_minus_zero():
    r = gradcli.propagate("x - x", at="x=2±0.1")
    for method in ("linear", "linear_tape", "linear_fd", "second_order", "monte_carlo"):
        assert r.mean[method] == 0.0 and r.sd[method] == 0.0, method
    assert r.verdict["linear_holds"]


def test_sine_at_zero_plus_minus_three_is_flagged():
    r = gradcli.propagate("sin(x)", at="x=0±3")
    assert r.sd["linear"] == 3.0
    exact_sd = math.sqrt((1 - math.exp(-2 * 9)) / 2)  # Var sin(X), X ~ N(0, s²): (1 - exp(-2s²))/2
    mc = r.monte_carlo
    assert within_mc(exact_sd, mc["sd"], mc["se_sd"]) and within_mc(0.0, mc["mean"], mc["se_mean"])
    assert not r.verdict["linear_holds"] and r.verdict["blame"] == "x"


@pytest.mark.parametrize("rho", [-0.8, 0.0, 0.5, 0.95])
def test_product_of_correlated_normals_matches_the_closed_form(rho):
    mx, my, sx, sy = 2.0, 3.0, 0.4, 0.7
    r = gradcli.propagate("x*y", at=f"x={mx}±{sx},y={my}±{sy}", correlation=[f"x,y={rho}"])
    mean = mx * my + rho * sx * sy
    var = mx**2 * sy**2 + my**2 * sx**2 + 2 * mx * my * rho * sx * sy + sx**2 * sy**2 * (1 + rho**2)
    assert r.mean["second_order"] == pytest.approx(mean, rel=1e-13)
    assert r.sd["second_order"] == pytest.approx(math.sqrt(var), rel=1e-13)
    mc = r.monte_carlo
    assert within_mc(mean, mc["mean"], mc["se_mean"]) and within_mc(math.sqrt(var), mc["sd"], mc["se_sd"])
    linear_var = mx**2 * sy**2 + my**2 * sx**2 + 2 * mx * my * rho * sx * sy
    assert r.sd["linear"] == pytest.approx(math.sqrt(linear_var), rel=1e-13)


SMOOTH = ["exp(x)", "log(x)", "sqrt(x)", "sin(x)", "cos(x)", "tan(x)", "atan(x)", "sinh(x)", "cosh(x)", "tanh(x)",
          "asinh(x)", "x**3 - 2*x", "1/x", "x**2.5", "exp(-x**2)", "x*y", "x/y", "x**y", "sin(x)*cos(y)",
          "log(x + y)", "sqrt(x**2 + y**2)", "atan2(y, x)", "erf(x)", "sigmoid(x - y)", "softplus(x)",
          "log1p(x)", "expm1(x)", "x*y*z", "exp(x)*sin(y) + z**2", "(x + y)/(1 + z)"]
MEANS = {"x": 0.7, "y": 1.3, "z": 0.4}
SDS = {"x": 0.002, "y": 0.003, "z": 0.001}


@pytest.fixture(scope="module")
def smooth():
    at = ",".join(f"{n}={MEANS[n]}±{SDS[n]}" for n in MEANS)
    return gradcli.propagate(*SMOOTH, at=at).to_dict()


def test_thirty_smooth_functions_agree_four_ways(smooth):
    assert len(SMOOTH) == 30
    names = smooth["inputs"]
    point = {n: str(MEANS[n]) for n in names}
    for r, text in zip(smooth["results"], SMOOTH):
        g = oracle_gradient(text, point, wrt=names)
        h = oracle_hessian(text, point, wrt=names)
        linear = math.sqrt(float(mpmath.fsum((g[n] * SDS[n]) ** 2 for n in names)))
        shift = float(mpmath.fsum(h[i][i] * SDS[n] ** 2 for i, n in enumerate(names)) / 2)
        term = float(mpmath.fsum((h[i][j] * SDS[a] * SDS[b]) ** 2 for i, a in enumerate(names)
                                 for j, b in enumerate(names)) / 2)
        assert r["sd"]["linear"] == pytest.approx(linear, rel=1e-9), text
        assert r["sd"]["linear_tape"] == pytest.approx(linear, rel=1e-9), text
        assert r["sd"]["linear_fd"] == pytest.approx(linear, rel=1e-6), text
        assert r["second_order"]["mean_shift"] == pytest.approx(shift, rel=1e-8, abs=1e-300), text
        assert r["second_order"]["variance_term"] == pytest.approx(term, rel=1e-8, abs=1e-300), text
        mc = r["monte_carlo"]
        for method in ("linear", "second_order"):
            assert within_mc(r["mean"][method], mc["mean"], mc["se_mean"]), (text, method)
            assert within_mc(r["sd"][method], mc["sd"], mc["se_sd"]), (text, method)
        assert r["verdict"]["linear_holds"] and r["verdict"]["second_order_holds"], text
        iv = r["interval"]
        assert not iv["undefined"], text
        assert all(iv["lower"] <= q <= iv["upper"] for q in mc["quantiles"].values()), text


def test_several_expressions_give_their_covariance(smooth):
    lin = smooth["covariance"]["linear"]
    mc = smooth["covariance"]["monte_carlo"]
    assert len(lin) == 30 and all(len(row) == 30 for row in lin)
    for i in range(30):
        assert lin[i][i] == pytest.approx(smooth["results"][i]["sd"]["linear"] ** 2, rel=1e-12)
        assert mc[i][i] == pytest.approx(smooth["results"][i]["sd"]["monte_carlo"] ** 2, rel=1e-9)
    # x*y and x/y: the closed-form linear covariance y²sx²·(1/y) ... from their gradients
    gxy = [MEANS["y"], MEANS["x"], 0.0]
    gxdy = [1 / MEANS["y"], -MEANS["x"] / MEANS["y"] ** 2, 0.0]
    expected = sum(a * b * SDS[n] ** 2 for a, b, n in zip(gxy, gxdy, "xyz"))
    assert lin[15][16] == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# inputs: ±, correlations, covariance files, distributions
# ---------------------------------------------------------------------------------------------
def test_plus_minus_is_read_both_ways_and_from_a_mapping():
    a = gradcli.propagate("x*y", at="x=2±0.1,y=3+-0.2", samples=1000).to_dict()
    b = gradcli.propagate("x*y", at={"x": (2, 0.1), "y": (3, 0.2)}, samples=1000).to_dict()
    assert a["sd"] == b["sd"] == {"x": 0.1, "y": 0.2}
    assert a["results"] == b["results"]


@pytest.mark.parametrize("argv", [["grad", "x**2", "--at", "x=2±0.1"], ["hessian", "x**2", "--at", "x=2+-0.1"],
                                  ["jvp", "x**2", "--at", "x=2±0.1", "--along", "x=1"]])
def test_commands_that_do_not_propagate_refuse_a_standard_deviation(invoke, argv):
    result = invoke(*argv)
    assert result.exit_code == 2
    assert "uncertainty" in result.stderr and "propagate" in result.stderr
    assert "Traceback" not in result.stderr


def test_eval_with_a_plus_minus_is_propagate(invoke):
    e = invoke("eval", "x**2", "--at", "x=0±10", "-f", "json")
    p = invoke("propagate", "x**2", "--at", "x=0±10", "-f", "json")
    assert e.exit_code == p.exit_code == 0
    assert json.loads(e.stdout) == json.loads(p.stdout)
    table = invoke("eval", "x**2", "--at", "x=0±10")
    assert "Monte Carlo" in table.stdout and "linear propagation is unreliable here" in table.stdout


@pytest.mark.parametrize("extra, message", [
    (["--correlation", "x,y=0.9", "--correlation", "y,z=0.9", "--correlation", "x,z=-0.9"], "positive semi-definite"),
    (["--correlation", "x,y=1.5"], "not in [-1, 1]"),
    (["--correlation", "x,w=0.5"], "w is not an input"),
    (["--correlation", "x,y"], "not of the form"),
])
def test_contradictory_or_malformed_correlations_are_one_line_exit_2(invoke, extra, message):
    result = invoke("propagate", "x+y+z", "--at", "x=1±0.1,y=2±0.1,z=3±0.1", *extra)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) <= 3


def test_a_covariance_file_is_the_correlation_written_out(tmp_path, invoke):
    good = tmp_path / "cov.csv"
    good.write_text("x,y\n0.01,0.005\n0.005,0.04\n")
    a = gradcli.propagate("x*y", at="x=2,y=3", covariance=str(good), samples=2000).to_dict()
    b = gradcli.propagate("x*y", at="x=2±0.1,y=3±0.2", correlation=["x,y=0.25"], samples=2000).to_dict()
    flat = [v for row in a["input_covariance"] for v in row]
    assert flat == pytest.approx([v for row in b["input_covariance"] for v in row], rel=1e-15)
    assert a["results"][0]["sd"]["linear"] == pytest.approx(b["results"][0]["sd"]["linear"], rel=1e-14)
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n0.01,0.005\n0.002,0.04\n")
    result = invoke("propagate", "x*y", "--at", "x=2,y=3", "--covariance", str(bad))
    assert result.exit_code == 2 and "not symmetric" in result.stderr
    negative = tmp_path / "neg.csv"
    negative.write_text("x,y\n0.01,0.05\n0.05,0.04\n")
    result = invoke("propagate", "x*y", "--at", "x=2,y=3", "--covariance", str(negative))
    assert result.exit_code == 2 and "positive semi-definite" in result.stderr


def test_perfectly_correlated_inputs_are_positive_semidefinite():
    r = gradcli.propagate("x - y", at="x=1±0.5,y=1±0.5", correlation=["x,y=1"], samples=5000)
    assert r.sd["linear"] == pytest.approx(0.0, abs=1e-15) and r.sd["monte_carlo"] == pytest.approx(0.0, abs=1e-12)


def test_uniform_inputs_have_the_same_sd_and_a_half_width_of_sd_root_3():
    r = gradcli.propagate("x", at="x=0±1", distribution="uniform")
    mc = r.monte_carlo
    assert within_mc(1.0, mc["sd"], mc["se_sd"])
    assert mc["quantiles"]["97.5%"] == pytest.approx(0.95 * math.sqrt(3), abs=0.01)
    # the second-order term of x**2 with uniform x: Var(x²) = E x⁴ - (E x²)² = 9/5 - 1 = 4/5 (sd 1)
    sq = gradcli.propagate("x**2", at="x=0±1", distribution="uniform")
    assert sq.sd["second_order"] == pytest.approx(math.sqrt(0.8), rel=1e-14)
    assert within_mc(math.sqrt(0.8), sq.monte_carlo["sd"], sq.monte_carlo["se_sd"])


# ---------------------------------------------------------------------------------------------
# many points, documents, the plot
# ---------------------------------------------------------------------------------------------
def _validator(name: str = "propagate.json") -> Draft202012Validator:
    schema = json.loads((SCHEMAS / "propagate.json").read_text())
    if name != "propagate.json":
        schema = {**schema, "$ref": f"#/$defs/{name}"}
        schema.pop("oneOf")
    return Draft202012Validator(schema)


def _valid(validator, doc) -> None:
    errors = list(validator.iter_errors(doc))
    assert not errors, [e.message[:200] for e in errors[:3]]


def test_points_with_sd_columns_give_a_propagation_per_row(tmp_path, invoke):
    path = tmp_path / "p.csv"
    path.write_text("x,x_sd,tag\n1,0.05,a\n0,10,b\n")
    result = invoke("propagate", "x**2*y", "--points", str(path), "--at", "y=2±0.1", "-f", "json",
                    "--samples", "20000")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    _valid(_validator(), doc)
    assert [p["sd"] for p in doc["points"]] == [{"x": 0.05, "y": 0.1}, {"x": 10.0, "y": 0.1}]
    assert [p["fields"] for p in doc["points"]] == [{"tag": "a"}, {"tag": "b"}]
    one = gradcli.propagate("x**2*y", at="x=1±0.05,y=2±0.1", samples=20000).to_dict()
    assert doc["points"][0]["results"][0]["sd"]["linear"] == one["results"][0]["sd"]["linear"]
    assert [p["results"][0]["verdict"]["linear_holds"] for p in doc["points"]] == [True, False]
    lines = invoke("propagate", "x**2*y", "--points", str(path), "--at", "y=2±0.1", "-f", "jsonl",
                   "--samples", "20000").stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        _valid(_validator("line"), json.loads(line))
    csv = invoke("propagate", "x**2*y", "--points", str(path), "--at", "y=2±0.1", "-f", "csv",
                 "--samples", "20000").stdout.splitlines()
    assert csv[0].startswith("line,tag,x,x_sd,y,y_sd,expression") and len(csv) == 3


def test_the_document_is_the_api_s_and_matches_its_schema(invoke):
    args = ["x/y", "log(x)", "--at", "x=2±0.5,y=3±0.2", "--correlation", "x,y=-0.3", "--samples", "5000"]
    result = invoke("propagate", *args, "-f", "json")
    doc = json.loads(result.stdout)
    _valid(_validator(), doc)
    api = gradcli.propagate("x/y", "log(x)", at="x=2±0.5,y=3±0.2", correlation=["x,y=-0.3"], samples=5000)
    assert api.to_dict() == doc
    assert api.covariance["linear"][0][1] == doc["covariance"]["linear"][0][1]
    assert api.mean["monte_carlo"] == [r["mean"]["monte_carlo"] for r in doc["results"]]


def test_a_pole_inside_the_spread_is_unbounded_and_flagged():
    r = gradcli.propagate("1/x", at="x=0.1±0.1", samples=20000)
    assert r.interval["lower"] is None and r.interval["upper"] is None  # unbounded both ways
    assert not r.verdict["linear_holds"]


def test_the_plot_is_an_svg_histogram_with_both_normals(tmp_path, invoke):
    path = tmp_path / "h.svg"
    result = invoke("propagate", "x**2", "--at", "x=1±0.5", "--samples", "5000", "--plot", str(path))
    assert result.exit_code == 0, result.stderr
    root = ET.fromstring(path.read_text())
    ids = {e.get("id") for e in root.iter()}
    assert {"histogram", "linear", "second_order"} <= ids
    bad = invoke("propagate", "x**2", "--at", "x=1±0.5", "--plot", str(tmp_path / "h.png"))
    assert bad.exit_code == 2 and "svg" in bad.stderr.lower()


def test_request_checks_its_options():
    from gradcli.library.propagate_request import PropagateRequest

    with pytest.raises(UsageError, match="--samples"):
        PropagateRequest(expressions=["x"], at="x=1±1", samples=1)
    with pytest.raises(UsageError, match="distribution"):
        PropagateRequest(expressions=["x"], at="x=1±1", distribution="cauchy")
    with pytest.raises(UsageError, match="standard deviation of x must be >= 0"):
        gradcli.propagate("x", at="x=1±-1")


def test_unc_columns_and_conflicts(tmp_path, invoke):
    path = tmp_path / "u.csv"
    path.write_text("x,x_unc\n2,0.1\n")
    doc = json.loads(invoke("propagate", "3*x", "--points", str(path), "-f", "json", "--samples", "1000").stdout)
    assert doc["points"][0]["results"][0]["sd"]["linear"] == pytest.approx(0.3, rel=1e-15)
    both = tmp_path / "b.csv"
    both.write_text("x,x_sd,x_unc\n2,0.1,0.1\n")
    result = invoke("propagate", "3*x", "--points", str(both))
    assert result.exit_code == 2 and "keep one" in result.stderr
    negative = tmp_path / "n.csv"
    negative.write_text("x,x_sd\n2,-1\n")
    result = invoke("propagate", "3*x", "--points", str(negative))
    assert result.exit_code == 2 and ">= 0" in result.stderr


def test_what_cannot_be_propagated_says_why(invoke):
    result = invoke("propagate", "2*pi")
    assert result.exit_code == 2 and "no variables" in result.stderr
    result = invoke("eval", "x**2", "--grid", "x=0:1:2", "--at", "y=1±0.1")
    assert result.exit_code == 2 and "--grid" in result.stderr
    r = gradcli.propagate("sqrt(x)", at="x=0±1", samples=4000)
    assert r.failed and r.sd["linear"] is None  # the gradient is infinite at 0
    assert not r.verdict["linear_holds"] and "not finite at the mean" in r.verdict["text"]
    assert any("samples have no finite value" in w for w in r.warnings)
    assert r.interval["undefined"] and r.interval["lower"] == 0.0


def test_the_seed_fixes_monte_carlo():
    a = gradcli.propagate("exp(x)", at="x=0±0.5", samples=3000, seed=7).monte_carlo
    b = gradcli.propagate("exp(x)", at="x=0±0.5", samples=3000, seed=7).monte_carlo
    c = gradcli.propagate("exp(x)", at="x=0±0.5", samples=3000, seed=8).monte_carlo
    assert a == b and a["mean"] != c["mean"]


@settings(max_examples=8, deadline=None)
@given(st.floats(-3, 3), st.floats(-3, 3), st.floats(0, 2), st.floats(0, 2), st.floats(-1, 1))
def test_a_linear_function_is_exact_for_linear_and_second_order(a, b, sx, sy, rho):
    r = gradcli.propagate(f"{a!r}*x + {b!r}*y", at={"x": (1.0, sx), "y": (2.0, sy)}, correlation=[f"x,y={rho!r}"],
                          samples=2000)
    exact = math.sqrt(max(a * a * sx * sx + b * b * sy * sy + 2 * a * b * rho * sx * sy, 0.0))
    for method in ("linear", "linear_tape", "second_order"):
        assert r.sd[method] == pytest.approx(exact, rel=1e-9, abs=1e-12), method
    assert r.mean["second_order"] == pytest.approx(a + 2 * b, rel=1e-12, abs=1e-12)


def test_strict_fails_on_the_verdict_s_warning(invoke):
    assert invoke("propagate", "x**2", "--at", "x=0±10", "--samples", "1000").exit_code == 0
    assert invoke("propagate", "x**2", "--at", "x=0±10", "--samples", "1000", "--strict").exit_code == 1


def test_inputs_of_very_different_scales_keep_their_spreads():
    """A tolerance relative to the largest variance dropped an sd of 1e-7 beside one of 1.85 (its pivot)."""
    r = gradcli.propagate("1.8886208646075193*x - 1.1*y", at={"x": (1.0, 1e-7), "y": (2.0, 1.8504547974335015)},
                          correlation=["x,y=-0.2641223405636953"], samples=2000)
    a, b, sx, sy, rho = 1.8886208646075193, -1.1, 1e-7, 1.8504547974335015, -0.2641223405636953
    assert r.sd["linear"] == pytest.approx(math.sqrt(a * a * sx * sx + b * b * sy * sy + 2 * a * b * rho * sx * sy),
                                           rel=1e-12)
    tiny = gradcli.propagate("x + y", at={"x": (1.0, 1e-9), "y": (2.0, 1e3)}, correlation=["x,y=0.5"], samples=2000)
    assert tiny.to_dict()["input_covariance"][0][1] == pytest.approx(0.5e-6, rel=1e-12)


def test_the_api_s_records_are_the_jsonl_lines(invoke):
    lines = invoke("propagate", "x*y", "--at", "x=2±0.1,y=3±0.2", "-f", "jsonl", "--samples", "1000").stdout
    r = gradcli.propagate("x*y", at="x=2±0.1,y=3±0.2", samples=1000)
    assert list(r.records()) == [json.loads(line) for line in lines.splitlines()]
    many = gradcli.propagate("x*y", points={"x": [1, 2], "x_sd": [0.1, 0.2]}, at="y=3±0.1", samples=1000)
    assert many.many and [rec["sd"]["x"] for rec in many.records()] == [0.1, 0.2]
    with pytest.raises(AttributeError):
        many.mean


def test_a_custom_rule_propagates_like_its_body():
    rule = "log1pexp(x) = log(1 + exp(x)); d/dx = 1 - 1/(1 + exp(x))"
    with_rule = gradcli.propagate("log1pexp(x)", at="x=1±0.5", rule=rule, samples=5000).to_dict()
    body = gradcli.propagate("log(1 + exp(x))", at="x=1±0.5", samples=5000).to_dict()
    a, b = with_rule["results"][0], body["results"][0]
    assert a["sd"]["linear"] == pytest.approx(b["sd"]["linear"], rel=1e-14)
    assert a["sd"]["second_order"] == pytest.approx(b["sd"]["second_order"], rel=1e-12)
    assert a["monte_carlo"]["mean"] == pytest.approx(b["monte_carlo"]["mean"], rel=1e-14)
    assert a["interval"]["lower"] == pytest.approx(b["interval"]["lower"], rel=1e-14)
