"""An independent high-precision oracle for the tests (issue 8, "Done means").

A gradcli expression string is read with Python's own ``ast`` module (after two textual rewrites
the expression language needs: ``^`` is a power, and ``2x`` / ``3(x+1)`` multiply) and translated,
node by node over an allow-list, into an mpmath function. Nothing here imports gradcli: the oracle
must not share gradcli's parser, its SymPy path or its function table, or it would repeat their
mistakes. The names below mirror ``gradcli/expression/functions.py`` by hand; a name the oracle
does not know raises :class:`Unsupported` so that a caller can skip.

Values and derivatives are computed with mpmath at :data:`DIGITS` significant digits
(``mpmath.diff`` raises the working precision further for its own differences). A value that is not
real (``log(-1)``, ``sqrt(-2)``), a pole, or an overflow raises :class:`Undefined`.

Arguments: ``point`` maps each variable to a number. A ``str`` is read as an exact decimal (the point
as typed, what SymPy sees); a ``float`` is taken exactly as the binary number it is (the dtype's point).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence

import mpmath
from mpmath import mp

DIGITS = 60

Real = mpmath.mpf


class Unsupported(ValueError):
    """The expression uses syntax or a name the oracle does not translate: skip the comparison."""


class Undefined(ArithmeticError):
    """The value or a derivative is not a real number at the point."""


# ---------------------------------------------------------------------------------------------
# Names (mirroring gradcli/expression/functions.py; log(x, base): value first, base second)
# ---------------------------------------------------------------------------------------------
def _log(x, base=None):
    return mpmath.log(x) if base is None else mpmath.log(x) / mpmath.log(base)


FUNCTIONS: dict[str, tuple[Callable, tuple[int, ...]]] = {
    "sin": (mpmath.sin, (1,)), "cos": (mpmath.cos, (1,)), "tan": (mpmath.tan, (1,)),
    "sec": (mpmath.sec, (1,)), "csc": (mpmath.csc, (1,)), "cot": (mpmath.cot, (1,)),
    "asin": (mpmath.asin, (1,)), "acos": (mpmath.acos, (1,)), "atan": (mpmath.atan, (1,)),
    "sinh": (mpmath.sinh, (1,)), "cosh": (mpmath.cosh, (1,)), "tanh": (mpmath.tanh, (1,)),
    "asinh": (mpmath.asinh, (1,)), "acosh": (mpmath.acosh, (1,)), "atanh": (mpmath.atanh, (1,)),
    "exp": (mpmath.exp, (1,)),
    "log": (_log, (1, 2)), "ln": (mpmath.log, (1,)),
    "log2": (lambda x: mpmath.log(x, 2), (1,)), "log10": (mpmath.log10, (1,)),
    "sqrt": (mpmath.sqrt, (1,)), "abs": (mpmath.fabs, (1,)),
    "atan2": (mpmath.atan2, (2,)),  # atan2(y, x), as math.atan2
    "erf": (mpmath.erf, (1,)),
    "sigmoid": (lambda x: 1 / (1 + mpmath.exp(-x)), (1,)),
    # the model functions, from their textbook definitions (ties and kinks are no concern of an oracle that
    # is asked only at smooth points)
    "relu": (lambda x: x if x > 0 else 0 * x, (1,)),
    "softplus": (lambda x: mpmath.log(1 + mpmath.exp(x)), (1,)),
    "log1p": (lambda x: mpmath.log(1 + x), (1,)),
    "expm1": (lambda x: mpmath.exp(x) - 1, (1,)),
    "min": (lambda *a: min(a), tuple(range(2, 65))),
    "max": (lambda *a: max(a), tuple(range(2, 65))),
    "clip": (lambda x, lo, hi: max(min(x, hi), lo), (3,)),
    "logsumexp": (lambda *a: mpmath.log(mpmath.fsum(mpmath.exp(v) for v in a)), tuple(range(2, 65))),
    "where": (lambda c, a, b: a if c else b, (3,)),
}
# Comparisons and and/or/not: Python's, read only as where's first argument.
_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}
CONSTANTS: dict[str, Callable[[], object]] = {"pi": lambda: +mp.pi, "e": lambda: +mp.e}

# A number literal (as gradcli's tokenizer reads it) not inside a name such as x1.
# Atomic, so that "1e8x" is 1e8*x and "1e8" is never read back as 1*e8.
_NUMBER = r"(?<![A-Za-z_0-9.])((?>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?))"
# (a number before and/or/not in where's condition ends its comparison: no product there)
_IMPLICIT = re.compile(_NUMBER + r"\s*(?=(?!(?:and|or|not)\b)[A-Za-z_(])")


def _python_syntax(text: str) -> str:
    """gradcli's syntax as Python's: ``^`` -> ``**``, ``2x`` -> ``2*x``, ``3(x+1)`` -> ``3*(x+1)``."""
    return _IMPLICIT.sub(r"\1*", text.replace("^", "**"))


# ---------------------------------------------------------------------------------------------
# Translation: ast -> closure over a dict of mpf
# ---------------------------------------------------------------------------------------------
_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: mpmath.power(a, b),
}


def _translate(node: ast.AST) -> Callable[[dict], object]:
    if isinstance(node, ast.Expression):
        return _translate(node.body)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        op, left, right = _BINARY[type(node.op)], _translate(node.left), _translate(node.right)
        return lambda env: op(left(env), right(env))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _translate(node.operand)
        return (lambda env: -inner(env)) if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Name):
        name = node.id
        if name in CONSTANTS:
            return lambda env: CONSTANTS[name]()
        if name in FUNCTIONS:
            raise Unsupported(f"function {name} used as a value")
        return lambda env: env[name]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id not in FUNCTIONS:
            raise Unsupported(f"unknown function {node.func.id}")
        fn, arities = FUNCTIONS[node.func.id]
        if len(node.args) not in arities:
            raise Unsupported(f"{node.func.id} takes {arities} arguments")
        args = [_condition(a) if k == 0 and node.func.id == "where" else _translate(a)
                for k, a in enumerate(node.args)]
        return lambda env: fn(*(a(env) for a in args))
    raise Unsupported(f"syntax {type(node).__name__}")


def _condition(node: ast.AST) -> Callable[[dict], bool]:
    """where's condition: one comparison, or comparisons joined by and/or/not."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        op, left, right = _COMPARE[type(node.ops[0])], _translate(node.left), _translate(node.comparators[0])
        return lambda env: bool(op(left(env), right(env)))
    if isinstance(node, ast.BoolOp):
        parts = [_condition(v) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda env: all(p(env) for p in parts)
        return lambda env: any(p(env) for p in parts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _condition(node.operand)
        return lambda env: not inner(env)
    raise Unsupported(f"condition syntax {type(node).__name__}")


def _with_literals(text: str) -> tuple[str, dict[str, str]]:
    """Replace each number literal by a name so that it is read from its decimal text at full precision."""
    literals: dict[str, str] = {}

    def name_it(m: re.Match) -> str:
        key = f"_lit{len(literals)}"
        literals[key] = m.group(1)
        return key

    return re.sub(_NUMBER, name_it, text), literals


def variables(expr: str) -> tuple[str, ...]:
    """The expression's variables in order of first appearance (what ``--at`` names)."""
    text, literals = _with_literals(_python_syntax(expr))
    seen: list[str] = []
    for node in ast.walk(ast.parse(text, mode="eval")):
        if (isinstance(node, ast.Name) and node.id not in FUNCTIONS and node.id not in CONSTANTS
                and node.id not in literals and node.id not in seen):
            seen.append(node.id)
    # ast.walk is breadth-first: order by position in the text instead.
    return tuple(sorted(seen, key=lambda v: re.search(rf"(?<![A-Za-z_0-9]){v}(?![A-Za-z_0-9])", text).start()))


def translate(expr: str) -> Callable[[Mapping[str, object]], object]:
    """``f(env)`` computing ``expr`` in mpmath; ``env`` maps variable names to mpf."""
    text, literals = _with_literals(_python_syntax(expr))
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise Unsupported(f"not Python syntax: {exc.msg}") from None
    body = _translate(tree)

    def f(env: Mapping[str, object]):
        full = dict(env)
        full.update((k, mpmath.mpf(v)) for k, v in literals.items())
        return body(full)

    return f


# ---------------------------------------------------------------------------------------------
# Values and derivatives
# ---------------------------------------------------------------------------------------------
def _exact(value: object) -> Real:
    return mpmath.mpf(value) if isinstance(value, str) else mpmath.mpf(float(value))


def _real(value: object) -> Real:
    if isinstance(value, mpmath.mpc):
        if value.imag != 0:
            raise Undefined(f"not real: {value}")
        value = value.real
    if not mpmath.isfinite(value):
        raise Undefined(f"not finite: {value}")
    return value


def _guarded(fn: Callable[[], object]) -> Real:
    try:
        return _real(fn())
    except (ZeroDivisionError, ValueError, OverflowError) as exc:
        if isinstance(exc, Unsupported):
            raise
        raise Undefined(str(exc)) from None


def _positional(expr: str, names: Sequence[str]) -> Callable[..., object]:
    f = translate(expr)
    return lambda *xs: f(dict(zip(names, xs)))


def oracle_value(expr: str, point: Mapping[str, object]) -> Real:
    """``expr`` at ``point`` to :data:`DIGITS` digits."""
    f = translate(expr)
    with mp.workdps(DIGITS):
        return _guarded(lambda: f({k: _exact(v) for k, v in point.items()}))


def oracle_partial(expr: str, point: Mapping[str, object], orders: Mapping[str, int]) -> Real:
    """The mixed partial derivative of ``expr`` at ``point``: ``orders`` maps variables to how often."""
    names = list(point)
    f = _positional(expr, names)
    with mp.workdps(DIGITS):
        x = tuple(_exact(point[n]) for n in names)
        n = tuple(int(orders.get(v, 0)) for v in names)
        oracle_value(expr, point)  # the value must be defined too (TF: d log(x)/dx at -1 is -1)
        return _guarded(lambda: mpmath.diff(f, x, n))


def oracle_derivative(expr: str, var: str, point: Mapping[str, object], order: int = 1) -> Real:
    """d^order expr / d var^order at ``point``."""
    return oracle_partial(expr, point, {var: order})


def oracle_gradient(expr: str, point: Mapping[str, object], wrt: Sequence[str] | None = None) -> dict[str, Real]:
    """Partial derivatives of ``expr`` with respect to each of ``wrt`` (default: every variable of ``point``)."""
    return {v: oracle_partial(expr, point, {v: 1}) for v in (wrt or list(point))}


def oracle_hessian(expr: str, point: Mapping[str, object], wrt: Sequence[str] | None = None) -> list[list[Real]]:
    """The Hessian of ``expr`` over ``wrt`` (default: every variable of ``point``), rows in ``wrt``'s order."""
    names = list(wrt or list(point))
    out = [[mpmath.mpf(0)] * len(names) for _ in names]
    for i, a in enumerate(names):
        for j in range(i, len(names)):
            b = names[j]
            orders = {a: 2} if a == b else {a: 1, b: 1}
            out[i][j] = out[j][i] = oracle_partial(expr, point, orders)
    return out


def relative_error(approx: float, exact: Real) -> float:
    """|approx - exact| / max(|exact|, tiny): the error of a float against the oracle, as a float."""
    with mp.workdps(DIGITS):
        return float(abs(mpmath.mpf(approx) - exact) / max(abs(exact), mpmath.mpf("1e-300")))


__all__ = ["DIGITS", "Undefined", "Unsupported", "oracle_derivative", "oracle_gradient", "oracle_hessian",
           "oracle_partial", "oracle_value", "relative_error", "translate", "variables"]
