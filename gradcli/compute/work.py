"""How much work a batch request is, known before it runs: the expression's tree nodes times the variables
differentiated (a Hessian: their square) times the points, per method, and the seconds that takes on the
bench machine. A request estimated past :data:`gradcli.limits.WORK_MAX_SECONDS` is refused (a usage error)
before anything is computed; the command line shows a progress bar for a long one.

Pure Python and cheap (one walk of the trees): it runs for every request, one point included."""

from __future__ import annotations

from dataclasses import dataclass

from gradcli.errors import UsageError
from gradcli.limits import WORK_MAX_SECONDS

# Seconds per point on the bench machine, per (command, method): PER_UNIT x the method's units (see
# units_per_point) + PER_OUTPUT x the numbers a record holds (its judging and writing). Measured by
# bench/work_estimate.py on 2026-12-03 on a 2-core x86-64 VM (Python 3.11, TensorFlow on CPU) shared with a
# test run (load ~2): three runs, whose figures at the largest sizes spread about 2x; these are rounded
# between them, toward the slower. derivative has no rows of its own: its single variable's cost is
# grad's, times the order (a higher order's stencil, nested tapes, a longer formula).
PER_UNIT = {
    ("grad", "fd"): 6e-07,
    ("grad", "complex"): 2e-07,
    ("grad", "tape"): 3e-08,
    ("grad", "symbolic"): 5e-09,
    ("hessian", "fd"): 2e-07,
    ("hessian", "tape"): 1e-06,
    ("hessian", "symbolic"): 2e-08,
    ("eval", "value"): 3e-07,
}
PER_OUTPUT = {
    ("grad", "fd"): 0.0,
    ("grad", "complex"): 1e-06,
    ("grad", "tape"): 1e-06,
    ("grad", "symbolic"): 1e-06,
    ("hessian", "fd"): 2e-05,
    ("hessian", "tape"): 1e-05,
    ("hessian", "symbolic"): 1e-05,
    ("eval", "value"): 8e-06,
}


# jvp and hvp in grad's units: J·v is one directional derivative per method, a gradient's cost for a single
# variable; hvp's methods are gradients over its n entries, each composition about three tape passes (a
# gradient and its tangent or second sweep), fd of the gradient four gradients. Each times what a point
# costs them beyond that (their records are built point by point): JVP_TIMES and HVP_TIMES, from a grid of
# 90,000 points of sin(x)*cos(y) with every method on the 2-core machine (2026-12-04): jvp 42 us a point
# (grad's units say 9), hvp 117 us (34).
JVP_TIMES = 4.5
HVP_TIMES = 3.5
BORROWED = {
    **{("jvp", m): (("grad", m), JVP_TIMES) for m in ("symbolic", "tape", "fd", "complex")},
    **{("hvp", m): (("grad", "tape"), 3.0 * HVP_TIMES) for m in ("forward-over-reverse", "reverse-over-reverse",
                                                                 "reverse-over-forward")},
    ("hvp", "fd-of-gradient"): (("grad", "tape"), 4.0 * HVP_TIMES),
    ("hvp", "symbolic"): (("grad", "symbolic"), HVP_TIMES),
}


def node_count(trees) -> int:
    """Nodes of the expressions' trees (numbers, variables, operators, calls)."""
    from gradcli.expression.tree import walk

    return sum(1 for tree in trees for _ in walk(tree))


def units_per_point(command: str, method: str, nodes: int, variables: int, order: int = 1) -> float:
    """A method's work at one point: the evaluations it makes, each of the tree's nodes and of every
    variable's value (an evaluation at a shifted point copies all of them). fd and the complex step evaluate
    once per variable (a Hessian's fd once per pair); SymPy has a formula per derivative; the tape walks the
    tree once per gradient (a Hessian: once per row)."""
    if command == "hessian":
        evaluations = variables * (variables if method in ("fd", "symbolic") else 1)
    elif command in ("eval", "jvp"):  # the value alone, once; one direction
        evaluations = 1
    else:
        evaluations = variables * order
    return evaluations * (nodes + variables)


def outputs_per_point(command: str, variables: int) -> int:
    """Numbers a record holds per method (a gradient's entries, a Hessian's with its gradient, eval's value)."""
    if command in ("eval", "jvp"):
        return 1
    return variables * variables + variables if command == "hessian" else variables


def seconds_per_point(command: str, method: str, nodes: int, variables: int, order: int = 1) -> float:
    key, times = BORROWED.get((command, method), (("grad" if command == "derivative" else command, method), 1.0))
    if key not in PER_UNIT:
        return 0.0
    outputs = outputs_per_point(command, variables) * (order if command == "derivative" else 1)
    return times * (PER_UNIT[key] * units_per_point(command, method, nodes, variables, order)
                    + PER_OUTPUT[key] * outputs)


@dataclass(frozen=True)
class WorkEstimate:
    """A request's work per point; ``evaluations``: the node-variable evaluations the user is told of."""

    command: str
    nodes: int
    variables: int
    methods: tuple[str, ...]
    order: int = 1

    @property
    def evaluations_per_point(self) -> int:
        if self.command == "eval":
            return self.nodes
        width = self.variables * self.variables if self.command == "hessian" else \
            1 if self.command == "jvp" else self.variables * self.order
        return self.nodes * max(1, width)

    @property
    def seconds_per_point(self) -> float:
        return sum(seconds_per_point(self.command, m, self.nodes, self.variables, self.order) for m in self.methods)

    def seconds(self, points: int) -> float:
        return self.seconds_per_point * points

    def check(self, points: int, *, so_far: bool = False) -> None:
        """Refuse ``points`` points past the limit (``so_far``: the points a stream has given up to now)."""
        seconds = self.seconds(points)
        if seconds <= WORK_MAX_SECONDS:
            return
        which = f"the first {points:,} points read are" if so_far else "this request is"
        if self.command == "eval":
            raise UsageError(
                f"{which} about {self.evaluations_per_point * points:,} node-point evaluations ({self.nodes:,} "
                f"nodes x {points:,} points, ~{duration_text(seconds)} on a typical machine): more than the limit "
                f"of ~{duration_text(WORK_MAX_SECONDS)}; split the points (--points in parts)")
        if self.command == "jvp":  # one direction, whatever the number of variables
            kind, size, fewer = "node-point", f"{self.nodes:,} nodes, one direction", ""
        else:
            kind = "node-variable-point"
            squared = " squared" if self.command == "hessian" else ""
            size = f"{self.nodes:,} nodes x {self.variables:,} variables{squared}"
            fewer = "" if self.command == "hvp" else " use fewer --wrt variables, or"
        raise UsageError(
            f"{which} about {self.evaluations_per_point * points:,} {kind} evaluations ({size} x {points:,} "
            f"points, ~{duration_text(seconds)} on a typical machine): more than the limit of "
            f"~{duration_text(WORK_MAX_SECONDS)}; split the points (--points in parts),{fewer or ' or'} fewer methods "
            "(-m ...)")


def estimate(computation) -> WorkEstimate | None:
    """The work of a batch core (gradcli.compute.batch); None for what has no trees (a reader of points)."""
    if getattr(computation, "command", "") == "eval":  # eval's value alone, point by point in Python
        return WorkEstimate("eval", node_count([computation.expr.tree]), len(computation.variables), ("value",))
    trees = getattr(computation, "trees", None)
    methods = getattr(computation, "methods", None)
    if not trees or methods is None:
        return None
    command = getattr(computation, "command", "")
    if command == "derivative":
        variables, order = 1, getattr(computation, "order", 1)
    else:
        variables, order = len(getattr(computation, "wrt", None) or computation.variables), 1
    return WorkEstimate(command, node_count(trees), variables, tuple(methods), order)


def duration_text(seconds: float) -> str:
    """A rough duration: "40 s", "12 min", "3 h", "5 days"."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:,.0f} days"
