"""The work a request asks for, estimated once from what validation already knows: the expression's nodes,
the variables differentiated by, the methods, and the points. Counted in node evaluations (one tree node
applied to one point or stencil point) and turned into seconds by a constant per method family.

A first model, not yet calibrated: the constants below are guesses of the order of magnitude (NumPy about
10 ns per element and node, TensorFlow's eager ops about 30 ns per element plus their per-op overhead)."""

from __future__ import annotations

from dataclasses import dataclass

from gradcli.errors import UsageError
from gradcli.expression.tree import walk
from gradcli.limits import WORK_MAX_SECONDS

# Seconds per node evaluation, per method family (NumPy stencils, TensorFlow tapes, SymPy's formulas).
SECONDS_PER_NODE_EVALUATION = {"fd": 1e-8, "complex": 3e-8, "tape": 3e-8, "symbolic": 1e-8}
# Evaluations a tape makes per point and sweep (forward, backward, and the values kept between them).
TAPE_SWEEPS = 3


@dataclass(frozen=True)
class Work:
    command: str
    nodes: int
    variables: int
    methods: tuple[str, ...]
    points: int
    order: int = 1
    node_evaluations: float = 0.0
    seconds: float = 0.0

    def parts(self) -> str:
        return (f"{self.nodes:,} nodes x {self.variables:,} variables x {','.join(self.methods)} x "
                f"{self.points:,} point{'s' if self.points != 1 else ''}")


def node_count(tree) -> int:
    return sum(1 for _ in walk(tree))


def evaluations_per_point(command: str, method: str, variables: int, order: int = 1) -> float:
    """How many times one point evaluates the expression (in whole-tree evaluations) for ``method``."""
    n = max(1, variables)
    if command == "hessian":
        return {"fd": 1 + 2 * n * n, "tape": TAPE_SWEEPS * 2 * n, "symbolic": n * (n + 1) / 2}.get(method, n)
    if command == "derivative":
        # each order nests one more tape; fd's stencils widen with the order
        return {"fd": order * (order + 4), "tape": TAPE_SWEEPS * 2 ** order, "symbolic": order,
                "complex": 1}.get(method, order)
    return {"fd": 1 + 2 * n, "tape": TAPE_SWEEPS, "symbolic": n, "complex": n}.get(method, n)


def estimate_work(command: str, trees, variables: int, methods, points: int, order: int = 1) -> Work:
    nodes = sum(node_count(t) for t in trees)
    evaluations, seconds = 0.0, 0.0
    for method in methods:
        e = nodes * evaluations_per_point(command, method, variables, order) * max(1, points)
        evaluations += e
        seconds += e * SECONDS_PER_NODE_EVALUATION.get(method, 1e-8)
    return Work(command, nodes, variables, tuple(methods), points, order, evaluations, seconds)


def refuse_past_bound(work: Work, bound: float = WORK_MAX_SECONDS) -> Work:
    """Exit 2 before computing when the estimate is past ``bound`` seconds, saying its parts and what to do."""
    if work.seconds > bound:
        raise UsageError(f"this request is estimated at {work.seconds:,.0f} s ({work.node_evaluations:.2g} node "
                         f"evaluations: {work.parts()}), past the {bound:,.0f} s limit: use fewer methods "
                         f"(-m tape), fewer variables (--wrt) or fewer points")
    return work
