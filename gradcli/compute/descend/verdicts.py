"""After a run: the message that explains why it stopped, and a closer look at a run that used up its steps."""

from __future__ import annotations

import math

from gradcli.compute.descend.results import DescentRun
from gradcli.compute.descend.rules import CONVERGED, DIVERGED, MAX_STEPS, STALLED, UNBOUNDED, VALUE_BOUND, WINDOW
from gradcli.compute.judge import tape_roundings


def explain_stop(run: DescentRun, status: int, k: int, tol: float, dtype: str, maximize: bool, window, start,
                  names) -> None:
    """Fill in the status message and ``stopped_at``; a run that used up its steps may get a new status
    (``oscillating``, ``unbounded``, or ``converged`` when its gradient is exactly 0)."""
    if status == CONVERGED:
        run.message = f"gradient norm {run.gradient_norm:.3g} < tol {tol:g} after {k} steps"
    elif status == STALLED:
        run.message = (f"the point stopped changing in {dtype} at step {k} (the steps are below its precision); "
                       f"gradient norm {run.gradient_norm:.3g}")
    elif status == DIVERGED and k == 0:
        run.stopped_at = 0
        run.message = "f or its gradient is not finite at the start point: choose another start"
    elif status == DIVERGED:
        run.stopped_at = k
        if run.value is not None and math.isfinite(run.value) and run.gradient_norm is not None and all(
                v is not None and math.isfinite(v) for v in run.final.values()):
            why = (f"f {'fell' if maximize else 'rose'} more than {VALUE_BOUND:g} x max(1, |f(start)|) "
                   f"{'below' if maximize else 'above'} its value at the start")
        else:
            why = "the point, value or gradient is not finite"
        run.message = f"diverged at step {k}: {why}"
    elif status == UNBOUNDED and k == 0:
        # e.g. log(x) from x=0: f is already infinite where the descent would start
        run.stopped_at = 0
        run.message = "f is infinite at the start point: choose another start"
    elif status == UNBOUNDED:
        run.stopped_at = k
        direction = "above" if maximize else "below"
        run.message = (f"unbounded {direction}: f passed {run.value if run.value is not None else '-inf'} "
                       f"at step {k} and keeps going")
    elif status == MAX_STEPS and run.gradient_norm == 0:
        run.status = "converged"
        run.message = f"the gradient is exactly 0 after {k} steps"
    elif status == MAX_STEPS:
        run.message = f"stopped at --steps {k} with gradient norm {run.gradient_norm:.3g} (not below tol {tol:g})"
        verdict = _classify_stop(window, k, dtype, maximize, start, names)
        if verdict is not None:
            run.status, detail = verdict
            run.message = f"{detail} after {k} steps (gradient norm {run.gradient_norm:.3g})"


def _classify_stop(window, k: int, dtype: str, maximize: bool, start: dict[str, float], names):
    """Look at the last ``WINDOW`` evaluations of a run that hit --steps.

    oscillating: in some coordinate every step in the window reverses the previous one, the last
    step is at least half as long as the first (not dying out), and longer than rounding noise.
    unbounded: f fell at every step of the window, no slower at the end than at the start, the
    gradient did not shrink, and the point is far from where it started and still moving away.
    """
    import numpy as np

    if k + 1 < WINDOW:
        return None
    order = [(k + 1 + i) % WINDOW for i in range(WINDOW)]  # oldest first; row k % WINDOW is the newest
    w = window[order]
    n = len(names)
    if not np.all(np.isfinite(w)):
        return None
    points, values, gnorms = w[:, :n], w[:, n], w[:, n + 1]
    deltas = np.diff(points, axis=0)
    for i, name in enumerate(names):
        d = deltas[:, i]
        # the gradient's roundings (the tape's) at the coordinate's scale: a step that small is noise
        noise = tape_roundings(dtype=dtype, scale=max(1.0, float(np.max(np.abs(points[:, i])))))
        if np.all(d[:-1] * d[1:] < 0) and abs(d[-1]) >= 0.5 * abs(d[0]) and abs(d[-1]) > noise:
            return "oscillating", (f"oscillating in {name}: every step reverses the last one "
                                   f"(amplitude {abs(d[-1]):.3g}, not shrinking)")
    f = -values if maximize else values  # the minimised quantity
    drops = -np.diff(f)
    norms = np.linalg.norm(points, axis=1)
    start_norm = math.sqrt(sum(v * v for v in start.values()))
    if (np.all(drops > 0) and drops[-1] >= drops[0] and gnorms[-1] >= gnorms[0]
            and np.all(np.diff(norms) > 0) and norms[-1] > 2 * max(1.0, start_norm)):
        direction = "above" if maximize else "below"
        return "unbounded", (f"unbounded {direction}, by the look of it: f keeps changing by at least "
                             f"{drops[-1]:.3g} a step while the point runs away")
    return None
