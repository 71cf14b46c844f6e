"""The complex step in batches (grad and derivative --order 1 with --points/--grid) and its cross-check
with the tape and fd where there is no exact column (issue 8, item 7, leftovers)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import VARS, points, smooth_expressions

from gradcli.compute.batch.derivative import DerivativeBatch
from gradcli.compute.batch.grad import GradBatch
from gradcli.compute.complex_column import complex_cross_warnings, cross_check_complex
import gradcli
from gradcli.expression.sources.shapes import PointChunk


def records(core, pts: list[dict]) -> list[dict]:
    core.start()
    core.header()
    chunk = PointChunk({v: np.array([p[v] for p in pts], dtype=np.float64) for v in core.variables},
                       [{}] * len(pts), [None] * len(pts))
    return core.compute(chunk).records()


def at(p: dict) -> str:
    return ",".join(f"{k}={v!r}" for k, v in p.items())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=smooth_expressions(), pts=st.lists(points, min_size=2, max_size=5),
       dtype=st.sampled_from(["float64", "float32"]), methods=st.just("complex"))
def test_batch_equals_single_points_digit_for_digit(text, pts, dtype, methods):
    grads = records(GradBatch([text], wrt="x,y", methods=methods, dtype=dtype), pts)
    derivs = records(DerivativeBatch(text, wrt="x", methods=methods, dtype=dtype), pts)
    for p, g, d in zip(pts, grads, derivs):
        one = gradcli.grad(text, at=at(p), wrt="x,y", method=methods, dtype=dtype).to_dict()["results"][0]
        assert g["results"][0]["gradient"]["complex"] == one["gradient"]["complex"]
        assert g["results"][0]["complex_error_estimate"] == one["complex_error_estimate"]
        one = gradcli.derivative(text, at=at(p), wrt="x", method=methods, dtype=dtype).to_dict()
        assert d["derivatives"]["complex"] == one["derivatives"]["complex"]
        assert d["complex_error_estimate"] == one["complex_error_estimate"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=smooth_expressions(), pts=st.lists(points, min_size=1, max_size=4),
       dtype=st.sampled_from(["float64", "float32"]), methods=st.just("complex"))
# a float32 derivative below 1e-4: orjson wrote numpy float32 positionally (0.0000017628644), the dict 1.7628644e-6
@example(text="(erf(2*x)) + (1.5)", pts=[{"x": 1.875, "y": 0.0}], dtype="float32", methods="complex")
def test_fast_json_lines_with_the_complex_step_are_the_dict_records(text, pts, dtype, methods):
    from gradcli.compute.batch.engine import json_line

    core = GradBatch([text], wrt="x,y", methods=methods, dtype=dtype)
    core.start()
    core.header()
    rows = pts + [{"x": 1.0, "y": -1e300}]  # overflows: undefined values, warnings
    chunk = PointChunk({v: np.array([p[v] for p in rows], dtype=np.float64) for v in VARS},
                       [{}] * len(rows), [None] * len(rows))
    batch = core.compute(chunk)
    assert batch.lines() == [json_line(r) for r in batch.records()]


def test_grid_with_a_kink_warns_at_that_point_only(invoke):
    result = invoke("grad", "abs(x - 1)*y", "--grid", "x=0:2:3,y=2:2:1", "-m", "symbolic,complex", "-f", "jsonl")
    assert result.exit_code == 0, result.stderr  # not analytic: a warning, not an undefined point
    recs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["status"] for r in recs] == ["ok", "warning", "ok"]
    assert recs[1]["results"][0]["gradient"]["complex"] == {"x": None, "y": 0.0}
    assert "not analytic" in recs[1]["warnings"][0] and "abs" in recs[1]["warnings"][0]
    assert recs[0]["results"][0]["gradient"]["complex"] == {"x": -2.0, "y": 1.0}
    assert recs[0]["results"][0]["error"]["complex"] == {"x": 0.0, "y": 0.0}
    assert "1 with warnings, 0 undefined; largest error against symbolic: complex 0" in result.stderr


def test_derivative_grid_csv_and_table(invoke):
    csv = invoke("derivative", "sin(x)", "--grid", "x=0:1:2", "-m", "symbolic,complex", "-f", "csv")
    assert csv.exit_code == 0, csv.stderr
    lines = csv.stdout.splitlines()
    assert lines[0] == "x,value,symbolic_d1,complex_d1,complex_error_d1,complex_error_estimate_d1,status,warnings"
    assert lines[2].split(",")[3] == repr(float(np.cos(1.0)))
    table = invoke("derivative", "sin(x)", "--grid", "x=0:1:2", "-m", "complex")
    assert table.exit_code == 0 and "order 1 (complex)" in table.stdout


def test_batch_header_names_the_step(invoke):
    from gradcli.methods.complex_step import COMPLEX_STEP

    doc = json.loads(invoke("grad", "x**2", "--grid", "x=1:2:2", "-m", "complex", "--dtype", "float32",
                            "-f", "json").stdout)
    assert doc["complex"] == {"step": COMPLEX_STEP["float32"]} and doc["methods"] == ["complex"]
    assert [p["results"][0]["gradient"]["complex"]["x"] for p in doc["points"]] == [2.0, 4.0]


# ---------------------------------------------------------------------------------------------
# the cross-check without the exact column
# ---------------------------------------------------------------------------------------------
def test_fd_at_a_coarse_step_is_named_by_the_complex_step(invoke_json, invoke):
    doc = invoke_json("grad", "sin(5*x)", "--at", "x=1", "-m", "fd,complex", "--eps", "1")
    (warning,) = doc["warnings"]
    assert warning.startswith("complex and fd disagree on d(sin(5*x))/dx") and "fd is suspect" in warning
    many = invoke("grad", "sin(5*x)", "--grid", "x=1:1:1", "-m", "fd,complex", "--eps", "1", "-f", "jsonl")
    assert json.loads(many.stdout)["warnings"] == [warning]
    one = invoke_json("derivative", "sin(5*x)", "--at", "x=1", "-m", "fd,complex", "--eps", "1")
    assert any(w.startswith("complex and fd disagree on derivative 1") and "fd is suspect" in w
               for w in one["warnings"])
    agree = invoke_json("grad", "sin(5*x)", "--at", "x=1", "-m", "tape,fd,complex")
    assert agree["warnings"] == []


def cross(tape, fd, complex_, fd_estimate, complex_estimate=1e-16, fd_doubted=False):
    columns = {m: np.array([[[v]]]) for m, v in (("tape", tape), ("fd", fd), ("complex", complex_)) if v is not None}
    estimates = {"fd": np.array([[[fd_estimate]]]), "complex": np.array([[[complex_estimate]]])}
    c = cross_check_complex(np.array([[0.0]]), columns, np.array([[0.5]]), estimates, dtype="float64",
                            fd_doubted=fd_doubted)
    return complex_cross_warnings(c, (0, 0, 0), "d(f)/dx", dtype="float64")


def test_cross_check_names_the_suspect():
    assert cross(1.0, 1.0 + 1e-12, 1.0, 1e-11) == []
    (w,) = cross(1.0, 1.0 + 1e-12, 1.5, 1e-11)  # tape and fd agree: the complex step is outvoted
    assert "the complex step is suspect" in w
    (w,) = cross(1.5, 1.0 + 1e-12, 1.0, 1e-11)  # complex and fd agree: the tape is outvoted
    assert w.startswith("complex and tape disagree") and "tape is suspect (complex and fd agree" in w
    (w,) = cross(None, 1.2, 1.0, 1e-3, fd_doubted=True)  # fd alone, a large estimate its diagnostics doubt
    assert "fd is suspect (its own error estimate is large)" in w
    (w,) = cross(None, 1.2, 1.0, 1e-3)  # a large estimate alone may be honest: no suspect is named
    assert "suspect" not in w and "either may be wrong" in w
    (w,) = cross(1.5, None, 1.0, 1e-11)  # two methods, neither proven fragile: no suspect is named
    assert "suspect" not in w and "either may be wrong" in w
    assert cross_check_complex(np.array([[0.0]]), {"symbolic": np.zeros((1, 1, 1)), "complex": np.zeros((1, 1, 1))},
                               np.array([[0.5]]), {}, dtype="float64") is None


@pytest.mark.parametrize("command", ["grad", "derivative"])
def test_a_symbolic_timeout_leaves_the_cross_check(invoke, command, monkeypatch):
    """No exact column (SymPy timed out): the complex step is still compared, here with fd, and agrees."""
    from gradcli.methods.worker import SymbolicTimeout

    def timeout(self):
        raise SymbolicTimeout("SymPy took longer than 0.1 s")

    monkeypatch.setattr("gradcli.methods.worker.BoundedJob.result", timeout)
    result = invoke(command, "sin(5*x)", "--at", "x=1", "-m", "symbolic,fd,complex", "--eps", "1", "-f", "json")
    doc = json.loads(result.stdout)
    assert "symbolic" not in doc["methods"] and any("fd is suspect" in w for w in doc["warnings"])
