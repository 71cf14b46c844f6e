"""Property tests: over random smooth expressions and points, the methods agree with SymPy within
tolerances derived from the dtype (tape) and from the step and the method's error terms (fd)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcli.methods import symbolic
from gradcli.expression.evaluate import PYTHON_FLOAT64, compile_expression
from gradcli.expression import parse
from gradcli.dtypes import MACHINE_EPSILON
from gradcli.methods.fd import fd_gradient
from gradcli.methods.fd_engine import default_step
from gradcli.methods.tape import tape_gradient

EPS64 = MACHINE_EPSILON["float64"]

from strategies import VARS, points, smooth_expressions  # noqa: E402


def exact_gradient(tree, point, order=1):
    """SymPy's derivatives of ``order`` along each variable, and the function's magnitude nearby."""
    syms = symbolic.symbols_for(VARS)
    f = symbolic.to_sympy(tree, syms)
    subs = {syms[k]: v for k, v in point.items()}
    out = {}
    for v in VARS:
        d = f.diff(syms[v], order)
        out[v] = float(d.evalf(30, subs=subs))
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=smooth_expressions(), point=points)
def test_tape_agrees_with_symbolic_to_float64_rounding(text, point):
    e = parse(text)
    per_tree, _, _, _ = tape_gradient([e.tree], point, VARS, dtype="float64")
    exact = exact_gradient(e.tree, point)
    # rounding: a few hundred ulps of the largest quantity in play (value or derivative)
    value = abs(compile_expression(e.tree, PYTHON_FLOAT64)(point))
    for v in VARS:
        scale = max(1.0, abs(exact[v]), value)
        assert abs(per_tree[0][v] - exact[v]) <= 1e-12 * scale, (text, point, v)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=smooth_expressions(), point=points)
def test_central_fd_within_its_error_bound(text, point):
    """|fd - f'| <= |f'''| h^2 / 6 (truncation) + eps |f| / h (rounding), with slack for both constants."""
    e = parse(text)
    derivs, steps = fd_gradient(e.tree, point, VARS, scheme="central", dtype="float64")
    exact = exact_gradient(e.tree, point)
    third = exact_gradient(e.tree, point, order=3)
    f = compile_expression(e.tree, PYTHON_FLOAT64)
    fmax = max(abs(f({**point, v: point[v] + s})) for v in VARS for s in (-1e-3, 0, 1e-3))
    for v in VARS:
        h = steps[v]
        assert h == pytest.approx(default_step("central", "float64", point[v]))
        bound = 2 * abs(third[v]) * h * h / 6 + 4 * EPS64 * max(1.0, fmax) / h + 1e-2 * h * h
        assert abs(derivs[v] - exact[v]) <= bound, (text, point, v, bound)


@settings(max_examples=20, deadline=None)
@given(x=st.floats(-3, 3, allow_nan=False))
def test_float32_fd_error_is_float32_sized(x):
    """The fd column in float32 is honestly float32: error ~ eps32^(2/3), far above float64's."""
    tree = parse("sin(x) + x**2").tree
    d32, steps = fd_gradient(tree, {"x": x}, ["x"], dtype="float32")
    exact = math.cos(x) + 2 * x
    h = steps["x"]
    eps32 = MACHINE_EPSILON["float32"]
    assert abs(d32["x"] - exact) <= 2 * h * h / 6 + 8 * eps32 * max(1.0, abs(math.sin(x) + x * x)) / h + 4 * eps32 * max(1, abs(x))
