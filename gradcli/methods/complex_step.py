"""Complex-step first derivatives for a batch of points (issue 8, item 7).

    f'(x) = Im f(x + i h) / h + O(h^2)

There is no subtraction, so no cancellation: the step can be tiny (:data:`COMPLEX_STEP`), the O(h^2)
truncation falls far below the dtype's rounding, and the result is as accurate as the evaluation of f
itself, to a few ulps, in either dtype. It needs every operation analytic at the point: the function
table's ``complex`` column (:mod:`gradcli.expression.functions`) continues each function analytically
and gives a NaN imaginary part where there is no derivative (abs at its kink, atan2 on its cut, sqrt
at 0, asin at +-1); such a derivative is reported as not analytic, never as a number.

The expression tree is evaluated by the same compiler as every other backend
(:func:`gradcli.expression.evaluate.compile_expression`) with complex NumPy arithmetic: complex128 for
float64, complex64 for float32. Points are ``{name: float64 array of shape [P]}``; every variable's
perturbed copy of every point is evaluated in ONE call. NumPy only: no SymPy, no TensorFlow.
"""

from __future__ import annotations

from gradcli.dtypes import MACHINE_EPSILON

import math
from dataclasses import dataclass
from typing import Mapping

from gradcli.expression import Node
from gradcli.expression.evaluate import PYTHON_FLOAT64, Backend, compile_expression, evaluate, numpy_backend
from gradcli.expression.functions import complex_functions
from gradcli.expression.tree import Call, Pow, is_constant, walk

# Powers of two, so that x + ih and Im(.)/h are exact. float64: ~1.2e-200, far below any rounding and far
# above the smallest normal number (2.2e-308) times any derivative down to ~1e-100. float32: ~5.4e-20
# (its smallest normal is 1.2e-38, so 1e-30 would leave derivatives below ~1e-8 subnormal, losing digits);
# the O(h^2) term is still ~1e-39 relative.
COMPLEX_STEP = {"float64": 2.0 ** -664, "float32": 2.0 ** -64}
COMPLEX_DTYPE = {"float64": "complex128", "float32": "complex64"}
# The estimate (see :func:`complex_gradients`): a few of the dtype's eps times the sum of the magnitudes
# of the derivative's terms, plus the rounding measured in the derivative's own arithmetic.
STEP_MULTIPLES = (1.0, 3.0, 5.0)
ESTIMATE_ULPS = 4.0
SPREAD_SAFETY = 4.0
# Functions and operations that can make an expression not analytic at a point.
SENSITIVE = ("abs", "atan2", "sqrt", "asin", "acos", "acosh", "log", "log2", "log10", "atanh")

_BACKENDS: dict[str, Backend] = {}


def _np():
    import numpy as np

    return np


def _int_pow(np, t):
    """x**n for a constant integer n, by multiplication (binary powers): exact continuation for any sign of x,
    where exp(n log z) would put a rounded pi into a tiny imaginary part."""
    def power(z, n: int):
        result, base, k = None, z, abs(n)
        while k:
            if k & 1:
                result = base if result is None else result * base
            k >>= 1
            if k:
                base = base * base
        if result is None:
            result = np.ones_like(z) if np.ndim(z) else t(1)
        return t(1) / result if n < 0 else result
    return power


def _pow(np, t):
    int_pow = _int_pow(np, t)

    def pw(a, b):
        if np.ndim(b) == 0 and np.imag(b) == 0 and float(np.real(b)).is_integer() and abs(np.real(b)) < 2 ** 31:
            return int_pow(a, int(np.real(b)))
        with np.errstate(all="ignore"):
            out = np.power(a, b)
        # a real power of a base <= 0 is on log's branch cut or at its branch point: no complex step there
        # when either side is perturbed; unperturbed, the imaginary part is 0 (not exp(b log a)'s residue)
        edge = np.real(a) <= 0
        perturbed = (np.imag(a) != 0) | (np.imag(b) != 0)
        nan = t(complex(0.0, math.nan))
        return np.where(edge, np.where(perturbed, np.real(out) + nan, np.real(out) + t(0)), out)
    return pw


def complex_backend(dtype: str) -> Backend:
    """The complex-step backend for ``dtype`` ("float64" -> complex128, "float32" -> complex64)."""
    if dtype in _BACKENDS:
        return _BACKENDS[dtype]
    np = _np()
    t = np.dtype(COMPLEX_DTYPE[dtype]).type
    backend = Backend(name=f"numpy-{COMPLEX_DTYPE[dtype]}", const=t, pow=_pow(np, t), div=np.divide,
                      functions=complex_functions(np, t), int_pow=_int_pow(np, t))
    _BACKENDS[dtype] = backend
    return backend


@dataclass
class ComplexGradients:
    values: object  # [P, n] float64: NaN where undefined or not analytic
    estimates: object  # [P, n] float64: the error estimate of each value
    not_analytic: object  # [P, n] bool: the value f(x) is finite, the complex step has no derivative
    function: object  # [P] float64: f at the dtype's point, in the dtype's real arithmetic
    step: float


def complex_gradients(tree: Node, points: Mapping[str, object], wrt: list[str], *,
                      dtype: str = "float64") -> ComplexGradients:
    """Partial derivatives by ``wrt`` at every point, with their error estimates.

    Rows (variable i, step multiple c, point k) with x_i + i c h, all in one call. The estimate is
    ESTIMATE_ULPS * eps * (the sum of |terms| of the derivative, :func:`term_magnitudes`: where terms of
    ~1 cancel to a derivative of ~0, sin(x) - tanh(x) near 0, their rounding is eps, not eps * |f'|)
    plus SPREAD_SAFETY * the spread of Im f(x + i c h) / (c h) over c = 1, 3, 5 (the same derivative with
    every imaginary part scaled by c: exact arithmetic gives identical results, so the spread is rounding).
    Neither sees the point's own rounding to the dtype, which the callers judge."""
    np = _np()
    h = COMPLEX_STEP[dtype]
    with np.errstate(all="ignore"):
        typed = {k: np.asarray(v, dtype=np.float64).astype(dtype) for k, v in points.items()}
        p = len(next(iter(typed.values()))) if typed else 1
        s = len(STEP_MULTIPLES)
        fz = _evaluate_rows(tree, typed, wrt, dtype, p)  # [max(n, 1), S, P]
        samples = np.imag(fz).astype(np.float64) / (h * np.array(STEP_MULTIPLES))[None, :, None]
        values = np.ascontiguousarray(samples[:len(wrt), 0].T)  # [P, n]
        # f itself in the dtype's real arithmetic: a NaN imaginary part can spoil the real one (NaN * 0)
        function = np.broadcast_to(np.asarray(compile_expression(tree, numpy_backend(dtype))(typed), dtype=np.float64),
                                   (p,)).copy()
        spread = np.max(np.abs(samples[:len(wrt), 1:] - samples[:len(wrt), :1]), axis=1).T if s > 1 else 0.0
        terms = term_magnitudes(tree, typed, wrt, dtype, p)
        estimates = ESTIMATE_ULPS * MACHINE_EPSILON[dtype] * np.maximum(terms, np.abs(values)) \
            + SPREAD_SAFETY * spread
        not_analytic = np.isnan(values) & np.isfinite(function)[:, None]
        estimates[~np.isfinite(values)] = np.nan
    return ComplexGradients(values, estimates, not_analytic, function, h)


def _evaluate_rows(tree: Node, typed: dict, wrt: list[str], dtype: str, p: int):
    """f at x_i + i c h for every variable i (none: f at x), step multiple c and point: [max(n, 1), S, P]."""
    np = _np()
    t = np.dtype(COMPLEX_DTYPE[dtype]).type
    h = COMPLEX_STEP[dtype]
    stacked = {}
    for name, x in typed.items():
        z = x.astype(t)
        rows = [z + (t(complex(0.0, c * h)) if name == v else t(0)) for v in wrt for c in STEP_MULTIPLES]
        stacked[name] = np.concatenate(rows or [z] * len(STEP_MULTIPLES))
    out = compile_expression(tree, complex_backend(dtype))(stacked)
    n = max(len(wrt), 1)
    return np.broadcast_to(np.asarray(out, dtype=t), (n * len(STEP_MULTIPLES) * p,)).reshape(
        n, len(STEP_MULTIPLES), p)


class _Magnitude:
    """A complex-step value whose imaginary part adds the magnitudes of the derivative's terms instead
    of the terms: a + ib with b >= 0, where sums add |b|s and products add |a1 b2| + |a2 b1|."""

    __slots__ = ("re", "im")

    def __init__(self, re, im):
        self.re, self.im = re, im

    def __add__(self, other):
        other = _magnitude(other)
        return _Magnitude(self.re + other.re, self.im + other.im)

    __radd__ = __add__

    def __sub__(self, other):
        other = _magnitude(other)
        return _Magnitude(self.re - other.re, self.im + other.im)

    def __rsub__(self, other):
        return _magnitude(other) - self

    def __neg__(self):
        return _Magnitude(-self.re, self.im)

    def __mul__(self, other):
        other = _magnitude(other)
        return _Magnitude(self.re * other.re, abs(self.re) * other.im + abs(other.re) * self.im)

    __rmul__ = __mul__


def _magnitude(x) -> _Magnitude:
    return x if isinstance(x, _Magnitude) else _Magnitude(x, 0.0)


def _magnitude_backend(dtype: str) -> Backend:
    """The complex backend on :class:`_Magnitude` values: each function is applied to a + i|b| and keeps
    |Im| (|f'(a)| |b| for the tiny b of the complex step)."""
    np = _np()
    t = np.dtype(COMPLEX_DTYPE[dtype]).type
    complex_ops = complex_backend(dtype)

    def lift(fn):
        def g(*args):
            args = [_magnitude(a) for a in args]
            w = fn(*(np.asarray(a.re) + np.asarray(a.im) * t(1j) for a in args))
            return _Magnitude(np.real(w), np.abs(np.imag(w)))
        return g

    def div(a, b):
        a, b = _magnitude(a), _magnitude(b)
        return _Magnitude(a.re / b.re, np.abs(a.im / b.re) + np.abs(a.re * b.im / (b.re * b.re)))

    real = np.dtype(dtype).type
    return Backend(name=f"magnitude-{dtype}", const=real, pow=lift(complex_ops.pow), div=div,
                   functions={k: lift(f) for k, f in complex_ops.functions.items()},
                   int_pow=lambda z, n: lift(lambda w: complex_ops.int_pow(w, n))(z))


def term_magnitudes(tree: Node, typed: dict, wrt: list[str], dtype: str, p: int):
    """[P, n]: for each partial derivative, the sum of the magnitudes of the terms it adds up."""
    np = _np()
    h = COMPLEX_STEP[dtype]
    stacked = {}
    for name, x in typed.items():
        rows = [_Magnitude(x, np.full(x.shape, h if name == v else 0.0, dtype=x.dtype)) for v in wrt]
        stacked[name] = _Magnitude(np.concatenate([r.re for r in rows] or [x]),
                                   np.concatenate([r.im for r in rows] or [np.zeros_like(x)]))
    out = _magnitude(compile_expression(tree, _magnitude_backend(dtype))(stacked))
    n = max(len(wrt), 1)
    im = np.broadcast_to(np.asarray(out.im, dtype=np.float64), (n * p,)).reshape(n, p)
    return (im / h).T[:, :len(wrt)]


def complex_gradient(tree: Node, values: dict[str, float], wrt: list[str], *, dtype: str = "float64"
                     ) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """One point (a batch of one): (derivative per variable, estimate per variable, variables where the
    expression is not analytic)."""
    np = _np()
    r = complex_gradients(tree, {k: np.array([v], dtype=np.float64) for k, v in values.items()}, wrt, dtype=dtype)
    derivs = dict(zip(wrt, r.values[0].tolist()))
    estimates = dict(zip(wrt, r.estimates[0].tolist()))
    return derivs, estimates, [v for v, bad in zip(wrt, r.not_analytic[0].tolist()) if bad]


def sensitive_pieces(tree: Node) -> list[str]:
    """The functions (and non-integer powers) in ``tree`` that can be non-analytic: what a note names."""
    found: list[str] = []
    for node in walk(tree):
        if isinstance(node, Call) and node.func in SENSITIVE and node.func not in found:
            found.append(node.func)
        elif isinstance(node, Pow) and not is_constant(node.exponent) and "x**y" not in found:
            found.append("x**y")
        elif isinstance(node, Pow) and is_constant(node.exponent) and "**" not in found:
            if not float(evaluate(node.exponent, {}, PYTHON_FLOAT64)).is_integer():
                found.append("**")
    return found


def not_analytic_note(text: str, variable: str, where: str | None, tree: Node) -> str:
    """The note in place of a complex-step value (``where``: the point in words; None in a batch record,
    whose point is beside it)."""
    pieces = sensitive_pieces(tree)
    why = f" ({', '.join(pieces)})" if pieces else ""
    at = f" at {where}" if where else ""
    return (f"complex step: d({text})/d{variable}{at} has no value: the expression is not analytic "
            f"there{why}; the one-sided derivatives may differ")


__all__ = ["COMPLEX_DTYPE", "COMPLEX_STEP", "ComplexGradients", "ESTIMATE_ULPS", "complex_backend",
           "complex_gradient", "complex_gradients", "not_analytic_note", "sensitive_pieces"]
