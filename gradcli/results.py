"""Result objects: what a command computed, independent of how it is shown.

Each report has ``to_dict()`` (the JSON document; non-finite floats become ``null``) and a
``failed`` flag: a result that could not be computed everywhere makes the CLI exit 1.
"""

from __future__ import annotations

import math
from typing import Any

METHODS = ("symbolic", "tape", "fd")
# grad and derivative --order 1 also take the complex step (gradcli.methods.complex_step)
FIRST_ORDER_METHODS = (*METHODS, "complex")


def finite_or_none(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def clean(obj: Any) -> Any:
    """Recursively replace NaN/inf by None so that the JSON is strict."""
    if isinstance(obj, float):
        return finite_or_none(obj)
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


def point_text(point: dict[str, float]) -> str:
    """A point in a message: every coordinate with the digits that tell it apart (``x=1.0000001``)."""
    from gradcli.errors import number_text

    return ", ".join(f"{k}={number_text(v)}" for k, v in point.items())


def value_warning(expression: str, value: float | None, point: dict[str, float]) -> str | None:
    """The warning for a function value that is not a finite real number (None when it is)."""
    if value is not None and math.isfinite(value):
        return None
    why = "is infinite or overflows float64" if value is not None and math.isinf(value) else \
        "is undefined (not a real number)"
    return f"{expression} {why} at {point_text(point)}; its derivatives there mean nothing"


def shortest(x: float | None, dtype: str) -> float | None:
    """A float32 result written with the digits float32 needs (9.0, -0.33333334), not float64's."""
    if x is None or not math.isfinite(x) or dtype == "float64":
        return x
    import numpy as np

    return float(repr(np.float32(x)).replace("np.float32(", "").rstrip(")"))
