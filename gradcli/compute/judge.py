"""The error model of grad, hessian and derivative, at one point and in batches alike: how far each method's
number may be from the exact one (one tolerance per method, derivative order, dtype and scale), who may be
named when two methods disagree without the exact value, and the words of every disagreement warning.

- Against the exact column: fd and the complex step within their own error estimates, the tape within a
  few hundred roundings of the dtype at the scale of the point, f and the derivative (:func:`tolerance`).
- Without it: two methods against each other within both spreads (:func:`cross_pair`); the suspect is named
  only where that can be justified (:func:`unsettled`), else the warning says by how much they differ.
- The analysis of a Hessian takes the most trustworthy matrix, each entry with its own error
  (:func:`best_analysis`).

The complex-step column (gradcli.compute.complex_column) is judged by the same functions."""

from __future__ import annotations

import math

from gradcli.compute.analysis import analyse_hessian
from gradcli.dtypes import MACHINE_EPSILON, SMALLEST_NORMAL

# How many roundings of the dtype a first derivative by the tape may carry at its scale (each operation rounds
# once forward and once backward; a few hundred operations): more is a disagreement worth a warning.
TAPE_ROUNDINGS = 1e3
# Each further order nests one more tape around the last: its roundings grow about fourfold.
ORDER_GROWTH = 4


def underflow_floor(dtype: str) -> float:
    """The absolute floor of every tolerance: a few of the dtype's smallest normal number. Below it values are
    subnormal, spaced 2^-1074 (float64) apart whatever their size, so a difference of 4.9e-324 against an
    exact 0 is the dtype's resolution there, not a method's error."""
    return 4.0 * SMALLEST_NORMAL[dtype]


def tape_scale(value, derivative, x=None):
    """The scale a tape's roundings are counted at, elementwise: max(1, |f|, |derivative|, |x|). Against the
    exact column ``x`` counts (intermediates as large as x round as much: x**2 - (x - 1)**2); between two
    methods it does not: at x = 1e22 cos's tape is -sin(x) to an ulp, and 1e3 eps |x| (2e9) would let any fd
    value through unwarned."""
    import numpy as np

    scale = np.maximum(np.maximum(1.0, np.abs(value)), np.abs(derivative))
    return scale if x is None else np.maximum(scale, np.abs(x))


def tape_roundings(*, dtype: str, order: int = 1, scale=1.0):
    """The tape's own share of a tolerance: TAPE_ROUNDINGS roundings of the dtype at ``scale``
    (:func:`tape_scale`), ORDER_GROWTH times more per further order."""
    return TAPE_ROUNDINGS * ORDER_GROWTH ** (order - 1) * MACHINE_EPSILON[dtype] * scale


def fd_tolerance(estimate, reference):
    """fd's (or the complex step's) own share of a tolerance: its error estimate plus the float64 rounding of
    the exact value it is compared with."""
    import numpy as np

    return estimate + 4 * MACHINE_EPSILON["float64"] * np.abs(reference)


def tolerance(method: str, *, dtype: str, order: int = 1, scale=1.0, estimate=None, reference=0.0, shift=0.0):
    """How far ``method``'s derivative of ``order`` may be from the exact one (``reference``) before gradcli
    calls it a disagreement, elementwise over arrays: fd and the complex step by their own error ``estimate``
    (:func:`fd_tolerance`), the tape by its roundings at ``scale`` (:func:`tape_roundings`); both plus
    ``shift`` (how far the exact value moves between the point as typed and its rounding to the dtype: no
    method's error) and :func:`underflow_floor`."""
    if method in ("fd", "complex"):
        if estimate is None:
            raise ValueError(f"{method} is judged by its own error estimate, and none was given")
        own = fd_tolerance(estimate, reference)
    else:
        own = tape_roundings(dtype=dtype, order=order, scale=scale)
    return own + shift + underflow_floor(dtype)


# ---------------------------------------------------------------------------------------------
# who is suspect, and the warnings' words
# ---------------------------------------------------------------------------------------------
def fd_is_suspect(fd, estimates, dtype: str, *, doubted=False):
    """Where fd is the one to doubt, elementwise: its own estimate is large (more than sqrt(eps) of the
    value) and fd's own diagnostics say the estimate is not to be trusted (``doubted``: a kink inside the
    stencil, a step fixed by --eps rather than chosen for the point). A large estimate alone names no one:
    where it is honest (the rounding of an f that cancels), a disagreement beyond it says the other method
    is off, and fd is right within it ((exp(x) - 1)/x at 1e-8 without SymPy: the tape is off by 1.1)."""
    import numpy as np

    with np.errstate(invalid="ignore"):
        return (estimates > MACHINE_EPSILON[dtype] ** 0.5 * np.maximum(1.0, np.abs(fd))) & np.asarray(doubted)


def unsettled(*, fd_suspect: bool = False, outvoted: str | None = None, agreeing: str = "") -> str:
    """How a disagreement without the exact value ends: a suspect only where one can be justified (two
    methods that agree outvote a third; fd's own diagnostics doubt its large estimate: :func:`fd_is_suspect`).
    A small fd estimate does not clear fd (a step far beyond the scale f varies on can look settled) and
    nothing clears the tape (cancellation inside f), so otherwise neither is named."""
    if outvoted:
        return f"{outvoted} is suspect ({agreeing} agree with each other)"
    if fd_suspect:
        return "fd is suspect (its own error estimate is large)"
    return "either may be wrong (add symbolic to --method for the exact value)"


def disagreement(method: str, subject: str, error: float, *, dtype: str, tol: float,
                 by_estimate: bool = True, judged_as: str | None = None) -> str:
    """The warning for a method further from the exact value than its tolerance; ``subject``: what it is
    ("d(f)/dx", "derivative 3", "the Hessian's entry (x, y)"); ``by_estimate``: False where fd or the
    complex step had no finite estimate and were held to the tape's roundings instead; ``judged_as``: the
    kind of method whose tolerance it was held to, where its name does not say (hvp's fd-of-gradient: fd)."""
    why = {"fd": "fd's own error estimate",
           "complex": f"its estimate and the rounding of the point to {dtype}"}.get(judged_as or method,
                                                                                    f"{dtype} explains")
    if not by_estimate:
        why = f"{dtype} explains"
    return f"{method} and symbolic disagree on {subject}: error {error:.3g} is more than {why} (~{tol:.1g})"


def doubtful_tape_warning(subject: str, error: float, tol: float, exact: float) -> str:
    """The warning for a tape within its tolerance only because the point's scale makes that tolerance far
    larger than the value (where a trace of the tape shows a node that went wrong)."""
    return (f"tape and symbolic disagree on {subject}: error {error:.3g}, within the tolerance of the point's "
            f"scale (~{tol:.1g}) but not of the value {exact:.6g}")


def cross_disagreement(subject: str, gap: float, tol: float, fd_suspect: bool, *, dtype: str) -> str:
    """The warning for tape and fd apart by more than fd's estimate and the tape's rounding (no exact value
    to settle it); ``subject`` as in :func:`disagreement`."""
    return (f"tape and fd disagree on {subject}: |tape - fd| = {gap:.3g} is more than fd's "
            f"estimate and {dtype}'s rounding explain (~{tol:.1g}); no exact value to settle it: "
            f"{unsettled(fd_suspect=fd_suspect)}")


# ---------------------------------------------------------------------------------------------
# gradients and k-th derivatives: arrays [T, P, n] (one point: P = 1)
# ---------------------------------------------------------------------------------------------
def judge_gradients(values, columns: dict, x, *, dtype: str, order: int = 1, estimates=None, shift=None,
                    complex_estimates=None):
    """Every point at once: (error per method [T, P, n], where it is more than the method's tolerance
    [T, P, n], that tolerance), against the symbolic column.

    ``values`` [T, P] (NaN where undefined), ``columns`` {method: [T, P, n]}, ``x`` [P, n] (the coordinate
    each derivative is taken along), ``estimates`` [T, P, n] (fd's error estimates; ``complex_estimates``
    the complex step's), ``shift`` [T, P, n] or None: how far the exact derivative moves between the typed
    point and the dtype's. An error is NaN where either side is not finite: nothing is compared there.
    """
    import numpy as np

    ref = columns.get("symbolic")
    if ref is None:
        return {}, {}, {}
    own = {"fd": estimates, "complex": complex_estimates}
    errors, disagree, tolerances = {}, {}, {}
    with np.errstate(invalid="ignore", over="ignore"):  # inf/NaN are judged by the callers, not warned about
        scale = tape_scale(np.asarray(values)[..., None], ref, np.asarray(x)[None])
        for m in ("tape", "fd", "complex"):
            if m not in columns:
                continue
            err = np.abs(columns[m] - ref)
            judged_as = "tape" if own.get(m) is None else m  # no estimate given: the tape's roundings
            tol = tolerance(judged_as, dtype=dtype, order=order, scale=scale, estimate=own.get(m), reference=ref,
                            shift=0.0 if shift is None else shift)
            errors[m], disagree[m], tolerances[m] = err, err > tol, tol
    return errors, disagree, tolerances


def method_spread(method: str, values, columns: dict, estimates: dict, *, dtype: str, order: int = 1):
    """How far ``method``'s values may be from the true ones without the exact column to say: fd and the
    complex step their own error estimates (``estimates[method]``), the tape its roundings at the scale of f
    and of its own derivative (:func:`tape_scale` without x)."""
    import numpy as np

    if method != "tape":
        return estimates[method]
    return tape_roundings(dtype=dtype, order=order, scale=tape_scale(np.asarray(values)[..., None], columns["tape"]))


def cross_pair(a: str, b: str, values, columns: dict, x, estimates: dict, *, dtype: str, order: int = 1):
    """Two methods against each other, without the exact value: (|a - b|, where it is more than both
    methods' spreads together [T, P, n], that tolerance). ``x`` is not counted (:func:`tape_scale`)."""
    import numpy as np

    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.abs(columns[a] - columns[b])
        tol = method_spread(a, values, columns, estimates, dtype=dtype, order=order) \
            + method_spread(b, values, columns, estimates, dtype=dtype, order=order) + underflow_floor(dtype)
        return gap, gap > tol, tol


def cross_check(values, columns: dict, x, estimates, *, dtype: str, order: int = 1, doubted=False):
    """Without the exact column: tape against fd, within fd's estimate plus the tape's rounding. Returns
    (|tape - fd|, where it is more [T, P, n], that tolerance, fd suspect [T, P, n]) or None; ``doubted``:
    where fd's own diagnostics doubt its estimate (:func:`fd_is_suspect`)."""
    if "symbolic" in columns or "tape" not in columns or "fd" not in columns or estimates is None:
        return None
    gap, apart, tol = cross_pair("tape", "fd", values, columns, x, {"fd": estimates}, dtype=dtype, order=order)
    return gap, apart, tol, fd_is_suspect(columns["fd"], estimates, dtype, doubted=doubted)


def unchecked(method: str, subject: str, value: float, reason: str) -> str:
    """The warning where nothing checks ``method``'s value: no exact value, and the method that would
    (``reason``) cannot (cancellation inside f leaves the tape wrong and fd unresolved alike; over- or
    underflow inside f leaves one method not finite and the other's estimate blind to it)."""
    return (f"{method}: {subject} = {value:.6g} is not checked: {reason} and there is no exact value (add "
            "symbolic to --method)")


def unchecked_tape(subject: str, tape: float, estimate: float) -> str:
    """:func:`unchecked` for the tape beside an fd that cannot resolve the value."""
    return unchecked("tape", subject, tape, f"fd cannot resolve it (estimate {estimate:.2g})")


def unchecked_beside_a_broken_tape(method: str, subject: str, value: float) -> str:
    """:func:`unchecked` for fd or the complex step where the tape, the one that would check it, is not finite."""
    return unchecked(method, subject, value, "the tape is not finite there")


# ---------------------------------------------------------------------------------------------
# Hessians: n x n at one point, each entry on its own scale
# ---------------------------------------------------------------------------------------------
def entry_tolerance(method: str, reference, *, dtype: str, estimates=None, shift=None):
    """Per entry, :func:`tolerance` at order 2: fd its estimate plus the reference's float64 rounding; the
    tape its roundings at max(1, |entry|) (a small entry beside a huge one is not excused by the huge one)."""
    import numpy as np

    ref = np.asarray(reference, dtype=np.float64)
    if estimates is None:  # fd without an estimate: held to the tape's roundings
        method = "tape"
    return tolerance(method, dtype=dtype, order=2, scale=tape_scale(0.0, ref),
                     estimate=None if estimates is None else np.asarray(estimates, dtype=np.float64),
                     reference=ref, shift=0.0 if shift is None else np.asarray(shift, dtype=np.float64))


def judge_hessian(method: str, matrix, exact, *, wrt: list[str], dtype: str, estimates=None,
                  shift=None) -> tuple[float | None, str | None]:
    """A method's Hessian against the exact one: (its largest error, the warning for the entry furthest past
    its tolerance, or None; None, None where either is not finite)."""
    import numpy as np

    got = np.array(matrix, dtype=np.float64)
    ref = np.array(exact, dtype=np.float64)
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(ref))):
        return None, None
    if not got.size:
        return 0.0, None
    err = np.abs(got - ref)
    tol = entry_tolerance(method, ref, dtype=dtype, estimates=estimates, shift=shift)
    if not np.any(err > tol):
        if method == "fd" and estimates is not None:
            return float(err.max()), unresolved_entry_warning(got, ref, estimates, wrt=wrt, dtype=dtype)
        return float(err.max()), None
    i, j = np.unravel_index(int(np.argmax(err / tol)), err.shape)
    return float(err.max()), disagreement(method, f"the Hessian's entry ({wrt[i]}, {wrt[j]})", float(err[i, j]),
                                          dtype=dtype, tol=float(tol[i, j]))


def unresolved_entry_warning(fd, exact, estimates, *, wrt: list[str], dtype: str) -> str | None:
    """The warning for fd's Hessian entry whose error estimate is larger than the exact entry itself (the entry
    with the largest estimate relative to it is named): within its estimate, fd's value says nothing of the
    entry (0.0 beside an exact 0.002 with an estimate of 0.35). Not where fd's value is within 1% of the entry
    and a hundredth of its estimate (it did resolve it), nor below the rounding floor of a second difference."""
    import numpy as np

    got, ref, est = (np.asarray(a, dtype=np.float64) for a in (fd, exact, estimates))
    err = np.abs(got - ref)
    with np.errstate(invalid="ignore", divide="ignore"):
        lost = (est > np.abs(ref)) & (est > MACHINE_EPSILON[dtype] ** (1.0 / 3.0)) \
            & ~((err <= 0.01 * np.abs(ref)) & (err <= 0.01 * est))
        if not np.any(lost):
            return None
        ratio = np.where(lost, est / np.maximum(np.abs(ref), np.finfo(np.float64).tiny), -1.0)
    i, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    return (f"fd: the Hessian entry ({wrt[i]}, {wrt[j]}) is not resolved in {dtype}: its error estimate "
            f"{est[i, j]:.3g} is larger than the entry itself (exact {ref[i, j]:.6g}, fd {got[i, j]:.6g}); fd's value "
            "there tells nothing of it (rounding of f's larger values, or f not smooth here)")


def cross_check_hessian(tape, fd, estimates, *, wrt: list[str], dtype: str, doubted=False) -> str | None:
    """Without the exact matrix: tape against fd entry by entry, within fd's estimate plus the tape's rounding;
    the warning names the entry furthest apart (``doubted`` n x n: :func:`fd_is_suspect`)."""
    import numpy as np

    t, f, e = (np.asarray(a, dtype=np.float64) for a in (tape, fd, estimates))
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(f))) or not t.size:
        return None
    gap = np.abs(t - f)
    tol = e + entry_tolerance("tape", t, dtype=dtype)
    if not np.any(gap > tol):
        return None
    i, j = np.unravel_index(int(np.argmax(gap / tol)), gap.shape)
    doubt = np.broadcast_to(np.asarray(doubted), gap.shape)[i, j]
    return cross_disagreement(f"the Hessian's entry ({wrt[i]}, {wrt[j]})", float(gap[i, j]), float(tol[i, j]),
                              bool(fd_is_suspect(f[i, j], e[i, j], dtype, doubted=doubt)), dtype=dtype)


def tape_asymmetry_warning(asymmetry: float | None, exact, *, dtype: str) -> str | None:
    """The warning where the tape's Hessian is further from symmetric than its roundings at the exact matrix's
    largest entry explain."""
    import numpy as np

    scale = float(np.max(np.abs(np.asarray(exact, dtype=np.float64)), initial=1.0))
    if asymmetry and asymmetry > tolerance("tape", dtype=dtype, order=2, scale=scale):
        return f"the tape Hessian is not symmetric (max |H - H^T| = {asymmetry:.3g})"
    return None


def best_analysis(matrices: dict, gradients: dict, *, dtype: str, fd_estimates=None):
    """What the Hessian says: the exact matrix when it is finite, else the tape's, else fd's; the gradient
    likewise. Definiteness is scale-aware, each entry judged on its own error
    (:func:`gradcli.compute.analysis.zero_eigenvalues`): the exact matrix's float64 rounding, the tape's
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
    if grad_source == "fd":  # relative to the matrix's scale (analyse_hessian): fd is good to about sqrt(eps)
        gtol = 100 * math.sqrt(MACHINE_EPSILON[dtype])
    elif grad_source == "tape":
        gtol = tape_roundings(dtype=dtype)
    elif grad_source == "symbolic":  # exact, but rounded to the dtype the matrix is analysed in
        gtol = tape_roundings(dtype="float64" if source == "symbolic" else dtype)
    if source == "fd":
        errors = np.asarray(fd_estimates, dtype=np.float64)
    else:
        rounding = MACHINE_EPSILON["float64" if source == "symbolic" else dtype]
        errors = 8 * matrix.shape[0] * rounding * np.abs(matrix) * (1 if source == "symbolic" else 100)
    analysis = analyse_hessian(matrix.tolist(), gradient, dtype="float64" if source == "symbolic" else dtype,
                               gradient_tolerance=gtol, entry_errors=errors)
    return source, analysis, source == "fd"


def judge_hvp_entries(columns: dict, exact, *, dtype: str, fd_method: str, fd_estimates=None, shift=None):
    """hvp's H·v against the exact one, every point and entry at once ([P, n] each), by the Hessian's rule
    (:func:`entry_tolerance`: a tape composition within its roundings at order 2 and the entry's scale, fd of
    the gradient (``fd_method``) within its own estimate). Returns (error {method: [P, n]}, where it is past
    the tolerance {method: [P, n]}, the tolerances {method: [P, n]}); NaN where either side is not finite."""
    import numpy as np

    errors, disagree, tolerances = {}, {}, {}
    ref = np.asarray(exact, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        for m, c in columns.items():
            if m == "symbolic":
                continue
            by_estimate = m == fd_method and fd_estimates is not None
            tol = entry_tolerance("fd" if by_estimate else "tape", ref, dtype=dtype,
                                  estimates=fd_estimates if by_estimate else None, shift=shift)
            err = np.abs(np.asarray(c, dtype=np.float64) - ref)
            errors[m], disagree[m], tolerances[m] = err, err > tol, tol
    return errors, disagree, tolerances


def cross_check_hvp(tape, fd, estimates, *, dtype: str):
    """Without the exact H·v: a tape composition against fd of the gradient, entry by entry ([P, n]), within
    fd's estimate plus the tape's roundings (:func:`cross_check_hessian`'s rule). Returns (|tape - fd|, where
    it is more, that tolerance)."""
    import numpy as np

    t, f, e = (np.asarray(a, dtype=np.float64) for a in (tape, fd, estimates))
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.abs(t - f)
        tol = e + entry_tolerance("tape", t, dtype=dtype)
        return gap, gap > tol, tol


# ---------------------------------------------------------------------------------------------
# k-th derivatives: one value at a time (derivative's records)
# ---------------------------------------------------------------------------------------------
def one_cell(value):
    """One value as the batch judges take it, [1, 1, 1] (one expression, one point, one variable): where a
    record's single value meets :func:`cross_check`'s rule. A value that is None or not finite is NaN."""
    import numpy as np

    return np.array([[[value if value is not None and math.isfinite(value) else np.nan]]], dtype=np.float64)


def judge_derivative(method: str, order: int, got: float | None, exact: float | None, *, dtype: str,
                     value: float | None, x: float, estimate: float | None = None,
                     shift: float = 0.0) -> tuple[float | None, str | None]:
    """One derivative against the exact one: (its error, the warning when the error is more than its
    tolerance; None, None where nothing is compared)."""
    if got is None or exact is None or not (math.isfinite(got) and math.isfinite(exact)):
        return None, None
    err = abs(got - exact)
    # without a finite estimate of its own, fd is held to the tape's roundings
    by_estimate = method == "tape" or (estimate is not None and math.isfinite(estimate))
    tol = float(tolerance(method if by_estimate else "tape", dtype=dtype, order=order, estimate=estimate,
                          reference=exact, shift=shift, scale=float(tape_scale(value or 0.0, exact, x))))
    if err <= tol:
        return err, None
    return err, disagreement(method, f"derivative {order}", err, dtype=dtype, tol=tol, by_estimate=by_estimate)


def cross_derivative(order: int, tape: float | None, fd: float | None, estimate: float | None, *, dtype: str,
                     value: float | None, doubted: bool = False) -> str | None:
    """Without the exact value: the warning when tape and fd are further apart than fd's estimate and the
    tape's rounding explain (:func:`cross_pair`'s rule, one value), or when fd cannot resolve the value and
    so checks nothing (:func:`unchecked_tape`)."""
    import numpy as np

    if any(v is None or not math.isfinite(v) for v in (tape, fd, estimate)):
        return None
    columns = {"tape": one_cell(tape), "fd": one_cell(fd)}
    gap, apart, tol, fd_suspect = cross_check(np.array([[value or 0.0]]), columns, None, one_cell(estimate),
                                              dtype=dtype, order=order, doubted=doubted)
    if not apart[0, 0, 0]:
        from gradcli.methods.fd_error import cannot_resolve

        unresolved = bool(cannot_resolve(np.float64(fd), np.float64(estimate), dtype, order))
        return unchecked_tape(f"derivative {order}", tape, estimate) if unresolved else None
    return cross_disagreement(f"derivative {order}", float(gap[0, 0, 0]), float(tol[0, 0, 0]),
                              bool(fd_suspect[0, 0, 0]), dtype=dtype)
