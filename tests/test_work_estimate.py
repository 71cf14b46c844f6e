"""The work estimate (gradcli.compute.work): it grows as documented, and past the bound it refuses."""

import pytest

from gradcli.compute.work import estimate_work, refuse_past_bound
from gradcli.errors import UsageError
from gradcli.expression import parse


def tree(text):
    return parse(text).tree


def test_grows_with_points_nodes_variables_and_methods():
    small = estimate_work("grad", [tree("x*y")], 2, ["tape"], 1)
    assert estimate_work("grad", [tree("x*y")], 2, ["tape"], 10).node_evaluations == 10 * small.node_evaluations
    assert estimate_work("grad", [tree("x*y + sin(x)*y")], 2, ["tape"], 1).seconds > small.seconds
    assert estimate_work("grad", [tree("x*y")], 2, ["tape", "fd"], 1).seconds > small.seconds
    fd = [estimate_work("grad", [tree("x*y")], n, ["fd"], 1).node_evaluations for n in (10, 100)]
    assert fd[1] > 5 * fd[0]  # fd: stencil points x variables
    hessian = [estimate_work("hessian", [tree("x*y")], n, ["fd"], 1).node_evaluations for n in (10, 100)]
    assert hessian[1] > 50 * hessian[0]  # fd's Hessian: variables squared


def test_small_requests_pass_and_huge_ones_refuse_naming_the_parts():
    assert refuse_past_bound(estimate_work("grad", [tree("x**2")], 1, ["symbolic", "tape", "fd"], 1))
    huge = estimate_work("hessian", [tree("+".join(f"sin(x{i})*x{i}" for i in range(500)))], 100, ["fd"],
                         100_000_000)
    with pytest.raises(UsageError) as refused:
        refuse_past_bound(huge)
    message = str(refused.value)
    assert "nodes" in message and "100 variables" in message and "fd" in message and "-m tape" in message
