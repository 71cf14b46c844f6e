"""gradcli.methods.tape: the tape for a batch of points equals the tape at each point on its own."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gradcli.expression import parse
from gradcli.dtypes import MACHINE_EPSILON
from gradcli.methods import tape as M
from gradcli.methods.tape import tape_gradient
from gradcli.methods.tape_hessian import jacobian_function

DTYPES = ("float64", "float32")
X1 = np.array([2.0, 0.5, 1.25, 3.0, 0.75])
X2 = np.array([3.0, 1.5, 0.25, 2.0, 1.1])
EXPRESSIONS = [
    "(x1+5)*x2**2",  # the guide's: 9.0 and 42.0 at (2, 3)
    "x1**3 - 2*x1*x2 + x2**4",
    "sin(x1)*exp(x2) + log(x1*x2)",
    "x1**2 + 3",  # independent of x2
    "7",  # constant
]


def points(size: int = 5) -> dict[str, np.ndarray]:
    return {"x1": X1[:size], "x2": X2[:size]}


def at(p: int) -> dict[str, float]:
    return {"x1": float(X1[p]), "x2": float(X2[p])}


def close(a, b, dtype):
    """Equal up to a few roundings (a batch may take a vectorised kernel where one point takes a scalar one)."""
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=16 * MACHINE_EPSILON[dtype], atol=1e-300)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("text", EXPRESSIONS)
def test_batch_gradient_hessian_derivatives_equal_each_point(text, dtype):
    tree = parse(text).tree
    wrt = ["x1", "x2"]
    g = M.tape_gradients([tree], points(), wrt, dtype=dtype)
    h = M.tape_hessians(tree, points(), wrt, dtype=dtype)
    d = M.tape_derivatives(tree, points(), "x1", 4, dtype=dtype, time_budget=None)  # all four orders, even on a busy machine
    assert g.values.shape == (1, 5) and g.gradients.shape == (1, 5, 2) and g.summed.shape == (5, 2)
    assert h.values.shape == (5,) and h.gradients.shape == (5, 2) and h.matrices.shape == (5, 2, 2)
    assert d.values.shape == (5, 4) and d.values_at.shape == (5,) and len(d.structural) == 4
    for p in range(5):
        per_tree, unconnected, summed, values = tape_gradient([tree], at(p), wrt, dtype=dtype)
        close(g.values[0, p], values[0], dtype)
        close(g.gradients[0, p], [per_tree[0][v] for v in wrt], dtype)
        close(g.summed[p], [summed[v] for v in wrt], dtype)
        assert g.unconnected == unconnected
        one = M.tape_hessians(tree, {k: np.array([v]) for k, v in at(p).items()}, wrt, dtype=dtype)
        close(h.values[p], one.values[0], dtype)
        close(h.gradients[p], one.gradients[0], dtype)
        close(h.matrices[p], one.matrices[0], dtype)
        assert h.structural == one.structural and h.mode == one.mode == "rows"
        one = M.tape_derivatives(tree, {k: np.array([v]) for k, v in at(p).items()}, "x1", 4, dtype=dtype,
                                 time_budget=None)
        assert one.structural == d.structural
        close(d.values[p], one.values[0], dtype)
        close(d.values_at[p], h.values[p], dtype)


def test_the_guides_numbers_in_a_batch():
    tree = parse("(x1+5)*x2**2").tree
    g = M.tape_gradients([tree], points(), ["x1", "x2"])
    assert g.gradients[0, 0].tolist() == [9.0, 42.0]
    np.testing.assert_array_equal(g.gradients[0, :, 0], X2 ** 2)
    np.testing.assert_array_equal(g.gradients[0, :, 1], 2 * (X1 + 5) * X2)
    h = M.tape_hessians(tree, points(), ["x1", "x2"])
    assert h.structural == [(0, 0)]  # the guide's None for d2z/dx1^2, the same at every point
    assert h.matrices[0].tolist() == [[0.0, 6.0], [6.0, 14.0]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_several_targets_are_summed(dtype):
    trees = [parse(t).tree for t in ("3*x1", "x1**2", "x1*x2", "5")]
    g = M.tape_gradients(trees, points(), ["x1", "x2"], dtype=dtype)
    assert g.values.shape == (4, 5) and g.gradients.shape == (4, 5, 2)
    assert g.unconnected == [["x2"], ["x2"], [], ["x1", "x2"]]
    close(g.summed, g.gradients.sum(axis=0), dtype)
    assert g.values[3].tolist() == [5.0] * 5 and not g.gradients[3].any()
    # the guide's two targets on one variable: 3 + 2*5 = 13 at x = 5
    one = M.tape_gradients(trees[:2], {"x1": np.array([5.0])}, ["x1"], dtype=dtype)
    assert one.summed.tolist() == [[13.0]]


def test_unconnected_and_structural_in_a_batch():
    tree = parse("x1**2 + 3").tree
    g = M.tape_gradients([tree], points(), ["x1", "x2"])
    assert g.unconnected == [["x2"]] and not g.gradients[0, :, 1].any()
    for mode in M.HESSIAN_MODES:
        h = M.tape_hessians(tree, points(), ["x1", "x2"], mode=mode)
        assert h.mode == mode
        assert sorted(h.structural) == [(0, 1), (1, 0), (1, 1)], mode
        np.testing.assert_array_equal(h.matrices[:, 0, 0], 2.0)
        assert not h.matrices[:, 1, :].any() and not h.matrices[:, :, 1].any()
    # a constant: values broadcast to every point, everything unconnected
    h = M.tape_hessians(parse("7").tree, points(), ["x1", "x2"])
    assert h.values.tolist() == [7.0] * 5 and len(h.structural) == 4 and not h.matrices.any()
    d = M.tape_derivatives(parse("7").tree, points(), "x1", 3)
    assert d.structural == [True, True, True] and d.values_at.tolist() == [7.0] * 5
    # x*x: the third derivative is unconnected, and so is every order above it
    d = M.tape_derivatives(parse("x1**2 * x2").tree, points(), "x1", 4)
    assert d.structural == [False, False, True, True]
    np.testing.assert_array_equal(d.values[:, 1], 2 * X2)


@pytest.mark.parametrize("size", [1, 5])
def test_shapes(size):
    tree = parse("sin(x1) * x2").tree
    g = M.tape_gradients([tree, tree], points(size), ["x2"])
    assert g.values.shape == (2, size) and g.gradients.shape == (2, size, 1) and g.summed.shape == (size, 1)
    for mode in M.HESSIAN_MODES:
        h = M.tape_hessians(tree, points(size), ["x1", "x2"], mode=mode)
        assert (h.values.shape, h.gradients.shape, h.matrices.shape) == ((size,), (size, 2), (size, 2, 2))
    d = M.tape_derivatives(tree, points(size), "x1", 2)
    assert d.values.shape == (size, 2) and d.values_at.shape == (size,)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hessian_modes_agree(dtype, monkeypatch):
    # Rosenbrock over 12 variables (stacked by default: alike terms vectorised), one held fixed, and a term
    # with a single variable
    n = 12
    text = " + ".join(f"a*(x{i + 1} - x{i}**2)**2 + (1 - x{i})**2" for i in range(1, n)) + " + sin(x3)"
    tree = parse(text).tree
    rng = np.random.default_rng(7)
    pts = {f"x{i}": rng.uniform(-1, 1, 4) for i in range(1, n + 1)}
    pts["a"] = np.array([100.0, 10.0, 1.0, 0.5])
    wrt = [f"x{i}" for i in range(1, n + 1)]
    rows = M.tape_hessians(tree, pts, wrt, dtype=dtype, mode="rows")
    stacked = M.tape_hessians(tree, pts, wrt, dtype=dtype)
    assert stacked.mode == "stacked" and stacked.structural == []
    monkeypatch.setattr(M, "STACKED_ELEMENTS", n * n)  # one point per chunk
    chunked = M.tape_hessians(tree, pts, wrt, dtype=dtype, mode="stacked")
    jacobian = M.tape_hessians(tree, pts, wrt, dtype=dtype, mode="jacobian")
    scale = np.max(np.abs(rows.matrices))
    for other in (stacked, chunked, jacobian):
        tol = 1e3 * MACHINE_EPSILON[dtype]
        np.testing.assert_allclose(other.matrices, rows.matrices, rtol=0, atol=tol * scale)
        np.testing.assert_allclose(other.gradients, rows.gradients, rtol=0, atol=tol * scale)
        np.testing.assert_allclose(other.values, rows.values, rtol=tol)
    np.testing.assert_array_equal(chunked.matrices, stacked.matrices)


def test_jacobian_mode_traces_at_most_twice():
    tree = parse("x1**3 * exp(x2) + x1*x2").tree
    wrt = ["x1", "x2"]
    M.clear_caches()
    for size in (1, 5, 3, 4):
        M.tape_hessians(tree, points(size), wrt, mode="jacobian")
    fn = jacobian_function(tree, tuple(wrt), (), "float64")
    assert fn.experimental_get_tracing_count() <= 2


def test_time_budget_cuts_the_orders_with_a_note():
    notes: list[str] = []
    d = M.tape_derivatives(parse("sin(x1)").tree, points(), "x1", 4, time_budget=0.0, notes=notes)
    assert d.values.shape == (5, 1) and d.structural == [False]
    close(d.values[:, 0], np.cos(X1), "float64")
    assert notes and "tape column stops at order 1" in notes[0]


def test_points_must_agree():
    tree = parse("x1 * x2").tree
    with pytest.raises(ValueError):
        M.tape_gradients([tree], {"x1": np.ones(3), "x2": np.ones(4)}, ["x1"])
    with pytest.raises(ValueError):
        M.tape_hessians(tree, {"x1": np.ones(3)}, ["x1"])  # x2 has no values


def test_importing_the_module_imports_no_tensorflow():
    code = ("import sys, gradcli.methods.tape; "
            "assert 'tensorflow' not in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
