"""Judging Hessians: each entry against the exact one on its own scale (fd within
its own error estimate), tape against fd when there is no exact matrix, and the scale-aware analysis of the
most trustworthy matrix, for one point and for a batch alike (:mod:`gradcli.compute.batch.hessian`).
"""

from __future__ import annotations

import math

from gradcli.compute.analysis import analyse_hessian
from gradcli.compute.judge import underflow_floor, unsettled
from gradcli.dtypes import MACHINE_EPSILON


def hessian_tolerance(method: str, *, dtype: str, scale: float, step: float | None = None) -> float:
    """How far a method's entry may be from the exact one before gradcli calls it a disagreement.

    tape: a few thousand roundings of the dtype. fd: truncation h^2 plus rounding eps/h^2 (times a
    safety factor: the derivatives that set the constants are unknown).
    """
    eps = MACHINE_EPSILON[dtype]
    if method == "tape":
        return 1e4 * eps * scale
    h = step or 1.0
    return 100.0 * (h * h + eps / (h * h)) * scale


def judge_hessian(method: str, matrix, exact, *, wrt: list[str], dtype: str, value: float | None,
                  step: float | None, estimates=None, shift=None) -> tuple[float | None, str | None]:
    """A method's Hessian against the exact one, for one point and for a batch alike: (its largest error,
    the warning for the entry furthest past its tolerance, or None). Each entry on its own: fd within its
    own error estimate (``estimates``, n x n), the tape within roundings of max(1, |exact entry|); a small
    entry beside a huge one is not excused by the huge one. ``shift``: the exact entries' move between the
    typed point and the dtype's (the point's rounding, no method's error)."""
    import numpy as np

    got = np.array(matrix, dtype=np.float64)
    ref = np.array(exact, dtype=np.float64)
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(ref))):
        return None, None
    if not got.size:
        return 0.0, None
    err = np.abs(got - ref)
    tol = entry_tolerance(method, ref, dtype=dtype, estimates=estimates)
    if shift is not None:
        tol = tol + np.asarray(shift, dtype=np.float64)
    tol = tol + underflow_floor(dtype)
    if not np.any(err > tol):
        return float(err.max()), None
    i, j = np.unravel_index(int(np.argmax(err / tol)), err.shape)
    why = "fd's own error estimate" if method == "fd" and estimates is not None else f"{dtype} explains"
    return float(err.max()), (f"{method} and symbolic Hessians disagree at entry ({wrt[i]}, {wrt[j]}): error "
                              f"{err[i, j]:.3g} is more than {why} (~{tol[i, j]:.1g})")


def entry_tolerance(method: str, reference, *, dtype: str, estimates=None):
    """Per entry: fd its estimate plus the reference's float64 rounding; the tape (and fd without an
    estimate) :func:`hessian_tolerance` on max(1, |entry|)."""
    import numpy as np

    ref = np.abs(np.asarray(reference, dtype=np.float64))
    if method == "fd" and estimates is not None:
        return np.asarray(estimates, dtype=np.float64) + 4 * MACHINE_EPSILON["float64"] * ref
    return hessian_tolerance(method if method == "tape" else "tape", dtype=dtype, scale=np.maximum(1.0, ref))


def cross_check_hessian(tape, fd, estimates, *, wrt: list[str], dtype: str) -> str | None:
    """Without the exact matrix: tape against fd entry by entry, within fd's estimate plus the tape's rounding;
    the warning names the entry furthest apart, and fd the suspect where its own estimate is large."""
    import numpy as np

    t, f, e = (np.asarray(a, dtype=np.float64) for a in (tape, fd, estimates))
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(f))) or not t.size:
        return None
    gap = np.abs(t - f)
    tol = e + entry_tolerance("tape", t, dtype=dtype) + underflow_floor(dtype)
    if not np.any(gap > tol):
        return None
    i, j = np.unravel_index(int(np.argmax(gap / tol)), gap.shape)
    fd_suspect = bool(e[i, j] > MACHINE_EPSILON[dtype] ** 0.5 * max(1.0, abs(f[i, j])))
    return (f"tape and fd Hessians disagree at entry ({wrt[i]}, {wrt[j]}): |tape - fd| = {gap[i, j]:.3g} is more "
            f"than fd's estimate and {dtype}'s rounding explain (~{tol[i, j]:.1g}); no exact value to settle it: "
            f"{unsettled(fd_suspect=fd_suspect)}")


def best_analysis(matrices: dict, gradients: dict, *, dtype: str, step: float | None, fd_estimates=None):
    """What the Hessian says, for one point and for a batch alike: the exact matrix when it is finite, else
    the tape's, else fd's; the gradient likewise. Definiteness is scale-aware, each entry judged on its own
    error (:func:`gradcli.compute.analysis.zero_eigenvalues`): the exact matrix's float64 rounding, the tape's
    roundings, fd's own estimates. Returns (source, analysis, True when the fd matrix was used), or None
    when no matrix is finite."""
    import numpy as np

    def finite(a) -> bool:
        return a is not None and bool(np.all(np.isfinite(np.asarray(a, dtype=np.float64))))

    source = next((m for m in ("symbolic", "tape", "fd") if finite(matrices.get(m))), None)
    if source is None:
        return None
    matrix = np.asarray(matrices[source], dtype=np.float64)
    grad_source = next((g for g in ("symbolic", "tape", "fd") if finite(gradients.get(g))), None)
    gradient = np.asarray(gradients[grad_source], dtype=np.float64).tolist() if grad_source else None
    gtol = None
    if grad_source == "fd":
        # fd's gradient comes from steps of eps^(1/4): it is only good to about sqrt(eps).
        gtol = 100 * math.sqrt(MACHINE_EPSILON[dtype])
    elif grad_source == "tape":
        gtol = 1e3 * MACHINE_EPSILON[dtype]
    if source == "fd" and fd_estimates is not None:
        errors = np.asarray(fd_estimates, dtype=np.float64)
    elif source == "fd":  # no estimates given: the loose bound on the largest entry
        scale = max([1.0] + [abs(x) for row in matrix.tolist() for x in row])
        errors = np.full(matrix.shape, hessian_tolerance("fd", dtype=dtype, scale=scale, step=step))
    else:
        rounding = MACHINE_EPSILON["float64" if source == "symbolic" else dtype]
        errors = 8 * matrix.shape[0] * rounding * np.abs(matrix) * (1 if source == "symbolic" else 100)
    analysis = analyse_hessian(matrix.tolist(), gradient, dtype="float64" if source == "symbolic" else dtype,
                               gradient_tolerance=gtol, entry_errors=errors)
    return source, analysis, source == "fd"
