"""Every function of gradcli's table (gradcli.expression.functions) over intervals: each evaluated with the
table's own Python float64 implementation at the ends of its monotone pieces, widened outward by ULPS ulps."""

from __future__ import annotations

import math

from gradcli.expression.functions import python_functions
from gradcli.uncertainty.interval import (EMPTY, INF, ULPS, Interval, Truth, div, hull, make, mul, reciprocal)

_PY = python_functions()
_TWO_PI = 2 * math.pi

# name: (domain low, domain high, increasing): monotone on their domain
MONOTONE = {
    "exp": (-INF, INF, True), "expm1": (-INF, INF, True), "sinh": (-INF, INF, True), "tanh": (-INF, INF, True),
    "asinh": (-INF, INF, True), "atan": (-INF, INF, True), "erf": (-INF, INF, True),
    "sigmoid": (-INF, INF, True), "softplus": (-INF, INF, True), "relu": (-INF, INF, True),
    "stop_gradient": (-INF, INF, True), "log2": (0.0, INF, True), "log10": (0.0, INF, True),
    "sqrt": (0.0, INF, True), "log1p": (-1.0, INF, True), "asin": (-1.0, 1.0, True), "acos": (-1.0, 1.0, False),
    "atanh": (-1.0, 1.0, True), "acosh": (1.0, INF, True),
}
# where a function's values lie whatever its argument: a widened end is clipped back into it
RANGE = {"sin": (-1.0, 1.0), "cos": (-1.0, 1.0), "tanh": (-1.0, 1.0), "erf": (-1.0, 1.0), "sigmoid": (0.0, 1.0),
         "atan": (-math.pi / 2, math.pi / 2), "acos": (0.0, math.pi), "asin": (-math.pi / 2, math.pi / 2)}


def _clip(name: str, iv: Interval) -> Interval:
    if name not in RANGE or iv.empty:
        return iv
    lo, hi = RANGE[name]
    # the range's own ends are rounded floats (pi/2): widen them by an ulp before clipping
    return Interval(max(iv.lo, math.nextafter(lo, -INF)), min(iv.hi, math.nextafter(hi, INF)), iv.undefined)


def monotone(name: str, a: Interval) -> Interval:
    low, high, increasing = MONOTONE[name]
    if a.empty or a.hi < low or a.lo > high:
        return EMPTY
    undefined = a.undefined or a.lo < low or a.hi > high
    lo, hi = max(a.lo, low), min(a.hi, high)
    f = _PY[name]
    ends = (f(lo), f(hi)) if increasing else (f(hi), f(lo))
    # sqrt and relu are 0 exactly where their argument is: that end needs no widening
    return _clip(name, make(ends[0], ends[1], undefined, ULPS, exact_zero=name in ("sqrt", "relu")))


def _log(a: Interval) -> Interval:
    if a.empty or a.hi < 0:
        return EMPTY
    lo = max(a.lo, 0.0)
    f = _PY["log"]
    return make(f(lo), f(a.hi), a.undefined or a.lo < 0, ULPS)


def _holds(lo: float, hi: float, at: float, period: float) -> bool:
    """Whether [lo, hi] may hold at + k*period for an integer k (a little wider: rounding never hides one)."""
    slack = 1e-12 * max(1.0, abs(lo), abs(hi))
    k = math.ceil((lo - slack - at) / period)
    return at + k * period <= hi + slack


def _periodic(name: str, a: Interval, peak: float, trough: float) -> Interval:
    """sin (peak pi/2, trough -pi/2) or cos (0, pi): the ends' values, and +-1 where an extremum lies inside."""
    if a.empty:
        return EMPTY
    if math.isinf(a.lo) or math.isinf(a.hi) or a.hi - a.lo >= _TWO_PI:
        return Interval(-1.0, 1.0, a.undefined)
    f = _PY[name]
    ends = make(min(f(a.lo), f(a.hi)), max(f(a.lo), f(a.hi)), a.undefined, ULPS)
    hi = 1.0 if _holds(a.lo, a.hi, peak, _TWO_PI) else ends.hi
    lo = -1.0 if _holds(a.lo, a.hi, trough, _TWO_PI) else ends.lo
    return _clip(name, Interval(lo, hi, a.undefined))


def _tan(a: Interval) -> Interval:
    if a.empty:
        return EMPTY
    if math.isinf(a.lo) or math.isinf(a.hi) or a.hi - a.lo >= math.pi or _holds(a.lo, a.hi, math.pi / 2, math.pi):
        return Interval(-INF, INF, a.undefined)  # a pole may lie inside
    return make(_PY["tan"](a.lo), _PY["tan"](a.hi), a.undefined, ULPS)


def _even(name: str, a: Interval) -> Interval:
    """cosh and abs: decreasing to 0, increasing after."""
    if a.empty:
        return EMPTY
    f = _PY[name]
    top = max(f(a.lo), f(a.hi))
    if a.lo <= 0 <= a.hi:
        return make(f(0.0), top, a.undefined, ULPS if name == "cosh" else 0)
    return make(min(f(a.lo), f(a.hi)), top, a.undefined, ULPS if name == "cosh" else 0)


def _atan2(y: Interval, x: Interval) -> Interval:
    if y.empty or x.empty:
        return EMPTY
    undefined = y.undefined or x.undefined
    if x.lo > 0:
        inner = monotone("atan", div(y, x))
        return Interval(inner.lo, inner.hi, undefined)
    pi = math.nextafter(math.pi, INF)
    if y.lo > 0:
        return Interval(0.0, pi, undefined)
    if y.hi < 0:
        return Interval(-pi, 0.0, undefined)
    return Interval(-pi, pi, undefined)


def _each_end(name: str, args: list[Interval], ulps: int) -> Interval:
    """A function non-decreasing in every argument (min, max, clip, logsumexp)."""
    if any(a.empty for a in args):
        return EMPTY
    f = _PY[name]
    undefined = any(a.undefined for a in args)
    return make(f(*(a.lo for a in args)), f(*(a.hi for a in args)), undefined, ulps)


def _compare(op: str, a: Interval, b: Interval) -> Truth:
    if a.empty or b.empty:
        return Truth(False, True)
    if op in ("<", "<="):
        return _compare(">" if op == "<" else ">=", b, a)
    if op == ">":
        return Truth(a.hi > b.lo, not a.lo > b.hi)
    if op == ">=":
        return Truth(a.hi >= b.lo, not a.lo >= b.hi)
    same = a.lo == a.hi == b.lo == b.hi
    overlap = a.lo <= b.hi and b.lo <= a.hi
    if op == "==":
        return Truth(overlap, not same)
    return Truth(not same, overlap)


def _where(c: Truth, a: Interval, b: Interval) -> Interval:
    if c.can_true and c.can_false:
        return hull(a, b) if not (a.empty or b.empty) else (a if b.empty else b)
    return a if c.can_true else b


def call(name: str, args: list) -> Interval | Truth:
    """``name`` over interval (or truth) arguments."""
    if name in MONOTONE:
        return monotone(name, args[0])
    if name == "log":
        return _log(args[0]) if len(args) == 1 else div(_log(args[0]), _log(args[1]))
    if name == "sin":
        return _periodic("sin", args[0], math.pi / 2, -math.pi / 2)
    if name == "cos":
        return _periodic("cos", args[0], 0.0, math.pi)
    if name == "tan":
        return _tan(args[0])
    if name in ("sec", "csc"):
        return reciprocal(call("cos" if name == "sec" else "sin", args))
    if name == "cot":
        return reciprocal(_tan(args[0]))
    if name in ("cosh", "abs"):
        return _even(name, args[0])
    if name == "atan2":
        return _atan2(args[0], args[1])
    if name in ("min", "max", "clip"):
        return _each_end(name, list(args), 0)
    if name == "logsumexp":
        return _each_end(name, list(args), ULPS)
    if name == "where":
        return _where(*args)
    if name in ("<", "<=", ">", ">=", "==", "!="):
        return _compare(name, args[0], args[1])
    if name == "not":
        return Truth(args[0].can_false, args[0].can_true)
    if name == "and":
        a, b = args
        return Truth(a.can_true and b.can_true, a.can_false or b.can_false)
    if name == "or":
        a, b = args
        return Truth(a.can_true or b.can_true, a.can_false and b.can_false)
    raise ValueError(f"no interval version of {name}")


def mul_all(values: list[Interval]) -> Interval:
    out = values[0]
    for v in values[1:]:
        out = mul(out, v)
    return out
