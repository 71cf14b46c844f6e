"""The complex-step column of ``grad`` and ``derivative --order 1``, at one point and in batches.

:mod:`gradcli.methods.complex_step` computes the derivatives and their error estimates; this module
stacks them over the expressions, puts them into the reports and judges them. Against the exact column
the judging is :func:`gradcli.compute.judge.judge_gradients`'s (the estimate plus the float64 rounding of
the exact value plus the effect of rounding the point to the dtype), as for the other methods. Without
it, the complex step is compared with the tape and fd (:func:`cross_check_complex`), each within its own
spread, and a disagreement is a warning naming the suspect. Where the expression is not analytic at the
point (abs at its kink, atan2 on its cut, sqrt at 0), there is a note and no number, and the command does
not fail for it. A value the complex step cannot resolve (its estimate is not finite, no step is small
beside the scale of f's arguments, or the estimate is above half of the value's scale: cancellation inside
f, imaginary parts that underflow) is given with a warning that says why (:func:`unresolved_warning`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradcli.compute.judge import cross_pair, fd_is_suspect, tape_scale, tolerance, unchecked, unsettled
from gradcli.errors import UsageError
from gradcli.methods.complex_step import (
    COMPLEX_STEP,
    complex_gradients,
)


def refuse_higher_orders(methods: list[str], order: int) -> None:
    """``derivative -m complex --order 2``: the complex step gives first derivatives only."""
    if "complex" in methods and order > 1:
        raise UsageError(f"--method complex gives first derivatives only, not --order {order} "
                         "(use symbolic, tape or fd for higher orders)")


@dataclass
class ComplexColumns:
    """The complex step over several expressions and a batch of points: [T, P, n] each."""

    values: object  # NaN where undefined or not analytic
    estimates: object  # NaN where the value is NaN
    not_analytic: object  # bool: f is finite there, its complex step has no derivative
    steps: object = None  # the step each value was taken with
    unresolved: object = None  # str: why the value cannot be resolved ("" where it can)

    def warnings(self, index: tuple, text: str, variable: str, where: str | None) -> list[str]:
        """The warning of one value (``index`` into [T, P, n]) where it cannot be resolved."""
        if self.unresolved is None or not self.unresolved[index]:
            return []
        return [unresolved_warning(text, variable, where, self.unresolved[index], float(self.values[index]),
                                   float(self.estimates[index]))]


def complex_columns(trees: list, points: dict, wrt: list[str], dtype: str) -> ComplexColumns:
    """Every expression's complex-step gradient at every point of ``points`` ({name: float64 [P]})."""
    import numpy as np

    results = [complex_gradients(t, points, wrt, dtype=dtype) for t in trees]
    return ComplexColumns(np.stack([r.values for r in results]), np.stack([r.estimates for r in results]),
                          np.stack([r.not_analytic for r in results]), np.stack([r.steps for r in results]),
                          np.stack([r.unresolved for r in results]))


def unresolved_warning(text: str, variable: str, where: str | None, reason: str, value: float,
                       estimate: float) -> str:
    """The warning beside a complex-step value that cannot be resolved (``where``: the point in words; None
    in a batch record)."""
    at = f" at {where}" if where else ""
    shown = f"{value:.6g} +- {estimate:.2g}" if math.isfinite(estimate) else f"{value:.6g}, with no error estimate"
    return f"complex step: d({text})/d{variable}{at} cannot be resolved ({shown}): {reason}"


def step_note(text: str, variable: str, where: str | None, step: float, dtype: str) -> str:
    """The note where a value's step is not the default one."""
    at = f" at {where}" if where else ""
    return (f"complex step: d({text})/d{variable}{at} is taken with h = 2^{int(math.log2(step))} ({step:.2g}), not "
            f"{COMPLEX_STEP[dtype]:.2g}: the step keeps each imaginary part above {dtype}'s smallest normal "
            "number and small beside the scale of f's arguments")


# ---------------------------------------------------------------------------------------------
# without the exact column: against the tape and fd
# ---------------------------------------------------------------------------------------------
@dataclass
class ComplexCross:
    """The complex step against each other method present: {method: (|complex - m|, apart, tolerance)},
    where the two others agree with each other and not with the complex step (``outvoted``), and where
    fd's own estimate is large (``fd_suspect``)."""

    pairs: dict
    outvoted: object
    fd_suspect: object


def cross_check_complex(values, columns: dict, x, estimates: dict, *, dtype: str,
                        fd_doubted=False) -> ComplexCross | None:
    """The complex step against the tape and fd where the exact column is absent (``-m tape,complex``, a
    SymPy timeout). ``estimates`` {"fd": ..., "complex": ...}, all arrays [T, P, n]; ``fd_doubted``: where
    fd's own diagnostics doubt its estimate (gradcli.compute.judge.fd_is_suspect)."""
    import numpy as np

    if "symbolic" in columns or "complex" not in columns:
        return None
    others = [m for m in ("tape", "fd") if m in columns and (m != "fd" or estimates.get("fd") is not None)]
    if not others:
        return None
    pairs = {m: cross_pair("complex", m, values, columns, x, estimates, dtype=dtype) for m in others}
    outvoted = np.zeros(columns["complex"].shape, dtype=bool)
    if len(others) == 2:
        _, tape_fd_apart, _ = cross_pair("tape", "fd", values, columns, x, estimates, dtype=dtype)
        outvoted = pairs["tape"][1] & pairs["fd"][1] & ~tape_fd_apart
    fd_suspect = fd_is_suspect(columns["fd"], estimates["fd"], dtype, doubted=fd_doubted) if "fd" in others \
        else outvoted
    return ComplexCross(pairs, outvoted, fd_suspect)


def complex_cross_warnings(cross: ComplexCross | None, index: tuple, what: str, *, dtype: str) -> list[str]:
    """The warnings of one value (``index`` into [T, P, n]): the complex step is trusted over a single other
    method (no truncation, no cancellation), unless that method is fd with a large estimate of its own, and
    is the suspect when the tape and fd agree with each other and not with it."""
    if cross is None:
        return []
    if cross.outvoted[index]:
        gap, _, tol = cross.pairs["tape"]
        return [f"complex disagrees with tape and fd on {what}: |complex - tape| = {float(gap[index]):.3g} is more "
                f"than their estimates and {dtype}'s rounding explain (~{float(tol[index]):.1g}); no exact value "
                f"to settle it: {unsettled(outvoted='the complex step', agreeing='tape and fd')}"]
    out = []
    for m, (gap, apart, tol) in cross.pairs.items():
        if not apart[index]:
            continue
        other = "fd" if m == "tape" else "tape"
        agrees = other in cross.pairs and not cross.pairs[other][1][index]  # the third method sides with complex
        ending = unsettled(outvoted=m if agrees else None, agreeing=f"complex and {other}",
                           fd_suspect=m == "fd" and bool(cross.fd_suspect[index]))
        out.append(f"complex and {m} disagree on {what}: |complex - {m}| = {float(gap[index]):.3g} is more than "
                   f"their estimates and {dtype}'s rounding explain (~{float(tol[index]):.1g}); no exact value to "
                   f"settle it: {ending}")
    return out


def judge_complex_value(got: float, exact: float, estimate: float, shift: float, *,
                        dtype: str) -> tuple[float, float]:
    """(error, tolerance) of one complex-step value against the exact one: :func:`judge.tolerance`, one value."""
    return abs(got - exact), float(tolerance("complex", dtype=dtype, estimate=estimate, reference=exact,
                                             shift=shift))


__all__ = ["ComplexColumns", "ComplexCross", "complex_columns", "complex_cross_warnings", "cross_check_complex",
           "judge_complex_value", "loose_tape_bounds", "loose_tape_warning", "refuse_higher_orders"]


# ---------------------------------------------------------------------------------------------
# the tape's chain rule, bounded by the complex step's analysis of it
# ---------------------------------------------------------------------------------------------
def loose_tape_bounds(trees: list, points: dict, wrt: list[str], dtype: str, values, tape, cc=None):
    """[T, P, n]: where the tape's value may be further off than its own tolerance, how far (NaN elsewhere).

    The tape evaluates the chain rule at f's computed intermediates, as the complex step does; where terms
    cancel (d/dx (exp(x) - 1)/x at 1e-3: terms of ~1e3 leave 0.5) or f's own cancellation reaches the
    derivative, the complex step's running bound (its estimate) says how much of the tape's value may be
    rounding, and that is far above the tape's tolerance of a few hundred roundings. Only needed where no
    exact value judges the tape. ``cc``: the complex column when it was computed; otherwise the complex
    step is computed here at the points where f's own running rounding bound shows a cancellation inside
    f (:data:`gradcli.methods.fd_error.CANCELLATION_RATIO` eps |f|), the only ones where its bound can
    exceed the tolerance by much."""
    import numpy as np

    from gradcli.dtypes import MACHINE_EPSILON
    from gradcli.methods.fd_bound import rounding_bound
    from gradcli.methods.fd_error import CANCELLATION_RATIO

    tape = np.asarray(tape, dtype=np.float64)
    if cc is not None:
        bounds = np.asarray(cc.estimates, dtype=np.float64)
    else:
        bounds = np.full(tape.shape, np.nan)
    env = {k: np.asarray(v, dtype=np.float64) for k, v in points.items()}
    for i, tree in enumerate(trees if cc is None else ()):
        with np.errstate(all="ignore"):
            f, b = rounding_bound(tree, env)
            cancels = np.broadcast_to(b > CANCELLATION_RATIO * MACHINE_EPSILON["float64"] * np.abs(f),
                                      tape.shape[1:2])
        index = np.nonzero(cancels)[0]
        if len(index):
            r = complex_gradients(tree, {k: np.asarray(v)[index] for k, v in env.items()}, wrt, dtype=dtype)
            bounds[i][index] = r.estimates
    with np.errstate(invalid="ignore"):
        tol = tolerance("tape", dtype=dtype, scale=tape_scale(np.asarray(values, dtype=np.float64)[:, :, None], tape))
        return np.where(np.isfinite(tape) & (bounds > tol), bounds, np.nan)


def loose_tape_warning(subject: str, tape: float, bound: float) -> str:
    """The warning of :func:`loose_tape_bounds`: nothing checks the tape to its own tolerance there."""
    return unchecked("tape", subject, tape,
                     f"its chain rule cancels here, so its rounding may reach {bound:.2g} (the complex step's bound)")
