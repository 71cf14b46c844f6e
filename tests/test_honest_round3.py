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
