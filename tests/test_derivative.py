"""gradcli derivative: sin's derivatives, structural zeros, fd accuracy by order and dtype."""

from __future__ import annotations

import contextlib
import io
import math
import subprocess
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

import gradcli
from gradcli.methods import symbolic
from gradcli.methods.fd_stencils import central_coefficients
from gradcli.methods.tape import tape_derivatives
from gradcli.expression import parse
from gradcli.dtypes import MACHINE_EPSILON
from gradcli.expression.points import parse_point

SIN_DERIVATIVES = [math.cos, lambda x: -math.sin(x), lambda x: -math.cos(x), math.sin]


def test_sin_order_4(invoke_json):
    doc = invoke_json("derivative", "sin(x)", "--at", "x=1", "--order", "4")
    assert doc["command"] == "derivative" and doc["variable"] == "x" and doc["point"] == {"x": 1.0}
    assert doc["order"] == 4 and doc["status"] == "ok"
    ds = doc["derivatives"]
    for k, exact in enumerate(SIN_DERIVATIVES):
        assert ds["symbolic"][k] == pytest.approx(exact(1.0), abs=1e-15)
        assert ds["tape"][k] == pytest.approx(exact(1.0), abs=1e-15)
        assert ds["fd"][k] == pytest.approx(exact(1.0), abs=1e-9)
    assert doc["structural_zero"] == [False] * 4
    # the stencil each order used: accuracy 8, 9 points for orders 1-2 and 11 for 3-4
    assert doc["fd_accuracy"] == [8] * 4 and doc["fd_points"] == [9, 9, 11, 11]
    assert doc["warnings"] == []


def test_formulas_are_the_runs_and_the_table_shows_them(invoke_json, invoke):
    doc = invoke_json("derivative", "sin(x)", "--at", "x=1", "--order", "2", "--formulas")
    assert doc["formulas"] == ["cos(x)", "-sin(x)"]
    assert "formulas" not in invoke_json("derivative", "sin(x)", "--at", "x=1", "--order", "2")
    table = invoke("derivative", "sin(x)", "--at", "x=1", "--order", "2", "--formulas").stdout
    assert "-sin(x)" in table and "0.0272 (9)" in table


def _fd_errors(**options) -> list[float]:
    return gradcli.derivative("sin(x)", at="x=1", method="symbolic,fd", **options).to_dict()["error"]["fd"]


def test_fd_accuracy_up_to_order_8_float64():
    doc = gradcli.derivative("sin(x)", at="x=1", order=8, method="symbolic,fd").to_dict()
    errors = doc["error"]["fd"]
    assert errors[0] < 1e-12 and errors[1] < 1e-11 and errors[3] < 1e-8 and errors[7] < 1e-4
    assert doc["warnings"] == []


def test_fd_float32_vs_float64():
    e64, e32 = _fd_errors(order=2), _fd_errors(order=2, dtype="float32")
    assert max(e64) < 1e-11
    # float32's own error: a few of its roundings, not float64's
    assert 1e-9 < max(e32) < 1e-4


def test_structural_zero_above_a_constant_derivative(invoke_json):
    doc = invoke_json("derivative", "x*x", "--at", "x=3", "--order", "4")
    tape = list(zip(doc["derivatives"]["tape"], doc["structural_zero"]))
    assert tape == [(6.0, False), (2.0, False), (0.0, True), (0.0, True)]
    assert doc["derivatives"]["symbolic"] == [6.0, 2.0, 0.0, 0.0]


def test_wrt_with_several_variables(invoke_json, invoke):
    doc = invoke_json("derivative", "x**3*y", "--at", "x=2,y=5", "--wrt", "x", "--order", "3")
    assert doc["derivatives"]["symbolic"] == [60.0, 60.0, 30.0]
    result = invoke("derivative", "x**3*y", "--at", "x=2,y=5")
    assert result.exit_code == 2 and "--wrt" in result.stderr


@pytest.mark.parametrize("order", ["0", "11"])
def test_order_out_of_range(invoke, order):
    result = invoke("derivative", "sin(x)", "--at", "x=1", "--order", order)
    assert result.exit_code == 2 and "--order" in result.stderr


def test_undefined_point_exit_1(invoke_json):
    doc = invoke_json("derivative", "log(x)", "--at", "x=0", "--order", "2", code=1)
    assert doc["value"] is None and doc["warnings"]


def test_csv_and_table(invoke):
    result = invoke("derivative", "exp(x)", "--at", "x=0", "--order", "3", "--format", "csv")
    lines = result.stdout.splitlines()  # a row per point (tests/test_scripts.py)
    assert lines[0].startswith("x,value,symbolic_d1,tape_d1,fd_d1") and len(lines) == 2
    result = invoke("derivative", "exp(x)", "--at", "x=0", "--order", "3")
    assert result.exit_code == 0 and "fd step" in result.stdout


def _run_program(code: str) -> list[list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<gradcli --show-code>", "exec"), {})  # gradcli's own generated program
    return [line.split() for line in out.getvalue().splitlines()]


def test_show_code_runs(invoke):
    result = invoke("derivative", "sin(x)", "--at", "x=1", "--order", "3", "--show-code")
    printed = _run_program(result.stdout)
    assert [float(v) for _, v in printed] == pytest.approx([math.cos(1), -math.sin(1), -math.cos(1)], abs=1e-15)


def test_show_code_renames_clashing_variables(invoke):
    # z (the program's style of target name) is renamed in the program only
    result = invoke("derivative", "z**3", "--at", "z=2", "--order", "2", "--show-code")
    assert result.exit_code == 0, result.stderr
    assert "z -> z_" in result.stdout and "by z" in result.stdout
    assert _run_program(result.stdout) == [["1", "12.0"], ["2", "12.0"]]
    # names the program itself uses (d, tape, stack, k), one of them held fixed
    result = invoke("derivative", "d**2*tape + stack*k", "--at", "d=3,tape=2,stack=5,k=7", "--wrt", "d",
                    "--order", "2", "--show-code")
    assert result.exit_code == 0, result.stderr
    assert _run_program(result.stdout) == [["1", "12.0"], ["2", "4.0"]]


def test_show_code_computes_nothing(invoke, monkeypatch):
    from gradcli.compute.batch.derivative import DerivativeBatch

    def boom(*args, **kwargs):
        raise AssertionError("--show-code computed something")

    for name in ("start", "compute"):
        monkeypatch.setattr(DerivativeBatch, name, boom)
    # log(x) at 0 could not be computed (exit 1); its program is still printed, exit 0
    result = invoke("derivative", "log(x)", "--at", "x=0", "--order", "2", "--show-code")
    assert result.exit_code == 0 and result.stderr == ""
    assert "tf.math.log(x)" in result.stdout
    for bad in (("--order", "0"), ("--method", "nope"), ("--method", "fd", "--formulas"), ("--accuracy", "3"),
                ("--eps", "-1")):
        result = invoke("derivative", "sin(x)", "--at", "x=1", "--show-code", *bad)
        assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.stderr


def test_x_squared_at_zero_order_3(invoke_json):
    # TF's pow gradient would compute 0 * x**-1 = NaN at 0; a small integer power is a product instead,
    # so the third derivative is a structural zero
    doc = invoke_json("derivative", "x**2", "--at", "x=0", "--order", "3")
    assert doc["derivatives"]["tape"] == [0.0, 2.0, 0.0]
    assert doc["derivatives"]["symbolic"] == [0.0, 2.0, 0.0]
    assert doc["structural_zero"] == [False, False, True]
    assert doc["warnings"] == []


def test_symbolic_timeout_kills_the_worker_process():
    # SymPy's big-integer work holds the GIL: the deadline must stop a process, not abandon a thread.
    code = ("import sys, multiprocessing\n"
            "import gradcli\n"
            "r = gradcli.derivative('x**x**x**x', at='x=10', method='symbolic,fd', symbolic_timeout=0.5).to_dict()\n"
            "assert r['methods'] == ['fd'] and any('symbolic column left out' in n for n in r['notes']), r['notes']\n"
            "assert multiprocessing.active_children() == []\n"
            "assert 'tensorflow' not in sys.modules\n")
    # the timeout only guards against a hang (the bug this test is about); it asserts nothing about speed
    subprocess.run([sys.executable, "-c", code], check=True, timeout=600)


def test_central_coefficients_are_exact():
    assert central_coefficients(1, 2) == ((-1, 0, 1), (Fraction(-1, 2), Fraction(0), Fraction(1, 2)))
    assert central_coefficients(2, 2) == ((-1, 0, 1), (Fraction(1), Fraction(-2), Fraction(1)))
    offsets, w = central_coefficients(4, 2)
    assert offsets == (-2, -1, 0, 1, 2) and w == tuple(map(Fraction, (1, -4, 6, -4, 1)))
    for k in range(1, 11):
        offsets, w = central_coefficients(k, 8)
        # exact Taylor conditions: sum w m^j = k! [j == k]
        assert all(sum(wi * Fraction(m) ** j for wi, m in zip(w, offsets)) == (math.factorial(k) if j == k else 0)
                   for j in range(len(offsets)))


_LEAVES = st.sampled_from(["x", "x", "2", "0.5"])


def _smooth(depth: int):
    if depth == 0:
        return _LEAVES
    sub = _smooth(depth - 1)
    return st.one_of(
        _LEAVES,
        st.tuples(sub, st.sampled_from(["+", "-", "*"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["sin", "cos", "atan"]), sub).map(lambda t: f"{t[0]}({t[1]})"),
        sub.map(lambda s: f"exp(sin({s}))"),  # bounded: exp(exp(exp(2))) would overflow (and is refused)
    )


@settings(max_examples=25, deadline=None)
@given(expr=_smooth(3), x=st.floats(-1.5, 1.5, allow_nan=False, allow_subnormal=False))
def test_property_tape_matches_symbolic(expr, x):
    point = parse_point(f"x={x!r}")
    tree = parse(expr).tree
    tape = _tape(tree, point.values, 3)
    syms = symbolic.symbols_for(["x"])
    d, subs = symbolic.to_sympy(tree, syms), symbolic.exact_point(dict(point.exact), syms)
    for k, t in enumerate(tape, start=1):
        d = symbolic.diff(d, syms["x"])
        e = symbolic.value_at(d, subs)
        t = 0.0 if t is None else t
        assert abs(t - e) <= 1e3 * 4 ** k * MACHINE_EPSILON["float64"] * max(1.0, abs(e)), (expr, k)


def _tape(tree, values: dict[str, float], order: int, **options) -> list[float | None]:
    """The nested tapes at one point: None where the tape reported the order as unconnected."""
    import numpy as np

    t = tape_derivatives(tree, {k: np.array([v]) for k, v in values.items()}, "x", order, **options)
    return [None if structural else float(v) for v, structural in zip(t.values[0], t.structural)]


def test_nested_tapes_stop_at_their_time_budget():
    # each order re-records the lower ones (~3x per order): past the budget the higher orders are left
    # out with a note instead of running for minutes
    notes: list[str] = []
    tree = parse("sin(x)").tree
    got = _tape(tree, {"x": 1.0}, 4, time_budget=0.0, notes=notes)
    assert got == [pytest.approx(math.cos(1.0))]
    assert notes and "tape column stops at order 1" in notes[0]
    assert len(_tape(tree, {"x": 1.0}, 4)) == 4  # the default budget is ample here


def test_grossly_wrong_fd_is_flagged_even_when_the_bound_is_loose(invoke):
    # float32, order 6: fd says -86 where the derivative is 123.4; the truncation bound (which holds the
    # unknown 14th derivative) is loose, but an error over half the exact value is always flagged
    result = invoke("derivative", "atan(x)/(1+x^2)", "--at", "x=0.5", "-n", "6", "--dtype", "float32")
    assert result.exit_code == 0
    assert "fd and symbolic disagree on derivative 6" in result.stderr
    # and a smooth, well-scaled case in float64 raises nothing
    result = invoke("derivative", "sin(x)", "--at", "x=0.7", "-n", "8", "--method", "symbolic,fd")
    assert result.exit_code == 0 and result.stderr == ""


def test_default_and_all_methods_are_the_standard_three_at_high_order():
    """The complex step (first derivatives only) runs only when named: no -m, or -m all, at --order 6 works."""
    from gradcli.compute.request import parse_methods

    assert parse_methods(None, allowed=("symbolic", "tape", "fd", "complex")) == ["symbolic", "tape", "fd"]
    assert parse_methods("ALL", allowed=("symbolic", "tape", "fd", "complex")) == ["symbolic", "tape", "fd"]
    doc = gradcli.derivative("sin(x)", at="x=1", order=6, method=None).to_dict()
    assert doc["methods"] == ["symbolic", "tape", "fd"]


def test_exact_tape_is_not_named_suspect_beside_a_plateaued_fd():
    # at x = 1e8 fd's steps (1.8e6 .. 7.6e6) are far beyond sin's scale: every step sees D ~ 0 (a false
    # plateau) with a small estimate, while the tape is right to rounding. Without the exact value the
    # warning may not blame the tape; each fd value outside its estimate is warned about at its order.
    import oracle

    doc = gradcli.derivative("sin(x)", at="x=1e8", order=6, method="tape,fd").to_dict()
    warnings = doc["warnings"]
    assert not any("tape is suspect" in w for w in warnings), warnings
    for k in range(1, 7):
        exact = float(oracle.oracle_derivative("sin(x)", "x", {"x": 1e8}, k))
        assert abs(doc["derivatives"]["tape"][k - 1] - exact) <= 1e-8
        fd, est = doc["derivatives"]["fd"][k - 1], doc["fd_error_estimate"][k - 1]
        if abs(fd - exact) > est:
            assert any(f"derivative {k}:" in w for w in warnings), (k, warnings)
