"""fd Hessians at a domain edge (issue 8, item 3, the Hessian remainder): where no two-sided stencil of any
step stays in the domain, the leaving variables' differences go one-sided, with a note, and a finite
Hessian is never reported as "not finite"; an infinite one (sqrt at its edge) is never given as a number.

The mpmath oracle differentiates by two-sided differences, which leave the domain here too, so the exact
values come from the closed forms below."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcli.compute.batch.engine import BatchCore
from gradcli.expression import parse
from gradcli.methods import fd_error
from gradcli.methods.fd_hessian import fd_hessians
from gradcli.methods.fd_error import aitken_limit
from gradcli.methods.fd_hessian_sided import geometric_truncation, sided_hessians
from gradcli.methods.symbolic import value_at


def _hessian(expr: str, **point):
    names = list(point)
    return fd_hessians(parse(expr).tree, {k: np.array([float(v)]) for k, v in point.items()}, names)


def _within(r, exact) -> None:
    got, est = r.matrices[0], r.estimates[0]
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(est))
    assert np.all(np.abs(got - np.array(exact)) <= est), (got.tolist(), est.tolist(), exact)


@pytest.mark.parametrize("expr, point, sides, exact", [
    ("x**2.5 + y**2", {"x": 0, "y": 1}, [1, 0], [[0, 0], [0, 2]]),  # the example
    ("(-x)**2.5 + y**2", {"x": 0, "y": 1}, [-1, 0], [[0, 0], [0, 2]]),  # backward
    ("(x - y)**2.5 + x*y", {"x": 1, "y": 1}, [1, -1], [[0, 1], [1, 0]]),  # the edge is x = y
    ("x**3.5*exp(y) + 3*x*y", {"x": 0, "y": 0.5}, [1, 0], [[0, 3], [3, 0]]),
    ("x**2.5*y**2.5 + x*y", {"x": 0, "y": 0}, [1, 1], [[0, 1], [1, 0]]),  # a corner of the domain
])
def test_one_sided_hessian_at_a_domain_edge_is_within_its_estimate(expr, point, sides, exact):
    r = _hessian(expr, **point)
    assert r.how[0] == fd_error.ONE_SIDED
    assert r.sides[0].tolist() == sides
    _within(r, exact)


def test_an_infinite_second_derivative_at_the_edge_stays_not_finite():
    # d2/dx2 sqrt(x) is infinite at 0: the one-sided values grow without bound as h shrinks, and their
    # estimates with them; no number is given for it
    for expr, point in (("sqrt(x)*y", {"x": 0, "y": 1}), ("sqrt(x - y)*x", {"x": 1, "y": 1})):
        r = _hessian(expr, **point)
        assert not np.all(np.isfinite(r.matrices[0])), expr
        assert r.how[0] != fd_error.ONE_SIDED


def test_a_small_infinite_entry_is_not_taken_for_a_resolved_one():
    # 0.75 y^2 x^-0.5 at y = 0.3: against max(|entry|, 1) a large step looks resolved in float32; it grows
    for dtype in ("float32", "float64"):
        r = fd_hessians(parse("(x + 1.79)**1.5*y**2 + x*y").tree, {"x": np.array([-1.79]), "y": np.array([0.3])},
                        ["x", "y"], dtype=dtype)
        assert not np.isfinite(r.matrices[0, 0, 0]) or r.unresolved[0], (dtype, r.matrices[0].tolist())


def test_an_unresolved_edge_entry_is_a_number_with_a_warning(invoke):
    # x^2.25 in float32: D(h) ~ h^0.25 and rounding meet before the value settles; finite, so not "not
    # finite", but not passed off as known either
    result = invoke("hessian", "x**2.25*(1 + y**2) + y**2", "--at", "x=0,y=1", "-m", "symbolic,fd", "--dtype",
                    "float32", "-f", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    fd, est = np.array(doc["hessian"]["fd"]), np.array(doc["fd_error_estimate"])
    assert np.all(np.isfinite(fd)) and np.all(np.abs(fd - np.array([[0, 0], [0, 2]])) <= est)
    assert any("(x, x) cannot be resolved in float32" in w for w in doc["warnings"]), doc["warnings"]
    assert not any("not finite" in w for w in doc["warnings"])


@pytest.mark.parametrize("expr, point, exact", [
    ("x**2.5 + y**3", {"x": 0, "y": 0.3}, [[0, 0], [0, 1.8]]),  # a zero mixed entry: its rounding grows, no more
    ("x**2.5 + y**2.5 + z**2", {"x": 0, "y": 0, "z": 1}, [[0, 0, 0], [0, 0, 0], [0, 0, 2]]),
    ("(x - y)**2.5 + z**3", {"x": 1, "y": 1, "z": 0.3}, [[0, 0, 0], [0, 0, 0], [0, 0, 1.8]]),
])
def test_separable_functions_at_an_edge_are_finite(expr, point, exact):
    r = _hessian(expr, **point)
    assert r.how[0] == fd_error.ONE_SIDED and not r.unresolved[0]
    _within(r, exact)


@pytest.mark.parametrize("power", [1.6, 1.75, 1.95])
def test_slowly_infinite_second_derivatives_are_not_numbers(power):
    # x^1.6: D(h) ~ h^-0.4 has an estimate below half of it at every step; its differences grow
    r = _hessian(f"x**{power} + y**2", x=0, y=1)
    assert not np.isfinite(r.matrices[0, 0, 0]) and r.matrices[0, 1, 1] == pytest.approx(2.0)


def test_a_noisy_small_step_does_not_fake_a_small_estimate():
    # 1e6 x^2.01 at 0: D(h) ~ 3e6 h^0.01, exact 0; at the step where rounding takes over, the differences
    # happened to look settled (2.5e6 +- 7.4e5); clean steps only: 2.8e6 +- 5.6e6, and warned
    r = _hessian("1e6*x**2.01*(1 + y**2) + 0.431*x*y + sin(y)", x=0, y=0.766)
    assert abs(r.matrices[0, 0, 0]) <= r.estimates[0, 0, 0] and r.unresolved[0]


def test_an_estimate_above_half_the_entry_is_warned():
    r = _hessian("x**2 - x**2.02", x=0)  # exact 2; fd 1.03 +- 1.94
    assert r.unresolved[0] and abs(r.matrices[0, 0, 0] - 2.0) <= r.estimates[0, 0, 0]


def test_inside_the_domain_nothing_goes_one_sided():
    r = _hessian("x**2.5 + y**2", x=1, y=1)
    assert r.how[0] == 0 and r.sides[0].tolist() == [0, 0]
    _within(r, [[3.75, 0], [0, 2]])
    near = _hessian("log(x)*y", x=1e-7, y=2)  # near the edge: the step shrinks, two-sided
    assert near.how[0] == fd_error.SHRUNK and near.sides[0].tolist() == [0, 0]


@settings(max_examples=50, deadline=None)
@given(a=st.floats(-3, 3), sign=st.sampled_from([1, -1]), p=st.sampled_from([2.25, 2.5, 3.5, 4.5]),
       c=st.floats(-2, 2), y=st.floats(0.2, 2.0), dtype=st.sampled_from(["float64", "float32"]),
       g=st.sampled_from([("y**2", lambda y: 2.0), ("sin(y)", lambda y: -math.sin(y)),
                          ("exp(y)", lambda y: math.exp(y))]))
def test_property_edge_hessians_are_within_their_estimates_or_warned(a, sign, p, c, y, dtype, g):
    """(s (x - a))^p (1 + y^2) + c x y + g(y) at x = a: f is finite only on one side of x = a, and its exact
    Hessian there is [[0, c], [c, g''(y)]] for p > 2 (the first term's entries all carry a power of x - a).
    The contract: finite, and each entry within its estimate, or the point marked unresolved (a warning)."""
    a, c, y = (float(np.asarray(v, dtype=dtype)) for v in (a, c, y))
    expr = f"({sign}*(x - ({a!r})))**{p}*(1 + y**2) + ({c!r})*x*y + {g[0]}"
    r = fd_hessians(parse(expr).tree, {"x": np.array([a]), "y": np.array([y])}, ["x", "y"], dtype=dtype)
    assert r.how[0] == fd_error.ONE_SIDED and r.sides[0].tolist() == [sign, 0]
    got, est = r.matrices[0], r.estimates[0]
    exact = np.array([[0.0, c], [c, g[1](y)]])
    assert np.all(np.isfinite(got))
    # the estimate covers the error, up to the rounding of the point itself
    within = np.all(np.abs(got - exact) <= est + 1e-12 * (1 + np.abs(exact)))
    assert within or r.unresolved[0], (got.tolist(), est.tolist())


def test_aitken_limit_of_a_slow_power_law():
    # D(h) = 0.5 h^0.25: from 4h, 16h, 64h the limit 0 is found; a sequence that does not converge is kept
    h = 1e-6
    d = [np.array([0.5 * (m * h) ** 0.25]) for m in (4, 16, 64)]
    assert abs(aitken_limit(*d)[0]) < 1e-12
    assert aitken_limit(np.array([1.0]), np.array([2.0]), np.array([1.5]))[0] == 1.0


def test_sided_stencils_are_exact_on_quadratics():
    # accuracy 2: exact (up to rounding) on any quadratic, in any direction pattern
    tree = parse("3*x**2 - 2*x*y + 5*y**2 + x - y").tree
    env = {"x": np.array([0.5]), "y": np.array([-0.25])}
    for pattern in ([1, 1], [1, -1], [-1, 0], [0, -1]):
        s = sided_hessians(tree, env, ["x", "y"], np.array([[1e-3, 1e-3]]), np.array([pattern]), "float64")
        assert s.finite[0]
        assert np.allclose(s.matrices[0], [[6, -2], [-2, 10]], atol=1e-6), pattern
        assert np.allclose(s.gradients[0], [3 * 2 * 0.5 - 2 * -0.25 + 1, -2 * 0.5 + 10 * -0.25 - 1], atol=1e-6), pattern


def test_geometric_truncation_covers_a_slowly_converging_value():
    # D(h) = h^0.5 -> 0: |D(h) - D(2h)| alone (0.41 D(h)) does not reach 0; the geometric tail does
    h = 1e-4
    d = [np.array([(s * h) ** 0.5]) for s in (1, 2, 4)]
    assert geometric_truncation(*d, 2)[0] >= d[0][0]
    # where the theory's rate holds, nothing changes
    q = [np.array([1.0 + (s * h) ** 2]) for s in (1, 2, 4)]
    assert geometric_truncation(*q, 2)[0] == pytest.approx(fd_error.truncation(*q, 2)[0], rel=1e-6)


def test_sympy_zero_through_a_root_of_a_cancellation_residue():
    import sympy as sp

    x, y = sp.symbols("x y", real=True)
    one = {x: sp.Integer(1), y: sp.Integer(1)}
    assert value_at(15 * sp.sqrt(x - y) / 4, one) == 0.0  # evalf's residue of x - y, square-rooted
    assert value_at(1 / (x - y), one) is None  # a pole is still undefined
    assert value_at(sp.sqrt(x - y + sp.Rational(1, 10**40)), one) == pytest.approx(1e-20)


# --------------------------------------------------------------------------------------------- the CLI
def test_cli_one_point_says_which_differences_are_one_sided(invoke):
    result = invoke("hessian", "x**2.5 + y**2", "--at", "x=0,y=1", "-m", "symbolic,fd", "-f", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["fd_sides"] == {"x": "forward", "y": "central"}
    assert not any("not finite" in w for w in doc["warnings"]), doc["warnings"]
    assert any("one-sided differences (x forward" in n for n in doc["notes"])
    table = invoke("hessian", "x**2.5 + y**2", "--at", "x=0,y=1", "-m", "symbolic,fd")
    assert "second differences, one-sided in x forward" in table.stdout
    assert "not finite" not in table.stderr


def test_cli_batch_records_sides_and_counts_adapted_points(runner, tmp_path):
    from gradcli.cli import app

    points = tmp_path / "p.csv"
    points.write_text("x,y\n0,1\n1,1\n1e-7,2\n")
    result = runner.invoke(app, ["hessian", "x**2.5*y + log(x + 1e-6)", "--points", str(points), "-m", "fd",
                                 "-f", "jsonl"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["fd_sides"]["x"] for r in records] == ["forward", "central", "central"]
    assert "at 1 point no two-sided stencil stays in the domain" in result.stderr
    assert "at 1 point the default step's stencil leaves the domain" in result.stderr
    grad = runner.invoke(app, ["grad", "x**2.5", "--points", str(points), "--wrt", "x", "-m", "fd", "-f", "csv"])
    assert "at 1 point no two-sided stencil stays in the domain" in grad.stderr, grad.stderr


def test_batch_core_counts_each_point_once():
    core = BatchCore(methods="fd", dtype="float64", eps=None, symbolic_time_limit=1.0)
    core.count_adapted(np.array([[0, fd_error.SHRUNK], [fd_error.ONE_SIDED, fd_error.SHRUNK], [0, 0]]))
    core.count_adapted(np.array([fd_error.SHRUNK]))
    notes = core.closing_notes()
    assert any("at 2 points the default step" in n for n in notes), notes
    assert any("at 1 point no two-sided" in n for n in notes), notes


def _oracle_hessian(expr: str, point: dict, digits: int = 250):
    """The oracle at enough digits that 1e100's rounding does not swallow a small term."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    import oracle

    saved, oracle.DIGITS = oracle.DIGITS, digits
    try:
        return [[float(x) for x in row] for row in oracle.oracle_hessian(expr, point, list(point))]
    finally:
        oracle.DIGITS = saved


@pytest.mark.parametrize("methods", ["fd", "fd,symbolic"])
def test_small_interior_entry_beside_a_huge_one_is_warned(invoke_json, methods):
    # f ~ 1e100 rounds by ~1e84 per value; over h^2 that swamps (y, y) = 2: fd shows 0 +- ~1e94 and says so
    expr, point = "exp(x)*1e100 + y**2", {"x": 1.0, "y": 1.0}
    exact = _oracle_hessian(expr, point)
    assert exact[1][1] == 2.0
    doc = invoke_json("hessian", expr, "--at", "x=1,y=1", "-m", methods)
    got, est = np.array(doc["hessian"]["fd"]), np.array(doc["fd_error_estimate"])
    assert np.all(np.abs(got - np.array(exact)) <= est)
    assert any("entry (y, y) cannot be resolved" in w for w in doc["warnings"]), doc["warnings"]
    # the fd gradient: each value with its estimate, and (y: 0 where the answer is 2) warned
    g, ge = doc["gradient"]["fd"], doc["fd_gradient_error_estimate"]
    assert abs(g["y"] - 2.0) <= ge["y"] and abs(g["x"] - math.e * 1e100) <= ge["x"]
    assert any("/dy cannot be resolved" in w for w in doc["warnings"]), doc["warnings"]


def test_fd_gradient_of_the_hessian_record_is_within_its_estimates(invoke_json):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from oracle import oracle_gradient

    for expr, at in (("exp(-x)*1e16*y", {"x": 3.0, "y": -2.0}), ("sin(x)*cos(y)", {"x": 0.3, "y": 1.1}),
                     ("1e20*(x - sin(x))*y", {"x": 1e-3, "y": 2.0})):
        doc = invoke_json("hessian", expr, "--at", ",".join(f"{k}={v!r}" for k, v in at.items()), "-m", "fd")
        exact = oracle_gradient(expr, at)
        for v, x in doc["gradient"]["fd"].items():
            off = abs(x - float(exact[v])) > doc["fd_gradient_error_estimate"][v]
            assert not off or any(f"/d{v} cannot be resolved" in w for w in doc["warnings"]), (expr, v, x, doc)


def test_unused_variable_is_exactly_zero_and_not_warned(invoke_json):
    # y is not in f: its derivatives are 0 by construction, not "cannot be resolved" against f's rounding
    doc = invoke_json("hessian", "exp(-x)*1e20", "--at", "x=0,y=1", "-m", "fd")
    assert doc["warnings"] == []
    assert doc["hessian"]["fd"][1] == [0.0, 0.0] and doc["fd_error_estimate"][1] == [0.0, 0.0]
    assert doc["gradient"]["fd"]["y"] == 0.0 and doc["fd_gradient_error_estimate"]["y"] == 0.0


def test_resolved_interior_hessian_is_not_warned():
    r = _hessian("sin(x)*cos(y) + x**2*y", x=0.3, y=1.1)
    assert not r.unresolved[0]
