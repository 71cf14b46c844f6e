"""Judging k-th derivatives: each method against the exact value (fd within its own
error estimate), tape against fd when there is no exact value (gradcli.compute.batch.derivative, at one
point and at many alike).
"""

from __future__ import annotations

import math

from gradcli.compute.judge import cross_disagreement, underflow_floor
from gradcli.dtypes import MACHINE_EPSILON


def derivative_tolerance(method: str, *, dtype: str, scale: float, order: int) -> float:
    """How far the nested tapes may be from the exact value: roundings, growing with the order. (fd is
    judged against its own error estimate: :func:`judge_derivative`.)"""
    return 1e3 * 4 ** order * MACHINE_EPSILON[dtype] * scale


def judge_derivative(method: str, order: int, got: float | None, exact: float | None, *, dtype: str,
                     value: float | None, x: float, estimate: float | None = None,
                     shift: float = 0.0) -> tuple[float | None, str | None]:
    """One derivative against the exact one, for one point and for a batch alike: (its error, the warning
    when the error is more than its tolerance; None, None where nothing is compared). fd's tolerance is its
    own ``estimate`` plus the exact value's float64 rounding; ``shift``: how far the exact derivative moves
    between the typed point and the dtype's, added to every tolerance (the point's rounding is no method's)."""
    if got is None or exact is None or not (math.isfinite(got) and math.isfinite(exact)):
        return None, None
    err = abs(got - exact)
    if method == "fd" and estimate is not None and math.isfinite(estimate):
        tol, why = estimate + 4 * MACHINE_EPSILON["float64"] * abs(exact) + shift, "fd's own error estimate"
    else:
        size = max(1.0, abs(value or 0.0))
        tol = derivative_tolerance(method, dtype=dtype, scale=max(size, abs(exact), abs(x)), order=order) + shift
        why = f"{dtype} explains"
    tol += underflow_floor(dtype)
    if err <= tol:
        return err, None
    return err, (f"{method} and symbolic disagree on derivative {order}: error {err:.3g} is more than {why} "
                 f"(~{tol:.1g})")


def cross_derivative(order: int, tape: float | None, fd: float | None, estimate: float | None, *, dtype: str,
                     value: float | None, x: float) -> str | None:
    """Without the exact value: the warning when tape and fd are further apart than fd's estimate and the
    tape's rounding explain, naming fd the suspect where its own estimate is large."""
    if any(v is None or not math.isfinite(v) for v in (tape, fd, estimate)):
        return None
    gap = abs(tape - fd)
    tol = estimate + derivative_tolerance("tape", dtype=dtype, order=order,
                                          scale=max(1.0, abs(value or 0.0), abs(tape), abs(x)))
    tol += underflow_floor(dtype)
    if gap <= tol:
        return None
    return cross_disagreement("", "", gap, tol, estimate > MACHINE_EPSILON[dtype] ** 0.5 * max(1.0, abs(fd)),
                              dtype=dtype, subject=f"derivative {order}")
