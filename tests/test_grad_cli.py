"""`gradcli grad` end to end through Typer's CliRunner: the TF guide's numbers, formats, exit codes."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from generated_programs import run_generated

EXPR = "(x1+5)*x2**2"


def test_guide_central_difference_single_variable(invoke_json):
    doc = invoke_json("grad", "3*x**2+2*x-1", "--at", "x=1", "--method", "fd", "--eps", "1e-3")
    assert doc["results"][0]["gradient"]["fd"]["x"] == 7.999999999999119  # FD's own error, not 8
    assert doc["fd"] == {"scheme": "central", "step": "as given"} and doc["fd_step"] == {"x": 0.001}
    assert "tape" not in doc["results"][0]["gradient"]


def test_guide_partial_derivatives_by_fd(invoke_json):
    doc = invoke_json("grad", EXPR, "--at", "x1=2,x2=3", "--method", "fd", "--eps", "1e-3")
    fd = doc["results"][0]["gradient"]["fd"]
    assert (fd["x1"], fd["x2"]) == (8.999999999993236, 41.999999999994486)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_guide_tape_and_symbolic_are_exact(invoke_json, dtype):
    doc = invoke_json("grad", EXPR, "--at", "x1=2,x2=3", "--dtype", dtype)
    assert doc["command"] == "grad" and doc["dtype"] == dtype
    assert doc["point"] == {"x1": 2.0, "x2": 3.0}
    assert doc["wrt"] == ["x1", "x2"]
    r = doc["results"][0]
    assert r["value"] == 63.0
    assert doc["formulas"] == [{"x1": "x2**2", "x2": "2*x2*(x1 + 5)"}]
    assert r["gradient"]["symbolic"] == {"x1": 9.0, "x2": 42.0}
    assert r["gradient"]["tape"] == {"x1": 9.0, "x2": 42.0}
    assert r["error"]["tape"] == {"x1": 0.0, "x2": 0.0}
    # fd's error is honest for the dtype: tiny in float64, ~1e-3..1e-6 relative in float32
    limit = 1e-8 if dtype == "float64" else 1e-2
    assert all(0 <= e < limit for e in r["error"]["fd"].values())
    if dtype == "float32":
        assert max(r["error"]["fd"].values()) > 1e-7


def test_several_targets_sum_like_the_tape(invoke_json):
    doc = invoke_json("grad", "3*x", "x**2", "--at", "x=5")
    rows = [r["gradient"]["tape"]["x"] for r in doc["results"]]
    assert rows == [3.0, 10.0]
    assert doc["sum"]["tape"] == {"x": 13.0}
    assert doc["sum"]["symbolic"] == {"x": 13.0}
    assert doc["sum"]["fd"]["x"] == pytest.approx(13.0, abs=1e-8)


def test_single_expression_has_no_sum(invoke_json):
    assert "sum" not in invoke_json("grad", "x**2", "--at", "x=1")


def test_wrt_leaves_other_variables_unwatched(invoke_json):
    doc = invoke_json("grad", EXPR, "--at", "x1=2,x2=3", "--wrt", "x2")
    assert doc["wrt"] == ["x2"]
    assert doc["results"][0]["gradient"]["tape"] == {"x2": 42.0}


def test_variable_not_in_expression_is_unconnected_zero(invoke_json):
    doc = invoke_json("grad", "x**2", "--at", "x=3,y=1")
    r = doc["results"][0]
    assert r["gradient"]["tape"] == {"x": 6.0, "y": 0.0}
    assert r["gradient"]["symbolic"]["y"] == 0.0
    assert r["gradient"]["fd"]["y"] == 0.0
    assert r["unconnected"] == ["y"]


def test_point_values_may_be_constant_expressions(invoke_json):
    doc = invoke_json("grad", "sin(x)", "--at", "x=pi/4")
    assert doc["point"]["x"] == math.pi / 4
    assert doc["results"][0]["gradient"]["symbolic"]["x"] == pytest.approx(math.sqrt(0.5), rel=1e-15)


@pytest.mark.parametrize("scheme, limit", [("central", 1e-9), ("forward", 1e-6), ("backward", 1e-6),
                                           ("richardson", 1e-11)])
def test_schemes_errors_in_expected_ranges(invoke_json, scheme, limit):
    doc = invoke_json("grad", "exp(x)*sin(x)", "--at", "x=0.7", "--method", "symbolic,fd", "--scheme", scheme)
    assert doc["fd"]["scheme"] == scheme
    assert doc["results"][0]["error"]["fd"]["x"] < limit


def test_default_step_follows_dtype_and_is_shown(invoke_json):
    d64 = invoke_json("grad", "x**3", "--at", "x=4", "--method", "fd")
    d32 = invoke_json("grad", "x**3", "--at", "x=4", "--method", "fd", "--dtype", "float32")
    assert d64["fd_step"]["x"] == pytest.approx(2.220446049250313e-16 ** (1 / 3) * 4)
    # the step actually taken: x + h rounds to float32's spacing next to x = 4
    assert d32["fd_step"]["x"] == pytest.approx(1.1920928955078125e-07 ** (1 / 3) * 4, abs=4 * 1.2e-7 * 4)


def test_table_output(invoke):
    result = invoke("grad", EXPR, "--at", "x1=2,x2=3")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for piece in ["x2**2", "2*x2*(x1 + 5)", "9.0", "42.0", "central", "float64", "(x1 + 5)*x2**2"]:
        assert piece in out
    assert result.stderr == ""


def test_csv_output(invoke):
    result = invoke("grad", "3*x", "x**2", "--at", "x=5", "--format", "csv")
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))  # a row per point and expression (tests/test_scripts.py)
    assert [(r["x"], r["expression"]) for r in rows] == [("5.0", "3*x"), ("5.0", "x**2")]
    assert float(rows[0]["tape_dx"]) + float(rows[1]["tape_dx"]) == 13.0
    assert float(rows[1]["symbolic_dx"]) == 10.0


def test_show_code_program_runs_and_prints_tape_column(invoke, tmp_path):
    result = invoke("grad", "3*x", "x**2", "--at", "x=5", "--show-code")
    assert result.exit_code == 0
    printed = run_generated(result.stdout)
    assert "dz1/dx = 3.0" in printed
    assert "dz2/dx = 10.0" in printed
    assert "d(sum)/dx = 13.0" in printed


def test_show_code_handles_functions_and_constants(invoke, tmp_path):
    result = invoke("grad", "log(x, 2) + atan2(y, 2) + sigmoid(x*y) - 3^x", "--at", "x=1.5,y=0.5",
                    "--wrt", "x", "--show-code")
    printed = run_generated(result.stdout)
    doc = json.loads(invoke("grad", "log(x, 2) + atan2(y, 2) + sigmoid(x*y) - 3^x", "--at", "x=1.5,y=0.5",
                            "--wrt", "x", "--format", "json").stdout)
    printed = float(printed.split("dz/dx =")[1].split()[0])
    assert printed == pytest.approx(doc["results"][0]["gradient"]["tape"]["x"], rel=1e-12)


# --- undefined results: exit 1, JSON still printed with null and warnings -------------------------
def test_sqrt_at_zero_is_not_finite(invoke):
    result = invoke("grad", "sqrt(x)", "--at", "x=0", "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["results"][0]["gradient"]["symbolic"]["x"] is None
    assert doc["results"][0]["gradient"]["tape"]["x"] is None  # TF says inf: strict JSON says null
    assert any("not finite" in w for w in doc["warnings"])
    assert "not finite" in result.stderr


def test_log_at_minus_one_is_undefined_although_the_tape_would_say_minus_one(invoke):
    result = invoke("grad", "log(x)", "--at", "x=-1", "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["results"][0]["value"] is None and doc["status"] == "undefined"
    # the derivatives of an undefined value are no numbers (TF's 1/x would say -1.0): null, as in a batch
    assert doc["results"][0]["gradient"]["tape"]["x"] is None
    assert "undefined" in result.stderr


# --- usage and parse errors: exit 2, one line on stderr, nothing on stdout ----------------------
@pytest.mark.parametrize("args, fragment", [
    (["x**2"], "--at is required"),
    (["x*y", "--at", "x=1"], "no value for y"),
    (["x", "--at", "x=1,x=2"], "given twice"),
    (["x", "--at", "x=nan"], "finite number"),
    (["x", "--at", "x=-inf"], "finite number"),
    (["x", "--at", "x=1e999"], "out of float64 range"),
    (["x", "--at", "x=1/0"], "division by zero"),
    (["x", "--at", "x"], "not of the form name=value"),
    (["x", "--at", "x=1,,"], "empty entry"),
    (["x", "--at", "x=y"], "constant expression"),
    (["x", "--at", "x=1", "--method", "magic"], "unknown method"),
    (["x", "--at", "x=1", "--wrt", "z"], "has no value"),
    (["x", "--at", "x=1", "--eps", "-1"], "positive"),
    (["x.real", "--at", "x=1"], "attribute access"),
])
def test_usage_errors(invoke, args, fragment):
    result = invoke("grad", *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert fragment in result.stderr
    assert result.stderr.startswith("gradcli: error: ")
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_nan_value_is_refused(invoke):
    result = invoke("grad", "x", "--at", "x=0*nan_")
    assert result.exit_code == 2
    result = invoke("grad", "x", "--at", "x=sqrt(-1)")
    assert result.exit_code in (1, 2) and "Traceback" not in result.stderr


def test_parse_error_shows_caret(invoke):
    result = invoke("grad", "x + foo(x)", "--at", "x=1")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("gradcli: error: unknown function 'foo'; known: abs, acos, acosh, asin, asinh, ")
    assert lines[0].endswith(", tan, tanh, where (column 5)") and " relu, " in lines[0]
    assert lines[1:] == ["  x + foo(x)", "      ^"]


def test_unknown_option_is_a_usage_error(invoke):
    result = invoke("grad", "x", "--at", "x=1", "--frobnicate")
    assert result.exit_code == 2


@pytest.mark.parametrize("hostile", [
    "__import__('os').system('touch {marker}')",
    "().__class__.__base__.__subclasses__()",
    "exec('open(\"{marker}\", \"w\")')",
    "eval('1')",
    "open('{marker}', 'w')",
    "x; import os",
    "lambda: open('{marker}','w')",
    "getattr(x, 'real')",
])
def test_injection_is_refused_and_nothing_runs(invoke, tmp_path, hostile):
    marker = tmp_path / "marker"
    result = invoke("grad", hostile.format(marker=marker), "--at", "x=1")
    assert result.exit_code == 2
    assert not marker.exists()
    # also as a variable name in --at
    result = invoke("grad", "x", "--at", f"x=1,{hostile.format(marker=marker)}=2")
    assert result.exit_code == 2
    assert not marker.exists()


def test_disagreement_beyond_dtype_and_step_is_warned(invoke):
    # At the step given, the central stencil straddles abs's kink: fd says ~0.017, the derivative is 1.
    # (Without --eps the step adapts until the stencil stays on one side: tests/test_fd_honest.py.)
    # fd finds the kink inside its stencil, and its warning says why its value is not the derivative (the
    # disagreement with symbolic it explains is not repeated).
    result = invoke("grad", "abs(x)", "--at", "x=1e-7", "--method", "symbolic,fd", "--eps", "6e-6")
    assert result.exit_code == 0
    assert "fd: d(abs(x))/dx is at a kink or a jump" in result.stderr
    assert "disagree" not in result.stderr


def test_a_large_step_explains_a_large_error(invoke):
    # h = 0.5: the error 0.022 is h**2/6 times the third derivative, as expected, so no warning.
    result = invoke("grad", "sin(x)", "--at", "x=1", "--method", "symbolic,fd", "--eps", "0.5")
    assert result.exit_code == 0 and result.stderr == ""


def test_default_run_has_no_warning(invoke):
    result = invoke("grad", "exp(sin(x))*y + sqrt(1+y^2)", "--at", "x=0.3,y=-1.2")
    assert result.exit_code == 0 and result.stderr == ""


def test_bare_variable_and_float32_digits(invoke_json):
    doc = invoke_json("grad", "x", "x/3", "--at", "x=1", "--dtype", "float32", "--method", "tape")
    assert [r["gradient"]["tape"]["x"] for r in doc["results"]] == [1.0, 0.33333334]


@pytest.mark.parametrize("expr, at", [("1/(x-1)", "x=1"), ("log(x)", "x=0"), ("atanh(x)", "x=1")])
def test_poles_are_undefined_not_huge_numbers(invoke, expr, at):
    # evalf alone would give 1/(rounding residue) here: ~1e138 for 1/(x-1) at 1. (tan at pi/2 is no pole
    # in float64: every method, the exact one too, is taken at the float64 point, where tan is 1.6e16.)
    result = invoke("grad", expr, "--at", at, "--method", "symbolic,fd", "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["results"][0]["gradient"]["symbolic"]["x"] is None
    assert "not finite" in result.stderr or "undefined" in result.stderr


def test_an_edge_the_float64_point_misses_is_exact_and_the_rest_warned(invoke):
    # float64's 0.1 is 5.6e-18 above 1/10: sqrt(x - 0.1) is defined there, its exact derivative 2.1e8,
    # while the tape and fd, which compute x - 0.1 in float64, hit the edge itself
    result = invoke("grad", "sqrt(x-0.1)", "--at", "x=0.1", "--method", "symbolic,tape", "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["results"][0]["gradient"]["symbolic"]["x"] == pytest.approx(2.1221686142647799e8, rel=1e-12)
    assert doc["results"][0]["gradient"]["tape"]["x"] is None and "not finite" in result.stderr


def test_a_vanishing_step_is_refused(invoke):
    result = invoke("grad", "x**2", "--at", "x=1", "--method", "fd", "--eps", "1e-300")
    assert result.exit_code == 2 and "vanishes" in result.stderr
    result = invoke("grad", "x**2", "--at", "x=1", "--method", "fd", "--eps", "1e-30", "--dtype", "float32")
    assert result.exit_code == 2 and "vanishes" in result.stderr


def test_point_must_fit_the_dtype(invoke):
    result = invoke("grad", "x", "--at", "x=1e39", "--dtype", "float32")
    assert result.exit_code == 2 and "does not fit in float32" in result.stderr
    assert "RuntimeWarning" not in result.stderr


def test_integer_powers_have_no_nan_derivatives_at_zero(invoke_json):
    doc = invoke_json("grad", "x**2*y**3", "--at", "x=0,y=0")
    assert doc["results"][0]["gradient"]["tape"] == {"x": 0.0, "y": 0.0}


@pytest.mark.parametrize("expr, at, expected", [
    ("z**2", "z=3", ["dz/dz = 6.0"]),
    ("tape*2 + print", "tape=3,print=2", ["dz/dtape = 2.0", "dz/dprint = 1.0"]),
    ("log(2, x)", "x=3", ["dz/dx = -0.1914323369822"]),
    ("y/x**2 - x**3", "x=2,y=3", ["dz/dx = -12.75", "dz/dy = 0.25"]),  # small powers written as x * x
])
def test_show_code_survives_clashing_names(invoke, tmp_path, expr, at, expected):
    result = invoke("grad", expr, "--at", at, "--show-code")
    assert result.exit_code == 0
    printed = run_generated(result.stdout)
    for line in expected:
        assert line in printed


def test_log_with_a_variable_base_at_one_is_undefined_not_an_internal_error(invoke):
    # log(3, x) = log(3)/log(x): SymPy's evaluation divides by an exact zero at x = 1
    result = invoke("grad", "log(3, x)", "--at", "x=1", "-m", "symbolic,fd", "-f", "json")
    assert result.exit_code == 1 and "internal error" not in result.stderr
    doc = json.loads(result.stdout)
    assert doc["results"][0]["value"] is None and doc["results"][0]["gradient"]["symbolic"]["x"] is None


def test_a_wrong_tape_value_at_one_point_names_the_node_it_came_from(invoke):
    # the guide's custom-gradient example: exp(100) overflows float32, and the tape's derivative is NaN
    result = invoke("grad", "log(1 + exp(x))", "--at", "x=100", "--dtype", "float32", "-m", "symbolic,tape")
    assert result.exit_code == 1
    assert "log(1 + exp(x)): the tape first goes wrong at exp(x)" in result.stderr
    assert "overflows float32" in result.stderr
    # cancellation: the tape is finite and wrong; the pointer names the subtraction
    result = invoke("grad", "(exp(x) - 1)/x", "--at", "x=1e-20")
    assert "the tape first goes wrong at exp(x) - 1" in result.stderr


def test_without_sympy_a_tape_wrong_by_cancellation_is_named(invoke):
    # (x - sin(x))/x**3 at 1e-5: x - sin(x) cancels on the tape (its derivative -0.207; the exact one is
    # about -1.7e-7); no exact column judges the tape, so where it went wrong is a warning of its own
    result = invoke("grad", "(x - sin(x))/x**3", "--at", "x=1e-5", "-m", "tape,fd")
    warnings = [w for w in result.stderr.splitlines() if w.startswith("gradcli: warning")]
    assert any("the tape first goes wrong at x - sin(x)" in w and "loses its digits" in w for w in warnings)


def test_a_tape_inside_a_large_tolerance_is_still_judged_by_its_value(invoke):
    # x**2 overflows at 1e200: the tape says 0.0 where the derivative is 0.7071, inside a tolerance scaled
    # by the point (~3e187); the trace finds the overflow, so the tape is warned about, for each variable
    result = invoke("grad", "sqrt(x**2 + y**2)", "--at", "x=1e200,y=1e200")
    for v in ("x", "y"):
        assert f"tape and symbolic disagree on d(sqrt(x**2 + y**2))/d{v}: error 0.707" in result.stderr
    assert "v3 = v1 + v2 overflowed float64" in result.stderr
    # at 1e-200 the tape is inf, and fd's finite 0.0 beside it is warned too: f underflows to 0 there, so
    # its differences are 0 and its estimate (11.4) says it cannot resolve a derivative of size 1
    result = invoke("grad", "sqrt(x**2 + y**2)", "--at", "x=1e-200,y=1e-200")
    assert "fd: d(sqrt(x**2 + y**2))/dx cannot be resolved in float64" in result.stderr
    assert result.exit_code == 1


def test_strict_makes_any_warning_exit_1(invoke):
    assert invoke("grad", "abs(x)", "--at", "x=0").exit_code == 0  # a kink: warned, computed
    assert invoke("grad", "abs(x)", "--at", "x=0", "--strict").exit_code == 1
    assert invoke("grad", "abs(x)", "--grid", "x=-1:1:3", "--strict", "-f", "jsonl").exit_code == 1
    assert invoke("grad", "x**2", "--grid", "x=-1:1:3", "--strict", "-f", "jsonl").exit_code == 0


def test_at_a_kink_the_exact_value_is_said_to_be_a_convention(invoke):
    result = invoke("grad", "abs(x-1)", "--at", "x=1")
    assert "is SymPy's convention (sign(0) = 0" in result.stderr and "kink or a jump" in result.stderr
    assert "convention" not in invoke("grad", "abs(x-1)", "--at", "x=2").stderr
