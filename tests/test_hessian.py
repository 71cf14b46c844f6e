"""gradcli hessian: the guide's matrix three ways, the analysis, float32 vs float64, scale."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

import numpy as np

import gradcli
from gradcli.dtypes import MACHINE_EPSILON
from gradcli.expression import parse
from gradcli.expression.points import parse_point
from gradcli.methods.fd_hessian import fd_hessians
from gradcli.methods.tape import tape_hessians

GUIDE = ("(x1+5)*x2**2", "--at", "x1=2,x2=3")


def test_guide_matrix_three_ways(invoke_json):
    doc = invoke_json("hessian", *GUIDE)
    assert doc["command"] == "hessian"
    assert doc["variables"] == doc["wrt"] == ["x1", "x2"]
    assert doc["value"] == 63.0
    assert doc["gradient"]["symbolic"] == {"x1": 9.0, "x2": 42.0}
    assert doc["hessian"]["symbolic"] == [[0.0, 6.0], [6.0, 14.0]]
    assert doc["hessian"]["tape"] == [[0.0, 6.0], [6.0, 14.0]]
    fd = doc["hessian"]["fd"]
    assert all(abs(a - b) <= 1e-5 for ra, rb in zip(fd, [[0, 6], [6, 14]]) for a, b in zip(ra, rb))
    # The guide prints None for d2z/dx1^2: gradcli shows 0, marked structural.
    assert doc["structural_zeros"] == [["x1", "x1"]]
    lo, hi = doc["eigenvalues"]
    assert lo == pytest.approx(7 - math.sqrt(85), rel=1e-14)
    assert hi == pytest.approx(7 + math.sqrt(85), rel=1e-14)
    assert doc["definiteness"] == "indefinite"
    assert doc["critical_point"] is None
    assert doc["max_stable_learning_rate"] == pytest.approx(2 / (7 + math.sqrt(85)))
    assert doc["error"]["tape"] == 0.0 and doc["error"]["fd"] <= 1e-5
    assert doc["symmetry"]["tape"] == 0.0
    assert set(doc["fd_step"]) == {"x1", "x2"} and doc["fd"]["scheme"] == "central second differences"
    assert doc["tape"]["mode"].startswith("per-row")
    assert doc["warnings"] == [] and doc["notes"] == [] and doc["status"] == "ok"


def test_guide_table_and_csv(invoke):
    result = invoke("hessian", *GUIDE)
    assert result.exit_code == 0, result.stderr
    assert "indefinite" in result.stdout and "structural zero" in result.stdout
    assert result.stderr == ""
    result = invoke("hessian", *GUIDE, "--format", "csv")
    lines = result.stdout.splitlines()  # a row per point (tests/test_scripts.py)
    assert lines[0].startswith("x1,x2,value,symbolic_dx1dx1,tape_dx1dx1,fd_dx1dx1,fd_error_estimate_dx1dx1,symbolic_dx1dx2")
    assert len(lines) == 1 + 1 and ",indefinite," in lines[1]


@pytest.mark.parametrize("expr, kind, definiteness", [
    ("x**2 + 3*y**2 + x*y", "minimum", "positive-definite"),
    ("-(x**2) - y**2 + x*y", "maximum", "negative-definite"),
    ("x**2 - y**2", "saddle", "indefinite"),
    ("x**4 + y**2", "degenerate", "positive-semidefinite"),
])
@pytest.mark.parametrize("methods", ["symbolic,tape,fd", "fd"])
def test_critical_points(expr, kind, definiteness, methods):
    doc = gradcli.hessian(expr, at="x=0,y=0", method=methods).to_dict()
    assert doc["critical_point"] == kind
    assert doc["definiteness"] == definiteness


def test_minimum_learning_rate_and_condition(invoke_json):
    doc = invoke_json("hessian", "(x-1)**2 + 100*(y-x**2)**2", "--at", "x=1,y=1")
    assert doc["critical_point"] == "minimum"
    lam = doc["eigenvalues"]
    assert doc["max_stable_learning_rate"] == pytest.approx(2 / max(lam))
    assert doc["condition_number"] == pytest.approx(max(lam) / min(lam))


def test_fd_error_float64_vs_float32():
    expr, at = "exp(x1)*sin(x2) + x1**3*x2", "x1=0.5,x2=1.2"
    e64 = gradcli.hessian(expr, at=at, method="symbolic,fd", dtype="float64").to_dict()["error"]["fd"]
    e32 = gradcli.hessian(expr, at=at, method="symbolic,fd", dtype="float32").to_dict()["error"]["fd"]
    # second differences: ~sqrt(eps) relative, i.e. ~1e-8 in float64 and ~1e-3 in float32
    assert e64 < 1e-6
    assert 1e-5 < e32 < 1e-2
    # A step that ignores float32 (1e-4) is far worse: the error must be float32's own.
    bad = gradcli.hessian("(x1+5)*x2**2", at="x1=2,x2=3", method="symbolic,fd", dtype="float32", eps=1e-4)
    assert bad.to_dict()["error"]["fd"] > 1.0


def test_fd_step_follows_dtype():
    values = {"x": np.array([3.0])}
    h64 = fd_hessians(parse("x**3").tree, values, ["x"], dtype="float64").steps[0, 0]
    h32 = fd_hessians(parse("x**3").tree, values, ["x"], dtype="float32").steps[0, 0]
    assert h64 == pytest.approx(MACHINE_EPSILON["float64"] ** 0.25 * 3, rel=0.5)
    assert h32 == pytest.approx(MACHINE_EPSILON["float32"] ** 0.25 * 3, rel=0.5)


def test_sixty_variables_tape_and_fd(invoke_json):
    n = 60
    expr = "*".join(f"x{i}" for i in range(1, n + 1))
    at = ",".join(f"x{i}=1" for i in range(1, n + 1))
    doc = invoke_json("hessian", expr, "--at", at, "--method", "tape,fd")
    expected = [[0.0 if i == j else 1.0 for j in range(n)] for i in range(n)]
    assert doc["hessian"]["tape"] == expected
    fd = doc["hessian"]["fd"]
    assert max(abs(a - b) for ra, rb in zip(fd, expected) for a, b in zip(ra, rb)) < 1e-6
    # J - I: eigenvalues n-1 once and -1 n-1 times
    assert doc["eigenvalues"][-1] == pytest.approx(n - 1)
    assert doc["eigenvalues"][0] == pytest.approx(-1)
    assert doc["definiteness"] == "indefinite"
    assert "jacobian" in doc["tape"]["mode"]
    assert any("which single entries were unconnected" in n for n in doc["notes"])


def test_symbolic_timeout_leaves_column_out(invoke):
    n = 40
    expr = "*".join(f"x{i}" for i in range(1, n + 1))
    at = ",".join(f"x{i}=1" for i in range(1, n + 1))
    result = invoke("hessian", expr, "--at", at, "--method", "symbolic,fd", "--symbolic-timeout", "0.1",
                    "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert "symbolic" not in doc["hessian"] and doc["methods"] == ["fd"]
    assert "symbolic column left out" in result.stderr
    assert doc["analysis_source"] == "fd"


def _run_program(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<gradcli --show-code>", "exec"), {})  # gradcli's own generated program
    return out.getvalue()


def test_show_code_runs_and_reproduces_the_guide(invoke):
    result = invoke("hessian", *GUIDE, "--show-code")
    assert result.exit_code == 0
    code = result.stdout
    assert "tf.GradientTape(persistent=True) as outer" in code and "outer.jacobian" in code
    printed = _run_program(code).splitlines()
    assert "None" in printed[0]  # the guide's own rows
    # the guide's loop with None as 0, then the vectorised jacobian: the same matrix
    assert printed[1:] == ["[[0.0, 6.0], [6.0, 14.0]]"] * 2


def test_show_code_renames_clashing_variables(invoke):
    # z is the program's target and tape a name it uses: both are renamed in the program only
    result = invoke("hessian", "z**2*tape", "--at", "z=3,tape=2", "--show-code")
    assert result.exit_code == 0, result.stderr
    assert "z -> z_" in result.stdout and "Rows and columns: z, tape" in result.stdout
    printed = _run_program(result.stdout).splitlines()
    assert printed[1:] == ["[[4.0, 6.0], [6.0, 0.0]]"] * 2
    # a held-fixed variable with a clashing name, and one named like a builtin
    result = invoke("hessian", "outer*print**2", "--at", "outer=2,print=3", "--wrt", "print", "--show-code")
    assert result.exit_code == 0, result.stderr
    assert _run_program(result.stdout).splitlines()[1:] == ["[[4.0]]"] * 2


def test_show_code_computes_nothing(invoke, monkeypatch):
    import gradcli.methods.tape as tape
    from gradcli.compute.batch import engine, hessian as core

    def boom(*args, **kwargs):
        raise AssertionError("--show-code computed something")

    for module, name in ((core, "fd_hessians"), (tape, "tape_hessians"), (engine, "start_symbolic"),
                         (engine.BatchCore, "start"), (core.HessianBatch, "compute")):
        monkeypatch.setattr(module, name, boom)
    # sqrt(x) at 0 could not be computed (exit 1); its program is still printed, exit 0
    result = invoke("hessian", "sqrt(x)*y", "--at", "x=0,y=1", "--show-code")
    assert result.exit_code == 0 and result.stderr == ""
    assert "tf.sqrt(x)" in result.stdout
    # the options are still checked
    for bad in (("--method", "nope"), ("--method", "tape", "--formulas"), ("--eps", "0"), ("--wrt", "w"),
                ("--eps", "1e-17"), ("--dtype", "float16")):
        result = invoke("hessian", "x*y", "--at", "x=1,y=2", "--show-code", *bad)
        assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.stderr


def test_symbolic_timeout_kills_the_worker_process():
    # SymPy's big-integer work holds the GIL: the deadline must stop a process, not abandon a thread.
    code = ("import sys, multiprocessing\n"
            "from gradcli.methods.worker import SymbolicTimeout\n"
            "import gradcli\n"
            "from gradcli.compute.batch.engine import start_symbolic\n"
            "from gradcli.expression import parse\n"
            "from gradcli.methods.symbolic_values import differentiate_at\n"
            "job = start_symbolic(differentiate_at, 0.5, [parse('x**x**x**x').tree], ['x'], [(0, ('x', 'x'))],\n"
            "                     [{'x': 10.0}])\n"
            "assert job.process is not None, 'not a process'\n"
            "try:\n"
            "    job.result()\n"
            "except SymbolicTimeout:\n"
            "    pass\n"
            "else:\n"
            "    raise AssertionError('no timeout')\n"
            "job.process.join()\n"
            "r = gradcli.hessian('x**x**x**x*y', at='x=10,y=1', method='symbolic,fd', symbolic_timeout=0.5)\n"
            "d = r.to_dict()\n"
            "assert d['methods'] == ['fd'] and any('symbolic column left out' in n for n in d['notes']), d\n"
            "assert multiprocessing.active_children() == []\n"
            "assert 'tensorflow' not in sys.modules\n")
    # the timeout only guards against a hang (the bug this test is about); it asserts nothing about speed
    subprocess.run([sys.executable, "-c", code], check=True, timeout=600)


def test_wrt_subset_holds_others_fixed(invoke_json):
    doc = invoke_json("hessian", *GUIDE, "--wrt", "x2")
    assert doc["wrt"] == ["x2"] and doc["variables"] == ["x1", "x2"]
    assert doc["hessian"]["symbolic"] == [[14.0]] and doc["hessian"]["tape"] == [[14.0]]


def test_undefined_point_exit_1_with_nulls(invoke_json):
    doc = invoke_json("hessian", "sqrt(x)*y", "--at", "x=0,y=1", code=1)
    assert doc["hessian"]["symbolic"][0][0] is None
    assert doc["warnings"]


@pytest.mark.parametrize("args", [
    ("x*y", "--at", "x=1"),
    ("x*y", "--at", "x=1,y=2", "--method", "nope"),
    ("x*y", "--at", "x=1,y=2", "--method", "tape", "--formulas"),
    ("x*y", "--at", "x=1,y=2", "--eps", "-1"),
    ("x*", "--at", "x=1"),
])
def test_usage_errors_exit_2(invoke, args):
    result = invoke("hessian", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("gradcli: error:") and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_fd_and_symbolic_paths_do_not_import_tensorflow():
    code = ("import sys, gradcli; "
            "r = gradcli.hessian('x*y', at='x=1,y=2', method='symbolic,fd').to_dict(); "
            "assert r['hessian']['symbolic'] == [[0.0, 1.0], [1.0, 0.0]]; "
            "import gradcli.commands.hessian, gradcli.commands.derivative; "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------------------------
# Property: tape and symbolic agree on random smooth expressions (both tape modes)
# ---------------------------------------------------------------------------------------------
_LEAVES = st.sampled_from(["x", "y", "z", "x", "y", "2", "0.5", "3"])


def _smooth(depth: int):
    if depth == 0:
        return _LEAVES
    sub = _smooth(depth - 1)
    return st.one_of(
        _LEAVES,
        st.tuples(sub, st.sampled_from(["+", "-", "*"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["sin", "cos", "tanh", "sigmoid", "atan"]), sub).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(sub, st.sampled_from(["2", "3"])).map(lambda t: f"({t[0]})**{t[1]}"),
        sub.map(lambda s: f"exp(sin({s}))"),
    )


def _exact_hessian(tree, point, wrt: list[str]) -> list[list[float]]:
    """SymPy's Hessian at the point as typed (the reference, computed here without gradcli's worker)."""
    from gradcli.methods import symbolic

    syms = symbolic.symbols_for(list(point.names))
    subs = symbolic.exact_point(dict(point.exact), syms)
    f = symbolic.to_sympy(tree, syms)
    return [[symbolic.value_at(symbolic.diff(symbolic.diff(f, syms[a]), syms[b]), subs) for b in wrt] for a in wrt]


@settings(max_examples=25, deadline=None)
@given(expr=_smooth(3), xs=st.tuples(*[st.floats(-1.5, 1.5, allow_nan=False, allow_subnormal=False)] * 3))
def test_property_tape_matches_symbolic(expr, xs):
    values = dict(zip(("x", "y", "z"), xs))
    point = parse_point(",".join(f"{k}={v!r}" for k, v in values.items()))
    wrt = list(point.names)
    tree = parse(expr).tree
    exact = _exact_hessian(tree, point, wrt)
    batch = {k: np.array([v]) for k, v in point.values.items()}
    rows = tape_hessians(tree, batch, wrt, mode="rows").matrices[0].tolist()
    jac = tape_hessians(tree, batch, wrt, mode="jacobian").matrices[0].tolist()
    scale = max([1.0] + [abs(v) for r in exact for v in r])
    for i in range(3):
        for j in range(3):
            assert abs(rows[i][j] - exact[i][j]) <= 1e3 * MACHINE_EPSILON["float64"] * scale, (expr, i, j)
            assert abs(jac[i][j] - rows[i][j]) <= 1e3 * MACHINE_EPSILON["float64"] * scale, (expr, i, j)


@pytest.mark.parametrize("args, fragment", [
    (["hessian", "x**2", "--at", "x=1", "--eps", "1e-17"], "vanishes next to x=1"),
    (["hessian", "x**2", "--at", "x=0", "--eps", "1e-200"], "h**2 underflows"),
    (["derivative", "x**2", "--at", "x=1", "--eps", "1e-17"], "vanishes next to x=1"),
    (["derivative", "x**2", "--at", "x=0", "--eps", "1e-100", "--order", "4"], "h**4 underflows"),
])
def test_a_vanishing_step_is_refused_in_every_command(invoke, args, fragment):
    result = invoke(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert fragment in result.stderr and "internal error" not in result.stderr


def test_one_point_notes_what_a_batch_counts(invoke_json):
    # a variable given but not used: its row and column are zeros (structural for the tape), and a note
    doc = invoke_json("hessian", "x*y", "--at", "x=1,y=2,z=3")
    assert doc["variables"] == doc["wrt"] == ["x", "y", "z"]
    assert doc["hessian"]["symbolic"] == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert ["z", "z"] in doc["structural_zeros"] and any("z" in n for n in doc["notes"])
    # fd one-sided at a domain edge: spelled out with its steps, where a batch counts the points
    doc = invoke_json("hessian", "x**2.5 + y**2", "--at", "x=0,y=1", "-m", "symbolic,fd")
    assert doc["fd_sides"]["x"] != "central"
    assert any("one-sided differences" in n and "h(x)" in n for n in doc["notes"])
    # the analysis of the fd matrix says how it judged zero
    doc = invoke_json("hessian", "x**2 + y**2", "--at", "x=0,y=0", "-m", "fd")
    assert doc["analysis_source"] == "fd" and any("analysis uses the fd Hessian" in n for n in doc["notes"])
    # an expression without variables: the Hessian over the point's, all zeros
    doc = invoke_json("hessian", "7", "--at", "x=1")
    assert doc["hessian"]["symbolic"] == [[0.0]] and doc["critical_point"] == "degenerate"
