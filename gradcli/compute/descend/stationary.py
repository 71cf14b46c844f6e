"""Stationary points by SymPy: the real solutions of grad f = 0, searched for while the runs go on."""

from __future__ import annotations

import math

from gradcli.methods import symbolic
from gradcli.compute.analysis import analyse_hessian
from gradcli.compute.descend.results import StationaryPoint
from gradcli.methods.worker import BoundedJob, CancelFlag

# Solutions of grad f = 0 looked at, at most.
MAX_STATIONARY = 50
# With many starts, an end point within this x max(1, |p|) of a point p is said to be at p: at one of
# SymPy's stationary points, or in the basin of another start's end point.
STATIONARY_TOLERANCE = 1e-3


def solve_stationary_points(tree, names: list[str], cancel: CancelFlag) -> tuple[list[StationaryPoint], list[str]]:
    """Real solutions of grad f = 0 that SymPy finds, each with its kind; returns (points, notes).

    Unbounded in time: run it through :func:`start_stationary_points` (a :class:`gradcli.methods.worker.BoundedJob`
    work function).
    """
    import sympy as sp

    syms = symbolic.symbols_for(names)
    f = symbolic.to_sympy(tree, syms)
    xs = [syms[v] for v in names]
    grads = [symbolic.diff(f, s) for s in xs]
    notes: list[str] = []
    try:
        solutions = sp.solve(grads, xs, dict=True)
    except (NotImplementedError, ValueError, TypeError) as exc:
        return [], [f"SymPy cannot solve grad f = 0 ({type(exc).__name__})"]
    found = []
    families = 0
    for sol in solutions[:MAX_STATIONARY]:
        cancel.check()
        if any(s not in sol for s in xs) or any(sol[s].free_symbols for s in xs):
            families += 1  # a curve or surface of stationary points: no single nearest point to offer
            continue
        point = {v: symbolic.value_at(sol[syms[v]], {}) for v in names}
        if any(x is None for x in point.values()):
            continue  # complex or undefined
        subs = {s: sol[s] for s in xs}
        hess = [[symbolic.value_at(symbolic.diff(gi, s), subs) for s in xs] for gi in grads]
        kind = None
        if all(x is not None for row in hess for x in row):
            kind = analyse_hessian(hess, [0.0] * len(xs)).critical_point
        found.append(StationaryPoint(point, _exact_value(f, subs), kind))
    if families:
        notes.append(f"SymPy found {families} continuous set(s) of stationary points; they are not listed")
    if len(solutions) > MAX_STATIONARY:
        notes.append(f"only the first {MAX_STATIONARY} of SymPy's {len(solutions)} solutions are used")
    return found, notes


def start_stationary_points(tree, names: list[str], time_limit: float) -> BoundedJob:
    """SymPy's search, started before the runs and collected after them (``result()``: (points, notes))."""
    return BoundedJob(solve_stationary_points, (tree, list(names)), time_limit, parallel=True, cancellable=True)


def _exact_value(f, subs) -> float | None:
    """f at a solution SymPy gave exactly: substituting first gives exact zeros (f(3, -1) = 0, not
    6.6e-229 from evaluating (3 - 3)**2 numerically); numerical evaluation is the fallback."""
    exact = f.xreplace(subs)
    if exact.is_number:
        return symbolic.value_at(exact, {})
    return symbolic.value_at(f, subs)


def nearest(points: list[StationaryPoint], end: dict[str, float]) -> StationaryPoint | None:
    """The stationary point closest to where a run ended, with its distance; None when there is none."""
    if not points or any(v is None or not math.isfinite(v) for v in end.values()):
        return None
    best = min(points, key=lambda p: sum((p.point[k] - end[k]) ** 2 for k in end))
    distance = math.sqrt(sum((best.point[k] - end[k]) ** 2 for k in end))
    return StationaryPoint(best.point, best.value, best.kind, distance)


def within_tolerance(distance: float, point: dict[str, float]) -> bool:
    """Whether an end point ``distance`` away from ``point`` is at it (STATIONARY_TOLERANCE x max(1, |point|))."""
    size = math.sqrt(sum(v * v for v in point.values()))
    return distance <= STATIONARY_TOLERANCE * max(1.0, size)


