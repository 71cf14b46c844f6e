"""SymPy for a batch of points: differentiate once, evaluate the exact formulas at every point.

The derivatives are taken once, in SymPy, in a worker (see :mod:`gradcli.worker`: a forked process
killed at its deadline), and come back as gradcli expression trees (picklable, no SymPy needed to use
them). Each batch then evaluates those trees with NumPy in float64: "float64 of the exact formula",
which the JSON says (:data:`EVALUATION`). A single point on the command line keeps the 30-digit
evaluation of :mod:`gradcli.symbolic`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Hashable, Mapping

from gradcli import symbolic
from gradcli.evaluate import Backend, compile_expression, numpy_backend
from gradcli.expr import Add, Call, Const, Mul, Node, Num, Pow, Var
from gradcli.functions import sympy_class_names

EVALUATION = "float64 evaluation of the exact formula"

# What a derivative is, as a key: ("d", "x") first partial; ("d", "x", "y") second; ("d",) * ... order k
# of one variable is ("d", "x", "x", ...). The value itself is the key ().
Key = tuple


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
    from gradcli.hessian import product_rule_diff

    syms = symbolic.symbols_for(names)
    exprs = [symbolic.to_sympy(t, syms) for t in trees]
    out = [Formulas() for _ in trees]
    cache: dict[tuple[int, tuple[str, ...]], Any] = {}

    def derivative(i: int, path: tuple[str, ...]):
        if not path:
            return exprs[i]
        if (i, path) not in cache:
            cache[(i, path)] = product_rule_diff(derivative(i, path[:-1]), syms[path[-1]])
        return cache[(i, path)]

    for i, path in wanted:
        if cancel is not None:
            cancel.check()  # a thread-run job past its deadline stops between derivatives
        d = derivative(i, path)
        out[i].texts[path] = symbolic.formula_text(d)
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
