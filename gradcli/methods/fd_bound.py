"""A cheap bound on the rounding error of f in float64, so that fd measures it (in long double, ~20x the
cost of f) only where the bound is too loose to state.

Running error analysis (Wilkinson): each operation's result r carries an absolute error of at most
u |r| (u = eps / 2, correctly rounded arithmetic) plus the errors of its operands times the operation's
sensitivity to them, to first order. ``S`` below is that sum in units of u, so |f - f exact at the same
points| <= u S (1 + O(u S / |f|)). A library function's own error is taken as :data:`FUNCTION_ULPS`
units of u. Functions without a rule here, and any S that is not finite, give inf: "measure this one".
The points are exact in the dtype (they are the stencil's own points), so variables carry no error; folded
constants are the same in the wider evaluation the bound stands in for, so they carry none either.
"""

from __future__ import annotations

import math

from gradcli.dtypes import MACHINE_EPSILON
from gradcli.expression.evaluate import numpy_backend
from gradcli.expression.tree import (Add, Call, Const, Mul, Neg, Node, Num, Pow, RuleCall, Var, inline_rules,
                                     is_boolean, is_constant, walk)

# A library function's own error, in units of u (2 ulp: NumPy's float64 exp/log/sin/... are within 1 ulp)
FUNCTION_ULPS = 4.0
# Below the smallest normal a result's rounding is absolute: up to half the smallest subnormal (gradual
# underflow; to 0 a value below it loses itself whole, which is at most that). In units of u that is
# 2^-1075 / 2^-53 = the smallest normal: each rounding operation whose result lies below it adds this to S
# (x**2 at x = 1e-200 is 0, exact 1e-400; sqrt of it then has an infinite sensitivity, so the value is measured).
UNDERFLOW_S = 2.0 ** -1022
# The bound is first order: this factor covers the rest while u S / |f| is small (where it is not, the bound
# is far above eps |f| and the value is measured instead).
FIRST_ORDER_SAFETY = 1.25


def _np():
    import numpy as np

    return np


def rounding_sensitivity(np):
    """name -> (a, r) -> |f'(a)| for the one-argument functions (r = f(a), reused where it is cheaper)."""
    return {
        "sin": lambda a, r: np.abs(np.cos(a)), "cos": lambda a, r: np.abs(np.sin(a)),
        "tan": lambda a, r: 1.0 + r * r, "cot": lambda a, r: 1.0 + r * r,
        "sec": lambda a, r: np.abs(r * np.tan(a)), "csc": lambda a, r: np.abs(r / np.tan(a)),
        "asin": lambda a, r: 1.0 / np.sqrt(1.0 - a * a), "acos": lambda a, r: 1.0 / np.sqrt(1.0 - a * a),
        "atan": lambda a, r: 1.0 / (1.0 + a * a), "sinh": lambda a, r: np.cosh(a),
        "cosh": lambda a, r: np.abs(np.sinh(a)), "tanh": lambda a, r: 1.0 - r * r,
        "asinh": lambda a, r: 1.0 / np.sqrt(1.0 + a * a), "acosh": lambda a, r: 1.0 / np.sqrt(a * a - 1.0),
        "atanh": lambda a, r: 1.0 / np.abs(1.0 - a * a), "exp": lambda a, r: np.abs(r),
        "log": lambda a, r: 1.0 / np.abs(a), "log2": lambda a, r: 1.0 / (np.abs(a) * math.log(2.0)),
        "log10": lambda a, r: 1.0 / (np.abs(a) * math.log(10.0)), "sqrt": lambda a, r: 0.5 / np.abs(r),
        "abs": lambda a, r: np.ones_like(r), "erf": lambda a, r: 2.0 / math.sqrt(math.pi) * np.exp(-a * a),
        "sigmoid": lambda a, r: r * (1.0 - r),
        "relu": lambda a, r: np.where(a > 0, 1.0, 0.0), "softplus": lambda a, r: np.exp(-np.logaddexp(0.0, -a)),
        "log1p": lambda a, r: 1.0 / np.abs(1.0 + a), "expm1": lambda a, r: np.abs(r + 1.0),
        "stop_gradient": lambda a, r: np.ones_like(r),
    }


# Functions that return one of their arguments unchanged (no rounding of their own), and whose value moves
# by no more than the largest move of an argument (1-Lipschitz in each): their bound is the largest of the
# arguments' bounds, whichever argument is chosen, even where an argument's error changes the choice.
_SELECTING = frozenset({"min", "max", "clip"})


# Functions whose result below the smallest normal is exact (relu(-h) is 0, abs(x) is |x|): no floor.
_EXACT_BELOW_NORMAL = frozenset({"relu", "abs", "stop_gradient"})


def rounding_bound(tree: Node, env: dict):
    """(f, B): f in float64 at ``env``'s float64 arrays, and B >= |f - f exact| to first order (inf where
    no rule applies or the bound is not finite)."""
    np = _np()
    backend = numpy_backend("float64")
    sensitivity = rounding_sensitivity(np)
    with np.errstate(all="ignore"):
        value, s = _walk(tree, env, backend, sensitivity, np)
        shape = np.shape(next(iter(env.values()))) if env else np.shape(value)
        bound = FIRST_ORDER_SAFETY * 0.5 * MACHINE_EPSILON["float64"] * s
        # a bound below the smallest subnormal is at least that: the difference it bounds is a float64
        subnormal = float(np.finfo(np.float64).smallest_subnormal)
        bound = np.broadcast_to(np.where((s > 0) & (bound < subnormal), subnormal, bound), shape)
        return np.broadcast_to(value, shape), np.where(np.isfinite(bound), bound, np.inf)


def _walk(tree: Node, env: dict, backend, sensitivity, np):
    """(value, S) of ``tree``: S in units of u (see the module's docstring)."""
    if isinstance(tree, (Num, Const)) or is_constant(tree):
        from gradcli.expression.evaluate import compile_expression

        return compile_expression(tree, backend)(env), 0.0
    if isinstance(tree, Var):
        return env[tree.name], 0.0
    if isinstance(tree, Neg):
        v, s = _walk(tree.operand, env, backend, sensitivity, np)
        return -v, s
    if isinstance(tree, Add):
        acc, s = _walk(tree.terms[0][1], env, backend, sensitivity, np)
        for sign, term in tree.terms[1:]:  # left to right, as the evaluator adds
            v, sv = _walk(term, env, backend, sensitivity, np)
            acc = acc + v if sign > 0 else acc - v
            s = np.abs(acc) + s if np.isscalar(sv) and sv == 0.0 else np.abs(acc) + s + sv
        return acc, s
    if isinstance(tree, Mul):
        acc, s = _walk(tree.factors[0][1], env, backend, sensitivity, np)
        for divide, factor in tree.factors[1:]:
            v, sv = _walk(factor, env, backend, sensitivity, np)
            if divide:
                r = np.divide(acc, v)
                s = s / np.abs(v) + np.abs(r) * sv / np.abs(v) + np.abs(r) + _underflow(r, np)
            else:
                r = acc * v
                s = np.abs(r) + bound_times(np.abs(v), s, np, finite=True) + bound_times(np.abs(acc), sv, np, finite=True) \
                    + np.where((acc != 0) & (v != 0), _underflow(r, np), 0.0)
            acc = r
        return acc, s
    if isinstance(tree, Pow):
        b, sb = _walk(tree.base, env, backend, sensitivity, np)
        e, se = _walk(tree.exponent, env, backend, sensitivity, np)
        r = np.power(b, e)
        own = FUNCTION_ULPS * np.abs(r) + np.where(b != 0, _underflow(r, np), 0.0)
        if np.isscalar(se) and se == 0.0 and np.ndim(e) == 0 and float(e) == int(e) and e >= 1:
            # a constant integer power: d r / d b = n b^(n-1), finite everywhere
            n = int(e)
            sensitivity = 2.0 * np.abs(b) if n == 2 else (1.0 if n == 1 else n * np.abs(b) ** (n - 1))
            return r, own + bound_times(sensitivity, sb, np, finite=True)
        # d r / d b = e r / b, d r / d e = r log b; pow's own error as a library function's
        s = own + bound_times(np.abs(e * r / b), sb, np)
        if not (np.isscalar(se) and se == 0.0):
            s = s + bound_times(np.abs(r * np.log(np.abs(b))), se, np)
        return r, s
    if isinstance(tree, RuleCall):  # a custom rule's value is its body's
        return _walk(inline_rules(tree), env, backend, sensitivity, np)
    if is_boolean(tree):  # a truth value: its bound is where's business
        args = [_walk(a, env, backend, sensitivity, np)[0] for a in tree.args]
        return backend.functions[tree.func](*args), 0.0
    if isinstance(tree, Call) and tree.func in _SELECTING:
        walked = [_walk(a, env, backend, sensitivity, np) for a in tree.args]
        r = backend.functions[tree.func](*(w[0] for w in walked))
        s = walked[0][1]
        for w in walked[1:]:
            s = np.maximum(s, w[1])
        return r, s
    if isinstance(tree, Call) and tree.func == "logsumexp":
        # softmax weights (each in [0, 1], summing to 1) times the arguments' errors, and the reduction's own
        # roundings: the final addition (|r|) and the logarithm of a sum of n exponentials (each at most 1)
        walked = [_walk(a, env, backend, sensitivity, np) for a in tree.args]
        r = backend.functions[tree.func](*(w[0] for w in walked))
        s = walked[0][1]
        for w in walked[1:]:
            s = np.maximum(s, w[1])
        return r, s + np.abs(r) + 2.0 * (FUNCTION_ULPS + len(walked) + 1)
    if isinstance(tree, Call) and tree.func == "where":
        # the chosen branch's bound, unless rounding could have chosen the other branch: then none
        c = _walk(tree.args[0], env, backend, sensitivity, np)[0]
        (a, sa), (b, sb) = (_walk(x, env, backend, sensitivity, np) for x in tree.args[1:])
        r = backend.functions["where"](c, a, b)
        s = np.where(c, sa, sb)
        if _condition_carries_error(tree.args[0], env, backend, sensitivity, np):
            s = np.where(np.asarray(a) == np.asarray(b), s, np.inf)
        return r, s
    if isinstance(tree, Call):
        fn = backend.functions[tree.func]
        rule = sensitivity.get(tree.func)
        if rule is None or len(tree.args) != 1:
            args = [_walk(a, env, backend, sensitivity, np)[0] for a in tree.args]
            r = fn(*args)
            return r, np.full(np.shape(r), np.inf)
        a, sa = _walk(tree.args[0], env, backend, sensitivity, np)
        r = fn(a)
        own = FUNCTION_ULPS * np.abs(r) + (0.0 if tree.func in _EXACT_BELOW_NORMAL else
                                           np.where(a != 0, _underflow(r, np), 0.0))
        return r, own + bound_times(rule(a, r), sa, np)
    raise TypeError(f"unknown node {tree!r}")


def _condition_carries_error(cond: Node, env: dict, backend, sensitivity, np) -> bool:
    """Whether a comparison in ``cond`` compares a rounded value (its outcome could then differ from the exact
    one's near the boundary)."""
    for node in walk(cond):
        if is_boolean(node) and node.func not in ("and", "or", "not"):
            for a in node.args:
                s = _walk(a, env, backend, sensitivity, np)[1]
                if not (np.isscalar(s) and s == 0.0) and np.any(np.asarray(s) != 0):
                    return True
    return False


def _underflow(r, np):
    """The absolute rounding of a result below the smallest normal, in units of u (0 elsewhere)."""
    return np.where(np.abs(r) < 2.0 ** -1022, UNDERFLOW_S, 0.0)


def bound_times(sensitivity, s, np, finite: bool = False):
    """sensitivity * s, with an operand that carries no error (s == 0) contributing nothing even where the
    sensitivity is infinite (x**0.5 at 0 with an exact x); ``finite``: the sensitivity is known finite."""
    if np.isscalar(s) and s == 0.0:
        return 0.0
    return sensitivity * s if finite else np.where(s == 0.0, 0.0, sensitivity * s)
