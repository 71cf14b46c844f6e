"""An expression's enclosure over a box, by interval arithmetic over gradcli's tree (custom rules inlined:
their bodies are the functions they stand for)."""

from __future__ import annotations

import math

from gradcli.expression.tree import CONSTANTS, Add, Call, Const, Mul, Neg, Node, Num, Pow, Var, inline_rules
from gradcli.uncertainty.interval import (EMPTY, INF, Interval, add, div, make, mul, neg, number, point,
                                          power_const)
from gradcli.uncertainty.interval_functions import call


def box(means: dict[str, float], sds: dict[str, float], k: float) -> dict[str, Interval]:
    """[μ - kσ, μ + kσ] for each input, rounded outward."""
    out = {}
    for name, mu in means.items():
        half = k * sds.get(name, 0.0)
        out[name] = point(mu) if half == 0 else make(mu - half, mu + half, ulps=1)
    return out


def enclose(tree: Node, variables: dict[str, Interval]) -> Interval:
    """An interval holding every value of ``tree`` with its variables in ``variables``."""
    return _walk(inline_rules(tree), variables)


def _walk(node: Node, env: dict[str, Interval]):
    if isinstance(node, Num):
        return number(node.value)
    if isinstance(node, Const):
        c = CONSTANTS[node.name]
        return Interval(math.nextafter(c, -INF), math.nextafter(c, INF))
    if isinstance(node, Var):
        return env[node.name]
    if isinstance(node, Neg):
        return neg(_walk(node.operand, env))
    if isinstance(node, Add):
        acc = _walk(node.terms[0][1], env)
        for sign, term in node.terms[1:]:
            value = _walk(term, env)
            acc = add(acc, value if sign > 0 else neg(value))
        return acc
    if isinstance(node, Mul):
        acc = _walk(node.factors[0][1], env)
        for divide, factor in node.factors[1:]:
            value = _walk(factor, env)
            acc = div(acc, value) if divide else mul(acc, value)
        return acc
    if isinstance(node, Pow):
        return power(_walk(node.base, env), _walk(node.exponent, env))
    if isinstance(node, Call):
        return call(node.func, [_walk(a, env) for a in node.args])
    raise TypeError(f"unknown node {node!r}")


def power(a: Interval, b: Interval) -> Interval:
    """a**b: a constant exponent (an integer exactly; the base's negative part undefined otherwise), or
    exp(b log a) over the base's positive part."""
    if a.empty or b.empty:
        return EMPTY
    if b.lo == b.hi:
        return power_const(a, b.lo)
    if a.hi < 0:
        return EMPTY
    positive = Interval(max(a.lo, 0.0), a.hi, a.undefined or a.lo < 0)
    result = call("exp", [mul(b, call("log", [positive]))])
    return Interval(max(result.lo, 0.0), result.hi, result.undefined or b.undefined)
