"""Honest numbers, round three: huge constants, several expressions with an overflowing f, kinks decided from
the tree, Hessian entries below their fd estimate, a float64 point moved from the typed one."""

from __future__ import annotations

import math

import pytest

import gradcli
import oracle


# --- a derivative's huge coefficient is +-inf in float64, never an internal error -----------------------------
def test_a_derivative_past_float64s_range_is_undefined_not_an_internal_error():
    doc = gradcli.derivative("x**(10**300)", at="x=1", order=2, method="symbolic").to_dict()
    assert doc["derivatives"]["symbolic"][0] == 1e300  # the first derivative, 10**300, is a float64
    assert doc["derivatives"]["symbolic"][1] is None  # 10**300 * (10**300 - 1) is not
    assert any("order 2 is not finite" in w for w in doc["warnings"])


def test_a_hessian_with_a_huge_power_is_a_clean_result():
    doc = gradcli.hessian("(x+1)**(10**300)*y", at="x=1,y=1").to_dict()
    assert doc["status"] == "undefined"
    assert any("is infinite" in w for w in doc["warnings"])


def test_a_huge_literal_compiles_to_infinity():
    from gradcli.expression.evaluate import number_to_float

    assert number_to_float(10 ** 400) == math.inf and number_to_float(-(10 ** 400)) == -math.inf
    assert number_to_float(3) == 3.0


# --- several expressions: f's exact value, not its float64 overflow, decides where its derivatives exist --------
def test_an_overflowing_f_keeps_its_exact_derivative_beside_another_expression():
    doc = gradcli.grad(["log(1 + exp(x))", "y**2"], at="x=750,y=1", method="symbolic").to_dict()
    truth = oracle.oracle_derivative("log(1 + exp(x))", "x", {"x": "750"})
    assert doc["results"][0]["gradient"]["symbolic"]["x"] == pytest.approx(float(truth), rel=1e-15)
    assert doc["results"][1]["gradient"]["symbolic"]["y"] == 2.0
    assert not any("not finite (symbolic" in w for w in doc["warnings"])


# --- abs of an argument SymPy cannot prove real: sign(u)*u', no re/im ----------------------------------------
@pytest.mark.parametrize("expr", ["abs(asin(x))", "abs(atanh(x))", "sin(abs(acos(abs(x) - 0.1)))",
                                  "abs(log(abs(asin(x))))"])
def test_abs_of_a_partly_real_function_has_an_exact_derivative(expr):
    doc = gradcli.grad(expr, at="x=0.5", method="symbolic").to_dict()
    truth = oracle.oracle_derivative(expr, "x", {"x": "0.5"})
    assert doc["results"][0]["gradient"]["symbolic"]["x"] == pytest.approx(float(truth), rel=1e-13)
    assert not any("no numerical evaluation" in n for n in doc["notes"] + doc["warnings"])


def test_abs_of_asin_has_exact_higher_derivatives():
    doc = gradcli.derivative("abs(asin(x))", at="x=0.5", order=3, method="symbolic").to_dict()
    for k, value in enumerate(doc["derivatives"]["symbolic"], 1):
        assert value == pytest.approx(float(oracle.oracle_derivative("abs(asin(x))", "x", {"x": "0.5"}, k)), rel=1e-12)


# --- a Hessian entry below fd's own estimate is warned -------------------------------------------------------
def test_a_hessian_entry_smaller_than_fds_estimate_is_warned():
    expr = "x**4*y + 1e-3*y**2"
    doc = gradcli.hessian(expr, at="x=100,y=0.01", method="symbolic,fd").to_dict()
    truth = oracle.oracle_hessian(expr, {"x": "100", "y": "0.01"})
    assert doc["hessian"]["symbolic"][1][1] == pytest.approx(float(truth[1][1]), rel=1e-12)
    assert doc["fd_error_estimate"][1][1] > abs(float(truth[1][1]))
    assert any("Hessian entry (y, y) is not resolved" in w for w in doc["warnings"]), doc["warnings"]


def test_a_resolved_hessian_has_no_such_warning():
    doc = gradcli.hessian("x**2*y + y**3", at="x=1.5,y=2", method="symbolic,fd").to_dict()
    assert not any("not resolved" in w for w in doc["warnings"]), doc["warnings"]


# --- a typed point float64 cannot hold: a note where the derivative moves with it ----------------------------
def test_a_typed_point_float64_moves_is_noted_with_the_typed_points_derivative():
    doc = gradcli.grad("atanh(x)", at="x=1-1e-9", method="symbolic").to_dict()
    at_float = float(oracle.oracle_derivative("atanh(x)", "x", {"x": 1 - 1e-9}))
    at_typed = float(oracle.oracle_derivative("atanh(x)", "x", {"x": "0.999999999"}))
    assert doc["results"][0]["gradient"]["symbolic"]["x"] == pytest.approx(at_float, rel=1e-14)
    note = [n for n in doc["notes"] if n.startswith("the point as typed")]
    assert len(note) == 1 and repr(at_typed) in note[0] and "0.99999999900000003" in note[0]


@pytest.mark.parametrize("at", ["x=0.1", "x=pi", "x=1e22", "x=3"])
def test_a_typed_point_whose_rounding_moves_no_digit_gets_no_note(at):
    doc = gradcli.grad("x**2 + sin(x)", at=at, method="symbolic").to_dict()
    assert not any(n.startswith("the point as typed") for n in doc["notes"])
