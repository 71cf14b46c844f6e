"""The expression language's parser: a tokenizer and recursive-descent parser over an allow-list.

Nothing here calls ``eval``/``exec``/``sympify``: the text becomes a small tree of the node
classes below, and every other layer (SymPy, NumPy, TensorFlow) is built from that tree.
The parser also bounds the work hostile input can cause: text length, nesting depth, node
count, literal size, and constant sub-expressions whose float64 value overflows (``10**10**10``)
are refused here, before SymPy or TensorFlow sees anything.

Grammar (``^`` is a power, never XOR)::

    sum     := product (("+" | "-") product)*
    product := unary (("*" | "/") unary)*
    unary   := ("+" | "-") unary | power
    power   := atom (("**" | "^") unary)?        # right-associative; -x**2 == -(x**2)
    atom    := NUMBER [implicit] | NAME | NAME "(" sum ("," sum)* ")" | "where(" cond "," sum "," sum ")"
             | "(" sum ")"
    implicit:= a NAME or "(" right after a NUMBER: "2x" == 2*x, "3(x+1)" == 3*(x+1)

    cond    := conj ("or" conj)*                 # only as where's first argument
    conj    := neg ("and" neg)*
    neg     := "not" neg | "(" cond ")" | sum ("<" | "<=" | ">" | ">=" | "==" | "!=") sum

Comparisons and ``and``/``or``/``not`` exist only in where's condition: anywhere else they are a parse error
at their position (an expression is a number, never a truth value). Chained comparisons (``0 < x < 1``) are
refused: Python reads them as ``0 < x and x < 1``, most other languages as ``(0 < x) < 1``.
"""

from __future__ import annotations

import keyword
from fractions import Fraction

from gradcli.errors import ParseError
from gradcli.expression.constant_checks import check_constants
from gradcli.expression.functions import ARITIES, CANONICAL, OPERATORS
from gradcli.expression.hints import unknown_function
from gradcli.expression.tokens import COMPARISONS, Token, tokenize, written_depth  # noqa: F401 (Token: re-exported)
from gradcli.expression.tree import (CONSTANTS, Add, Call, Const, Expression, Mul, Neg, Node, Num, Pow, RuleCall, Var,
                                     active_rules, walk)
from gradcli.limits import EXPRESSION_MAX_CHARS

# Limits on hostile input; generous for anything a person types, and for a generated expression in --file
# (the command line takes 10,000 characters: gradcli.limits.COMMAND_LINE_EXPRESSION_MAX_CHARS).
MAX_LENGTH = EXPRESSION_MAX_CHARS
# Nesting as written: each parenthesis group, function call, sign and exponent inside another counts one
# level (``sin((x))`` is 2, ``-(-x)`` is 3, ``x^-y`` is 2). A level costs the parser about 5 Python frames and
# later layers (SymPy, the tape) a few more, well inside Python's recursion limit at 60.
MAX_DEPTH = 60
# Terms and operators: the most MAX_LENGTH characters hold (each costs ~7 us and ~350 bytes to parse). The
# work after parsing is bounded by each command's own estimate (gradcli.compute.work), not here.
MAX_NODES = 500_000
MAX_NUMBER_CHARS = 40
MAX_DECIMAL_EXPONENT = 308
MAX_NAME_LENGTH = 64
# Distinct variables an expression may have, and values a point may give (--at, --from): a gradient over
# 1,000 variables takes under 1.3 GB (measured); the Hessian and descend have their own, smaller limits
# (gradcli.expression.points.MAX_HESSIAN_VARIABLES, MAX_DESCENT_PAIRS).
MAX_VARIABLES = 1_000


# name -> allowed argument counts, from the one function table (gradcli.expression.functions), aliases included:
# ``ln(x)`` is read as ``log(x)``. Every backend implements the table's names (tests/test_functions.py).
FUNCTIONS: dict[str, tuple[int, ...]] = ARITIES
# Names a variable may not take: Python keywords (the --show-code program would not run) and the
# module name the generated programs use.
RESERVED = frozenset(keyword.kwlist) | {"tf", "math"}
# Other spellings of a constant, read as the constant itself (so every backend sees the one name): ``E`` is
# Euler's number, as in SymPy, whose formulas a user pastes in; never a variable.
CONSTANT_SPELLINGS = {"E": "e"}


# ---------------------------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0
        self.nodes = 0
        self.exponent_depth = 0  # inside an exponent, "2y" is ambiguous (x^2y: x^(2y) or x^2*y?)

    # helpers -------------------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def error(self, message: str, pos: int | None = None) -> ParseError:
        return ParseError(message, source=self.text, position=self.tok.pos if pos is None else pos)

    def take(self) -> Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def at_op(self, *ops: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in ops

    def count(self) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.error(f"expression too large (more than {MAX_NODES:,} terms and operators)")

    def enter(self) -> None:
        # parse() has measured the nesting already (written_depth); this is the guard against recursion
        # should the two ever disagree.
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"expression nested too deeply (more than {MAX_DEPTH} levels of parentheses, "
                             f"calls, signs and powers)")

    def leave(self) -> None:
        self.depth -= 1

    # grammar -------------------------------------------------------------------------------
    def parse(self) -> Node:
        if not self.text.strip():
            raise ParseError("empty expression", source=self.text, position=0)
        depth, position = written_depth(self.tokens, MAX_DEPTH)
        if depth > MAX_DEPTH:
            raise self.error(f"expression nested too deeply: {depth} levels (parentheses, function calls, signs "
                             f"and powers count one level each); the limit is {MAX_DEPTH}", position)
        node = self.sum()
        if self.tok.kind != "end":
            raise self.unexpected()
        return node

    def unexpected(self) -> ParseError:
        t = self.tok
        if t.kind == "end":
            return self.error("unexpected end of expression")
        if t.kind == "op" and t.text == ")":
            return self.error("unmatched ')'")
        if t.kind == "op" and t.text == ",":
            return self.error("unexpected ','; commas separate function arguments only")
        if t.kind == "op" and t.text in COMPARISONS:
            return self.error(f"comparison '{t.text}' outside where's condition: comparisons are read only in "
                              f"where(condition, a, b), e.g. where(x > 0, x, 0)")
        if t.kind == "name" and t.text in ("and", "or", "not"):
            return self.error(f"'{t.text}' outside where's condition: and, or, not combine comparisons only in "
                              f"where(condition, a, b)")
        if t.kind == "name" and t.text in ("if", "for", "lambda", "in", "is"):
            return self.error(f"'{t.text}' is not allowed: only arithmetic expressions are read")
        return self.error(f"expected an operator before {t.text!r}")

    def sum(self) -> Node:
        start = self.tok.pos
        terms = [(1, self.product())]
        while self.at_op("+", "-"):
            sign = 1 if self.take().text == "+" else -1
            self.count()
            terms.append((sign, self.product()))
        return terms[0][1] if len(terms) == 1 else Add(tuple(terms), pos=start)

    def product(self) -> Node:
        start = self.tok.pos
        factors = [(False, self.unary())]
        while self.at_op("*", "/"):
            divide = self.take().text == "/"
            self.count()
            factors.append((divide, self.unary()))
        return factors[0][1] if len(factors) == 1 else Mul(tuple(factors), pos=start)

    def unary(self) -> Node:
        if self.at_op("-", "+"):
            t = self.take()
            self.count()
            self.enter()
            operand = self.unary()
            self.leave()
            return Neg(operand, pos=t.pos) if t.text == "-" else operand
        return self.power()

    def power(self) -> Node:
        base = self.atom()
        if self.at_op("**", "^"):
            t = self.take()
            self.count()
            self.enter()
            self.exponent_depth += 1
            exponent = self.unary()
            self.exponent_depth -= 1
            self.leave()
            return Pow(base, exponent, pos=t.pos)
        return base

    def atom(self) -> Node:
        t = self.tok
        self.count()
        if t.kind == "num":
            self.take()
            num = self.number(t)
            self.refuse_exponent_without_digits(t)
            # Implicit multiplication: a number directly followed by a name or "(".
            if self.tok.kind == "name" and self.tok.text not in ("and", "or", "not") or self.at_op("("):
                if self.exponent_depth:
                    nxt = self.tok.text
                    raise self.error(f"ambiguous implicit multiplication in an exponent: write "
                                     f"^({t.text}*{nxt}) or ^{t.text}*{nxt}")
                self.count()
                return Mul(((False, num), (False, self.power())), pos=t.pos)
            return num
        if t.kind == "name" and t.text in ("and", "or", "not"):
            raise self.unexpected()
        if t.kind == "name":
            self.take()
            return self.name(t)
        if self.at_op("("):
            self.take()
            self.enter()
            saved, self.exponent_depth = self.exponent_depth, 0
            inner = self.sum()
            self.exponent_depth = saved
            self.leave()
            if not self.at_op(")"):
                if self.tok.kind == "end":
                    raise self.error("missing ')' for the '(' here", t.pos)
                raise self.unexpected()
            self.take()
            return inner
        if t.kind == "end":
            raise self.error("unexpected end of expression")
        raise self.error(f"unexpected {t.text!r}")

    # where's condition ---------------------------------------------------------------------
    def at_word(self, word: str) -> bool:
        return self.tok.kind == "name" and self.tok.text == word

    def condition(self) -> Node:
        node = self.conjunction()
        while self.at_word("or"):
            t = self.take()
            self.count()
            node = Call("or", (node, self.conjunction()), pos=t.pos)
        return node

    def conjunction(self) -> Node:
        node = self.negation()
        while self.at_word("and"):
            t = self.take()
            self.count()
            node = Call("and", (node, self.negation()), pos=t.pos)
        return node

    def negation(self) -> Node:
        if self.at_word("not"):
            t = self.take()
            self.count()
            self.enter()
            operand = self.negation()
            self.leave()
            return Call("not", (operand,), pos=t.pos)
        if self.at_op("("):
            # "(x > 0 or y > 0)" is a condition in parentheses, "(x + 1) > 0" a comparison of a sum: try the
            # first, and read a sum where it is not one (each level tries once: linear in the nesting).
            saved = (self.i, self.nodes, self.depth, self.exponent_depth)
            try:
                self.take()
                self.enter()
                inner = self.condition()
                self.leave()
                if self.at_op(")"):
                    self.take()
                    if not (self.tok.kind == "op" and self.tok.text not in (")", ",")):
                        return inner
            except ParseError:
                pass
            self.i, self.nodes, self.depth, self.exponent_depth = saved
        return self.comparison()

    def comparison(self) -> Node:
        left = self.sum()
        if not (self.tok.kind == "op" and self.tok.text in COMPARISONS):
            raise self.error("where's condition must be a comparison (<, <=, >, >=, ==, !=), or comparisons "
                             "combined with and, or, not: e.g. where(x > 0, x, 0)")
        t = self.take()
        self.count()
        right = self.sum()
        if self.tok.kind == "op" and self.tok.text in COMPARISONS:
            raise self.error(f"chained comparison: write it with 'and' (a {t.text} b and b {self.tok.text} c)")
        return Call(OPERATORS[t.text], (left, right), pos=t.pos)

    def number(self, t: Token) -> Num:
        text = t.text
        if len(text) > MAX_NUMBER_CHARS:
            raise self.error(f"number too long (more than {MAX_NUMBER_CHARS} characters)", t.pos)
        mantissa, _, exp = text.lower().partition("e")
        if exp and abs(int(exp)) > MAX_DECIMAL_EXPONENT + 20:
            raise self.error(f"number {text} is out of float64 range (about 5e-324 to 1.8e308)", t.pos)
        value = Fraction(text)
        if abs(value) > FLOAT64_LARGEST:
            raise self.error(f"number {text} is out of float64 range (largest 1.8e308)", t.pos)
        # Subnormals (down to 5e-324) are float64 numbers like any other, as 1e-300/1e10 is; only a literal
        # that rounds to 0 is refused, since it would not be the number typed.
        if value and float(value) == 0:
            raise self.error(f"number {text} is out of float64 range: it rounds to 0 (smallest 5e-324)", t.pos)
        return Num(value, text, pos=t.pos)

    def refuse_exponent_without_digits(self, t: Token) -> None:
        """``1e`` (or ``2*1e``, ``1.5E+x``): the tokenizer reads a number and the name ``e``, which would be
        1*e = 2.718... silently. A number written right against a lone ``e``/``E`` is refused instead."""
        nxt = self.tok
        if (nxt.kind == "name" and nxt.text in ("e", "E") and nxt.pos == t.pos + len(t.text)
                and "e" not in t.text.lower()):
            raise self.error(f"'{t.text}{nxt.text}' has no exponent digits: did you mean {t.text}{nxt.text}0 "
                             f"or {t.text}*{nxt.text}?", nxt.pos)

    def name(self, t: Token) -> Node:
        name = t.text
        if self.at_op("("):
            rule = active_rules().get(name)
            if rule is not None and name not in FUNCTIONS:
                return self.rule_call(t, rule)
            if name not in FUNCTIONS:
                raise self.error(unknown_function(name, list(FUNCTIONS)), t.pos)
            self.take()
            self.enter()
            saved, self.exponent_depth = self.exponent_depth, 0
            args = [self.condition() if name == "where" else self.sum()]
            while self.at_op(","):
                self.take()
                args.append(self.sum())
            self.exponent_depth = saved
            self.leave()
            if not self.at_op(")"):
                if self.tok.kind == "end":
                    raise self.error(f"missing ')' to close {name}(", t.pos)
                if self.tok.kind == "op" and self.tok.text == "=":
                    raise self.error("keyword arguments are not allowed")
                raise self.unexpected()
            self.take()
            arities = FUNCTIONS[name]
            if len(args) not in arities:
                want = (f"{arities[0]} to {arities[-1]}" if len(arities) > 2 and arities == tuple(
                    range(arities[0], arities[-1] + 1)) else " or ".join(str(a) for a in arities))
                raise self.error(f"{name}() takes {want} argument{'s' if arities != (1,) else ''}, got {len(args)}", t.pos)
            return Call(CANONICAL.get(name, name), tuple(args), pos=t.pos)
        if name in FUNCTIONS or name in active_rules():
            nxt = self.tok  # "sin x": the argument is there, its parentheses are not
            call = f"{name}({nxt.text})" if nxt.kind in ("name", "num") and nxt.text not in ("and", "or", "not") \
                else f"{name}(...)"
            raise self.error(f"'{name}' is a function: call it as {call}, it cannot be a variable", t.pos)
        if name in CONSTANTS or name in CONSTANT_SPELLINGS:
            return Const(CONSTANT_SPELLINGS.get(name, name), pos=t.pos)
        check_variable_name(name, source=self.text, position=t.pos)
        return Var(name, pos=t.pos)

    def rule_call(self, t: Token, rule) -> Node:
        """A call of a custom rule (``--rule``): its arguments are sums, as a function's."""
        self.take()
        self.enter()
        saved, self.exponent_depth = self.exponent_depth, 0
        args = [self.sum()]
        while self.at_op(","):
            self.take()
            args.append(self.sum())
        self.exponent_depth = saved
        self.leave()
        if not self.at_op(")"):
            if self.tok.kind == "end":
                raise self.error(f"missing ')' to close {t.text}(", t.pos)
            raise self.unexpected()
        self.take()
        if len(args) != len(rule.params):
            n = len(rule.params)
            raise self.error(f"{t.text}() takes {n} argument{'s' if n != 1 else ''} (its --rule), got {len(args)}",
                             t.pos)
        return RuleCall(t.text, tuple(args), rule=rule, pos=t.pos)


FLOAT64_LARGEST = 1.7976931348623157e308
def check_variable_name(name: str, *, source: str | None = None, position: int | None = None) -> None:
    """Refuse names that cannot be a gradcli variable (the caller has checked the character set)."""
    if name in FUNCTIONS:
        raise ParseError(f"'{name}' is a function and cannot be a variable", source=source, position=position)
    if name in CONSTANTS:
        raise ParseError(f"'{name}' is a constant and cannot be a variable", source=source, position=position)
    if name in CONSTANT_SPELLINGS:
        raise ParseError(f"'{name}' is the constant {CONSTANT_SPELLINGS[name]} (Euler's number, 2.718...) and cannot be "
                         f"a variable", source=source, position=position)
    if name in RESERVED:
        raise ParseError(f"'{name}' is a reserved word and cannot be a variable (try '{name}_')",
                         source=source, position=position)
    if name.startswith("__"):
        raise ParseError(f"names starting with '__' are not allowed: '{name}'", source=source, position=position)
    if len(name) > MAX_NAME_LENGTH:
        raise ParseError(f"variable name longer than {MAX_NAME_LENGTH} characters", source=source, position=position)


def parse(text: str) -> Expression:
    """Parse ``text`` into an :class:`Expression`, or raise :class:`ParseError` saying what and where."""
    if len(text) > MAX_LENGTH:
        raise ParseError(f"expression longer than {MAX_LENGTH:,} characters")
    tree = _Parser(text).parse()
    check_constants(tree, text)
    variables = _variables(tree)
    if len(variables) > MAX_VARIABLES:
        raise ParseError(f"expression has {len(variables):,} variables; the limit is {MAX_VARIABLES:,}")
    return Expression(tree, text, tuple(variables))


def _variables(tree: Node) -> list[str]:
    seen: dict[str, None] = {}
    for node in walk(tree):
        if isinstance(node, Var):
            seen.setdefault(node.name, None)
    return list(seen)
