"""How every view writes a number: a value with all its digits, an error in three (no rich here, so that
:mod:`gradcli.render.layout` and :mod:`gradcli.render.common` both build on it)."""

from __future__ import annotations

import math


def number(x: float | None) -> str:
    """A value with every digit float64 needs to round-trip, so FD's error is visible (7.999999999999119)."""
    if x is None:
        return "undefined"
    if isinstance(x, float) and not math.isfinite(x):
        return "undefined"
    return repr(float(x))


def error(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0"
    return f"{x:.2e}"
