"""The expression tree every layer is built from (SymPy, NumPy, TensorFlow, the printed text), its
walkers, and the printer. Stdlib only: imported on every path, ``--help`` included."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

CONSTANTS = {"pi": math.pi, "e": math.e}


# ---------------------------------------------------------------------------------------------
# The tree
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Node:
    pos: int = field(default=0, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Num(Node):
    value: Fraction
    text: str


@dataclass(frozen=True)
class Const(Node):
    name: str  # "pi" | "e"


@dataclass(frozen=True)
class Var(Node):
    name: str


@dataclass(frozen=True)
class Neg(Node):
    operand: Node


@dataclass(frozen=True)
class Add(Node):
    """A flat sum: ``terms`` are (sign, node) with sign +1 or -1; the first sign is always +1."""

    terms: tuple[tuple[int, Node], ...]


@dataclass(frozen=True)
class Mul(Node):
    """A flat product: ``factors`` are (divide, node); the first is never a divisor."""

    factors: tuple[tuple[bool, Node], ...]


@dataclass(frozen=True)
class Pow(Node):
    base: Node
    exponent: Node


@dataclass(frozen=True)
class Call(Node):
    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Expression:
    """A parsed expression: its tree, the text it came from, and its variables in order of appearance."""

    tree: Node
    source: str
    variables: tuple[str, ...]

    @cached_property  # printed once: a batch writes it into every record
    def text(self) -> str:
        """The expression as gradcli read it: explicit operators, normalised spacing."""
        return to_text(self.tree)

    def __str__(self) -> str:
        return self.text


def walk(node: Node):
    """Every node of the tree, parents before children (iterative: no recursion limit)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Neg):
        return (node.operand,)
    if isinstance(node, Add):
        return tuple(t for _, t in node.terms)
    if isinstance(node, Mul):
        return tuple(f for _, f in node.factors)
    if isinstance(node, Pow):
        return (node.base, node.exponent)
    if isinstance(node, Call):
        return node.args
    return ()


def is_constant(node: Node) -> bool:
    return not any(isinstance(n, Var) for n in walk(node))


# ---------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------
_PREC = {Add: 1, Mul: 2, Neg: 3, Pow: 4}


def _prec(node: Node) -> int:
    return _PREC.get(type(node), 5)


def to_text(node: Node) -> str:
    """Print the tree with explicit operators: ``2x^2`` reads back as ``2*x**2``."""
    if isinstance(node, Num):
        v = node.value
        # "1e300" stays as typed, not 301 digits; "2.0" reads back as "2".
        return str(v.numerator) if v.denominator == 1 and "e" not in node.text.lower() else node.text
    if isinstance(node, (Const, Var)):
        return node.name
    if isinstance(node, Neg):
        inner = to_text(node.operand)
        return f"-{inner}" if _prec(node.operand) > _PREC[Neg] else f"-({inner})"
    if isinstance(node, Add):
        out = []
        for k, (sign, term) in enumerate(node.terms):
            s = to_text(term)
            if _prec(term) <= _PREC[Add] and k > 0 and sign < 0:
                s = f"({s})"
            if isinstance(term, Neg) and k > 0:
                s = f"({s})"
            out.append(s if k == 0 else (" + " if sign > 0 else " - ") + s)
        return "".join(out)
    if isinstance(node, Mul):
        out = []
        for k, (divide, factor) in enumerate(node.factors):
            s = to_text(factor)
            needs = _prec(factor) < _PREC[Mul] or (_prec(factor) == _PREC[Mul] and k > 0)
            if isinstance(factor, Neg) and k > 0:  # a leading minus binds tighter than '*' anyway
                needs = True
            out.append(("" if k == 0 else ("/" if divide else "*")) + (f"({s})" if needs else s))
        return "".join(out)
    if isinstance(node, Pow):
        b, e = to_text(node.base), to_text(node.exponent)
        if _prec(node.base) <= _PREC[Pow]:
            b = f"({b})"
        if _prec(node.exponent) < _PREC[Pow] and not isinstance(node.exponent, Neg):
            e = f"({e})"
        return f"{b}**{e}"
    if isinstance(node, Call):
        return f"{node.func}({', '.join(to_text(a) for a in node.args)})"
    raise TypeError(node)
