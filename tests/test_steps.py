"""gradcli steps: the error of each formula over a sweep of steps, as a table, JSON, CSV and a log-log
plot; the formulas, steps and complex step are the methods' own."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from gradcli.compute.steps import compute_steps
from gradcli.compute.steps_sweep import sweep_steps
from gradcli.expression import parse
from gradcli.methods.complex_step import complex_gradients
from gradcli.methods.fd import fd_gradients
from gradcli.methods.fd_engine import one_point
from gradcli.methods.fd_stencils import STENCIL_NAMES, fd_derivatives, named_stencil
from oracle import oracle_derivative


def by_name(sweep):
    return {f.name: f for f in sweep.formulas}


@pytest.mark.parametrize("order", [1, 2, 3])
def test_every_stencil_is_exact_on_polynomials_up_to_its_accuracy(order):
    for f in (named_stencil(name, order) for name in STENCIL_NAMES):
        # sum w m^j = order! [j == order] for j < order + p: the Taylor conditions
        for j in range(order + f.accuracy):
            moment = sum(w * m ** j for m, w in zip(f.offsets, f.weights))
            assert moment == (math.factorial(order) if j == order else 0), (f.name, j)
        assert f.truncation_constant != 0


def test_truncation_constants_of_the_textbook_formulas():
    c = {name: named_stencil(name, 1).truncation_constant for name in STENCIL_NAMES}
    assert c["forward"] == 0.5 and c["backward"] == -0.5
    assert math.isclose(c["central"], 1 / 6) and math.isclose(c["stencil4"], -1 / 30)
    richardson = named_stencil("richardson", 1)
    assert richardson.offsets == (Fraction(-1), Fraction(-1, 2), Fraction(1, 2), Fraction(1))


@pytest.mark.parametrize("dtype, count", [("float64", 30), ("float32", 12)])
def test_the_sweep_goes_from_a_tenth_down_to_eps(dtype, count):
    steps = sweep_steps(dtype, 1.0)
    assert len(steps) == count and steps[0] == 0.1
    assert np.finfo(dtype).eps <= steps[-1] < 10 ** 0.5 * np.finfo(dtype).eps
    assert sweep_steps(dtype, -300.0)[0] == pytest.approx(30.0)  # scaled by max(1, |x|)


def test_sin_the_v_of_truncation_and_rounding():
    report = compute_steps("sin(x)", at="x=1")
    (sweep,) = report.sweeps
    rows = by_name(sweep)
    central = rows["central"].errors
    # truncation at h = 1e-2: h^2/6 |cos(1)| (the next term is h^4/120)
    assert central[2] == pytest.approx(1e-4 / 6 * math.cos(1), rel=1e-3)
    # the V: the best step is in the middle, far from both ends
    best = rows["central"].best_step
    assert 1e-7 < best < 1e-3 and rows["central"].best_error <= min(e for e in central if e is not None)
    assert central[-1] > 1e3 * rows["central"].best_error
    # theory: (3 eps |f| / |f'''|)^(1/3) for the central difference
    expected = (3 * np.finfo(float).eps * math.sin(1) / math.cos(1)) ** (1 / 3)
    assert rows["central"].theory_step == pytest.approx(expected, rel=1e-6)
    assert rows["central"].default_step == pytest.approx(np.finfo(float).eps ** (1 / 3), rel=1e-3)
    # the complex step has no rounding floor: at tiny steps it is exact to an ulp
    assert all(e <= 2.3e-16 for e in rows["complex"].errors[14:])
    assert report.marked == "central" and report.warnings == []


def test_the_exact_value_is_the_oracles_at_the_dtypes_point():
    report = compute_steps("exp(sin(x))", at="x=0.1", dtypes="float32,float64")
    for sweep in report.sweeps:
        x = float(np.float64(0.1).astype(sweep.dtype))
        assert sweep.x == x
        assert sweep.exact == pytest.approx(float(oracle_derivative("exp(sin(x))", "x", {"x": x})), rel=1e-15)
    assert report.exact == pytest.approx(float(oracle_derivative("exp(sin(x))", "x", {"x": "0.1"})), rel=1e-15)


def test_float32_floors_where_float64_goes_on():
    report = compute_steps("exp(x)", at="x=1", dtypes="float32,float64")
    best = {s.dtype: by_name(s)["stencil8"].best_error for s in report.sweeps}
    assert best["float64"] < 1e-12 < 1e-7 < best["float32"] < 1e-5


def test_higher_orders_have_no_complex_step():
    report = compute_steps("log(x)", at="x=2", order=2)
    names = [f.name for f in report.sweeps[0].formulas]
    assert "complex" not in names and report.marked == "stencil8"
    assert by_name(report.sweeps[0])["stencil8"].best_error < 1e-9  # exact -1/4


# --- the methods' own formulas, steps and complex step --------------------------------------------
@pytest.mark.parametrize("expression, at, order, dtype", [
    ("sin(x)", "x=1", 1, "float64"), ("exp(x)*cos(3*x)", "x=0.3", 1, "float32"),
    ("log(x)", "x=2", 2, "float64"), ("atan(x)", "x=-3", 4, "float32"),
])
def test_the_default_step_gives_what_grad_and_derivative_compute(expression, at, order, dtype):
    # the first-derivative schemes as grad -m fd --scheme writes them, the stencils as derivative sums
    # them, the complex step as grad -m complex takes it: the same step (where the method keeps its
    # default one rather than adapting it) and the same digits at that step
    (sweep,) = compute_steps(expression, at=at, order=order, dtypes=dtype).sweeps
    tree, point = parse(expression).tree, one_point({"x": sweep.x})
    checked = 0
    for f in sweep.formulas:
        h = f.default_step
        if order == 1 and f.name in ("central", "forward", "backward", "richardson"):
            ruled = fd_gradients(tree, point, ["x"], scheme=f.name, dtype=dtype)
            value = fd_gradients(tree, point, ["x"], scheme=f.name, dtype=dtype, eps=h).values[0, 0]
            kept, step = ruled.how[0, 0] == 0, ruled.steps[0, 0]
        elif f.name == "stencil8" or f.name in ("central", "stencil4", "stencil6") and order > 1:
            accuracy = 2 if f.name == "central" else int(f.name[-1])
            ruled = fd_derivatives(tree, point, "x", order, dtype=dtype, accuracy=accuracy)
            value = fd_derivatives(tree, point, "x", order, dtype=dtype, accuracy=accuracy, eps=h).values[0, -1]
            kept, step = ruled.how[0, -1] == 0, ruled.steps[0, -1]
        elif f.name == "complex":
            ruled = complex_gradients(tree, point, ["x"], dtype=dtype)
            value, kept, step = ruled.values[0, 0], True, ruled.steps[0, 0]
        else:
            continue
        assert step == h or not kept, f.name
        assert f.default_error == abs(value - sweep.exact), f.name
        checked += 1
    assert checked >= 2


FAMILY = [("sin(x)", "x=1", 1), ("exp(x)", "x=1", 1), ("log(x)", "x=2", 2), ("x**3 - 2*x", "x=0.7", 3),
          ("atan(x)", "x=-3", 4), ("exp(sin(x))", "x=0.1", 1), ("1/(1 + x**2)", "x=0.5", 2),
          ("sqrt(x)*cosh(x)", "x=3", 1), ("tanh(5*x)", "x=0.2", 2), ("x**2*log(x)", "x=1e3", 1)]


@pytest.mark.parametrize("expression, at, order", FAMILY)
def test_the_best_step_is_never_worse_than_the_default_nor_the_sweep(expression, at, order):
    report = compute_steps(expression, at=at, order=order, dtypes="float32,float64")
    for sweep in report.sweeps:
        for f in sweep.formulas:
            sampled = min(e for e in f.errors if e is not None)
            assert f.best_error <= sampled and f.best_error <= f.default_error, (sweep.dtype, f.name)
            if f.theory_error is not None:
                assert f.best_error <= f.theory_error
            assert sweep.steps[-1] * (1 - 1e-6) <= f.best_step <= sweep.steps[0] * (1 + 1e-6) \
                or f.best_step == f.default_step or f.best_step == f.theory_step


def test_the_refinement_finds_steps_between_the_half_decades():
    # sin at 1: the sweep's best stencil4 step (1e-3, 6.2e-14) lies beside a far better one
    (sweep,) = compute_steps("sin(x)", at="x=1").sweeps
    rows = by_name(sweep)
    sampled = min(e for e in rows["stencil4"].errors if e is not None)
    assert rows["stencil4"].best_error < sampled / 10 and rows["stencil4"].best_step not in sweep.steps
    assert rows["complex"].best_error == 0 and rows["complex"].best_step >= 1e-9  # the largest exact step


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def test_table_fits_80_columns(invoke, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = invoke("steps", "sin(x)", "--at", "x=1", "--dtype", "float32,float64")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert any(line.split()[:2] == ["h", "forward"] for line in lines)
    assert sum(line.startswith("float") for line in lines) == 2  # one panel per dtype, stacked


@pytest.mark.parametrize("width", [40, 160])
def test_table_at_other_widths_cuts_nothing(invoke, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    result = invoke("steps", "sin(x)", "--at", "x=1", "--dtype", "float32,float64")
    lines = result.stdout.splitlines()
    assert result.exit_code == 0 and max(map(len, lines)) <= width
    text = result.stdout
    for name in ("forward", "backward", "central", "stencil4", "stencil6", "stencil8", "richardson", "complex"):
        assert name in text
    if width == 160:  # side by side
        assert any(line.count("float") == 2 for line in lines)


def test_json_for_scripts(invoke_json):
    doc = invoke_json("steps", "sin(x)", "--at", "x=1", "--dtype", "float32,float64")
    assert doc["command"] == "steps" and [s["dtype"] for s in doc["sweeps"]] == ["float32", "float64"]
    sweep = doc["sweeps"][1]
    assert len(sweep["steps"]) == 30 and all(len(f["errors"]) == 30 for f in sweep["formulas"])
    central = next(f for f in sweep["formulas"] if f["formula"] == "central")
    assert set(central) >= {"default", "best", "theory", "accuracy", "points"}
    assert doc["exact"] == pytest.approx(math.cos(1))


def test_csv_for_scripts(invoke):
    result = invoke("steps", "sin(x)", "--at", "x=1", "-f", "csv")
    lines = result.stdout.splitlines()
    assert lines[0] == "dtype,formula,accuracy,kind,step,error"
    sweep_rows = [line for line in lines if ",sweep," in line]
    assert len(sweep_rows) == 8 * 30
    assert any(line.startswith("float64,central,2,theory,") for line in lines)


@pytest.mark.parametrize("charset, box", [("utf-8", True), ("ascii", False)])
def test_plot_in_utf8_and_ascii(charset, box, monkeypatch):
    from gradcli.cli import app

    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner(charset=charset).invoke(app, ["steps", "exp(x)", "--at", "x=1", "--plot"],
                                               catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "log-log" in out and "1e-15" in out and "default step of central" in out
    assert ("┤" in out) is box and (out.isascii() is not box)
    assert "\x1b[" not in out  # not a terminal: no colour
    plot_lines = out[out.index("(log-log)"):].splitlines()
    assert max(map(len, plot_lines)) <= 80


def test_plot_with_json_goes_to_stderr(invoke):
    result = invoke("steps", "sin(x)", "--at", "x=1", "-f", "json", "--plot")
    assert result.exit_code == 0 and json.loads(result.stdout)["command"] == "steps"
    assert "log-log" in result.stderr


def test_expression_from_a_file(invoke_json, runner, tmp_path):
    from gradcli.cli import app

    path = tmp_path / "f.txt"
    path.write_text("sin(x)  # the guide's function\n  * 2\n")
    doc = invoke_json("steps", "--file", str(path), "--at", "x=1")
    assert doc["expression"] == "sin(x)*2" and doc["exact"] == pytest.approx(2 * math.cos(1))
    bad = runner.invoke(app, ["steps", "--file", "-", "--at", "x=1"], input="sin(x)\n  +* 2\n")
    assert bad.exit_code == 2 and "<stdin>:2:4: unexpected '*'" in bad.stderr
    both = runner.invoke(app, ["steps", "x", "--file", str(path), "--at", "x=1"])
    assert both.exit_code == 2 and "not both" in both.stderr


@pytest.mark.parametrize("args, code, fragment", [
    (["--at", "x=1"], 2, "--file"),
    (["x*y", "--at", "x=1,y=2"], 2, "--wrt"),
    (["x*y", "--at", "x=1,y=2", "--wrt", "z"], 2, "--wrt"),
    (["sin(x)", "--at", "x=1", "--order", "5"], 2, "--order"),
    (["sin(x)", "--at", "x=1", "--dtype", "float16"], 2, "float16"),
    (["sin(x)", "--at", "x=1", "--dtype", ","], 2, "--dtype"),
    (["sin(x)"], 2, "--at"),
    (["sin(x", "--at", "x=1"], 2, ""),
    (["log(x)", "--at", "x=-1"], 1, "undefined"),
    (["sqrt(x)", "--at", "x=0"], 1, "not finite"),
])
def test_errors(invoke, args, code, fragment):
    result = invoke("steps", *args)
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert fragment in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_installed_command_reads_an_expression_that_starts_with_a_minus():
    import subprocess
    import sys
    from pathlib import Path

    gradcli = Path(sys.executable).parent / "gradcli"
    out = subprocess.run([str(gradcli), "steps", "-sin(x)", "--at", "x=1", "-f", "json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["exact"] == pytest.approx(-math.cos(1))


# --- --formulas ------------------------------------------------------------------------------
def test_formulas_choose_the_columns_in_the_order_given(invoke_json):
    doc = invoke_json("steps", "sin(x)", "--at", "x=1", "--formulas", "central,forward,complex")
    assert [f["formula"] for f in doc["sweeps"][0]["formulas"]] == ["central", "forward", "complex"]
    every = invoke_json("steps", "sin(x)", "--at", "x=1")
    names = [f["formula"] for f in every["sweeps"][0]["formulas"]]
    assert names == ["forward", "backward", "central", "stencil4", "stencil6", "stencil8", "richardson", "complex"]
    # the same numbers as in the full study
    full = {f["formula"]: f for f in every["sweeps"][0]["formulas"]}
    for f in doc["sweeps"][0]["formulas"]:
        assert f == full[f["formula"]]


def test_formulas_all_and_case():
    report = compute_steps("sin(x)", at="x=1", formula_names="ALL", order=2)
    assert "complex" not in [f.name for f in report.sweeps[0].formulas]
    report = compute_steps("sin(x)", at="x=1", formula_names=" Forward , backward")
    assert [f.name for f in report.sweeps[0].formulas] == ["forward", "backward"]
    assert report.marked == "forward"  # central, the formula marked by default, is not drawn


@pytest.mark.parametrize("names, fragment", [
    ("centre", "'centre' is not a formula; known: forward, backward, central"),
    ("", "--formulas is empty"),
    ("complex", "the complex step gives first derivatives only"),
])
def test_formulas_refused(invoke, names, fragment):
    result = invoke("steps", "sin(x)", "--at", "x=1", "-n", "2" if names == "complex" else "1", "--formulas", names)
    assert result.exit_code == 2 and fragment in result.stderr and "Traceback" not in result.stderr


def _plot(*args: str, study=("sin(x)", "--at", "x=1")) -> tuple[str, str]:
    """The plot area (inside its frame) and the legend of ``steps STUDY --plot ARGS`` at 100 columns."""
    from gradcli.cli import app

    result = CliRunner().invoke(app, ["steps", *study, "--plot", *args],
                                env={"COLUMNS": "100", "NO_COLOR": "1"}, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = result.stdout[result.stdout.index("(log-log)"):]
    rows = []
    for line in out.splitlines():  # from the left frame (a tick row starts it with '┤') to the right one
        left = min((k for k in (line.find("\u2502"), line.find("\u2524")) if k >= 0), default=-1)
        if left >= 0:
            rows.append(line[left + 1:].rstrip().removesuffix("\u2502"))
    legend = [line.strip() for line in out.splitlines() if line.startswith("  ") and "  " in line.strip()]
    return "\n".join(rows), "\n".join(legend)


@pytest.mark.parametrize("formula_args, study", [
    ((), ("sin(x)", "--at", "x=1")), (("--formulas", "central,forward,complex"), ("sin(x)", "--at", "x=1")),
    (("--formulas", "forward,backward"), ("sin(x)", "--at", "x=1")),
    (("--formulas", "backward,forward"), ("sin(x)", "--at", "x=1")),
    # no truncation: central, the stencils and Richardson round alike; central shows on a tick row only
    ((), ("x**2", "--at", "x=3")), (("--dtype", "float32"), ("log(x)", "--at", "x=2", "-n", "2")),
])
def test_every_drawn_formula_shows_in_the_plot(formula_args, study):
    # forward's errors are backward's wherever truncation rules: drawn under it, '+' showed in no cell
    area, legend = _plot(*formula_args, study=study)
    entries = dict(line.split("  ", 1) for line in legend.splitlines())
    drawn = {label.split(" ", 1)[0]: marker for marker, label in entries.items() if "(error ~ h^" in label}
    assert drawn, legend
    combined = {marker: label for marker, label in entries.items() if "in the same cells" in label}
    for name, marker in drawn.items():
        own = area.count(marker)
        shared = sum(area.count(m) for m, label in combined.items() if name in label)
        assert own + shared > 0, (name, marker, area)
    for marker in combined:
        assert area.count(marker) > 0


def test_forward_keeps_its_marker_when_others_are_left_out():
    _, legend = _plot("--formulas", "central,forward,complex")
    assert "+  forward (error ~ h^1)" in legend and "o  central (error ~ h^2)" in legend
