"""Judging k-th derivatives: each method against the exact value (fd within its own
error estimate), tape against fd when there is no exact value. For one point and for a batch alike;
:mod:`gradcli.compute.derivative` re-exports them.
"""

from __future__ import annotations

import math

from gradcli.compute.judge import cross_disagreement
from gradcli.dtypes import MACHINE_EPSILON
from gradcli.results import flag_undefined_value, point_text


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
    if gap <= tol:
        return None
    return cross_disagreement("", "", gap, tol, estimate > MACHINE_EPSILON[dtype] ** 0.5 * max(1.0, abs(fd)),
                              dtype=dtype, subject=f"derivative {order}")


def compare_derivatives(report) -> None:
    """Each method's derivatives against the exact ones (or tape against fd without them), warnings into the
    report (a :class:`gradcli.compute.derivative.DerivativeReport`)."""
    pt = point_text(report.point)
    flag_undefined_value(report)
    x = report.point[report.variable]
    for r in report.derivatives:
        bad = [m for m in report.methods if not (m == "tape" and r.tape_left_out)
               and (getattr(r, m) is None or not math.isfinite(getattr(r, m)))]
        if bad:
            report.warnings.append(f"derivative of order {r.order} is not finite at {pt} ({', '.join(bad)})")
            report.failed = True
        if "symbolic" not in report.methods or r.symbolic is None:
            if not bad and "tape" in report.methods and "fd" in report.methods and "symbolic" not in report.methods:
                warning = cross_derivative(r.order, r.tape, r.fd, r.fd_error_estimate, dtype=report.dtype,
                                           value=report.value, x=x)
                if warning:
                    report.warnings.append(warning)
            continue
        for m in ("tape", "fd"):
            got = getattr(r, m) if m in report.methods else None
            err, warning = judge_derivative(m, r.order, got, r.symbolic, dtype=report.dtype, value=report.value,
                                            x=x, estimate=r.fd_error_estimate, shift=r.point_shift)
            if err is not None:
                r.error[m] = err
            if warning:
                report.warnings.append(warning)
