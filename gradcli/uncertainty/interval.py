"""Interval arithmetic over gradcli's expression tree: an enclosure of an expression's values over a box.

Every operation widens its float64 result outward: one ulp (``math.nextafter``) for +, -, *, / (correctly
rounded in IEEE arithmetic), ULPS ulps for a library function or a power (``math`` is not correctly rounded,
but within an ulp or two). A function is evaluated at the ends of each piece where it is monotone: sin and cos
split at their extrema, cosh and abs at 0, tan is unbounded when a pole may lie inside (so is x/y when y's
interval holds 0). Where part of the box lies outside a function's domain (log of [-1, 2]), the enclosure
covers the values where it is defined and ``undefined`` says so. ``where``'s condition and the comparisons
give a truth interval: certainly true, certainly false, or either (then both branches' hull).

The enclosure is sound but not sharp: each occurrence of a variable varies on its own (``x - x`` over
[-1, 1] is [-2, 2]), as in every interval arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction


INF = math.inf
ULPS = 2


@dataclass(frozen=True)
class Interval:
    """[lo, hi] (lo may be -inf, hi inf: unbounded); ``undefined``: part of the box gives no real value;
    ``empty``: none of it does (lo and hi are then NaN)."""

    lo: float
    hi: float
    undefined: bool = False

    @property
    def empty(self) -> bool:
        return math.isnan(self.lo)

    def contains(self, x: float) -> bool:
        return not self.empty and self.lo <= x <= self.hi

    def to_dict(self) -> dict:
        def end(v):
            return None if math.isnan(v) or math.isinf(v) else v
        return {"lower": end(self.lo), "upper": end(self.hi), "undefined": self.undefined}


@dataclass(frozen=True)
class Truth:
    """A condition over a box: whether it can be true, and whether it can be false."""

    can_true: bool
    can_false: bool


EMPTY = Interval(math.nan, math.nan, True)
WHOLE = Interval(-INF, INF)


def _down(x: float, ulps: int = 1) -> float:
    if math.isnan(x):
        return -INF
    for _ in range(ulps):
        x = math.nextafter(x, -INF)
    return x


def _up(x: float, ulps: int = 1) -> float:
    if math.isnan(x):
        return INF
    for _ in range(ulps):
        x = math.nextafter(x, INF)
    return x


def make(lo: float, hi: float, undefined: bool = False, ulps: int = 1, *, exact_zero: bool = False) -> Interval:
    """[lo, hi] widened outward by ``ulps`` (an infinite end stays as it is; ``exact_zero``: so does a 0, for
    a product or a power, which is 0 only when a factor is)."""
    lo = lo if lo == -INF or (exact_zero and lo == 0) else _down(lo, ulps)
    hi = hi if hi == INF or (exact_zero and hi == 0) else _up(hi, ulps)
    return Interval(lo, hi, undefined)


def point(value: float) -> Interval:
    return Interval(value, value)


def number(value: Fraction) -> Interval:
    """An exact number: its float64 if exact, else the two floats around it."""
    try:
        f = float(value)
    except OverflowError:
        return Interval(math.copysign(1.7976931348623157e308, value), INF) if value > 0 else \
            Interval(-INF, -1.7976931348623157e308)
    if math.isinf(f):
        return Interval(1.7976931348623157e308, INF) if f > 0 else Interval(-INF, -1.7976931348623157e308)
    exact = Fraction(f)
    if exact == value:
        return point(f)
    return Interval(math.nextafter(f, -INF), f) if exact > value else Interval(f, math.nextafter(f, INF))


def hull(a: Interval, b: Interval) -> Interval:
    if a.empty:
        return Interval(b.lo, b.hi, True) if not b.empty else EMPTY
    if b.empty:
        return Interval(a.lo, a.hi, True)
    return Interval(min(a.lo, b.lo), max(a.hi, b.hi), a.undefined or b.undefined)


# ---------------------------------------------------------------------------------------------
# arithmetic
# ---------------------------------------------------------------------------------------------
def _sum_down(x: float, y: float) -> float:
    """The largest float <= x + y (TwoSum's exact error says which side of the rounded sum it lies)."""
    s = x + y
    if math.isnan(s):
        return -INF
    if math.isinf(s):
        return s if s < 0 or not (math.isinf(x) or math.isinf(y)) else s
    bv = s - x
    err = (x - (s - bv)) + (y - bv)
    return math.nextafter(s, -INF) if err < 0 else s


def _sum_up(x: float, y: float) -> float:
    return -_sum_down(-x, -y)


def add(a: Interval, b: Interval) -> Interval:
    if a.empty or b.empty:
        return EMPTY
    return Interval(_sum_down(a.lo, b.lo), _sum_up(a.hi, b.hi), a.undefined or b.undefined)


def neg(a: Interval) -> Interval:
    return EMPTY if a.empty else Interval(-a.hi, -a.lo, a.undefined)


def _times(x: float, y: float) -> float:
    return 0.0 if x == 0 or y == 0 else x * y  # 0 * inf: 0 in interval arithmetic's closure


def mul(a: Interval, b: Interval) -> Interval:
    if a.empty or b.empty:
        return EMPTY
    products = [_times(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return make(min(products), max(products), a.undefined or b.undefined, exact_zero=True)


def reciprocal(b: Interval) -> Interval:
    if b.empty or (b.lo == 0 and b.hi == 0):
        return EMPTY
    if b.lo > 0 or b.hi < 0:
        return make(1.0 / b.hi, 1.0 / b.lo, b.undefined)
    if b.lo == 0:
        return Interval(_down(1.0 / b.hi), INF, b.undefined)
    if b.hi == 0:
        return Interval(-INF, _up(1.0 / b.lo), b.undefined)
    return Interval(-INF, INF, b.undefined)  # a pole inside


def div(a: Interval, b: Interval) -> Interval:
    return mul(a, reciprocal(b))


def _pow_float(x: float, n: float) -> float:
    try:
        return math.pow(x, n)
    except OverflowError:
        return INF if x > 0 or (n == int(n) and int(n) % 2 == 0) else -INF
    except (ValueError, ZeroDivisionError):
        return INF


def power_const(a: Interval, n: float) -> Interval:
    """a**n for a constant exponent n."""
    if a.empty:
        return EMPTY
    if n == 0:
        return Interval(1.0, 1.0, a.undefined)
    if n == int(n):
        k = int(n)
        if k < 0:
            return reciprocal(power_const(a, -k))
        if k % 2 == 1:
            return make(_pow_float(a.lo, k), _pow_float(a.hi, k), a.undefined, ULPS, exact_zero=True)
        if a.lo >= 0:
            return make(_pow_float(a.lo, k), _pow_float(a.hi, k), a.undefined, ULPS, exact_zero=True)
        if a.hi <= 0:
            return make(_pow_float(a.hi, k), _pow_float(a.lo, k), a.undefined, ULPS, exact_zero=True)
        return Interval(0.0, _up(max(_pow_float(a.lo, k), _pow_float(a.hi, k)), ULPS), a.undefined)
    undefined = a.undefined or a.lo < 0
    if a.hi < 0:
        return EMPTY
    lo = max(a.lo, 0.0)
    if n > 0:
        return make(max(_pow_float(lo, n), 0.0), _pow_float(a.hi, n), undefined, ULPS, exact_zero=lo == 0)
    low = _pow_float(a.hi, n)
    return make(low, INF if lo == 0 else _pow_float(lo, n), undefined, ULPS)
