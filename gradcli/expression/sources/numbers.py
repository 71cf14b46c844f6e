"""Numbers in the input: plain decimal text fast, else a constant expression read exactly as --at reads it."""

from __future__ import annotations

import functools
import math
import re

from gradcli.expression.sources.messages import short_detail

# Plain decimal / float text, ASCII digits only ([0-9] never matches other scripts' digits; float()
# alone would take fullwidth or Arabic-Indic digits, '1_000' and 'infinity').
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
ASCII_SPACE = " \t\r\n\f\v"


class NotANumber(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def parse_number(text: str) -> float:
    """The finite float64 that ``text`` denotes (``1.5``, ``-2e-3``, ``pi/4``), or :class:`NotANumber`."""
    s = text.strip(ASCII_SPACE)
    if _DECIMAL.match(s):
        value = float(s)
        if math.isfinite(value):
            return value
        raise NotANumber("is not a finite number")
    value, reason = _constant_value(s)
    if reason:
        raise NotANumber(reason)
    return value


def _constant_value(s: str) -> tuple[float, str]:
    """(value, "") or (nan, why not). Short texts are cached: a column of ``pi/4`` is parsed once."""
    return _cached_constant_value(s) if len(s) <= 200 else _read_constant(s)


def _read_constant(s: str) -> tuple[float, str]:
    from gradcli.expression.points import NotAConstant, read_constant

    try:
        return read_constant(s)[1], ""
    except NotAConstant as why:
        if why.kind == "syntax":
            return math.nan, f"is not a number ({short_detail(why.error.message)})" if s else "is not a number"
        return math.nan, "is not a number" if why.kind == "variable" else "is not a finite number"


_cached_constant_value = functools.lru_cache(maxsize=1024)(_read_constant)
