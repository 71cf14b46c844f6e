"""What fd says about one value besides the number: adapted steps, one-sided stencils, kinks, and values no
step can resolve. Shared by every command, one point or many."""

from __future__ import annotations

import math

from gradcli.methods import fd_error


# What a one-sided value at a domain edge cannot promise (README, "What finite differences cannot tell at an
# edge"): said with every such value, since no step can show a trend slower than h^0.1.
EDGE_CAVEAT = ("; f is often not smooth at an edge, and the estimate assumes the trend the steps show (a "
               "derivative that converges or diverges slower than about h^0.1 looks settled)")


def fd_line_notes(what: str, where: str, *, dtype: str, value: float, estimate: float, step: float, how: int,
                  kink: bool = False, left: float = math.nan, right: float = math.nan, explicit_step: bool = False,
                  order: int = 1):
    """(warnings, notes, {"left", "right"} when a kink was found else None) for fd's ``what`` at ``where``.
    With ``explicit_step`` (``--eps``) a large estimate is the step's, shown with the value, not warned about."""
    warnings, notes = [], []
    at = f" at {where}" if where else ""
    if how == fd_error.ONE_SIDED:
        notes.append(f"fd: {what}{at}: the two-sided stencil leaves the domain at every step; a one-sided one "
                     f"(step {step:.3g}) is used{EDGE_CAVEAT}")
    elif how == fd_error.SHRUNK:  # (a step adapted only for a better estimate is not news: it is in the output)
        notes.append(f"fd: {what}{at}: the default step's stencil leaves the domain; step {step:.3g} (the "
                     "smallest estimate of a sequence of smaller steps) is used")
    elif how == fd_error.BESIDE_SWITCH:
        notes.append(f"fd: {what}{at}: a switch of min/max/clip/where/abs/relu lies beside the point, inside the "
                     f"default stencil; a one-sided stencil away from it (step {step:.3g}) is used")
    sided = None
    if kink:
        sided = {"left": left, "right": right}
        warnings.append(f"fd: {what}{at} is at a kink or a jump: the one-sided derivatives differ (left "
                        f"{left:.6g}, right {right:.6g}); the two-sided values are not a derivative")
    elif not explicit_step and math.isfinite(value) and math.isfinite(estimate) \
            and bool(fd_error.cannot_resolve(value, estimate, dtype, order)):
        warnings.append(f"fd: {what}{at} cannot be resolved in {dtype}: its error estimate {estimate:.3g} is "
                        f"more than 1% of the value {value:.6g} at every step (rounding cancels its digits, or f is not "
                        "smooth here: a jump, a kink or a pole)")
    elif not explicit_step and math.isfinite(value) and not math.isfinite(estimate):
        warnings.append(f"fd: {what}{at} cannot be resolved in {dtype}: it has no error estimate (no step "
                        f"{dtype} can take resolves f here: an oscillation finer than the float spacing of its "
                        "argument, or an estimate that overflows)")
    return warnings, notes, sided


SIDE_NAMES = {0: "central", 1: "forward", -1: "backward"}


def fd_hessian_note(how: int, steps, sides, names) -> str | None:
    """The note an adapted fd Hessian gets (one point; a batch counts them): smaller steps, or one-sided
    differences at a domain edge, with the steps used."""
    text = ", ".join(f"h({k}) = {h:.3g}" for k, h in zip(names, steps))
    if how == fd_error.SHRUNK:
        return ("fd: the default steps' stencil leaves the domain or crosses a pole; smaller steps "
                f"({text}: the smallest estimate of a sequence) are used")
    if how == fd_error.ONE_SIDED:
        sided = ", ".join(f"{k} {SIDE_NAMES[s]}" for k, s in zip(names, sides) if s)
        return (f"fd: no two-sided stencil stays in the domain; one-sided differences ({sided}; {text}: the "
                f"smallest estimate of a sequence of steps) are used{EDGE_CAVEAT}")
    return None


def unresolved_hessian_warning(matrix, estimates, names, dtype: str, one_sided: bool = True) -> str:
    """The warning of an fd Hessian with an entry no step resolved (the entry with the largest estimate
    relative to it is named): one-sided at a domain edge, fd cannot tell it from an infinite one; two-sided,
    rounding (f's large values beside a small entry) or a point where f is not smooth swamps it."""
    worst, at = -1.0, (0, 0)
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            relative = estimates[i][j] / max(abs(value), 1.0)
            if relative > worst:
                worst, at = relative, (i, j)
    i, j = at
    if not one_sided:
        return (f"fd: the Hessian entry ({names[i]}, {names[j]}) cannot be resolved in {dtype}: its error estimate "
                f"{estimates[i][j]:.3g} is above half of max(|{matrix[i][j]:.6g}|, 1) at every step (rounding of f's "
                "values cancels its digits, or f is not smooth here: a jump, a kink or a pole)")
    return (f"fd: the Hessian entry ({names[i]}, {names[j]}) cannot be resolved in {dtype}: its error estimate "
            f"{estimates[i][j]:.3g} is above half of max(|{matrix[i][j]:.6g}|, 1) at every one-sided step (f is "
            "not smooth at this domain edge; its second derivative may be infinite there)")
