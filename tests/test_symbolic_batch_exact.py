"""The symbolic column in batches is the exact derivative at each point, not the float64 evaluation of its
formula: where cancellation, overflow or underflow spoil float64, the point is evaluated at 30 digits, and
the other methods are judged against the right value. Checked against closed forms, the independent mpmath
oracle (tests/oracle.py) and the one-point (--at) path."""

from __future__ import annotations

import json

import mpmath
import pytest

from gradcli.cli import app
from oracle import oracle_gradient

mpmath.mp.dps = 60


def run(runner, *args):
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return result


def records(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def exact(x: float):
    """A float64 coordinate as the exact binary number it is."""
    return mpmath.mpf(x)


def close(got: float, want, rel: float = 1e-15) -> bool:
    return abs(mpmath.mpf(got) - want) <= rel * abs(want)


def blames(warnings: list[str], method: str) -> bool:
    return any(w.startswith(f"{method} and symbolic disagree") for w in warnings)


def warns_about(warnings: list[str], method: str) -> bool:
    """A warning names the method as wrong: it disagrees with the exact value, or it cannot be resolved."""
    return blames(warnings, method) or any(w.startswith(f"{method}: ") for w in warnings)


def test_cancellation_in_the_formula_is_evaluated_exactly(runner):
    # d/dx (exp(x) - 1)/x = exp(x)/x - (exp(x) - 1)/x**2: 1e20 in float64 at x = 1e-20, 0.5 in truth
    result = run(runner, "grad", "(exp(x) - 1)/x", "--grid", "x=1e-20:1e-20:1", "-f", "jsonl")
    (rec,) = records(result)
    r = rec["results"][0]
    assert r["gradient"]["symbolic"]["x"] == 0.5
    assert not blames(rec["warnings"], "fd") and "fd and symbolic disagree" not in result.stderr
    assert r["error"]["fd"]["x"] < 1e-7  # fd's 0.5000000095 is now judged right
    assert blames(rec["warnings"], "tape")  # the tape's 1e20 is the wrong one


def test_overflowing_hessian_entries_are_exact(runner):
    # log(x**2 + y**2): its second derivatives are 2(y^2 - x^2)/(x^2 + y^2)^2 ... ~1e299, whose formula
    # squares x**2 + y**2 ~ 1e-300 to 0 in float64
    result = run(runner, "hessian", "log(x**2 + y**2)", "--grid", "x=1e-150:1e-150:1,y=2e-150:2e-150:1",
                 "-f", "jsonl")
    (rec,) = records(result)
    x, y = exact(rec["point"]["x"]), exact(rec["point"]["y"])
    r2 = (x * x + y * y) ** 2
    want = [[2 * (y * y - x * x) / r2, -4 * x * y / r2], [-4 * x * y / r2, 2 * (x * x - y * y) / r2]]
    got = rec["hessian"]["symbolic"]
    assert all(close(got[i][j], want[i][j]) for i in range(2) for j in range(2)), got
    assert got[0][0] == pytest.approx(2.4e299, rel=1e-12)
    assert "the symbolic Hessian is not finite" not in rec["warnings"]
    assert not any(w.startswith("fd and symbolic") for w in rec["warnings"])
    assert "fd" in rec["error"] and rec["analysis_source"] == "symbolic"


# mpmath.diff's step is absolute, far wider than x at 1e-200 and far below its ulp at 1e200: closed forms there
def _hypot_gradient(point):
    x, y = exact(point["x"]), exact(point["y"])
    r = mpmath.sqrt(x * x + y * y)
    return {"x": x / r, "y": y / r}


def _angle_gradient(point):
    x, y = exact(point["x"]), exact(point["y"])
    return {"x": -y / (x * x + y * y), "y": x / (x * x + y * y)}


@pytest.mark.parametrize("expr, grid, closed_form, fd_right", [
    # cancellation: 1 - cos(x) loses every digit at x = 1e-5; the derivative is ~ -x/12
    ("(1 - cos(x))/x**2", "x=1e-5:3e-5:3", None, True),
    # underflow: x**2 + y**2 is 1e-399, 0 in float64; the gradient is (x, y)/r, of size 1. f itself
    # underflows to 0 in float64, so fd's differences are 0: now rightly the one blamed
    ("sqrt(x**2 + y**2)", "x=1e-200:1e-200:1,y=3e-200:3e-200:1", _hypot_gradient, False),
    # overflow: x**2 is inf in float64, -y/(x**2 (1 + y**2/x**2)) comes out -0; truly -3e-201
    ("atan(y/x)", "x=1e200:1e200:1,y=3e200:3e200:1", _angle_gradient, True),
    # cancellation of huge terms: cosh(20)**2 - sinh(20)**2 is 0 (or 8) in float64, 1 exactly
    ("x*(cosh(x)**2 - sinh(x)**2)", "x=20:22:2", None, True),
])
def test_against_the_oracle(runner, expr, grid, closed_form, fd_right):
    recs = records(run(runner, "grad", expr, "--grid", grid, "-f", "jsonl", "-m", "symbolic,fd"))
    assert recs
    for rec in recs:
        # the oracle takes floats exactly as the binary numbers they are
        want = (closed_form or (lambda p: oracle_gradient(expr, p)))(rec["point"])
        got = rec["results"][0]["gradient"]["symbolic"]
        assert all(close(got[v], w) for v, w in want.items()), (rec["point"], got, want)
        if fd_right:
            assert not blames(rec["warnings"], "fd")
        else:
            assert warns_about(rec["warnings"], "fd")


def test_at_one_point_in_csv_too(runner):
    # -f csv at one point goes through the batch engine
    result = run(runner, "grad", "(exp(x) - 1)/x", "--at", "x=1e-20", "-f", "csv", "-m", "symbolic,fd")
    header, row = result.stdout.splitlines()[:2]
    assert float(dict(zip(header.split(","), row.split(",")))["symbolic_dx"]) == 0.5


def test_derivative_command(runner):
    # d^2/dx^2 of (exp(x) - 1)/x is ~1/3 near 0: the formula's terms are ~1e40 at x = 1e-20
    recs = records(run(runner, "derivative", "(exp(x) - 1)/x", "--grid", "x=1e-20:1e-20:1", "-n", "2",
                       "-m", "symbolic", "-f", "jsonl"))
    d1, d2 = recs[0]["derivatives"]["symbolic"]
    assert d1 == 0.5 and d2 == pytest.approx(1 / 3, rel=1e-15)


def test_overflowing_intermediate_at_the_column_level():
    # x/sqrt(x**2 + y**2) at 1e200: x**2 overflows (f overflows too there, so the commands leave the row out;
    # the column itself is still exact)
    import numpy as np
    import sympy

    from gradcli.methods import symbolic
    from gradcli.methods.symbolic_values import ExactValues

    syms = symbolic.symbols_for(["x", "y"])
    tree = symbolic.from_sympy(syms["x"] / sympy.sqrt(syms["x"] ** 2 + syms["y"] ** 2))
    pts = {"x": np.array([1e200, 3.0]), "y": np.array([3e200, 4.0])}
    exact_values = ExactValues()
    got = exact_values.column("k", tree, pts, 2)
    assert close(got[0], 1 / mpmath.sqrt(10)) and got[1] == pytest.approx(0.6, rel=2.0 ** -40)
    assert exact_values.exact == 1 and exact_values.note() is None  # 3/5 stays float64 (its bound is tiny)


def test_literals_float64_rounds_are_not_trusted_blindly():
    # x - 1/3 at x = float(1/3) is 0 in float64 (1/3 rounds to x), 1/3 - x ~ -1.85e-17 exactly
    import numpy as np
    from fractions import Fraction

    from gradcli.expression import Add, Num, Var
    from gradcli.methods.symbolic_values import ExactValues

    tree = Add(((1, Var("x")), (-1, Num(Fraction(1, 3), "1/3"))))
    got = ExactValues().column("k", tree, {"x": np.array([1 / 3])}, 1)
    assert close(got[0], mpmath.mpf(1 / 3) - mpmath.mpf(1) / 3)


def test_past_a_points_bound_one_note_counts_the_values_left_in_float64(runner, monkeypatch):
    import gradcli.methods.symbolic_values as symbolic_values

    import time

    slow = symbolic_values.exact_value

    def slower(*args):  # each evaluation outlasts its bound, whatever the machine (the timer fires meanwhile)
        time.sleep(0.05)
        return slow(*args)

    monkeypatch.setattr(symbolic_values, "exact_value", slower)
    monkeypatch.setattr(symbolic_values, "EXACT_POINT_SECONDS", 1e-9)  # every evaluation is cut
    result = run(runner, "grad", "(exp(x) - 1)/x", "--grid", "x=1e-20:3e-20:3", "-f", "json", "-m", "symbolic,fd",
                 "--batch-size", "1")
    doc = json.loads(result.stdout)
    left = [n for n in doc["notes"] if n.startswith("symbolic:")]
    assert len(left) == 1 and left[0].startswith("symbolic: 3 values could not be made exact (past 1e-09 s at a point)")
    symbolic = [p["results"][0]["gradient"]["symbolic"]["x"] for p in doc["points"]]
    assert all(v > 1e19 for v in symbolic)  # the float64 evaluations, as noted


def test_a_points_exact_value_does_not_depend_on_the_other_points(runner):
    # every point needs its 30 digits (the formula cancels near 0): alone, in chunks of one, or all together,
    # each gets them, so a point's digits never depend on how the points were split into runs or chunks
    grid = ["--grid", "x=1e-20:1e-19:40"]
    together = records(run(runner, "grad", "(exp(x) - 1)/x", *grid, "-m", "symbolic", "-f", "jsonl"))
    one_by_one = records(run(runner, "grad", "(exp(x) - 1)/x", *grid, "-m", "symbolic", "-f", "jsonl",
                             "--batch-size", "1"))
    assert together == one_by_one
    assert all(r["results"][0]["gradient"]["symbolic"]["x"] == 0.5 for r in together)


def test_header_says_how_values_are_evaluated(runner):
    result = run(runner, "grad", "x**2", "--grid", "x=1:2:2", "-f", "json", "-m", "symbolic")
    text = json.loads(result.stdout)["symbolic_values"]
    assert "30 digits" in text and "2^-40" in text


# Batch symbolic values equal the one-point (--at) path's, which evaluates SymPy exactly at the typed point.
# The points are binary fractions (the typed decimal is the float64 coordinate exactly), or exact enough
# that the difference is far below the tolerance; a value kept in float64 is within 2^-40 of it.
CASES = [
    ("(exp(x) - 1)/x", {"x": 2.0 ** -60}),
    ("(exp(x) - 1)/x", {"x": 0.75}),
    ("(1 - cos(x))/x**2", {"x": 2.0 ** -20}),
    ("log(x**2 + y**2)", {"x": 2.0 ** -530, "y": 2.0 ** -529}),  # x**2 is subnormal
    ("sqrt(x**2 + y**2)", {"x": 2.0 ** -700, "y": 0.75 * 2.0 ** -699}),
    ("x*(cosh(x)**2 - sinh(x)**2)", {"x": 24.5}),
    ("sin(x)*exp(y) + x**2*y", {"x": 1.25, "y": -0.5}),
    ("(1 - x)**2 + 100*(y - x**2)**2", {"x": 1.0, "y": 1.0}),
    ("x**3 - 3*x*y**2", {"x": 2.0 ** 300, "y": 2.0 ** 299}),
]


@pytest.mark.parametrize("expr, point", CASES)
def test_batch_equals_one_point(runner, tmp_path, expr, point):
    at = ",".join(f"{k}={v!r}" for k, v in point.items())
    one = json.loads(run(runner, "grad", expr, "--at", at, "-m", "symbolic", "-f", "json").stdout)
    want = one["results"][0]["gradient"]["symbolic"]
    path = tmp_path / "pts.jsonl"
    path.write_text(json.dumps(point) + "\n")
    (rec,) = records(run(runner, "grad", expr, "--points", str(path), "-m", "symbolic", "-f", "jsonl"))
    got = rec["results"][0]["gradient"]["symbolic"]
    for v, w in want.items():
        assert got[v] == pytest.approx(w, rel=2.0 ** -40, abs=0.0), (v, got, want)


def test_a_sympy_failure_at_a_point_is_noted_not_fatal(runner, monkeypatch):
    from gradcli.methods import symbolic

    def fails(expr, subs):
        raise RuntimeError("evalf gave up")

    monkeypatch.setattr(symbolic, "value_at", fails)
    result = run(runner, "grad", "(exp(x) - 1)/x", "--grid", "x=1e-20:1e-20:1", "-f", "json", "-m", "symbolic")
    (note,) = [n for n in json.loads(result.stdout)["notes"] if n.startswith("symbolic:")]
    assert note.startswith("symbolic: 1 value could not be made exact (SymPy's evaluation failed at 1)")


def test_the_value_column_is_exact_where_float64_cancels_or_overflows():
    from typer.testing import CliRunner

    from gradcli.cli import app

    runner = CliRunner()
    out = runner.invoke(app, ["grad", "cosh(x)**2 - sinh(x)**2", "--grid", "x=20:20:1", "-m", "tape,fd", "-f", "jsonl"])
    assert json.loads(out.stdout)["results"][0]["value"] == 1.0  # float64 says 0.0
    out = runner.invoke(app, ["grad", "sqrt(x**2 + y**2)", "--grid", "x=1e200:1e200:1,y=1e200:1e200:1", "-f", "jsonl"])
    r = json.loads(out.stdout)["results"][0]
    assert r["value"] == pytest.approx(2 ** 0.5 * 1e200, rel=1e-15)  # float64 overflows to inf
    assert r["gradient"]["symbolic"]["x"] == pytest.approx(2 ** -0.5, rel=1e-15)
    out = runner.invoke(app, ["grad", "log(x)", "--grid", "x=-1:1:3", "-m", "symbolic,fd", "-f", "jsonl"])
    values = [json.loads(line)["results"][0]["value"] for line in out.stdout.splitlines()]
    assert values == [None, None, 0.0]  # outside the domain: undefined, no exact work
