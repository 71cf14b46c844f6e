"""The expression language's tokens, and how deeply a token stream nests (measured before parsing, without
recursion, so that the parser's limit states the real depth)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradcli.errors import ParseError
from gradcli.expression.hints import describe_character

# ---------------------------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t]+)
  | (?P<num>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\*\*|<=|>=|==|!=|[-+*/^(),<>])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    kind: str  # "num" | "name" | "op" | "end"
    text: str
    pos: int


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    i = 0
    n = len(text)
    while i < n:
        m = _TOKEN.match(text, i)
        if m is None:
            raise ParseError(describe_character(text, i), source=text, position=i)
        kind = m.lastgroup
        if kind != "ws":
            tokens.append(Token(kind, m.group(), i))
        i = m.end()
    tokens.append(Token("end", "", n))
    return tokens



# The comparisons of where's condition: binary operators, like + and -, for the depth count.
COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_OPENERS_OF_AN_OPERAND = frozenset({"(", ",", "+", "-", "*", "/", "**", "^"}) | COMPARISONS


def written_depth(tokens: list[Token], limit: int) -> tuple[int, int]:
    """The deepest nesting the text has, counted as the parser counts it (a level per parenthesis group,
    function call, sign and exponent inside another), in one pass without recursion, and the position where
    it first goes past ``limit`` (else where it is deepest). Unbalanced text is measured as far as
    it goes; the parser says what is wrong with it."""
    # One frame per open parenthesis: the signs and exponents pending inside it. A sign or an exponent
    # lasts until a binary operator, ',' or ')' at its own parenthesis level (``-x*y`` is ``(-x)*y``).
    pending: list[int] = [0]
    signs_and_exponents = deepest = parens = 0  # signs_and_exponents == sum(pending)
    where = tokens[0].pos if tokens else 0
    previous: Token | None = None
    for tok in tokens:
        opens_operand = previous is None or (previous.kind == "op" and previous.text in _OPENERS_OF_AN_OPERAND)
        if tok.kind == "op" and tok.text == "(":
            parens += 1
            pending.append(0)
        elif tok.kind == "op" and tok.text in (")", ",") and parens:
            signs_and_exponents -= pending[-1]
            if tok.text == ")":
                parens -= 1
                pending.pop()
            else:
                pending[-1] = 0
        elif tok.kind == "op" and tok.text in ("+", "-") and opens_operand or tok.text in ("**", "^"):
            pending[-1] += 1
            signs_and_exponents += 1
        elif tok.kind == "op" and (tok.text in ("+", "-", "*", "/") or tok.text in COMPARISONS):
            signs_and_exponents -= pending[-1]
            pending[-1] = 0
        depth = parens + signs_and_exponents
        if depth > deepest:
            if deepest <= limit:
                where = tok.pos
            deepest = depth
        previous = tok
    return deepest, where
