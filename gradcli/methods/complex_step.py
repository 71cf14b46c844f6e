"""Complex-step first derivatives for a batch of points.

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

import math
from dataclasses import dataclass
from typing import Mapping

from gradcli.dtypes import MACHINE_EPSILON
from gradcli.expression import Node
from gradcli.expression.evaluate import PYTHON_FLOAT64, compile_expression, evaluate, numpy_backend
from gradcli.expression.tree import Call, Pow, is_constant, walk
from gradcli.methods.complex_backend import COMPLEX_DTYPE, complex_backend, numpy_module
from gradcli.methods.complex_bound import FIRST_ORDER_SAFETY, REAL_PART_SAFETY, STEP_LOG2_MAX, Bound, analyse

# Powers of two, so that x + ih and Im(.)/h are exact. float64: ~1.2e-200, far below any rounding and far
# above the smallest normal number (2.2e-308) times any derivative down to ~1e-100. float32: ~5.4e-20
# (its smallest normal is 1.2e-38, so 1e-30 would leave derivatives below ~1e-8 subnormal, losing digits);
# the O(h^2) term is still ~1e-39 relative.
COMPLEX_STEP = {"float64": 2.0 ** -664, "float32": 2.0 ** -64}
# The estimate (see :func:`complex_gradients`): a few of the dtype's eps times the sum of the magnitudes
# of the derivative's terms, plus the rounding measured in the derivative's own arithmetic.
STEP_MULTIPLES = (1.0, 3.0, 5.0)
ESTIMATE_ULPS = 4.0
SPREAD_SAFETY = 4.0
# Functions and operations that can make an expression not analytic at a point.
SENSITIVE = ("abs", "atan2", "sqrt", "asin", "acos", "acosh", "log", "log2", "log10", "atanh")

@dataclass
class ComplexGradients:
    values: object  # [P, n] float64: NaN where undefined or not analytic
    estimates: object  # [P, n] float64: the error estimate of each value
    not_analytic: object  # [P, n] bool: the value f(x) is finite, the complex step has no derivative
    function: object  # [P] float64: f at the dtype's point, in the dtype's real arithmetic
    step: float  # the default step (COMPLEX_STEP): what a header names
    steps: object = None  # [P, n] float64: the step each value was taken with
    unresolved: object = None  # [P, n] str: why the value cannot be resolved ("" where it can)


def complex_gradients(tree: Node, points: Mapping[str, object], wrt: list[str], *,
                      dtype: str = "float64") -> ComplexGradients:
    """Partial derivatives by ``wrt`` at every point, with their error estimates.

    The step of each (point, variable) is a power of two chosen by :func:`_choose_steps` from a running
    analysis of f (:func:`analyse`): as close to :data:`COMPLEX_STEP` as it can be while every rounded
    imaginary part stays above the dtype's smallest normal number and every nonlinear operation's
    argument moves by at most 2^-30 of its scale (|x| for log, x**-1, x**0.5; 1 for sin, exp; the
    distance to a pole for tan). Rows (variable i, step multiple c, point k) with x_i + i c h_ik, all in
    one call. The estimate adds

    - the rounding of the derivative's own arithmetic: ESTIMATE_ULPS * eps * (the sum of |terms| of the
      derivative; where terms of ~1 cancel to a derivative of ~0, sin(x) - tanh(x) near 0, their rounding
      is eps, not eps * |f'|), or the running bound of that rounding (times 1.25) where it is larger;
    - twice the first-order effect of the rounding of f's real parts on the derivative (the derivative
      is the forward-mode derivative at the computed real parts: 1 - cos(x) that lost every digit, then
      divided by x**2, moves d/dx by 1/x**3 times that loss). A bound, not a warning, because most
      cancellation inside f does not reach the derivative ((1 + x) - 1, sin(x) - x: the imaginary part
      does not depend on the lost digits), and the bound says so where it does;
    - what an underflowing imaginary part can lose (gradual underflow: tiny * u per rounding, through
      the rest of f); where no step keeps them normal;
    - SPREAD_SAFETY * the spread of Im f(x + i c h) / (c h) over c = 1, 3, 5 (exact arithmetic gives
      identical results; the spread is rounding and any truncation left).

    ``unresolved`` says where the value cannot be relied on: no estimate, no step small enough beside
    the scale of f's arguments, or an estimate above half of max(|value|, the derivative's terms).
    Neither sees the point's own rounding to the dtype, which the callers judge."""
    np = numpy_module()
    with np.errstate(all="ignore"):
        typed = {k: np.asarray(v, dtype=np.float64).astype(dtype) for k, v in points.items()}
        p = len(next(iter(typed.values()))) if typed else 1
        n = len(wrt)
        first = analyse(tree, typed, wrt, dtype, p, None)
        log2h, violated = _choose_steps(first, dtype)
        h = np.ldexp(1.0, log2h.astype(int))  # [n * P]
        bound = analyse(tree, typed, wrt, dtype, p, h)
        multiples = np.array(STEP_MULTIPLES)
        fz = _evaluate_rows(tree, typed, wrt, dtype, p, h)  # [max(n, 1), S, P]
        hs = h.reshape(max(n, 1), 1, p) if n else np.full((1, 1, p), COMPLEX_STEP[dtype])
        samples = np.imag(fz).astype(np.float64) / (hs * multiples[None, :, None])
        values = np.ascontiguousarray(samples[:n, 0].T)  # [P, n]
        # f itself in the dtype's real arithmetic: a NaN imaginary part can spoil the real one (NaN * 0)
        function = np.broadcast_to(np.asarray(compile_expression(tree, numpy_backend(dtype))(typed), dtype=np.float64),
                                   (p,)).copy()
        spread = np.max(np.abs(samples[:n, 1:] - samples[:n, :1]), axis=1).T if len(multiples) > 1 else 0.0

        def per_value(a):  # [n * P] -> [P, n]
            return np.broadcast_to(np.asarray(a, dtype=np.float64), (n * p,)).reshape(n, p).T.copy() if n \
                else np.zeros((p, 0))

        terms, rounding = per_value(bound.T), per_value(bound.R)
        real_parts, underflow = REAL_PART_SAFETY * per_value(bound.D), per_value(bound.F)
        eps = MACHINE_EPSILON[dtype]
        own = np.maximum(ESTIMATE_ULPS * eps * np.maximum(terms, np.abs(values)), FIRST_ORDER_SAFETY * rounding)
        parts = {"rounding": own, "cancellation": real_parts, "underflow": underflow,
                 "spread": SPREAD_SAFETY * spread}
        estimates = own + real_parts + underflow + SPREAD_SAFETY * spread
        not_analytic = np.isnan(values) & np.isfinite(function)[:, None]
        unresolved = _unresolved(values, estimates, terms, parts, per_value(violated) > 0, per_value(h), dtype)
        # an intermediate that overflows (or turns NaN) inside f while the derivative still comes out finite:
        # x**2 at 1e200 is inf, and Im sqrt(inf + i c)/h is 0 however finite the true sqrt(x**2 + y**2) is.
        # Where f itself is not finite in the dtype its derivative is undefined, as fd's is; where only the
        # complex evaluation's real part is, the value is given with a warning
        real_part = np.real(fz[:n, 0]).astype(np.float64).T if n else np.zeros((p, 0))
        values[~np.isfinite(function)] = np.nan
        overflows = np.isfinite(values) & ~np.isfinite(real_part)
        for k, j in zip(*np.nonzero(overflows)):
            unresolved[k, j] = (f"an intermediate value of f(x + ih) overflows {dtype} (its real part is "
                                f"{real_part[k, j]:g}), so Im f(x + ih)/h is not the derivative")
        finite = np.isfinite(values)
        estimates[~finite] = np.nan
        unresolved[~finite] = ""
    return ComplexGradients(values, estimates, not_analytic, function, COMPLEX_STEP[dtype],
                            steps=per_value(h), unresolved=unresolved)


def _unresolved(values, estimates, terms, parts: dict, violated, steps, dtype: str):
    """[P, n] str: why each value cannot be relied on, in words ("" where it can)."""
    np = numpy_module()
    out = np.full(values.shape, "", dtype=object)
    # an estimate below the smallest normal number resolves any derivative the dtype can hold
    scale = np.maximum(np.maximum(np.abs(values), terms), float(np.finfo(dtype).tiny))
    flagged = np.isfinite(values) & (~np.isfinite(estimates) | violated | (estimates > 0.5 * scale))
    for k, j in zip(*np.nonzero(flagged)):  # only the values that have something to say
        est = estimates[k, j]
        if not math.isfinite(est):
            out[k, j] = "its error estimate is not finite (a term of the derivative overflows)"
        elif violated[k, j]:
            out[k, j] = (f"no {dtype} step is small beside the scale of f's arguments here (the smallest, "
                         f"{steps[k, j]:.2g}, is not), so the truncation of Im f(x + ih)/h is not bounded")
        elif est > 0.5 * scale[k, j]:
            cause = max(parts, key=lambda c: parts[c][k, j])
            size = float(parts[cause][k, j])
            out[k, j] = {
                "cancellation": f"cancellation inside f: the rounding of f's real parts (digits lost where "
                                f"nearly equal values are subtracted) moves the derivative by up to {size:.2g}",
                "underflow": f"its imaginary parts underflow below {dtype}'s smallest normal number "
                             f"({float(np.finfo(dtype).tiny):.2g}) at every step small enough beside the "
                             f"scale of f's arguments; they can lose up to {size:.2g}",
                "spread": f"the values at steps h, 3h and 5h (h = {steps[k, j]:.2g}) differ by up to "
                          f"{size / SPREAD_SAFETY:.2g}",
                "rounding": f"the rounding of its own arithmetic is up to {size:.2g}",
            }[cause]
    return out


def _choose_steps(first: Bound, dtype: str):
    """(log2 h, where no step meets the truncation bound): [n * P] each. h = COMPLEX_STEP, raised to keep
    every imaginary part normal (``first.lo``) and lowered to keep them small (``first.hi``); where the two
    conflict, the truncation bound wins (an underflow costs digits the estimate counts; a step too large
    beside |x| gives a number with no bound at all)."""
    np = numpy_module()
    k0 = math.log2(COMPLEX_STEP[dtype])
    finfo = np.finfo(dtype)
    kmin = math.log2(float(finfo.smallest_subnormal))
    lo = np.ceil(np.where(np.isfinite(first.lo), first.lo, -np.inf))
    hi = np.floor(np.where(np.isnan(first.hi), np.inf, first.hi))
    k = np.minimum(np.maximum(k0, lo), hi)
    k = np.clip(np.where(np.isfinite(k), k, k0), kmin, STEP_LOG2_MAX)
    return k, (k > hi)


def _evaluate_rows(tree: Node, typed: dict, wrt: list[str], dtype: str, p: int, h=None):
    """f at x_i + i c h_ik for every variable i (none: f at x), step multiple c and point k:
    [max(n, 1), S, P]. ``h``: [n * P] (variable-major), COMPLEX_STEP where None."""
    np = numpy_module()
    t = np.dtype(COMPLEX_DTYPE[dtype]).type
    n = len(wrt)
    if h is None:
        h = np.full(max(n, 1) * p, COMPLEX_STEP[dtype])
    h = np.asarray(h, dtype=np.float64).reshape(max(n, 1), p)
    stacked = {}
    for name, x in typed.items():
        z = x.astype(t)
        rows = [z + ((1j * c * h[j]).astype(t) if name == v else t(0))
                for j, v in enumerate(wrt) for c in STEP_MULTIPLES]
        stacked[name] = np.concatenate(rows or [z] * len(STEP_MULTIPLES))
    out = compile_expression(tree, complex_backend(dtype))(stacked)
    return np.broadcast_to(np.asarray(out, dtype=t), (max(n, 1) * len(STEP_MULTIPLES) * p,)).reshape(
        max(n, 1), len(STEP_MULTIPLES), p)


def complex_gradient(tree: Node, values: dict[str, float], wrt: list[str], *, dtype: str = "float64"
                     ) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """One point (a batch of one): (derivative per variable, estimate per variable, variables where the
    expression is not analytic)."""
    np = numpy_module()
    r = complex_gradients(tree, {k: np.array([v], dtype=np.float64) for k, v in values.items()}, wrt, dtype=dtype)
    derivs = dict(zip(wrt, r.values[0].tolist()))
    estimates = dict(zip(wrt, r.estimates[0].tolist()))
    return derivs, estimates, [v for v, bad in zip(wrt, r.not_analytic[0].tolist()) if bad]


def complex_step_values(tree: Node, point: Mapping[str, float], variable: str, steps, *,
                        dtype: str = "float64"):
    """Im f(x + i h) / h at one point for each step h given (float64 [S]; NaN where not analytic): the
    complex step at steps the caller chooses, in :func:`complex_gradients`' arithmetic. Each h is taken as
    the dtype holds it, so that x + i h and the division use the same h."""
    np = numpy_module()
    h = np.asarray(steps, dtype=np.float64).astype(dtype).astype(np.float64)
    with np.errstate(all="ignore"):
        typed = {k: np.full(h.shape, v, dtype=np.float64).astype(dtype) for k, v in point.items()}
        rows = _evaluate_rows(tree, typed, [variable], dtype, len(h), h)  # [1, multiples, S]
        return np.imag(rows[0, 0]).astype(np.float64) / h


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


__all__ = ["COMPLEX_STEP", "ComplexGradients", "ESTIMATE_ULPS", "complex_gradient", "complex_gradients", "complex_step_values", "not_analytic_note", "sensitive_pieces"]
