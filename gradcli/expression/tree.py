"""The expression tree every layer is built from (SymPy, NumPy, TensorFlow, the printed text), its
walkers, and the printer. Stdlib only: imported on every path, ``--help`` included."""

from __future__ import annotations

import math
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from types import MappingProxyType

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
class Rule:
    """A custom rule (``--rule "NAME(u, ...) = BODY; d/du = FORMULA; ..."``): a function of its own with the
    derivative it states. ``body`` and ``derivatives`` (one per parameter, in order) are trees over the
    parameters as variables. Made and checked by :mod:`gradcli.expression.rules`."""

    name: str
    params: tuple[str, ...]
    body: Node
    derivatives: tuple[Node, ...]
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class RuleCall(Call):
    """A call of a custom rule: the rule travels with the tree (a worker needs no registry to read it)."""

    rule: Rule = field(default=None, kw_only=True)  # type: ignore[assignment]


# The rules the parser reads as calls, in this context: the CLI's --rule for its one run; a Python API call's
# rule= for that call only, in its own thread's context (two threads with rules of one name each read their
# own). A worker thread runs in a copy of its caller's context (gradcli.methods.worker.BoundedJob).
_ACTIVE_RULES: ContextVar[Mapping[str, Rule]] = ContextVar("gradcli_active_rules", default=MappingProxyType({}))


def active_rules() -> Mapping[str, Rule]:
    return _ACTIVE_RULES.get()


def set_active_rules(rules) -> None:
    """Make ``rules`` (an iterable of :class:`Rule`) the ones the parser reads in this context; an empty one
    clears them."""
    _ACTIVE_RULES.set(MappingProxyType({r.name: r for r in rules}))


def map_children(node: Node, fn) -> Node:
    """``node`` rebuilt with ``fn`` applied to each child (a leaf as it is): the one place that knows how each
    kind of node holds its children, for every rewrite of a tree."""
    from dataclasses import replace

    if isinstance(node, Neg):
        return replace(node, operand=fn(node.operand))
    if isinstance(node, Add):
        return replace(node, terms=tuple((s, fn(t)) for s, t in node.terms))
    if isinstance(node, Mul):
        return replace(node, factors=tuple((d, fn(f)) for d, f in node.factors))
    if isinstance(node, Pow):
        return replace(node, base=fn(node.base), exponent=fn(node.exponent))
    if isinstance(node, Call):
        return replace(node, args=tuple(fn(a) for a in node.args))
    return node


def substitute(node: Node, values: dict[str, Node]) -> Node:
    """``node`` with each variable named in ``values`` replaced by its tree (a rule's body at its arguments)."""
    if isinstance(node, Var):
        return values.get(node.name, node)
    return map_children(node, lambda child: substitute(child, values))


def inline_rules(node: Node) -> Node:
    """``node`` with every rule call replaced by the rule's body at its arguments: the same function, written
    with the language's own functions (what fd's rounding bound and the value walkers read)."""
    if isinstance(node, RuleCall):
        args = [inline_rules(a) for a in node.args]
        return inline_rules(substitute(node.rule.body, dict(zip(node.rule.params, args))))
    return map_children(node, inline_rules)


def has_call(node: Node, name: str) -> bool:
    """Whether ``node`` calls ``name`` anywhere (rule bodies not included)."""
    return any(isinstance(n, Call) and n.func == name for n in walk(node))


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


# The operators of where's condition, as the function table names them, and how tightly each binds.
_CONDITION_PREC = {"or": 1, "and": 2, "not": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4}


def is_boolean(node: Node) -> bool:
    """A comparison or a logical operator: a truth value, never a number (where's condition)."""
    return isinstance(node, Call) and not isinstance(node, RuleCall) and node.func in _CONDITION_PREC


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
    if is_boolean(node):
        return _condition_text(node)
    if isinstance(node, Call):
        return f"{node.func}({', '.join(to_text(a) for a in node.args)})"
    raise TypeError(node)


def _condition_text(node: Call) -> str:
    prec = _CONDITION_PREC[node.func]

    def operand(child: Node) -> str:
        s = to_text(child)
        return f"({s})" if is_boolean(child) and _CONDITION_PREC[child.func] < prec else s

    if node.func == "not":
        return f"not {operand(node.args[0])}"
    return f"{operand(node.args[0])} {node.func} {operand(node.args[1])}"
