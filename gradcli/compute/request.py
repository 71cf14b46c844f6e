"""The checks every request passes once, whatever its points (``--at``, ``--points``, ``--grid``), its
format, or whether it is computed or printed as a program (``--show-code``): methods, dtype, step,
variables, order. One function per option, so that a refusal reads the same on every path."""

from __future__ import annotations

import math

from gradcli.dtypes import DTYPES
from gradcli.errors import UsageError
from gradcli.expression import Expression, parse
from gradcli.expression.points import wrt_without_value
from gradcli.results import METHODS

def parse_methods(text: str | None, *, allowed=METHODS) -> list[str]:
    """``symbolic,tape,fd`` (any subset, any order; ``all``) -> the methods in canonical order.

    No ``--method`` and ``all`` both mean the three standard columns; the complex step, an extra method for
    first derivatives only, runs only when named (so ``derivative --order 6`` needs no ``-m``)."""
    if text is None or text.strip().lower() == "all":
        return [m for m in allowed if m in METHODS]
    if not text.strip():
        raise UsageError(f"--method is empty: name one or more of {', '.join(allowed)}")
    chosen = []
    for part in text.split(","):
        name = part.strip().lower()
        if name == "complex" and name not in allowed:
            raise UsageError("--method complex (the complex step) gives first derivatives only: use it with "
                             "grad or derivative --order 1")
        if name not in allowed:
            raise UsageError(f"--method: unknown method '{part.strip()}' (choose from {', '.join(allowed)})")
        chosen.append(name)
    return [m for m in allowed if m in chosen]


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise UsageError(f"--dtype must be float64 or float32, not '{dtype}'")
    return dtype


def check_eps(eps: float | None) -> float | None:
    if eps is not None and (not math.isfinite(eps) or eps <= 0):
        raise UsageError(f"--eps must be a positive finite number, not {eps!r}")
    return eps


def parse_expressions(texts: list[str]) -> list[Expression]:
    if not texts:
        raise UsageError("give at least one expression, e.g. gradcli grad \"x**2\" --at x=3")
    return [parse(t) for t in texts]


def parse_wrt(wrt_text: str | None) -> list[str] | None:
    """``--wrt x1,x2`` -> the names in order; None when the option is not given (all variables).

    An empty ``--wrt ""`` is refused rather than read as "all": a script that builds the list and ends up
    with none would otherwise differentiate by every variable without a word."""
    if wrt_text is None:
        return None
    if not wrt_text.strip():
        raise UsageError("--wrt is empty: name the variables to differentiate by (e.g. --wrt x1,x2), or leave "
                         "--wrt out for all of them")
    return name_list("--wrt", wrt_text)


def resolve_wrt(wrt_text: str | None, point) -> list[str]:
    """The variables to differentiate by at one point (default: all, in ``--at`` order)."""
    wrt = parse_wrt(wrt_text)
    if wrt is None:
        return list(point.names)
    for name in wrt:
        if name not in point.values:
            raise wrt_without_value(name, point)
    return wrt


def needed_variables(exprs: list, wrt_text: str | None) -> tuple[list[str], list[str]]:
    """At many points: (every variable a point needs, the variables to differentiate by). Default: the
    expressions'."""
    names: list[str] = []
    for e in exprs:
        names += [v for v in e.variables if v not in names]
    wrt = parse_wrt(wrt_text)
    if wrt is None:
        if not names:
            raise UsageError("the expression has no variables, so nothing to differentiate at each point "
                             "(name the variables with --wrt)")
        return names, list(names)
    return names + [v for v in wrt if v not in names], wrt


def derivative_variable(wrt_text: str | None, expression_variables: list[str],
                        given: list[str] | None = None) -> str:
    """The one variable ``derivative`` differentiates by: ``--wrt``, else the expression's only variable
    (else, for an expression without variables, the only one ``given`` at the point)."""
    wrt = parse_wrt(wrt_text)
    if wrt is not None:
        if len(wrt) > 1:
            raise UsageError(f"derivative takes one variable: --wrt names {len(wrt)} ({', '.join(wrt)}); "
                             "grad and hessian take several")
        if given is not None and wrt[0] not in given and wrt[0] not in expression_variables:
            raise UsageError(f"--wrt {wrt[0]}: '{wrt[0]}' is not a variable of the expression (its variables: "
                             f"{', '.join(expression_variables) or 'none'}); name one of them with --wrt")
        return wrt[0]
    candidates = list(expression_variables) or list(given or [])
    if len(candidates) == 1:
        return candidates[0]
    raise UsageError(f"derivative takes one variable: the expression has {len(candidates)} "
                     f"({', '.join(candidates) or 'none'}); choose one with --wrt (the others stay fixed)")


def check_order(order: int, most: int) -> int:
    if not 1 <= order <= most:
        raise UsageError(f"--order must be between 1 and {most}, not {order}")
    return order


def name_list(option: str, text: str) -> list[str]:
    """A comma list of variable names for ``option``: neither empty nor with an empty or repeated name."""
    if not text.strip():
        raise UsageError(f"{option} is empty: name one or more variables (e.g. {option} x1,x2)")
    names: list[str] = []
    for part in text.split(","):
        name = part.strip()
        if not name:
            raise UsageError(f"{option}: empty name in '{text}'; write it as {option} x1,x2")
        if name in names:
            raise UsageError(f"{option}: '{name}' is given twice")
        names.append(name)
    return names


def resolve_constants(constants_text: str | None, watch_text: str | None, point,
                      wrt: list[str]) -> tuple[list[str], list[str]]:
    """``grad --constants`` and ``--watch`` at one point -> (constants, watched), both in ``wrt`` order.

    A constant is a variable the tape gets as ``tf.constant``: it keeps its row (symbolic and fd still
    differentiate by it), so it must be one of the variables differentiated by. ``--watch`` is
    ``tape.watch``, which only means something for a constant: a name outside ``--constants`` is refused
    rather than ignored, so a typo cannot pass for the guide's fix."""
    constants = name_list("--constants", constants_text) if constants_text is not None else []
    watch = name_list("--watch", watch_text) if watch_text is not None else []
    for name in constants:
        if name not in point.values:
            raise UsageError(f"--constants: '{name}' is not a variable of the point (--at gives "
                             f"{', '.join(point.names) or 'none'})")
        if name not in wrt:
            raise UsageError(f"--constants: '{name}' is not differentiated by (--wrt {','.join(wrt)}); a "
                             f"constant keeps its row, so add it to --wrt")
    for name in watch:
        if name not in constants:
            raise UsageError(f"--watch: '{name}' is not in --constants (tape.watch is for tf.constant inputs; "
                             f"a tf.Variable is watched already)")
    return [v for v in wrt if v in constants], [v for v in wrt if v in watch]


def refuse_constants_for_many(constants_text: str | None, watch_text: str | None, *, many: bool) -> None:
    """--constants/--watch are a one-point lesson: --points and --grid refuse them instead of silently
    watching every variable."""
    if many and (constants_text is not None or watch_text is not None):
        option = "--constants" if constants_text is not None else "--watch"
        raise UsageError(f"{option} works at one point: drop --points/--grid and give --at")
