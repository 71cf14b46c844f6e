"""SymPy: exact derivatives and their values, the reference the numerical methods are judged by.

SymPy objects are built node by node from gradcli's own tree (never ``sympify``/``parse_expr``,
which run ``eval``). Symbols are created ``real=True`` so that ``diff(abs(x))`` is ``sign(x)``.
SymPy can take unbounded time on small inputs: the commands run it as a :class:`gradcli.worker.BoundedJob`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from gradcli.expr import Add, Call, Const, Mul, Neg, Node, Num, Pow, Var
from gradcli.functions import sympy_functions

# Seconds SymPy may spend on one command before its column is left out.
DEFAULT_TIME_LIMIT = 10.0
# Digits for evaluating exact values; float64 needs 17, the rest guards against cancellation.
EVAL_DIGITS = 30


from gradcli.worker import BoundedJob, SymbolicTimeout  # noqa: E402,F401


def symbols_for(names) -> dict[str, Any]:
    import sympy as sp

    return {n: sp.Symbol(n, real=True) for n in names}


def to_sympy(tree: Node, symbols: dict[str, Any]):
    """Build the SymPy expression for ``tree``. ``symbols`` maps variable names to SymPy symbols."""
    import sympy as sp

    def build(node: Node):
        if isinstance(node, Num):
            v = node.value
            return sp.Integer(v.numerator) if v.denominator == 1 else sp.Rational(v.numerator, v.denominator)
        if isinstance(node, Const):
            return sp.pi if node.name == "pi" else sp.E
        if isinstance(node, Var):
            return symbols[node.name]
        if isinstance(node, Neg):
            return -build(node.operand)
        if isinstance(node, Add):
            return sp.Add(*[build(t) if s > 0 else -build(t) for s, t in node.terms])
        if isinstance(node, Mul):
            return sp.Mul(*[1 / build(f) if d else build(f) for d, f in node.factors])
        if isinstance(node, Pow):
            return sp.Pow(build(node.base), build(node.exponent))
        if isinstance(node, Call):
            args = [build(a) for a in node.args]
            return _SYMPY_FUNCTIONS[node.func](sp, *args)
        raise TypeError(node)

    return build(tree)


# name -> build(sp, *args), from the one function table.
_SYMPY_FUNCTIONS: dict[str, Callable] = sympy_functions()


def exact_point(point_exact: dict[str, Node], symbols: dict[str, Any]) -> dict[Any, Any]:
    """The point as exact SymPy numbers, keyed by symbol (only the symbols in ``symbols``)."""
    return {symbols[k]: to_sympy(v, {}) for k, v in point_exact.items() if k in symbols}


def value_at(expr, subs: dict) -> float | None:
    """The real float value of ``expr`` at ``subs``: +-inf where it overflows float64, None where it is
    undefined (a pole, a point outside the domain) or not real.

    ``evalf(subs=...)`` evaluates numerically with mpmath instead of substituting first, which would
    have SymPy compute exact powers like ``2**(10**100)``. It does not see poles, though: at x = 1,
    ``1/(x - 1)`` evaluates to 1/(rounding residue), about 1e138 at 30 digits. Such a value changes
    with the working precision, so each value is computed twice and kept only when both agree.
    """
    if expr.is_number and expr.is_zero:
        return 0.0
    first = _real_float(expr, subs, EVAL_DIGITS)
    if first is None:
        return None
    second = _real_float(expr, subs, 3 * EVAL_DIGITS // 2)
    if second is None:
        return None
    if first == second:  # also two infinities of one sign: an overflow, not a pole
        return second
    if math.isfinite(first) and math.isfinite(second) and abs(first - second) <= 1e-12 * abs(second):
        return second
    # An exact zero reached by cancellation comes back as a different tiny residue at each precision
    # (2.7e-166, then 0e-166): evalf gives up near 1e-150. Poles go the other way, to huge values.
    if max(abs(first), abs(second)) < 1e-100:
        return 0.0
    return None  # not stable under more precision: a singularity, not a number


def _real_float(expr, subs: dict, digits: int) -> float | None:
    import sympy as sp

    v = expr.evalf(digits, subs=subs)
    if v.has(sp.zoo, sp.nan, sp.oo, -sp.oo) or not v.is_number:
        return None
    re_part, im_part = v.as_real_imag()
    if im_part != 0 and abs(float(im_part)) > 1e-25 * max(1.0, abs(float(re_part))):
        return None
    try:
        f = float(re_part)
    except (TypeError, ValueError):
        return None
    # A real value beyond float64's range comes back as +-inf (overflow), not None (undefined).
    return f if not math.isnan(f) else None


def formula_text(expr) -> str:
    return str(expr)
