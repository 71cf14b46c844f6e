"""Curvature: the Hessian by nested tapes, for learning-rate advice and the kind of a run's end point."""

from __future__ import annotations

import math

from gradcli.compute.analysis import analyse_hessian
from gradcli.compute.descend.results import DescentRun
from gradcli.compute.judge import tape_roundings
from gradcli.dtypes import MACHINE_EPSILON


def curvatures(tree, names: list[str], points: list[dict[str, float]]) -> list[tuple[list, list] | None]:
    """(gradient, Hessian) of ``tree`` at each point in float64, by nested GradientTapes as the guide does,
    all points in one call (:func:`gradcli.methods.tape.tape_hessians`); None where the tape fails."""
    if not points:
        return []
    import numpy as np

    from gradcli.methods.tape import tape_hessians

    try:
        t = tape_hessians(tree, {v: np.array([p[v] for p in points], dtype=np.float64) for v in names}, list(names))
    except Exception:  # advice is optional; a Hessian TF cannot compute leaves the generic advice
        return [None] * len(points)
    return [(g.tolist(), h.tolist()) for g, h in zip(t.gradients, t.matrices)]


def stability_limit(optimizer: str, lam_max: float, momentum: float) -> float | None:
    """The largest learning rate for which the optimizer is stable on a quadratic with top curvature λmax.

    Plain descent: 2/λmax. Heavy-ball momentum μ: 2(1+μ)/λmax. Nesterov (Keras' form): 2(1+μ)/((1+2μ)λmax).
    Adaptive optimizers rescale each step, so no such bound applies to them.
    """
    if lam_max is None or lam_max <= 0:
        return None
    if optimizer in ("manual", "sgd"):
        return 2.0 / lam_max
    if optimizer == "momentum":
        return 2.0 * (1 + momentum) / lam_max
    if optimizer == "nesterov":
        return 2.0 * (1 + momentum) / ((1 + 2 * momentum) * lam_max)
    return None


def advise(run: DescentRun, curvature: tuple[list, list] | None, where: str, momentum: float,
           maximize: bool = False) -> None:
    """Suggest a learning rate from the Hessian at ``at``: half the stability limit, where one is defined.

    The limit is that of the minimised function: -f's Hessian (-H) when maximising.
    """
    limit = None
    lam = None
    if curvature is not None:
        g, h = curvature
        if maximize:
            g, h = [-v for v in g], [[-v for v in row] for row in h]
        if all(math.isfinite(v) for row in h for v in row):
            analysis = analyse_hessian(h, g)
            lam = max(analysis.eigenvalues) if analysis.eigenvalues else None
            limit = stability_limit(run.optimizer, lam, momentum)
    if limit is not None:
        run.suggested_learning_rate = float(f"{limit / 2:.3g}")
        bound = "2/λmax" if run.optimizer in ("manual", "sgd") else "its stability limit"
        hessian = "the Hessian of -f" if maximize else "the Hessian"
        run.message += (f"; {hessian} at the {where} has λmax = {lam:.4g}, so {bound} = {limit:.4g}: "
                        f"try --lr {run.suggested_learning_rate:g} (half of it)")
    else:
        run.suggested_learning_rate = float(f"{run.learning_rate / 10:.3g}")
        reason = ("this optimizer rescales its steps, so 2/λmax does not bound it" if lam is not None and lam > 0
                  else "the Hessian there gives no bound (no positive curvature)")
        run.message += f"; try a smaller learning rate, e.g. --lr {run.suggested_learning_rate:g} ({reason})"


def classify_end(run: DescentRun, curvature: tuple[list, list] | None, dtype: str) -> None:
    """``run.end_kind``: what the Hessian says about the point where a converged run ended."""
    if curvature is None:
        return
    g, h = curvature
    if not all(math.isfinite(v) for row in h for v in row + g):
        return
    scale = max(1.0, abs(run.value or 0.0))
    gtol = max(tape_roundings(dtype=dtype), math.sqrt(MACHINE_EPSILON[dtype])) * scale
    run.end_kind = analyse_hessian(h, g, dtype=dtype, gradient_tolerance=gtol).critical_point
