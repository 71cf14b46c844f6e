"""Constant sub-expressions the parser refuses: what would overflow float64 or make SymPy compute huge exact
numbers (``10**10**10``), found by evaluating them in float64, which is cheap."""

from __future__ import annotations

import math

from gradcli.errors import ParseError
from gradcli.expression.evaluate import PYTHON_FLOAT64, evaluate
from gradcli.expression.tree import Mul, Neg, Node, Num, Pow, Var, children, to_text

# A constant power whose exact value would have more digits than this is refused (SymPy would try).
MAX_EXACT_EXPONENT = 10_000


def check_constants(tree: Node, source: str) -> None:
    """Evaluate every constant sub-tree in float64 and refuse overflow before anything exact runs.

    ``10**10**10`` or ``exp(exp(exp(exp(1))))`` would make SymPy (which works exactly) compute for
    hours; their float64 value overflows, which is cheap to see.
    """

    def visit(node: Node) -> bool:
        """Return True when ``node`` holds no variable; refuse bad constants on the way up."""
        kids = children(node)
        flags = [visit(k) for k in kids]
        if isinstance(node, Var):
            return False
        if not all(flags):
            return False
        if isinstance(node, Pow):
            _check_exact_power(node, source)
        if (isinstance(node, Mul) and any(d and evaluate(f, {}, PYTHON_FLOAT64) == 0 for d, f in node.factors)) or (
                isinstance(node, Pow) and evaluate(node.base, {}, PYTHON_FLOAT64) == 0
                and evaluate(node.exponent, {}, PYTHON_FLOAT64) < 0):
            raise ParseError(f"division by zero in constant '{to_text(node)}'", source=source, position=node.pos)
        value = evaluate(node, {}, PYTHON_FLOAT64)
        # Refused as input (exit 2), like any other expression gradcli will not work with.
        if math.isinf(value):
            raise ParseError(f"constant '{to_text(node)}' overflows float64 or is infinite", source=source,
                             position=node.pos)
        if math.isnan(value):
            raise ParseError(f"constant '{to_text(node)}' is undefined (not a real number)", source=source,
                             position=node.pos)
        return True

    visit(tree)  # plain recursion is safe: the parser caps nesting at MAX_DEPTH


def _is_literal_unit(node: Node) -> bool:
    """0, 1 or -1 written as a plain literal: their powers are cheap even when exact."""
    if isinstance(node, Neg):
        node = node.operand
    return isinstance(node, Num) and node.value in (0, 1)


def _check_exact_power(node: Pow, source: str) -> None:

    exponent = evaluate(node.exponent, {}, PYTHON_FLOAT64)
    # Judged on the exact base: (1 + 10**-20) rounds to 1.0 in float64, but SymPy would expand it.
    if abs(exponent) > MAX_EXACT_EXPONENT and not _is_literal_unit(node.base):
        raise ParseError(
            f"constant power '{to_text(node)}' is too large to compute exactly (exponent over {MAX_EXACT_EXPONENT})",
            source=source, position=node.pos)
