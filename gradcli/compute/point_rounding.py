"""A typed point that the dtype cannot hold: SymPy's exact value is at the point as typed, the tape and fd at
its rounding to the dtype. How far that moves the exact value is no method's error: the comparison allows
for it, and a note says so where it is more than the dtype's own roundings."""

from __future__ import annotations

import math

from gradcli.dtypes import MACHINE_EPSILON


def dtype_point(point, dtype: str) -> dict[str, float]:
    """The point tape and fd start from: each typed value rounded to the dtype (as float64 numbers)."""
    import numpy as np

    with np.errstate(over="ignore"):
        return {k: float(np.float64(v).astype(dtype)) for k, v in point.values.items()}


def rounding_matters(shift: float, exact: float | None, dtype: str) -> bool:
    """Whether the point's rounding moves the exact value by more than the dtype's own roundings would."""
    return shift > 100 * MACHINE_EPSILON[dtype] * max(1.0, abs(exact or 0.0))


def rounded_point_note(report, text: str, shifts: dict[str, float], *, order: int | None = None) -> str:
    """The note for a typed point the dtype cannot hold: the exact values are at the typed point, tape and fd
    at the dtype's, and the difference is allowed for in the comparison."""
    def what(v):
        return f"d({text})/d{v}" if order is None else f"derivative {order} of {text}"

    moved = ", ".join(f"{what(v)} by {x:.3g}" if math.isfinite(x) else
                      f"{what(v)} to no finite value (the rounded point is outside its domain)"
                      for v, x in shifts.items())
    return (f"the point is not exactly a {report.dtype} number: symbolic is evaluated at the point as typed, tape "
            f"and fd at its {report.dtype} rounding, which moves {moved}; that is allowed for in the comparison")
