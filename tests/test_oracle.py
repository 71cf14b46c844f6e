"""The test oracle itself (tests/oracle.py) on derivatives known in closed form."""

from __future__ import annotations

import math

import mpmath
import pytest

from oracle import (Undefined, Unsupported, oracle_derivative, oracle_gradient, oracle_hessian, oracle_value,
                          translate, variables)


def close(a, b, digits=40):
    return abs(mpmath.mpf(a) - mpmath.mpf(b)) <= mpmath.mpf(10) ** -digits * max(1, abs(mpmath.mpf(b)))


def test_guide_polynomial_and_syntax():
    # 3x^2 + 2x - 1: implicit multiplication and ^ as a power; f'(1) = 8 exactly.
    assert close(oracle_value("3x^2 + 2x - 1", {"x": 1}), 4)
    assert close(oracle_derivative("3x^2 + 2x - 1", "x", {"x": 1}), 8)
    assert close(oracle_derivative("3(x+1)^2", "x", {"x": 2}, order=2), 6)


def test_guide_partials_and_hessian():
    grad = oracle_gradient("(x1+5)*x2**2", {"x1": 2, "x2": 3})
    assert close(grad["x1"], 9) and close(grad["x2"], 42)
    h = oracle_hessian("(x1+5)*x2**2", {"x1": 2, "x2": 3})
    assert [[float(v) for v in row] for row in h] == [[0.0, 6.0], [6.0, 14.0]]


@pytest.mark.parametrize("expr, point, order, exact", [
    ("sin(x)", "0.7", 1, lambda: mpmath.cos(mpmath.mpf("0.7"))),
    ("sin(x)", "0.7", 4, lambda: mpmath.sin(mpmath.mpf("0.7"))),
    ("exp(2*x)", "0.3", 3, lambda: 8 * mpmath.exp(mpmath.mpf("0.6"))),
    ("log(x)", "1e-7", 1, lambda: mpmath.mpf("1e7")),
    ("log(x, 2)", "3", 1, lambda: 1 / (3 * mpmath.log(2))),  # value first, base second
    ("log(3, x)", "2", 1, lambda: -mpmath.log(3) / (2 * mpmath.log(2) ** 2)),
    ("atan2(x, 2)", "1", 1, lambda: mpmath.mpf(2) / 5),  # atan2(y, x): d/dy = x / (x^2 + y^2)
    ("sigmoid(x)", "0", 1, lambda: mpmath.mpf("0.25")),
    ("sqrt(x)", "4", 1, lambda: mpmath.mpf("0.25")),
    ("erf(x)", "0", 1, lambda: 2 / mpmath.sqrt(mpmath.pi)),
    ("x**x", "2", 1, lambda: 4 * (1 + mpmath.log(2))),
    ("1e8 + sin(x)", "1", 1, lambda: mpmath.cos(1)),
    ("tanh(x)", "0.5", 2, lambda: -2 * mpmath.tanh(mpmath.mpf("0.5")) * (1 - mpmath.tanh(mpmath.mpf("0.5")) ** 2)),
])
def test_known_derivatives(expr, point, order, exact):
    # The closed forms are written as functions so that they are computed at 60 digits too.
    with mpmath.mp.workdps(60):
        exact = exact()
    assert close(oracle_derivative(expr, "x", {"x": point}, order), exact, digits=30)


def test_points_as_decimal_text_or_binary_float():
    # "0.1" is the decimal one tenth; 0.1 the float64 next to it: they differ by ~5.55e-18.
    typed, binary = oracle_value("x", {"x": "0.1"}), oracle_value("x", {"x": 0.1})
    assert typed != binary and abs(typed - binary) < 1e-17
    assert oracle_value("x", {"x": 0.1}) == mpmath.mpf(0.1)


def test_constants_and_variables_in_order():
    assert close(oracle_value("2pi + e", {}), 2 * mpmath.pi + mpmath.e)
    assert variables("y*sin(x1) + x1^2*z + 2x") == ("y", "x1", "z", "x")
    assert math.isclose(float(oracle_value("1.5e2x", {"x": 2})), 300.0)


@pytest.mark.parametrize("expr, point", [("log(x)", -1.0), ("sqrt(x)", -2.0), ("1/x", 0.0), ("log(3, x)", 1.0)])
def test_undefined_values_raise(expr, point):
    with pytest.raises(Undefined):
        oracle_derivative(expr, "x", {"x": point})


@pytest.mark.parametrize("expr", ["floor(x)", "x if x else 1", "x[0]", "(lambda: 1)()", "__import__('os')"])
def test_unknown_syntax_is_unsupported(expr):
    with pytest.raises(Unsupported):
        translate(expr)
