"""fd over many variables: every variable's stencils in one evaluation per group of blocks, with the same
numbers as one variable at a time, and a cost that grows with the work (nodes x variables), not with
nodes x variables x Python calls."""

import numpy as np
import pytest

from gradcli.expression.parser import parse
from gradcli.methods import fd_engine
from gradcli.methods.fd import fd_gradients

FIELDS = ("values", "estimates", "steps", "left", "right", "kinks", "how")


def _tree(text):
    parsed = parse(text)
    return getattr(parsed, "tree", parsed)


@pytest.mark.parametrize("text, names", [
    ("x*y + sin(x*y)", ["x", "y"]),
    ("exp(x)*log(y) + z**3/y", ["x", "y", "z"]),
    ("abs(x - y) + max(x, z)", ["x", "y", "z"]),  # kinks: the search runs for some entries only
    ("sqrt(x**2 + y**2)", ["x", "y"]),
    ("log(x) + atan2(y, x)", ["x", "y"]),  # a branch cut and a domain edge
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("scheme", ["central", "forward", "richardson"])
def test_all_variables_at_once_equal_each_variable_alone(text, names, dtype, scheme):
    rng = np.random.default_rng(len(text))
    points = {v: rng.uniform(-2, 2, 23) for v in names}
    points["x"][:3] = [0.0, 1e-8, 1.0]
    points["y"][:3] = [0.0, 1.0, 1e-300]
    tree = _tree(text)
    together = fd_gradients(tree, points, names, scheme=scheme, dtype=dtype)
    for j, v in enumerate(names):
        alone = fd_gradients(tree, points, [v], scheme=scheme, dtype=dtype)
        for field in FIELDS:
            np.testing.assert_array_equal(getattr(together, field)[:, j], getattr(alone, field)[:, 0],
                                          err_msg=f"{field} of d/d{v}")


def test_groups_of_blocks_stay_within_their_element_budget_and_give_the_same_numbers(monkeypatch):
    names = [f"x{i}" for i in range(12)]
    tree = _tree(" + ".join(f"sin({v})*{v}" for v in names))
    points = {v: np.linspace(-1, 1, 5) + i for i, v in enumerate(names)}
    whole = fd_gradients(tree, points, names)
    sizes = []
    real = fd_engine.evaluate

    def counted(tree_, env, dtype, shape):
        sizes.append(shape[0])
        return real(tree_, env, dtype, shape)

    monkeypatch.setattr(fd_engine, "evaluate", counted)
    monkeypatch.setattr(fd_engine, "GROUP_ELEMENTS", 12 * 7 * 10)  # two points' blocks at a time
    grouped = fd_gradients(tree, points, names)
    assert sizes and max(sizes) <= 7 * 10
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(grouped, field), getattr(whole, field))


def test_a_sum_of_1000_variables_takes_one_evaluation_per_group_not_per_variable(monkeypatch):
    names = [f"x{i}" for i in range(1000)]
    tree = _tree("+".join(names))
    calls = []
    real = fd_engine.evaluate
    monkeypatch.setattr(fd_engine, "evaluate", lambda *a: calls.append(1) or real(*a))
    r = fd_gradients(tree, {v: np.array([0.5]) for v in names}, names)
    assert np.all(np.abs(r.values - 1.0) <= r.estimates) and np.all(r.estimates < 1e-6)
    assert len(calls) < 50  # one per group per step tried; one per variable would be thousands
