"""Judging gradients, for one point and for a batch alike: each method against the exact column within
its tolerance (the tape: a few hundred roundings; fd and the complex step: their own error estimates),
and, without the exact column, methods against each other within their spreads, naming the suspect."""

from __future__ import annotations

from gradcli.dtypes import MACHINE_EPSILON
from gradcli.methods.fd_schemes import Scheme


def tolerance(method: str, *, dtype: str, scale: float, step: float | None = None,
              scheme: Scheme = Scheme.central) -> float:
    """How far the tape may be from the exact value before gradcli calls it a disagreement: a few hundred
    roundings of the dtype. (fd is judged against its own estimate: :func:`fd_tolerance`.)"""
    return 1e3 * MACHINE_EPSILON[dtype] * scale


def underflow_floor(dtype: str) -> float:
    """The absolute floor of every tolerance: a few of the dtype's smallest normal number. Below it values are
    subnormal, spaced 2^-1074 (float64) apart whatever their size, so a difference of 4.9e-324 against an
    exact 0 is the dtype's resolution there, not a method's error."""
    import numpy as np

    return 4.0 * float(np.finfo(dtype).tiny)


def fd_tolerance(estimate, reference):
    """fd against an exact value: its own error estimate plus the float64 rounding of the exact value."""
    import numpy as np

    return estimate + 4 * MACHINE_EPSILON["float64"] * np.abs(reference)


def judge_gradients(values, columns: dict, x, steps, *, dtype: str, scheme: str, estimates=None, shift=None,
                    complex_estimates=None):
    """Every point at once, for one point and for a batch alike: (error per method [T, P, n], where it is
    more than the method's tolerance [T, P, n], that tolerance), against the symbolic column.

    ``values`` [T, P] (NaN where undefined), ``columns`` {method: [T, P, n]}, ``x`` [P, n], ``estimates``
    [T, P, n] (fd's error estimates; ``complex_estimates`` the complex step's), ``shift`` [T, P, n] or None:
    how far the exact derivative moves
    between the typed point and the dtype's (added to every tolerance: the rounding of the point is no
    method's error). An error is NaN where either side is not finite: nothing is compared there.
    """
    import numpy as np

    ref = columns.get("symbolic")
    if ref is None:
        return {}, {}, {}
    scale = np.maximum(np.maximum(1.0, np.abs(values)[..., None]), np.maximum(np.abs(ref), np.abs(x)[None]))
    errors, disagree, tolerances = {}, {}, {}
    with np.errstate(invalid="ignore", over="ignore"):  # inf/NaN are judged by the callers, not warned about
        for m in ("tape", "fd", "complex"):
            if m not in columns:
                continue
            err = np.abs(columns[m] - ref)
            if m == "fd" and estimates is not None:
                tol = fd_tolerance(estimates, ref)
            elif m == "complex":  # judged on its own estimate, as fd is
                tol = fd_tolerance(complex_estimates, ref)
            else:
                tol = tolerance(m, dtype=dtype, scale=scale)
            if shift is not None:
                tol = tol + shift
            tol = tol + underflow_floor(dtype)
            errors[m], disagree[m], tolerances[m] = err, err > tol, tol
    return errors, disagree, tolerances


def method_spread(method: str, values, columns: dict, x, estimates: dict, *, dtype: str):
    """How far ``method``'s values may be from the true ones: fd and the complex step by their own error
    estimates (``estimates[method]``), the tape by a few hundred roundings of the dtype at the scale of f and
    of its derivative."""
    import numpy as np

    if method != "tape":
        return estimates[method]
    # The scale of f and of the derivative, not |x|: at x = 1e22, cos's tape is -sin(x) to an ulp, and a spread
    # of 1e3 eps |x| (2e9) would let any fd value through unwarned.
    scale = np.maximum(np.maximum(1.0, np.abs(values)[..., None]), np.abs(columns["tape"]))
    return tolerance("tape", dtype=dtype, scale=scale)


def cross_pair(a: str, b: str, values, columns: dict, x, estimates: dict, *, dtype: str):
    """Two methods against each other, without the exact value: (|a - b|, where it is more than both
    methods' spreads together [T, P, n], that tolerance)."""
    import numpy as np

    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.abs(columns[a] - columns[b])
        tol = method_spread(a, values, columns, x, estimates, dtype=dtype) \
            + method_spread(b, values, columns, x, estimates, dtype=dtype) + underflow_floor(dtype)
        return gap, gap > tol, tol


def fd_is_suspect(fd, estimates, dtype: str):
    """Where fd's own estimate is large (more than sqrt(eps) of the value): fd is the one to doubt."""
    import numpy as np

    with np.errstate(invalid="ignore"):
        return estimates > MACHINE_EPSILON[dtype] ** 0.5 * np.maximum(1.0, np.abs(fd))


def cross_check(values, columns: dict, x, estimates, *, dtype: str):
    """Without the exact column: tape against fd, within fd's estimate plus the tape's rounding. Returns
    (|tape - fd|, where it is more [T, P, n], that tolerance, fd suspect [T, P, n]) or None. fd is the
    suspect where its own estimate is large (more than sqrt(eps) of the value); otherwise no one is."""
    if "symbolic" in columns or "tape" not in columns or "fd" not in columns or estimates is None:
        return None
    gap, apart, tol = cross_pair("tape", "fd", values, columns, x, {"fd": estimates}, dtype=dtype)
    return gap, apart, tol, fd_is_suspect(columns["fd"], estimates, dtype)


def unsettled(*, fd_suspect: bool = False, outvoted: str | None = None, agreeing: str = "") -> str:
    """How a disagreement without the exact value ends: a suspect only where one can be justified (two
    methods that agree outvote a third; fd's own estimate says it is fragile). A small fd estimate does not
    clear fd (a step far beyond the scale f varies on can look settled) and nothing clears the tape
    (cancellation inside f), so otherwise neither is named."""
    if outvoted:
        return f"{outvoted} is suspect ({agreeing} agree with each other)"
    if fd_suspect:
        return "fd is suspect (its own error estimate is large)"
    return "either may be wrong (add symbolic to --method for the exact value)"


def cross_disagreement(text: str, variable: str, gap: float, tol: float, fd_suspect: bool, *, dtype: str,
                       subject: str | None = None) -> str:
    """The warning for tape and fd apart by more than fd's estimate (no exact value to settle it)."""
    subject = subject or f"d({text})/d{variable}"
    return (f"tape and fd disagree on {subject}: |tape - fd| = {gap:.3g} is more than fd's "
            f"estimate and {dtype}'s rounding explain (~{tol:.1g}); no exact value to settle it: "
            f"{unsettled(fd_suspect=fd_suspect)}")


def disagreement(method: str, text: str, variable: str, error: float, *, dtype: str, tol: float) -> str:
    """The warning for a method further from the exact value than its tolerance (fd: its own estimate)."""
    why = {"fd": "fd's own error estimate",
           "complex": f"its estimate and the rounding of the point to {dtype}"}.get(method, f"{dtype} explains")
    return (f"{method} and symbolic disagree on d({text})/d{variable}: error {error:.3g} is more than "
            f"{why} (~{tol:.1g})")
