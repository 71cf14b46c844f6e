"""The complex step's running analysis over the tree: at each node, f's value, the sum of the magnitudes of
its derivative's terms, and bounds on what the rounding of f's real parts, the derivative's own arithmetic
and underflow do to the derivative (:class:`Bound`); from them :mod:`gradcli.methods.complex_step` chooses
each value's step and states its error estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradcli.dtypes import MACHINE_EPSILON
from gradcli.expression import Node
from gradcli.expression.evaluate import PYTHON_FLOAT64, evaluate, numpy_backend
from gradcli.expression.tree import Add, Call, Const, Mul, Neg, Num, Pow, Var, is_constant
from gradcli.methods.complex_backend import complex_backend, numpy_module

# ---------------------------------------------------------------------------------------------
# the running analysis: f's value, its derivative's terms and what rounding and underflow do to them
# ---------------------------------------------------------------------------------------------
# A nonlinear operation's argument moves by at most this much of its scale: the O(h^2) truncation stays
# ~2^-60 relative, below float64's rounding.
TRUNCATION_MARGIN = 2.0 ** -30
# A rounded imaginary part at least this many times the smallest normal number keeps its digits.
NORMAL_MARGIN = 2.0 ** 4
STEP_LOG2_MAX = 60
# The running bounds are first order: R (the derivative's own rounding) as gradcli.methods.fd_bound takes f's;
# D (f's real parts through the derivative) twice, since it multiplies two first-order bounds.
FIRST_ORDER_SAFETY = 1.25
REAL_PART_SAFETY = 2.0
# Rounding of the derivative's arithmetic per operation, in units of u: a complex product's imaginary
# part is two products and a sum, a quotient's (Smith's algorithm) about twice that, a library function's
# as the running bound of f takes it.
_ULPS = {"add": 1.0, "mul": 3.0, "div": 6.0, "call": 4.0, "pow": 8.0}


@dataclass
class Bound:
    """One node over the rows (variable j, point k): its value, the sum of the magnitudes of its
    derivative's terms (T), a bound on its value's rounding (E), on the derivative's error from E (D),
    from the derivative's own rounding (R) and from underflow (F, with a step)."""

    v: object
    T: object
    E: object
    D: object
    R: object
    F: object


class _Context:
    def __init__(self, np, dtype: str, rows: int, h):
        finfo = np.finfo(dtype)
        self.np, self.u = np, MACHINE_EPSILON[dtype] / 2
        self.tiny, self.huge = float(finfo.tiny), float(finfo.max)
        # a rounding below the smallest normal number errs by up to tiny * unit (tiny * u is itself below
        # the smallest subnormal: keep the factors apart)
        self.unit = self.u if _gradual_underflow(np, dtype) else 1.0
        self.lo = np.full(rows, -np.inf)
        self.hi = np.full(rows, np.inf)
        self.h = h

    def rounded(self, b: Bound, kind: str, denominator: Bound | None = None) -> Bound:
        """An operation that rounds: its own rounding of the derivative, the steps that keep its imaginary
        part normal (relative to max(1, |value|): complex algorithms divide by the real part), and what an
        underflow there can lose. A quotient's ``denominator``: Smith's algorithm divides its imaginary part
        by its real part, which must stay normal too."""
        np = self.np
        dep = b.T > 0
        b.R = b.R + _ULPS[kind] * self.u * b.T
        safe = np.where(dep, b.T, 1.0)
        need = NORMAL_MARGIN * self.tiny * np.maximum(1.0, np.abs(b.v))
        self.lo = np.fmax(self.lo, np.where(dep, np.log2(need / safe), -np.inf))
        self.hi = np.fmin(self.hi, np.where(dep, np.log2(self.huge / NORMAL_MARGIN / safe), np.inf))
        relative = 0.0
        if denominator is not None:
            ddep = denominator.T > 0
            ratio = np.where(ddep, denominator.T, 1.0) / np.abs(denominator.v)  # |db / b|
            self.lo = np.fmax(self.lo, np.where(ddep, np.log2(NORMAL_MARGIN * self.tiny / ratio), -np.inf))
            relative = np.where(ddep, 1.0 / np.abs(denominator.v), 0.0)
        if self.h is not None:
            floor = 4.0 * self.unit * (self.tiny / self.h) * (1.0 + np.abs(b.v) + relative)
            b.F = b.F + np.where(dep, np.minimum(b.T, floor), 0.0)
        return b

    def truncation(self, t_arg, scale) -> None:
        """h * |d arg| <= TRUNCATION_MARGIN * scale where the argument depends on the variable."""
        np = self.np
        dep = t_arg > 0
        bound = np.log2(TRUNCATION_MARGIN * np.abs(scale) / np.where(dep, t_arg, 1.0))
        self.hi = np.fmin(self.hi, np.where(dep, np.where(np.isnan(bound), -np.inf, bound), np.inf))


def _gradual_underflow(np, dtype: str) -> bool:
    """False where the CPU flushes subnormal results to zero (a library may set FTZ/DAZ)."""
    t = np.dtype(dtype).type
    return bool(t(np.finfo(dtype).tiny) * t(0.5) != 0)


def _times(*factors):
    """A product of non-negative factors that is 0 where any factor is 0 (never 0 * inf = NaN)."""
    np = numpy_module()
    out = 1.0
    zero = False
    for f in factors:
        out = out * f
        zero = zero | (np.asarray(f) == 0)
    return np.where(zero, 0.0, out)


def analyse(tree: Node, typed: dict, wrt: list[str], dtype: str, p: int, h) -> Bound:
    """The running analysis of ``tree`` over the rows (variable j, point k) of the variables ``wrt``; with
    ``h`` ([n * P]) the underflow part too. The step bounds gather in the result's ``lo``/``hi``."""
    np = numpy_module()
    n = max(len(wrt), 1)
    rows = n * p
    ctx = _Context(np, dtype, rows, h)
    env = {}
    for name, x in typed.items():
        v = np.tile(np.asarray(x, dtype=np.float64), n)
        t = np.concatenate([np.full(p, 1.0 if name == w else 0.0) for w in wrt]) if wrt else np.zeros(rows)
        env[name] = Bound(v, t, 0.0, 0.0, 0.0, 0.0)
    out = _walk(tree, env, ctx, dtype)
    z = np.zeros(rows)
    out = Bound(*(np.broadcast_to(np.asarray(a, dtype=np.float64), (rows,)) + z
                   for a in (out.v, out.T, out.E, out.D, out.R, out.F)))
    out.lo, out.hi = ctx.lo, ctx.hi
    return out


def _constant(tree: Node, dtype: str, ctx: _Context) -> Bound:
    from fractions import Fraction

    np = ctx.np
    c = float(evaluate(tree, {}, PYTHON_FLOAT64))
    typed = float(np.dtype(dtype).type(c))
    exact = isinstance(tree, Num) and math.isfinite(typed) and Fraction(typed) == tree.value
    return Bound(c, 0.0, 0.0 if exact else ctx.u * abs(c), 0.0, 0.0, 0.0)


def _walk(tree: Node, env: dict, ctx: _Context, dtype: str) -> Bound:
    np = ctx.np
    if isinstance(tree, (Num, Const)) or is_constant(tree):
        return _constant(tree, dtype, ctx)
    if isinstance(tree, Var):
        return env[tree.name]
    if isinstance(tree, Neg):
        b = _walk(tree.operand, env, ctx, dtype)
        return Bound(-b.v, b.T, b.E, b.D, b.R, b.F)
    if isinstance(tree, Add):
        acc = _walk(tree.terms[0][1], env, ctx, dtype)
        for sign, term in tree.terms[1:]:
            b = _walk(term, env, ctx, dtype)
            v = acc.v + b.v if sign > 0 else acc.v - b.v
            t = acc.T + b.T
            acc = Bound(v, t, acc.E + b.E + ctx.u * np.abs(v), acc.D + b.D, acc.R + b.R + ctx.u * t,
                         acc.F + b.F)  # a sum of subnormal numbers is exact: no underflow of its own
        return acc
    if isinstance(tree, Mul):
        acc = _walk(tree.factors[0][1], env, ctx, dtype)
        for divide, factor in tree.factors[1:]:
            b = _walk(factor, env, ctx, dtype)
            acc = _divide(acc, b, ctx) if divide else _multiply(acc, b, ctx)
        return acc
    if isinstance(tree, Pow):
        return _power(tree, env, ctx, dtype)
    if isinstance(tree, Call):
        rule = getattr(tree, "rule", None)
        args = [_walk(a, env, ctx, dtype) for a in tree.args]
        if rule is not None:  # a custom rule: its body over the arguments
            return _walk(rule.body, dict(zip(rule.params, args)), ctx, dtype)
        if tree.func == "log" and len(args) == 2:
            return _divide(_unary("log", args[0], ctx), _unary("log", args[1], ctx), ctx)
        if tree.func == "atan2" and len(args) == 2:
            return _atan2(args[0], args[1], ctx)
        if tree.func in _RULES and len(args) == 1:
            return _unary(tree.func, args[0], ctx)
        return _fallback(tree.func, args, ctx)
    raise TypeError(f"unknown node {tree!r}")


def _power_of_two(b: Bound) -> bool:
    """A constant +-2^k: products and quotients by it are exact (barring underflow, which F counts)."""
    if np_scalar(b.v) is None or np_scalar(b.T) != 0 or np_scalar(b.E) != 0:
        return False
    m = math.frexp(abs(np_scalar(b.v)))[0]
    return m == 0.5


def np_scalar(x):
    """x as a float where it is one number, else None."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _multiply(a: Bound, b: Bound, ctx: _Context) -> Bound:
    np = ctx.np
    av, bv = np.abs(a.v), np.abs(b.v)
    v = a.v * b.v
    t = _times(av, b.T) + _times(bv, a.T)
    own = 0.0 if _power_of_two(a) or _power_of_two(b) else ctx.u * np.abs(v)
    out = Bound(v, t, _times(av, b.E) + _times(bv, a.E) + own,
                 _times(av, b.D) + _times(bv, a.D) + _times(a.T, b.E) + _times(b.T, a.E),
                 _times(av, b.R) + _times(bv, a.R), _times(av, b.F) + _times(bv, a.F))
    # both perturbed: the real part gains -Im a Im b (h^2 da db), which must stay far below |a b|
    both = (np.asarray(a.T) > 0) & (np.asarray(b.T) > 0)
    ctx.truncation(np.where(both, np.sqrt(_times(a.T, b.T)), 0.0),
                   np.sqrt(np.maximum(_times(av, bv), ctx.tiny)))
    return ctx.rounded(out, "mul")


def _divide(a: Bound, b: Bound, ctx: _Context) -> Bound:
    """a / b: d = (da - v db) / b; the derivative moves with a's value by db / b^2 and with b's by
    (da + 2 v db) / b^2."""
    np = ctx.np
    ib = 1.0 / np.abs(b.v)
    v = a.v / b.v
    av = np.abs(v)
    tb = _times(b.T, ib)  # |db / b|
    t = _times(a.T, ib) + _times(av, tb)
    own = 0.0 if _power_of_two(b) else ctx.u * av
    out = Bound(v, t, _times(a.E, ib) + _times(av, b.E, ib) + own,
                 _times(a.D, ib) + _times(av, b.D, ib) + _times(tb, a.E, ib)
                 + _times(_times(a.T, ib) + 2.0 * _times(av, tb), b.E, ib),
                 _times(a.R, ib) + _times(av, b.R, ib), _times(a.F, ib) + _times(av, b.F, ib))
    ctx.truncation(b.T, b.v)
    return ctx.rounded(out, "div", denominator=b)


def _atan2(a: Bound, b: Bound, ctx: _Context) -> Bound:
    """atan2(y, x): partials x / r^2 and -y / r^2, second partials at most 1 / r^2 each."""
    np = ctx.np
    r = np.hypot(a.v, b.v)
    ir = 1.0 / r
    pa, pb = _times(np.abs(b.v) * ir, ir), _times(np.abs(a.v) * ir, ir)
    v = np.arctan2(a.v, b.v)
    t = _times(pa, a.T) + _times(pb, b.T)
    out = Bound(v, t, _times(pa, a.E) + _times(pb, b.E) + 4.0 * ctx.u * np.abs(v),
                 _times(pa, a.D) + _times(pb, b.D) + 2.0 * _times((a.T + b.T) * ir, (a.E + b.E) * ir),
                 _times(pa, a.R) + _times(pb, b.R), _times(pa, a.F) + _times(pb, b.F))
    ctx.truncation(a.T + b.T, r)
    return ctx.rounded(out, "call")


def _hyp(np, a):
    return np.hypot(1.0, a)


# name -> (g(a), |g'(a)|, (f1, f2) with |g''(a)| = f1 * f2, each finite where g is, the scale of g at a: inf
# where the complex implementation has no truncation (abs, relu: linear pieces; erf, sigmoid, softplus:
# f(a) + i b f'(a), gradcli.expression.functions._cx_first_order))
def _rule_table(np):
    sqrt_pi = math.sqrt(math.pi)

    def erf(a):
        from gradcli.expression.evaluate import numpy_backend as nb

        return nb("float64").functions["erf"](a)

    def sigmoid_d(a):
        e = np.exp(-np.abs(a))
        return e / (1.0 + e) ** 2

    return {
        "sin": (np.sin, lambda a, r: np.abs(np.cos(a)), lambda a, r: (np.abs(r), 1.0), lambda a, r: 1.0),
        "cos": (np.cos, lambda a, r: np.abs(np.sin(a)), lambda a, r: (np.abs(r), 1.0), lambda a, r: 1.0),
        "tan": (np.tan, lambda a, r: 1.0 + r * r, lambda a, r: (2.0 * np.abs(r), 1.0 + r * r),
                lambda a, r: np.abs(np.cos(a))),
        "cot": (lambda a: 1.0 / np.tan(a), lambda a, r: 1.0 + r * r, lambda a, r: (2.0 * np.abs(r), 1.0 + r * r),
                lambda a, r: np.abs(np.sin(a))),
        "sec": (lambda a: 1.0 / np.cos(a), lambda a, r: np.abs(r * np.tan(a)),
                lambda a, r: (np.abs(r), np.tan(a) ** 2 + r * r), lambda a, r: np.abs(np.cos(a))),
        "csc": (lambda a: 1.0 / np.sin(a), lambda a, r: np.abs(r / np.tan(a)),
                lambda a, r: (np.abs(r), 1.0 / np.tan(a) ** 2 + r * r), lambda a, r: np.abs(np.sin(a))),
        "asin": (np.arcsin, lambda a, r: 1.0 / np.sqrt((1 - a) * (1 + a)),
                 lambda a, r: (np.abs(a) / np.sqrt((1 - a) * (1 + a)), 1.0 / ((1 - a) * (1 + a))),
                 lambda a, r: 1.0 - np.abs(a)),
        "acos": (np.arccos, lambda a, r: 1.0 / np.sqrt((1 - a) * (1 + a)),
                 lambda a, r: (np.abs(a) / np.sqrt((1 - a) * (1 + a)), 1.0 / ((1 - a) * (1 + a))),
                 lambda a, r: 1.0 - np.abs(a)),
        "atan": (np.arctan, lambda a, r: _hyp(np, a) ** -2.0,
                 lambda a, r: (2.0 * np.abs(a) / _hyp(np, a) ** 2, _hyp(np, a) ** -2.0), lambda a, r: _hyp(np, a)),
        "sinh": (np.sinh, lambda a, r: np.cosh(a), lambda a, r: (np.abs(r), 1.0), lambda a, r: 1.0),
        "cosh": (np.cosh, lambda a, r: np.abs(np.sinh(a)), lambda a, r: (np.abs(r), 1.0), lambda a, r: 1.0),
        "tanh": (np.tanh, lambda a, r: np.cosh(a) ** -2.0, lambda a, r: (2.0 * np.abs(r) / np.cosh(a), 1.0 / np.cosh(a)),
                 lambda a, r: 1.0),
        "asinh": (np.arcsinh, lambda a, r: 1.0 / _hyp(np, a),
                  lambda a, r: (np.abs(a) / _hyp(np, a) ** 2, 1.0 / _hyp(np, a)), lambda a, r: _hyp(np, a)),
        "acosh": (np.arccosh, lambda a, r: 1.0 / (np.sqrt(a - 1) * np.sqrt(a + 1)),
                  lambda a, r: (np.abs(a) / (np.sqrt(a - 1) * np.sqrt(a + 1)), 1.0 / ((a - 1) * (a + 1))),
                  lambda a, r: a - 1.0),
        "atanh": (np.arctanh, lambda a, r: 1.0 / np.abs((1 - a) * (1 + a)),
                  lambda a, r: (2.0 * np.abs(a) / np.abs((1 - a) * (1 + a)), 1.0 / np.abs((1 - a) * (1 + a))),
                  lambda a, r: 1.0 - np.abs(a)),
        "exp": (np.exp, lambda a, r: np.abs(r), lambda a, r: (np.abs(r), 1.0), lambda a, r: 1.0),
        "expm1": (np.expm1, lambda a, r: np.exp(a), lambda a, r: (np.exp(a), 1.0), lambda a, r: 1.0),
        "log": (np.log, lambda a, r: 1.0 / np.abs(a), lambda a, r: (1.0 / np.abs(a), 1.0 / np.abs(a)),
                lambda a, r: np.abs(a)),
        "log2": (np.log2, lambda a, r: 1.0 / (np.abs(a) * math.log(2.0)),
                 lambda a, r: (1.0 / np.abs(a), 1.0 / (np.abs(a) * math.log(2.0))), lambda a, r: np.abs(a)),
        "log10": (np.log10, lambda a, r: 1.0 / (np.abs(a) * math.log(10.0)),
                  lambda a, r: (1.0 / np.abs(a), 1.0 / (np.abs(a) * math.log(10.0))), lambda a, r: np.abs(a)),
        "log1p": (np.log1p, lambda a, r: 1.0 / np.abs(1 + a), lambda a, r: (1.0 / np.abs(1 + a), 1.0 / np.abs(1 + a)),
                  lambda a, r: np.abs(1 + a)),
        "sqrt": (np.sqrt, lambda a, r: 0.5 / r, lambda a, r: (0.5 / r, 0.5 / np.abs(a)), lambda a, r: np.abs(a)),
        "abs": (np.abs, lambda a, r: np.ones_like(a), lambda a, r: (0.0, 0.0), lambda a, r: np.inf),
        "relu": (lambda a: np.maximum(a, 0.0), lambda a, r: (a > 0).astype(np.float64), lambda a, r: (0.0, 0.0),
                 lambda a, r: np.inf),
        "erf": (erf, lambda a, r: 2.0 / sqrt_pi * np.exp(-a * a),
                lambda a, r: (2.0 / sqrt_pi * np.exp(-a * a), 2.0 * np.abs(a)), lambda a, r: np.inf),
        "sigmoid": (lambda a: 1.0 / (1.0 + np.exp(-a)), lambda a, r: sigmoid_d(a),
                    lambda a, r: (sigmoid_d(a), np.abs(np.tanh(a / 2))), lambda a, r: np.inf),
        "softplus": (lambda a: np.logaddexp(0.0, a), lambda a, r: 1.0 / (1.0 + np.exp(-a)),
                     lambda a, r: (sigmoid_d(a), 1.0), lambda a, r: np.inf),
    }


_RULES = ("sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
          "acosh", "atanh", "exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "abs", "relu", "erf",
          "sigmoid", "softplus")
_TABLE_CACHE: dict = {}


def _unary(name: str, a: Bound, ctx: _Context) -> Bound:
    np = ctx.np
    if "t" not in _TABLE_CACHE:
        _TABLE_CACHE["t"] = _rule_table(np)
    g, g1, g2, scale = _TABLE_CACHE["t"][name]
    r = g(a.v)
    d1 = np.abs(g1(a.v, r))
    f1, f2 = g2(a.v, r)
    f1, f2 = np.abs(f1), np.abs(f2)
    out = Bound(r, _times(d1, a.T), _times(d1, a.E) + 4.0 * ctx.u * np.abs(r),
                 _times(d1, a.D) + _times(_times(f1, a.T), _times(f2, a.E)), _times(d1, a.R), _times(d1, a.F))
    ctx.truncation(a.T, scale(a.v, r))
    return ctx.rounded(out, "call")


def _power(tree: Pow, env: dict, ctx: _Context, dtype: str) -> Bound:
    np = ctx.np
    a = _walk(tree.base, env, ctx, dtype)
    if not is_constant(tree.exponent):  # a**b = exp(b log a)
        b = _walk(tree.exponent, env, ctx, dtype)
        return _unary("exp", _multiply(b, _unary("log", a, ctx), ctx), ctx)
    e = float(evaluate(tree.exponent, {}, PYTHON_FLOAT64))
    av = np.abs(a.v)
    if e == 0:
        return Bound(np.ones_like(a.v) + 0.0 * a.v, 0.0, 0.0, 0.0, 0.0, 0.0)
    integer = e.is_integer() and abs(e) < 2 ** 31
    v = np.power(a.v, int(e)) if integer and e > 0 else np.power(a.v, e)
    if integer and e > 0:
        d1 = abs(e) * np.power(av, e - 1)
        curvature = 0.0 if e == 1 else np.where(av == 0, 2.0 if e == 2 else 0.0, abs(e - 1) / av)
        first = (d1, curvature) if e != 2 else (2.0, 1.0)
    else:
        d1 = abs(e) * np.abs(v) / av
        first = (d1, abs(e - 1) / av)
    mults = 2.0 * math.log2(abs(e) + 1) + 1 if integer else 4.0
    out = Bound(v, _times(d1, a.T), _times(d1, a.E) + mults * ctx.u * np.abs(v),
                 _times(d1, a.D) + _times(_times(first[0], a.T), _times(first[1], a.E)),
                 _times(d1, a.R) + mults * 2.0 * ctx.u * _times(d1, a.T), _times(d1, a.F))
    if not (integer and e == 1):  # (a + ib)^2 = a^2 - b^2 + 2iab: b^2 must stay far below a^2 (or tiny)
        ctx.truncation(a.T, np.maximum(av, math.sqrt(ctx.tiny)) if integer and e > 0 else av)
    return ctx.rounded(out, "pow")


def _fallback(name: str, args: list, ctx: _Context) -> Bound:
    """A function without a rule here: its partial derivatives by a complex step of its own (float64,
    step 2^-40 of max(1, |arg|)), its second ones by their change over 2^-20 of that."""
    np = ctx.np
    real = numpy_backend("float64").functions[name]
    cfn = complex_backend("float64").functions[name]
    vals = [np.asarray(a.v, dtype=np.float64) for a in args]
    shape = np.broadcast_shapes(*(np.shape(x) for x in vals)) if vals else ()
    vals = [np.broadcast_to(x, shape).astype(np.float64) for x in vals]
    r = np.asarray(real(*vals), dtype=np.float64)

    def partial(k, shift=0.0):
        s = 2.0 ** -40 * np.maximum(1.0, np.abs(vals[k]))
        zs = [x.astype(np.complex128) for x in vals]
        zs[k] = vals[k] + shift * 2.0 ** 20 * s + 1j * s
        try:
            return np.abs(np.imag(np.asarray(cfn(*zs), dtype=np.complex128))) / s
        except (TypeError, ValueError):
            return np.full(shape, np.inf)

    t, e, d, rr, f = 0.0, 4.0 * ctx.u * np.abs(r), 0.0, 0.0, 0.0
    for k, a in enumerate(args):
        if np.all(np.asarray(a.T) == 0) and np.all(np.asarray(a.E) == 0):
            continue
        g1 = partial(k)
        g2 = np.abs(partial(k, 1.0) - g1) / (2.0 ** -20 * np.maximum(1.0, np.abs(vals[k])))
        g1 = np.where(np.asarray(a.T) > 0, g1, np.nan_to_num(g1, nan=0.0, posinf=0.0))
        t, e = t + _times(g1, a.T), e + _times(g1, a.E)
        d = d + _times(g1, a.D) + _times(np.nan_to_num(g2, nan=np.inf), a.T, a.E)
        rr, f = rr + _times(g1, a.R), f + _times(g1, a.F)
        ctx.truncation(a.T, 1.0)
    return ctx.rounded(Bound(r, t, e, d, rr, f), "call")
