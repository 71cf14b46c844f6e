"""The complex step (issue 8, item 7): against the independent mpmath oracle, never a number where the
expression is not analytic, and its place in grad / derivative."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gradcli.expression import parse
from gradcli.expression.functions import TABLE
from gradcli.methods.complex_step import COMPLEX_STEP, complex_gradient, complex_gradients
from oracle import Undefined, oracle_gradient
from strategies import points, smooth_expressions


def in_dtype(point: dict[str, float], dtype: str) -> dict[str, float]:
    """The point as the dtype holds it: the oracle is asked about the same binary numbers."""
    return {k: float(np.float64(v).astype(dtype)) for k, v in point.items()}


def check_against_oracle(expr: str, point: dict[str, float], dtype: str) -> None:
    typed = in_dtype(point, dtype)
    try:
        exact = oracle_gradient(expr, typed)
    except Undefined:
        return
    derivs, estimates, not_analytic = complex_gradient(parse(expr).tree, typed, list(typed), dtype=dtype)
    assert not not_analytic
    for v in typed:
        # 1e-100: mpmath.diff's own residue where the exact derivative is 0
        err = abs(derivs[v] - float(exact[v]))
        assert err <= estimates[v] + 1e-100, (expr, typed, v, derivs[v], float(exact[v]), estimates[v])
        # "a few ulps": the estimate itself stays small next to the derivative's terms
        assert estimates[v] <= 1e3 * np.finfo(dtype).eps * max(1.0, abs(float(exact[v])), 1e3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=smooth_expressions(), point=points, dtype=st.sampled_from(["float64", "float32"]))
def test_random_smooth_expressions_within_the_estimate(expr, point, dtype):
    variables = parse(expr).variables
    check_against_oracle(expr, {v: point[v] for v in variables}, dtype)


def _table_cases():
    for f in TABLE:
        if f.kind != "number":  # where, comparisons and logic: truth values, tested with where (test_model_functions)
            continue
        if f.name == "stop_gradient":  # its derivative is 0 on the tape and 1 for fd by design: no one answer
            continue
        for args in f.points:
            for k in range(len(args)):  # each argument in turn is the variable, the others constants
                call = ", ".join("x" if i == k else repr(a) for i, a in enumerate(args))
                yield f"{f.name}({call})", {"x": args[k]}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("expr, point", list(_table_cases()))
def test_every_function_of_the_table(expr, point, dtype):
    check_against_oracle(expr, point, dtype)


@pytest.mark.parametrize("expr, point", [
    ("x**20", {"x": -1.1}),  # integer powers of a negative base: multiplied, not exp(n log z)
    ("x**-3 + x**2.5", {"x": 1.5}),
    ("x**x", {"x": 2.0}),
    ("1/(x - 2)", {"x": 2.0000001}),
    ("exp(20*x) - 20*x", {"x": 1e-3}),  # terms of 20 cancelling
    ("sin(x) - tanh(x)", {"x": 1e-3}),
    ("(x1+5)*x2**2", {"x1": 2.0, "x2": 3.0}),
    ("log(3, x)", {"x": 2.0}),
    ("atan2(y, x)", {"y": 1.0, "x": -2.0}),  # left half plane, off the cut
    ("abs(x - 1)", {"x": 3.0}),  # away from the kink
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_hand_written_cases(expr, point, dtype):
    check_against_oracle(expr, point, dtype)


def test_no_cancellation_where_fd_loses_every_digit():
    # issue 8: 1e8 + sin(x) in float32: fd gives 0.0, exact 0.5403
    derivs, estimates, _ = complex_gradient(parse("1e8 + sin(x)").tree, {"x": 1.0}, ["x"], dtype="float32")
    assert derivs["x"] == float(np.float32(math.cos(1.0)))
    assert estimates["x"] < 1e-6


@pytest.mark.parametrize("expr, point", [
    ("abs(x - 1)", {"x": 1.0}), ("sqrt(x)", {"x": 0.0}), ("asin(x)", {"x": 1.0}), ("acosh(x)", {"x": 1.0}),
    ("atan2(y, 2*x)", {"y": 0.0, "x": 0.0}), ("x**0.5 + 1", {"x": 0.0}),
])
def test_not_analytic_gives_no_number(expr, point):
    derivs, estimates, not_analytic = complex_gradient(parse(expr).tree, point, list(point), dtype="float64")
    assert not_analytic and all(math.isnan(derivs[v]) for v in not_analytic)


@pytest.mark.parametrize("expr, point, analytic", [
    ("abs(x - 1)*y", {"x": 1.0, "y": 2.0}, {"x": False, "y": True}),  # d/dy = |x - 1| = 0 exists
    ("atan2(y, x)", {"y": 0.0, "x": -2.0}, {"y": False, "x": True}),  # on the cut only y jumps
    ("x**y*z", {"x": -1.0, "y": 2.0, "z": 3.0}, {"x": False, "y": False, "z": True}),
])
def test_only_the_variables_that_cross_a_kink_lose_their_value(expr, point, analytic):
    derivs, _, not_analytic = complex_gradient(parse(expr).tree, point, list(point), dtype="float64")
    assert {v: v not in not_analytic for v in point} == analytic
    exact = oracle_gradient(expr, {v: p for v, p in point.items()}, wrt=[v for v in point if analytic[v]])
    for v, d in exact.items():
        assert derivs[v] == pytest.approx(float(d), abs=1e-15)


def test_a_batch_equals_its_points_one_by_one():
    tree = parse("sin(x)*exp(y) + x**3/y").tree
    xs, ys = np.linspace(-2, 2, 7), np.linspace(0.5, 3, 7)
    batch = complex_gradients(tree, {"x": xs, "y": ys}, ["x", "y"], dtype="float32")
    for k in range(len(xs)):
        one = complex_gradients(tree, {"x": xs[k:k + 1], "y": ys[k:k + 1]}, ["x", "y"], dtype="float32")
        assert np.array_equal(one.values[0], batch.values[k])
    assert batch.step == COMPLEX_STEP["float32"]


# ---------------------------------------------------------------------------------------------
# the CLI
# ---------------------------------------------------------------------------------------------
def test_grad_json_has_the_column_and_its_estimate(invoke_json):
    doc = invoke_json("grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "-m", "symbolic,complex")
    assert doc["methods"] == ["symbolic", "complex"] and doc["complex"]["step"] == COMPLEX_STEP["float64"]
    r = doc["results"][0]
    assert r["gradient"]["complex"] == {"x1": 9.0, "x2": 42.0}
    assert r["error"]["complex"] == {"x1": 0.0, "x2": 0.0}
    assert 0 < r["complex_error_estimate"]["x2"] < 1e-12
    assert doc["warnings"] == []


def test_grad_table_and_csv(invoke):
    table = invoke("grad", "3*x**2 + 2*x - 1", "--at", "x=1", "-m", "symbolic,fd,complex")
    assert table.exit_code == 0 and "complex step" in table.stdout and "h = 1.3e-200" in table.stdout
    # CSV at one point is the batch core's layout, as with every other method: a row per expression
    csv = invoke("grad", "x**2", "sqrt(x)", "--at", "x=4", "-m", "symbolic,complex", "-f", "csv")
    lines = csv.stdout.splitlines()
    assert lines[0] == ("x,expression,value,symbolic_dx,complex_dx,complex_error_dx,complex_error_estimate_dx,"
                        "status,warnings")
    assert lines[1].split(",")[3:6] == ["8.0", "8.0", "0.0"] and lines[2].split(",")[4] == "0.25"


def test_a_kink_is_a_note_not_a_number(invoke_json, invoke):
    doc = invoke_json("grad", "abs(x - 1)", "--at", "x=1", "-m", "symbolic,complex")
    assert doc["results"][0]["gradient"]["complex"] == {"x": None}
    assert any("not analytic" in w and "abs" in w for w in doc["warnings"]) and doc["status"] == "warning"
    result = invoke("derivative", "atan2(y, x)", "--at", "x=-2,y=0", "--wrt", "y", "-m", "complex")
    assert invoke_json("derivative", "atan2(y, x)", "--at", "x=-2,y=0", "-m", "complex",
                       "--wrt", "x")["derivatives"]["complex"] == [0.0]
    assert result.exit_code == 0 and "not analytic" in result.stderr and "atan2" in result.stderr


def test_derivative_order_one(invoke_json):
    doc = invoke_json("derivative", "sin(x)", "--at", "x=1", "-m", "symbolic,complex", "--dtype", "float32")
    assert doc["derivatives"]["complex"] == [float(str(np.float32(math.cos(1.0))))]  # float32 digits: 0.5403023
    assert doc["complex_error_estimate"][0] > 0 and doc["warnings"] == []


@pytest.mark.parametrize("args", [
    ["derivative", "sin(x)", "--at", "x=1", "--order", "2", "-m", "complex"],
    ["hessian", "x**2*y", "--at", "x=1,y=2", "-m", "complex"],
    ["derivative", "sin(x)", "--grid", "x=0:1:3", "--order", "2", "-m", "complex"],
    ["hessian", "x**2*y", "--grid", "x=0:1:2,y=1:2:2", "-m", "complex"],
    ["hessian", "x**2*y", "--at", "x=1,y=2", "-m", "complex", "-f", "csv"],
])
def test_complex_step_where_it_does_not_apply_is_a_usage_error(invoke, args):
    result = invoke(*args)
    assert result.exit_code == 2 and "complex" in result.stderr and "first derivatives" in result.stderr
    assert "Traceback" not in result.stderr


def test_complex_step_does_not_import_tensorflow():
    code = ("import sys; from gradcli.cli import app; from typer.testing import CliRunner; "
            "r = CliRunner().invoke(app, ['grad', 'sin(x)*y', '--at', 'x=1,y=2', '-m', 'complex,fd', '-f', 'json']); "
            "assert r.exit_code == 0, r.output; assert 'tensorflow' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
