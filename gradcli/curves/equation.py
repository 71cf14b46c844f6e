"""``"F = G"`` as gradcli reads it: each side parsed by gradcli's own parser (never evaluated as Python), and
F - G as the tree whose level curve through the point is differentiated. No "=" means F = 0."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradcli.errors import ParseError, UsageError
from gradcli.expression import Expression, parse
from gradcli.expression.tree import Add, Node

# A lone "=", not part of ==, <=, >= or !=
_EQUALS = re.compile(r"(?<![=<>!])=(?!=)")


@dataclass(frozen=True)
class Equation:
    text: str
    lhs: Expression
    rhs: Expression | None  # None: "F" alone, F = 0

    @property
    def tree(self) -> Node:
        """F - G."""
        if self.rhs is None:
            return self.lhs.tree
        return Add(((1, self.lhs.tree), (-1, self.rhs.tree)))

    @property
    def variables(self) -> list[str]:
        names = list(self.lhs.variables) + (list(self.rhs.variables) if self.rhs is not None else [])
        return list(dict.fromkeys(names))

    @property
    def difference_text(self) -> str:
        if self.rhs is None:
            return self.lhs.text
        return f"({self.lhs.text}) - ({self.rhs.text})"


def read_equation(text: str) -> Equation:
    """``text`` ("x**2 + y**2 = 1") as an :class:`Equation`; a parse error names its position in ``text``."""
    if not text.strip():
        raise UsageError("the equation is empty: give one like \"x**2 + y**2 = 1\"")
    signs = [m.start() for m in _EQUALS.finditer(text)]
    if len(signs) > 1:
        raise ParseError("an equation has one '=' (this one has several)", source=text, position=signs[1])
    if not signs:
        return Equation(text, _side(text, 0, text), None)
    at = signs[0]
    left, right = text[:at], text[at + 1:]
    if not left.strip() or not right.strip():
        raise ParseError("nothing on one side of '='", source=text, position=at)
    return Equation(text, _side(left, 0, text), _side(right, at + 1, text))


def _side(part: str, offset: int, whole: str) -> Expression:
    try:
        return parse(part)
    except ParseError as exc:
        position = None if exc.position is None else offset + exc.position
        raise ParseError(exc.message, source=whole, position=position) from None
