"""SymPy: exact derivatives, the reference the numerical methods are judged by.

SymPy objects are built node by node from gradcli's own tree (never ``sympify``/``parse_expr``, which run
``eval``). Symbols are created ``real=True`` so that ``diff(abs(x))`` is ``sign(x)``. SymPy can take
unbounded time on small inputs, so the commands run it through :class:`gradcli.methods.worker.BoundedJob`.

One point (``--at``): the exact formula and its value at the exactly typed point, at 30 digits
(:func:`value_at`). Many points: the derivatives are taken once (:func:`differentiate`) and come back as
gradcli expression trees (picklable, no SymPy needed to use them); each batch evaluates them with NumPy in
float64 and, where a rounding bound does not vouch for that value, at 30 digits like one point
(:mod:`gradcli.methods.symbolic_values`), which the JSON says (:data:`gradcli.methods.exact_evaluation.EVALUATION`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Hashable, Mapping

from gradcli.expression import Add, Call, Const, Mul, Neg, Node, Num, Pow, Var
from gradcli.expression.tree import RuleCall, inline_rules
from gradcli.expression.evaluate import Backend, compile_expression, numpy_backend
from gradcli.expression.functions import sympy_class_names, sympy_functions
from gradcli.methods.exact_evaluation import EVAL_DIGITS, EVALUATION  # noqa: F401 (EVALUATION: the batch header's)

# Seconds SymPy may spend on one command before its column is left out.
DEFAULT_TIME_LIMIT = 10.0


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
        if isinstance(node, RuleCall):
            return rule_function(node.rule)(*[build(a) for a in node.args])
        if isinstance(node, Call):
            args = [build(a) for a in node.args]
            build_call = _SYMPY_FUNCTIONS.get(node.func) or _FORMULA_ONLY_FUNCTIONS[node.func]
            return build_call(sp, *args)
        raise TypeError(node)

    return build(tree)


_RULE_FUNCTIONS: dict[Any, Any] = {}


def rule_function(rule):
    """The SymPy function of a custom rule (``--rule``): its derivative by each parameter is the rule's own
    formula at the arguments (``fdiff``), its value the body's; printed as the rule's name."""
    import sympy as sp
    from mpmath.libmp import prec_to_dps

    if rule in _RULE_FUNCTIONS:
        return _RULE_FUNCTIONS[rule]

    def at(tree, args):
        return to_sympy(tree, dict(zip(rule.params, args)))

    def fdiff(self, argindex=1):
        return at(rule.derivatives[argindex - 1], self.args)

    def _eval_evalf(self, prec):
        return at(rule.body, self.args).evalf(prec_to_dps(prec))

    def _eval_is_real(self):
        return at(rule.body, self.args).is_real

    cls = type(rule.name, (sp.Function,), {"nargs": len(rule.params), "fdiff": fdiff, "_eval_evalf": _eval_evalf,
                                           "_eval_is_real": _eval_is_real, "_gradcli_rule": rule})
    _RULE_FUNCTIONS[rule] = cls
    return cls


# name -> build(sp, *args), from the one function table.
_SYMPY_FUNCTIONS: dict[str, Callable] = sympy_functions()
# The evaluation-only functions SymPy's derivatives use (from_sympy writes them), back to SymPy.
_FORMULA_ONLY_FUNCTIONS: dict[str, Callable] = {
    "sign": lambda sp, a: sp.sign(a), "dirac_delta": lambda sp, a: sp.DiracDelta(a),
    "heaviside": lambda sp, a: sp.Heaviside(a), "nan": lambda sp: sp.nan,
}


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
    # A root of such a residue (sqrt(x - y) at x = y: 1.3e-73, then 4e-78) is larger, but shrinks too as the
    # precision grows; a pole's value grows, and a true tiny value agrees at both precisions.
    if max(abs(first), abs(second)) < 1e-30 and abs(second) < 1e-3 * abs(first):
        return 0.0
    return None  # not stable under more precision: a singularity, not a number


def _real_float(expr, subs: dict, digits: int) -> float | None:
    import sympy as sp

    try:
        v = expr.evalf(digits, subs=subs)
    except ZeroDivisionError:  # mpmath divides by an exact zero (log(3, x) at x = 1): undefined there
        return None
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


def diff(expr, *by):
    """SymPy's derivative of ``expr`` by each symbol of ``by`` in turn: the one place gradcli differentiates
    symbolically (every command's exact column, check, descend's stationary points, steps)."""
    real_parts = _real_abs_and_sign(expr)
    if real_parts:
        expr = expr.xreplace(real_parts)
    for s in by:
        expr = _product_rule_diff(expr, s)
    if real_parts:
        expr = expr.replace(lambda e: type(e).__name__ in ("_RealAbs", "_RealSign"), _builtin_abs_or_sign)
    return expr


def _real_abs_and_sign(expr) -> dict:
    """``abs(u)`` and ``sign(u)`` whose argument SymPy cannot prove real (``asin(x)``, real only for |x| <= 1),
    each mapped to a stand-in differentiated as a real function (sign(u)*u', 2*DiracDelta(u)*u'): SymPy's own
    rule takes u complex and brings in re(u) and im(u), which gradcli cannot evaluate. The language is real:
    where u is not real, its value is undefined anyway."""
    import sympy as sp

    found = {}
    for e in sp.preorder_traversal(expr):
        if isinstance(e, (sp.Abs, sp.sign)) and e.args[0].is_extended_real is not True:
            found[e] = _stand_in("_RealAbs" if isinstance(e, sp.Abs) else "_RealSign")(*e.args)
    if found:  # nested ones: the stand-ins' arguments carry their own stand-ins
        found = {old: type(new)(new.args[0].xreplace(found)) for old, new in found.items()}
    return found


def _builtin_abs_or_sign(e):
    import sympy as sp

    return sp.Abs(e.args[0]) if type(e).__name__ == "_RealAbs" else sp.sign(e.args[0])


_REAL_STAND_INS: dict = {}


def _stand_in(name: str):
    """The SymPy function standing in for abs or sign while differentiating (built once, on first use)."""
    if name not in _REAL_STAND_INS:
        import sympy as sp

        if name == "_RealAbs":
            def fdiff(self, argindex=1):
                return _stand_in("_RealSign")(self.args[0])
        else:
            def fdiff(self, argindex=1):
                return 2 * sp.DiracDelta(self.args[0])
        _REAL_STAND_INS[name] = type(name, (sp.Function,), {"fdiff": fdiff, "is_real": True})
    return _REAL_STAND_INS[name]


def _product_rule_diff(expr, s):
    """``expr.diff(s)``, with sums and products taken apart here.

    SymPy differentiates a product of n factors by multiplying the factors back together pairwise,
    which costs ~30 ms for 60 factors; one ``Mul`` per term of the product rule is ~100x faster
    (the Hessian of x1*...*x60 takes 1830 such derivatives). Same result: SymPy's own rule, built once.
    """
    import sympy as sp

    if isinstance(expr, sp.Add):
        return sp.Add(*[_product_rule_diff(a, s) for a in expr.args if a.has(s)])
    if isinstance(expr, sp.Mul):
        args = list(expr.args)
        terms = []
        for i, a in enumerate(args):
            if a.has(s):
                d = _product_rule_diff(a, s)
                if d != 0:
                    terms.append(sp.Mul(*(args[:i] + [d] + args[i + 1:])))
        return sp.Add(*terms)
    return expr.diff(s)


def formula_text(expr) -> str:
    """The text every command prints for a formula: gradcli's own language, so that it can be pasted back
    (``e``, ``abs``, ``where``; :mod:`gradcli.methods.formula_text`)."""
    from gradcli.methods.formula_text import formula_text as in_the_language

    return in_the_language(expr)


@dataclass
class Formulas:
    """The exact derivatives, as trees to evaluate and as SymPy's text."""

    trees: dict[Hashable, Node] = field(default_factory=dict)
    texts: dict[Hashable, str] = field(default_factory=dict)
    # keys whose formula uses something gradcli cannot evaluate numerically (e.g. Piecewise)
    untranslatable: dict[Hashable, str] = field(default_factory=dict)


def differentiate(trees: list[Node], names: list[str], wanted: list[tuple[int, tuple[str, ...]]], *,
                  cancel=None) -> list[Formulas]:
    """For each tree, the derivatives named in ``wanted`` ((tree index, variables to differentiate by
    in turn)). Module-level with picklable arguments and result, so a forked worker can run it."""
    syms = symbols_for(names)
    exprs = [to_sympy(t, syms) for t in trees]
    out = [Formulas() for _ in trees]
    cache: dict[tuple[int, tuple[str, ...]], Any] = {}

    def derivative(i: int, path: tuple[str, ...]):
        if not path:
            return exprs[i]
        if (i, path) not in cache:
            cache[(i, path)] = diff(derivative(i, path[:-1]), syms[path[-1]])
        return cache[(i, path)]

    for i, path in wanted:
        if cancel is not None:
            cancel.check()  # a thread-run job past its deadline stops between derivatives
        d = derivative(i, path)
        out[i].texts[path] = formula_text(d)
        try:
            out[i].trees[path] = from_sympy(d)
        except _Untranslatable as exc:
            out[i].untranslatable[path] = str(exc)
    return out


class _Untranslatable(Exception):
    pass


# SymPy class name -> gradcli function name: the language's functions SymPy keeps as calls (from the
# function table), and the evaluation-only ones its derivatives use, which formula_backend() adds.
_FUNCTION_NAMES = {
    **sympy_class_names(),
    "sign": "sign", "DiracDelta": "dirac_delta", "Heaviside": "heaviside",
}


def from_sympy(expr) -> Node:
    """A gradcli tree computing SymPy's ``expr`` (so that NumPy can evaluate it; no ``lambdify``)."""
    import sympy as sp

    if expr.is_Symbol:
        return Var(expr.name)
    if expr is sp.pi:
        return Const("pi")
    if expr is sp.E:
        return Const("e")
    if expr.is_Rational:
        value = Fraction(int(expr.p), int(expr.q))
        return Num(value, str(value))
    if expr.is_Float:
        value = Fraction(float(expr))
        return Num(value, repr(float(expr)))
    if isinstance(expr, sp.exp):  # exp(x) is a Pow-like object in SymPy, not a Function call by name
        return Call("exp", (from_sympy(expr.args[0]),))
    if expr.is_Add:
        return Add(tuple((1, from_sympy(a)) for a in expr.args))
    if expr.is_Mul:
        return Mul(tuple((False, from_sympy(a)) for a in expr.args))
    if expr.is_Pow:
        return Pow(from_sympy(expr.base), from_sympy(expr.exp))
    rule = getattr(type(expr), "_gradcli_rule", None)
    if rule is not None:  # a custom rule's call: its body, so that every evaluator reads it as it is
        return inline_rules(RuleCall(rule.name, tuple(from_sympy(a) for a in expr.args), rule=rule))
    if isinstance(expr, sp.Piecewise):  # where(c1, e1, where(c2, e2, ...)); no branch left: undefined
        out: Node = Call("nan", ())
        for e, c in reversed(expr.args):
            out = from_sympy(e) if c is sp.true else Call("where", (_condition(c), from_sympy(e), out))
        return out
    if expr.is_Function:
        name = _FUNCTION_NAMES.get(type(expr).__name__)
        if name is None:
            raise _Untranslatable(f"{type(expr).__name__} has no numerical evaluation in gradcli")
        if name == "dirac_delta":  # DiracDelta(x, k), its k-th derivative: also zero away from 0
            return Call(name, (from_sympy(expr.args[0]),))
        return Call(name, tuple(from_sympy(a) for a in expr.args))
    if expr is sp.nan or expr is sp.zoo or expr is sp.oo or expr is -sp.oo:
        return Call("nan", ())
    raise _Untranslatable(f"{type(expr).__name__} has no numerical evaluation in gradcli")


_RELATIONS = {"StrictLessThan": "<", "LessThan": "<=", "StrictGreaterThan": ">", "GreaterThan": ">=",
              "Equality": "==", "Unequality": "!="}


def _condition(cond) -> Node:
    """A SymPy condition (a Piecewise's) as where's: comparisons joined by and, or, not."""
    import sympy as sp

    name = type(cond).__name__
    if name in _RELATIONS:
        return Call(_RELATIONS[name], (from_sympy(cond.lhs), from_sympy(cond.rhs)))
    if isinstance(cond, (sp.And, sp.Or)):
        op = "and" if isinstance(cond, sp.And) else "or"
        parts = [_condition(a) for a in cond.args]
        out = parts[0]
        for p in parts[1:]:
            out = Call(op, (out, p))
        return out
    if isinstance(cond, sp.Not):
        return Call("not", (_condition(cond.args[0]),))
    if cond is sp.true or cond is sp.false:
        zero = Num(Fraction(0), "0")
        return Call("==" if cond is sp.true else "!=", (zero, zero))
    raise _Untranslatable(f"the condition {cond} has no numerical evaluation in gradcli")


_BACKEND: Backend | None = None


def formula_backend() -> Backend:
    """NumPy float64 with the functions SymPy's derivatives use beyond the language (sign, ...)."""
    global _BACKEND
    if _BACKEND is None:
        import numpy as np

        base = numpy_backend("float64")
        nan = np.float64(math.nan)
        _BACKEND = Backend(
            name="numpy-float64-formulas", const=base.const, pow=base.pow, div=base.div,
            functions={
                **base.functions,
                "sign": np.sign,
                # zero away from 0, undefined at it (an impulse is no number)
                "dirac_delta": lambda x: np.where(x == 0, nan, 0.0),
                "heaviside": lambda x: np.heaviside(x, nan),
                "nan": lambda: nan,
            },
        )
    return _BACKEND


def evaluate(tree: Node, points: Mapping[str, Any], size: int):
    """``tree`` at every point, float64 array of shape [size] (NaN where undefined or not real)."""
    import numpy as np

    env = {k: np.asarray(v, dtype=np.float64) for k, v in points.items()}
    with np.errstate(all="ignore"):
        out = compile_expression(tree, formula_backend(), fold_constants=False)(env)
        return np.broadcast_to(np.asarray(out, dtype=np.float64), (size,)).copy()
