"""Honest numbers (issue 8, items 1-6): every fd value within its own stated error estimate, or warned.

Each example from the issue's "Why" is a regression test here; a Hypothesis property checks the contract
on random smooth expressions against the independent mpmath oracle (tests/oracle.py).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gradcli
import oracle
from strategies import smooth_expressions
from gradcli.compute.analysis import analyse_hessian
from gradcli.compute.judge import cross_check, judge_hessian
from gradcli.expression import parse
from gradcli.methods.fd import fd_gradients
from gradcli.methods.fd_hessian import fd_hessians
from gradcli.methods.fd_stencils import fd_derivatives


def _within(got: float, exact, estimate: float) -> bool:
    return abs(got - float(exact)) <= estimate


# --------------------------------------------------------------------------------------------- item 1
def test_every_fd_value_has_an_estimate_that_covers_its_error():
    tree = parse("exp(sin(x))*sqrt(1 + x**2)").tree
    d = fd_derivatives(tree, {"x": np.array([0.7, -1.3])}, "x", 5)
    for p, x in enumerate(("0.7", "-1.3")):
        for k in range(5):
            exact = oracle.oracle_derivative("exp(sin(x))*sqrt(1 + x**2)", "x", {"x": x}, k + 1)
            assert _within(d.values[p, k], exact, d.estimates[p, k]), (x, k + 1)
    g = fd_gradients(parse("sin(x)*y").tree, {"x": np.array([1.0]), "y": np.array([2.0])}, ["x", "y"])
    assert g.estimates.shape == (1, 2) and np.all(g.estimates > 0)
    h = fd_hessians(parse("(x1+5)*x2**2").tree, {"x1": np.array([2.0]), "x2": np.array([3.0])}, ["x1", "x2"])
    assert np.all(np.abs(h.matrices[0] - [[0, 6], [6, 14]]) <= h.estimates[0])


def test_high_orders_in_float32_are_within_their_estimate_or_warned():
    # the kind of case: order 6 in float32 (fd once said -86 for 123.4 inside a loose bound)
    r = gradcli.derivative("atan(x)/(1+x^2)", at="x=0.5", order=6, dtype="float32", method="symbolic,fd").to_dict()
    for k, (fd, exact, estimate) in enumerate(zip(r["derivatives"]["fd"], r["derivatives"]["symbolic"],
                                                  r["fd_error_estimate"]), start=1):
        warned = any(f"derivative {k}" in w for w in r["warnings"])
        assert warned or abs(fd - exact) <= estimate, (k, fd, exact, estimate)


def test_the_guides_number_stays_and_json_carries_the_estimate(invoke_json):
    doc = invoke_json("grad", "3*x**2+2*x-1", "--at", "x=1", "--method", "fd", "--eps", "1e-3")
    result = doc["results"][0]
    assert result["gradient"]["fd"]["x"] == 7.999999999999119
    assert 8.8e-13 <= result["fd_error_estimate"]["x"] < 1e-10  # covers fd's own error, and says it is small


def test_rosenbrock_near_its_minimum_is_not_a_false_alarm(invoke):
    result = invoke("grad", "100*(y-x**2)**2+(1-x)**2", "--at", "x=1.0001,y=1", "-m", "symbolic,fd")
    assert result.exit_code == 0 and "disagree" not in result.stderr, result.stderr


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=smooth_expressions(), x=st.floats(-3, 3), y=st.floats(-3, 3))
def test_the_cheap_rounding_bound_covers_the_measured_rounding(expr, x, y):
    """fd's speed (issue 8 follow-up): the running-error bound stands in for the long-double measurement
    where f has no cancellation, so it must never be below the rounding the measurement sees."""
    from gradcli.methods.fd_engine import evaluate as _evaluate
    from gradcli.methods.fd_bound import rounding_bound
    from gradcli.methods.fd_error import measured_rounding

    if np.dtype(np.longdouble).itemsize <= 8:
        pytest.skip("no long double wider than float64 here")
    tree = parse(expr).tree
    env = {"x": np.linspace(x, x + 1, 64), "y": np.linspace(y, y - 1, 64)}
    fx = _evaluate(tree, env, "float64", (64,))
    value, bound = rounding_bound(tree, env)
    assert np.array_equal(value, fx, equal_nan=True)
    measured = measured_rounding(tree, env, fx, "float64")
    assert np.all(measured <= bound), expr


def test_cancellation_inside_f_is_still_measured():
    # 100*(y - x**2)**2 near y = x**2: the bound is far above eps |f| there, so those points are measured
    from gradcli.methods.fd_error import StencilRounding

    tree = parse("(1-x)**2 + 100*(y-x**2)**2").tree
    env = {"x": np.array([1.0001, 0.3]), "y": np.array([1.0002, 2.0])}
    from gradcli.methods.fd_engine import evaluate as _evaluate

    e = StencilRounding(tree, env, _evaluate(tree, env, "float64", (2,)), "float64", (0.0,), 2)
    assert list(e.bounded) == [False, True]
    g = fd_gradients(tree, {"x": np.array([1.0001]), "y": np.array([1.0002])}, ["x", "y"])
    exact = [2 * (1.0001 - 1) - 400 * 1.0001 * (1.0002 - 1.0001 ** 2), 200 * (1.0002 - 1.0001 ** 2)]
    assert np.all(np.abs(g.values[0] - exact) <= g.estimates[0])


# --------------------------------------------------------------------------------------------- item 2
def test_without_sympy_a_wrong_fd_is_named_the_suspect(invoke):
    # at the step given the stencil straddles abs's kink: fd 0.017, tape 1, and fd's estimate is large
    result = invoke("grad", "abs(x)", "--at", "x=1e-7", "-m", "tape,fd", "--eps", "6e-6")
    assert result.exit_code == 0
    assert "tape and fd disagree on d(abs(x))/dx" in result.stderr and "fd is suspect" in result.stderr


def test_without_sympy_a_large_step_is_not_a_disagreement(invoke):
    result = invoke("grad", "sin(x)", "--at", "x=1", "-m", "tape,fd", "--eps", "0.5")
    assert result.exit_code == 0 and "disagree" not in result.stderr


def test_cross_check_blames_the_tape_when_fd_is_sure():
    columns = {"tape": np.array([[[1.0]]]), "fd": np.array([[[2.0]]])}
    gap, apart, _, fd_suspect = cross_check(np.array([[0.0]]), columns, np.array([[0.5]]), np.array([[[1e-12]]]),
                                            dtype="float64")
    assert apart[0, 0, 0] and not fd_suspect[0, 0, 0] and gap[0, 0, 0] == 1.0


def test_derivative_cross_check_without_sympy(invoke):
    result = invoke("derivative", "exp(sin(sqrt(1+x**2)))", "--at", "x=0.7", "-n", "6", "-m", "tape,fd",
                    "--format", "json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    tape, fd = doc["derivatives"]["tape"], doc["derivatives"]["fd"]
    for k in range(6):  # no symbolic: tape and fd agree within fd's estimate, or it is said
        warned = f"derivative {k + 1}" in result.stderr
        if k >= len(tape):  # the tape's time budget left the highest orders out (a busy machine): said
            assert doc["notes"] or result.stderr
            continue
        assert warned or abs(tape[k] - fd[k]) <= doc["fd_error_estimate"][k] * 1.01 + 1e-9


# --------------------------------------------------------------------------------------------- item 3
def test_a_stencil_leaving_the_domain_shrinks_the_step(invoke_json):
    doc = invoke_json("grad", "log(x)", "--at", "x=1e-7", "-m", "symbolic,fd")
    fd, estimate = doc["results"][0]["gradient"]["fd"]["x"], doc["results"][0]["fd_error_estimate"]["x"]
    assert abs(fd - 1e7) <= estimate < 2e-2  # ~1e-9 relative (log's own error is bounded, not measured)
    assert any("leaves the domain" in n for n in doc["notes"])
    doc = invoke_json("derivative", "log(x)", "--at", "x=1e-7", "-n", "2")
    assert not doc["warnings"] and doc["derivatives"]["fd"][1] == pytest.approx(-1e14, rel=1e-6)


def test_hessian_steps_shrink_near_a_domain_edge_or_a_pole(invoke):
    # follow-up item 2: at 1e-7 from log's edge or 1/x's pole the default stencil (h ~ 1.2e-4) left the domain
    # or straddled the pole, and the (x, x) entry was wrong by 1e14 (warned); the step shrinks now
    for expr, exact in (("log(x)*y", -2e14), ("1/x + y**2", 2e21)):
        h = fd_hessians(parse(expr).tree, {"x": np.array([1e-7]), "y": np.array([2.0 if "log" in expr else 1.0])},
                        ["x", "y"])
        assert h.how[0] == 3 and abs(h.matrices[0, 0, 0] - exact) <= h.estimates[0, 0, 0] < 1e-5 * abs(exact)
        assert h.steps[0, 1] > 1e-4  # y's step is left alone
    result = invoke("hessian", "log(x)*y", "--at", "x=1e-7,y=2", "-m", "symbolic,fd")
    assert result.exit_code == 0 and "disagree" not in result.stderr
    assert "stencil leaves the domain or crosses a pole" in result.stderr
    h = fd_hessians(parse("log(x)").tree, {"x": np.array([1e-7])}, ["x"], eps=1e-4)  # --eps: as given
    assert h.how[0] == 0 and not np.isfinite(h.matrices[0, 0, 0])


def test_one_sided_where_no_two_sided_step_fits():
    g = fd_gradients(parse("sqrt(x)*x").tree, {"x": np.array([0.0])}, ["x"])
    assert math.isfinite(g.values[0, 0]) and abs(g.values[0, 0]) <= g.estimates[0, 0] < 1e-6


def test_an_explicit_eps_is_used_as_given():
    g = fd_gradients(parse("log(x)").tree, {"x": np.array([1e-7])}, ["x"], eps=6e-6)
    assert g.steps[0, 0] == 6e-6 and not math.isfinite(g.values[0, 0])


def test_cancellation_is_said_with_the_estimate(invoke):
    result = invoke("grad", "1e8 + sin(x)", "--at", "x=1", "--dtype", "float32", "-m", "symbolic,fd")
    assert result.exit_code == 0
    assert "cannot be resolved in float32: its error estimate" in result.stderr


def test_fd_across_atan2s_branch_cut_is_flagged(invoke_json, invoke):
    """atan2(y, x) jumps by 2*pi across y=0 for x<0: fd's d/dy there is ~1e5 (exact -1), never shown silently."""
    doc = invoke_json("grad", "atan2(y, x)", "--at", "x=-1,y=0", "-m", "symbolic,fd")
    fd, estimate = doc["results"][0]["gradient"]["fd"]["y"], doc["results"][0]["fd_error_estimate"]["y"]
    assert abs(fd - (-1.0)) > 1.0 and abs(fd - (-1.0)) <= estimate  # wrong, and its own estimate says so
    sided = doc["results"][0]["one_sided"]["y"]  # both one-sided values: the right one is the derivative
    assert sided["right"] == pytest.approx(-1.0, abs=1e-6) and abs(sided["left"]) > 1e5
    result = invoke("grad", "atan2(y, x)", "--at", "x=-1,y=0", "-m", "symbolic,fd")
    assert "d(atan2(y, x))/dy is at a kink or a jump" in result.stderr
    assert "right -1" in result.stderr and result.exit_code == 0


def test_jumps_only_where_f_steps():
    """The jump test fires at a step in f, not at a kink, a pole next to the point, or a narrow bump."""
    from gradcli.methods.fd import _jumps

    def at(values):
        return lambda m: np.array([values[int(m) + 2]])

    fmax = np.array([10.0])
    assert _jumps(at([-np.pi + 2e-5, -np.pi + 1e-5, np.pi, np.pi - 1e-5, np.pi - 2e-5]), fmax, "float64")[0]
    assert not _jumps(at([2e-5, 1e-5, 0.0, 1e-5, 2e-5]), fmax, "float64")[0]  # abs: a kink
    assert not _jumps(at([-2.0, -4.0, 1e7, 4.0, 2.0]), fmax, "float64")[0]  # a pole beside the point
    assert not _jumps(at([0.0, 0.0, 1.0, 0.0, 0.0]), fmax, "float64")[0]  # a bump narrower than h
    assert not _jumps(at([1.0, 1.0, 1.0 + 2e-16, 1.0, 1.0]), fmax, "float64")[0]  # rounding


# --------------------------------------------------------------------------------------------- item 4
def test_hessian_entries_on_their_own_scale_and_definiteness(invoke_json):
    doc = invoke_json("hessian", "1e8*x**2 + 1e-4*y**2", "--at", "x=1,y=1")
    assert doc["definiteness"] == "positive-definite"
    fd, est = np.array(doc["hessian"]["fd"]), np.array(doc["fd_error_estimate"])
    assert np.all(np.abs(fd - [[2e8, 0], [0, 2e-4]]) <= est)  # fd's y entry is lost, and its estimate says so
    # a tape entry 2e-4 wrong by 1e-6 beside 2e8 is not excused by the large one
    _, warning = judge_hessian("tape", [[2e8, 0], [0, 2.01e-4]], [[2e8, 0], [0, 2e-4]], wrt=["x", "y"],
                               dtype="float64")
    assert warning and "(y, y)" in warning


def test_scale_aware_definiteness_from_entry_errors():
    m = [[2e8, 0.0], [0.0, 2e-4]]
    assert analyse_hessian(m, entry_errors=np.abs(np.array(m)) * 1e-15).definiteness == "positive-definite"
    # an eigenvalue inside its own error is zero; an error elsewhere does not blur it
    assert analyse_hessian(m, entry_errors=[[1e-6, 0], [0, 1e-3]]).definiteness == "positive-semidefinite"
    assert analyse_hessian(m, entry_errors=[[10.0, 0], [0, 1e-9]]).definiteness == "positive-definite"


# --------------------------------------------------------------------------------------------- item 5
def test_a_rounded_point_is_not_blamed_on_the_tape(invoke):
    result = invoke("grad", "1/(x-2)", "--at", "x=2.0000001", "-m", "symbolic,tape,fd")
    assert result.exit_code == 0
    # every method, the exact one too, is taken at the float64 point: no rounding between them to explain
    assert "disagree" not in result.stderr and "warning" not in result.stderr
    result = invoke("derivative", "1/(x-2)", "--at", "x=2.0000001", "-n", "2", "-m", "symbolic,tape")
    assert result.exit_code == 0 and "disagree" not in result.stderr


def _batch(runner, *args):
    from gradcli.cli import app

    result = runner.invoke(app, list(args) + ["-f", "jsonl"], catch_exceptions=False)
    return result, [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_a_rounded_point_is_allowed_for_in_derivative_and_hessian_batches(runner):
    # float32 moves 2.001 to 2.00099993: the exact derivatives move by 145 and 4.3e5 (order 1, 2), by 8e12 for
    # the Hessian's (x, x) at 2.00001: the tape is exact for the float32 point and is not blamed
    result, records = _batch(runner, "derivative", "1/(x-2)", "--grid", "x=2.001:2.002:2", "-n", "2",
                             "--dtype", "float32", "-m", "symbolic,tape,fd")
    assert result.exit_code == 0 and "disagree" not in result.stderr, result.stderr
    assert records[0]["error"]["fd"][0] > 100
    result, records = _batch(runner, "hessian", "1/(x-2)+y", "--grid", "x=2.00001:2.00002:2", "--at", "y=1",
                             "--dtype", "float32", "-m", "symbolic,tape")
    assert result.exit_code == 0 and "disagree" not in result.stderr, result.stderr
    assert records[0]["error"]["tape"] > 1e12


# --------------------------------------------------------------------------------------------- item 6
def test_a_kink_is_warned_with_both_one_sided_values(invoke):
    result = invoke("grad", "abs(x-1)", "--at", "x=1", "--format", "json")
    assert result.exit_code == 0 and "is at a kink" in result.stderr
    sided = json.loads(result.stdout)["results"][0]["one_sided"]["x"]
    assert sided["left"] == pytest.approx(-1) and sided["right"] == pytest.approx(1)
    result = invoke("derivative", "abs(x-1)", "--at", "x=1", "--format", "json")
    assert result.exit_code == 0 and "is at a kink" in result.stderr
    assert json.loads(result.stdout)["one_sided"][0]["right"] == pytest.approx(1)
    # near the kink but not at it the step adapts until the stencil stays on one side: no kink, fd right
    g = fd_gradients(parse("abs(x-1)").tree, {"x": np.array([1.0000001])}, ["x"])
    assert not g.kinks[0, 0] and abs(g.values[0, 0] - 1) <= g.estimates[0, 0]


def test_kinks_above_order_1_are_warned_with_both_one_sided_values(invoke, runner):
    # follow-up item 5: x*abs(x) has a first derivative at 0 but its one-sided second derivatives are -2 and 2;
    # abs(x)**3's third; near the kink (not at it) and on smooth functions nothing is said
    from gradcli.methods.fd_stencils import sided_kinks

    result = invoke("derivative", "x*abs(x)", "--at", "x=0", "-n", "2", "--format", "json")
    assert result.exit_code == 0 and "derivative 2 is at a kink" in result.stderr
    assert "derivative 1 is at a kink" not in result.stderr
    assert json.loads(result.stdout)["one_sided"][0] is None  # per order: none at order 1
    sided = json.loads(result.stdout)["one_sided"][1]
    assert sided["left"] == pytest.approx(-2) and sided["right"] == pytest.approx(2)
    kinks, left, right = sided_kinks(parse("abs(x)**3").tree, {"x": np.array([0.0, 0.1])}, "x", 3)
    assert kinks.tolist() == [[False, False, True], [False, False, False]]
    kinks, _, _ = sided_kinks(parse("sin(x)*exp(x) + x*abs(x - 2)").tree, {"x": np.array([0.3, 1.0, 2.001])}, "x", 4)
    assert not kinks.any()
    result, records = _batch(runner, "derivative", "x*abs(x)", "--grid", "x=-1:1:3", "-n", "2")
    assert "one_sided" in records[1] and "one_sided" not in records[0] and "one_sided" not in records[2]


def test_sign_like_pieces_and_undefined_points(invoke):
    result = invoke("grad", "x/abs(x) + x", "--at", "x=0.5")
    assert result.exit_code == 0 and "kink" not in result.stderr
    result = invoke("grad", "log(3, x)", "--at", "x=1")
    assert result.exit_code == 1 and "internal error" not in result.stderr


@pytest.mark.xfail(strict=True, reason="known: fd's float32 estimate of this second derivative is 1.4x short "
                   "(error 4.5e-5, estimate 3.3e-5, unwarned); found by the property test below")
def test_known_short_float32_estimate_found_by_the_search():
    expr, x = "(sin(x)) + (log(2 + sin(x)))", -1.266
    want = float(oracle.oracle_partial(expr, {"x": f"{x}", "y": f"{x}"}, {"x": 2}))
    r = gradcli.derivative(expr, at=f"x={x},y={x}", order=2, wrt="x", method="fd", dtype="float32").to_dict()
    fd, estimate = r["derivatives"]["fd"][1], r["fd_error_estimate"][1]
    assert any("derivative 2" in w for w in r["warnings"]) or abs(fd - want) <= estimate


def test_batch_records_carry_the_estimate_and_the_kink(runner):
    from gradcli.cli import app

    result = runner.invoke(app, ["derivative", "abs(x-1)", "--grid", "x=0:2:3", "-f", "jsonl"],
                           catch_exceptions=False)
    records = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert [r["point"]["x"] for r in records] == [0.0, 1.0, 2.0]
    assert all("fd_error_estimate" in r for r in records)
    assert "one_sided" in records[1] and "one_sided" not in records[0]


# --------------------------------------------------------------------------------------------- property
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=smooth_expressions(), x=st.floats(-2, 2).map(lambda t: round(t, 3)),
       order=st.integers(1, 4), dtype=st.sampled_from(["float64", "float32"]))
def test_fd_within_its_estimate_or_warned(expr, x, order, dtype):
    """The contract: every fd value within its stated estimate of the oracle's value, or a warning."""
    point = {v: f"{x}" for v in ("x", "y")}
    try:
        exact = [oracle.oracle_partial(expr, point, {"x": k}) for k in range(1, order + 1)]
    except (oracle.Undefined, oracle.Unsupported):
        return
    r = gradcli.derivative(expr, at=",".join(f"{v}={x}" for v in ("x", "y")), order=order, wrt="x",
                           method="fd", dtype=dtype).to_dict()
    for k, (fd, estimate, want) in enumerate(zip(r["derivatives"]["fd"], r["fd_error_estimate"], exact), start=1):
        warned = any(f"derivative {k}" in w for w in r["warnings"])
        assert warned or abs(fd - float(want)) <= estimate + 1e-300, (expr, x, k, fd, estimate)


def test_derivatives_at_a_domain_edge_go_one_sided(invoke_json, invoke):
    """x**2.5 at 0 (defined for x >= 0 only): the derivatives of orders 1 and 2 are finite (0), never 'not
    finite'; a one-sided stencil is used, with a note, and the value is within its estimate."""
    doc = invoke_json("derivative", "x**2.5", "--at", "x=0", "-n", "2", "-m", "symbolic,fd")
    for fd, estimate in zip(doc["derivatives"]["fd"], doc["fd_error_estimate"]):
        assert fd is not None and abs(fd) <= estimate
    result = invoke("derivative", "x**2.5", "--at", "x=0", "-n", "2", "-m", "symbolic,fd")
    assert result.exit_code == 0 and "not finite" not in result.stderr
    assert "a one-sided one" in result.stderr


@pytest.mark.parametrize("expr, x, exact", [("x**2.5", 0.0, 0.0), ("(1 - x)**2.5", 1.0, 0.0),
                                            ("sqrt(1 - x)*(1 - x)", 1.0, 0.0), ("(x + 2)**1.5", -2.0, 0.0)])
def test_gradients_at_either_domain_edge_go_one_sided(expr, x, exact):
    """Forward at a left-hand edge, backward at a right-hand one (the backward one was passed over where
    the forward one was not finite, and the gradient was 'not finite')."""
    g = fd_gradients(parse(expr).tree, {"x": np.array([x])}, ["x"])
    assert g.how[0, 0] == 2  # fd_error.ONE_SIDED
    assert abs(g.values[0, 0] - exact) <= g.estimates[0, 0], (g.values, g.estimates)


@pytest.mark.parametrize("expr, order", [("sqrt(x)", 1), ("x**1.5", 2), ("x**2.5", 3), ("(1 - x)**0.5", 1)])
def test_an_infinite_derivative_at_a_domain_edge_is_not_a_number(expr, order):
    """SymPy calls these undefined (infinite); fd's one-sided values grow without bound as h shrinks, and
    gradcli does not print one of them as the derivative."""
    x = 1.0 if expr.startswith("(1") else 0.0
    d = fd_derivatives(parse(expr).tree, {"x": np.array([x])}, "x", order)
    assert np.all(np.isfinite(d.values[0, :order - 1]))  # the orders below are 0, and finite
    assert not np.isfinite(d.values[0, order - 1]), d.values


def test_a_slow_finite_limit_at_an_edge_is_not_taken_for_an_infinite_one():
    """x - x^1.02 at 0: D(h) = 1 - c h^0.02 grows towards 1 as h shrinks, but its differences shrink: a number
    (with its large estimate, and the 'cannot be resolved' warning), never 'not finite'."""
    d = fd_derivatives(parse("x - x**1.02").tree, {"x": np.array([0.0])}, "x", 1)
    assert np.isfinite(d.values[0, 0]) and abs(d.values[0, 0] - 1.0) <= d.estimates[0, 0]


@pytest.mark.parametrize("p", [4.25, 4.5, 5.5])
def test_slowly_converging_edge_derivatives_are_within_their_estimates(p):
    """The 4th derivative of (x - 1.3)^p at 1.3 is 0 but converges like h^(p - 4): the estimate must reach 0
    (it includes the distance to the limit Aitken's process extrapolates)."""
    d = fd_derivatives(parse(f"(x - 1.3)**{p} + 0.7*x**2").tree, {"x": np.array([1.3])}, "x", 4)
    for k, exact in enumerate((2 * 0.7 * 1.3, 1.4, 0.0, 0.0)):
        assert abs(d.values[0, k] - exact) <= d.estimates[0, k] + 1e-12, (k + 1, d.values, d.estimates)


@pytest.mark.parametrize("expr, x, exact", [("sqrt(x)", 1e-20, [5e9, -2.5e29]), ("log(x)", 1e-30, [1e30, -1e60]),
                                            ("sqrt(x) + x**2", 1e-15, [15811388.300841896, -7.905694150420948e21])])
def test_a_point_nearer_an_edge_than_the_smallest_step_is_resolved(expr, x, exact):
    """Steps go on below 4^-20 of the default, as |x| / 4, |x| / 16, ... where the point is that near an edge
    at 0 (they were 'not finite': every stencil left the domain, the one-sided ones diverged)."""
    d = fd_derivatives(parse(expr).tree, {"x": np.array([x])}, "x", 2)
    for k, want in enumerate(exact):
        assert abs(d.values[0, k] - want) <= d.estimates[0, k], (k + 1, d.values, d.estimates)
    h = fd_hessians(parse(f"({expr})*y").tree, {"x": np.array([x]), "y": np.array([1.0])}, ["x", "y"])
    assert abs(h.matrices[0, 0, 0] - exact[1]) <= h.estimates[0, 0, 0]
    assert abs(h.matrices[0, 0, 1] - exact[0]) <= h.estimates[0, 0, 1]


def test_a_wide_stencil_near_an_edge_in_float32():
    # accuracy 8 spans 16h at 4h: its default step (eps32^(1/9) = 0.17) times 4^-20 still leaves the domain of
    # log at 1e-12; the steps |x| / 4^j reach it (it was 'not finite')
    d = fd_derivatives(parse("log(x)").tree, {"x": np.array([1e-12])}, "x", 1, dtype="float32")
    assert abs(d.values[0, 0] - 1e12) <= d.estimates[0, 0] and d.accuracy[0, 0] == 8


def test_without_sympy_a_disagreement_names_no_unjustified_suspect(invoke):
    # fd's step (6e16) spans ~1e16 periods of cos, and no step float64 can take at 1e22 spans less than 3e5:
    # fd says it cannot resolve the value, so the tape (right: -sin(1e22)) is not checked, and no one is suspect
    result = invoke("grad", "cos(x)", "--at", "x=1e22", "-m", "tape,fd")
    assert "fd: d(cos(x))/dx cannot be resolved in float64" in result.stderr
    assert "tape: d(cos(x))/dx = 0.852201 is not checked" in result.stderr
    assert "suspect" not in result.stderr
    # the same at order 6: the tape is exact, so naming it was a false alarm
    result = invoke("derivative", "sin(x)", "--at", "x=1e8", "--order", "6", "-m", "tape,fd")
    assert "tape is suspect" not in result.stderr and "either may be wrong" in result.stderr


@pytest.mark.parametrize("x", [744.0, 745.0])
def test_subnormal_differences_are_no_disagreement(x):
    # exp(-x) there is subnormal (1e-323, 5e-324): the methods are 0 or one spacing (4.9e-324) off, which is
    # float64's resolution there; fd's estimate counts the subnormal spacing, and no judge calls it a disagreement
    at = f"x={x!r}"
    for result in (gradcli.grad("exp(-x)", at=at), gradcli.derivative("exp(-x)", at=at, order=2),
                   gradcli.hessian("exp(-x)*y", at=at + ",y=1")):
        assert not any("disagree" in w for w in result.to_dict()["warnings"]), result.to_dict()["warnings"]
    doc = gradcli.grad("exp(-x)", at=at, method="fd").to_dict()
    exact = float(oracle.oracle_derivative("exp(-x)", "x", {"x": x}))
    r = doc["results"][0]
    assert 0 < r["fd_error_estimate"]["x"] < 1e-300
    assert abs(r["gradient"]["fd"]["x"] - exact) <= r["fd_error_estimate"]["x"]


def test_a_real_disagreement_still_names_its_entry():
    # the floor is a few smallest normals: a wrong entry far above it is still caught, at the entry that is off
    worst, warning = judge_hessian("fd", [[2.0, 0.0], [0.0, 1e-300]], [[2.0, 0.0], [0.0, 0.0]], wrt=["x", "y"],
                                   dtype="float64", estimates=[[0.0, 0.0], [0.0, 0.0]])
    assert worst == 1e-300 and "entry (y, y)" in warning
    assert judge_hessian("fd", [[2.0, 0.0], [0.0, 5e-324]], [[2.0, 0.0], [0.0, 0.0]], wrt=["x", "y"],
                         dtype="float64", estimates=[[0.0, 0.0], [0.0, 0.0]])[1] is None


def test_no_false_alarm_on_an_unused_variable_or_a_function_that_cancels_to_zero(invoke):
    """grad's fd: an --at variable f does not contain is exactly 0 with estimate 0 (it warned 'cannot be
    resolved', estimate 4.7e9); log2(x)*log(2) - log(x) is identically 0, and one ulp of its rounding is no
    jump (it warned 'at a kink or a jump' at x = 3 and 10)."""
    result = invoke("grad", "exp(-x)*1e20", "--at", "x=0,y=1", "-m", "fd", "-f", "json")
    doc = json.loads(result.stdout)
    assert doc["results"][0]["gradient"]["fd"]["y"] == 0.0 and doc["results"][0]["fd_error_estimate"]["y"] == 0.0
    assert "warning" not in result.stderr
    for x in ("3", "10"):
        assert "kink" not in invoke("grad", "log2(x)*log(2) - log(x)", "--at", f"x={x}").stderr
    assert "kink or a jump" in invoke("grad", "atan2(y, x)", "--at", "x=-1,y=0", "-m", "symbolic,fd").stderr


def test_a_points_fd_result_does_not_depend_on_the_rest_of_its_batch():
    """Near a pole a point's step search may end at the near steps while another point of the batch goes on
    down: the last near step's estimate is then still guarded as it is alone, and a near step counts as
    resolved only once the step after it agrees (1/(x - 1) at 0.999: it was 240465.8 +- 3.6e6 alone, the
    answer -2e9, and -1.99997e9 inside a batch with 1 + 1e-8)."""
    alone = gradcli.derivative("1/(x - 1)", at={"x": 0.999}, order=3, method="symbolic,fd").to_dict()
    batch = list(gradcli.derivative("1/(x - 1)", points={"x": [1 + 1e-8, 0.999, 1.5]}, order=3,
                                    method="symbolic,fd").records())
    (inside,) = [r for r in batch if r["point"]["x"] == 0.999]
    for key in ("derivatives", "fd_step", "fd_error_estimate", "warnings"):
        assert alone[key] == inside[key], key
    exact, fd, estimate = (alone["derivatives"]["symbolic"], alone["derivatives"]["fd"],
                           alone["fd_error_estimate"])
    assert all(abs(f - e) <= s for f, e, s in zip(fd, exact, estimate)), (fd, exact, estimate)
    assert alone["warnings"] == []
