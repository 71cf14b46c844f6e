"""Points: ``--at x1=2,x2=3`` (values may be constant expressions: ``x=pi/4``), and values with a standard
deviation, ``x=2±0.1`` or ``x=2+-0.1``, which only propagation takes (every other command refuses them)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from gradcli.errors import GradcliError, UsageError, number_text
from gradcli.expression.evaluate import PYTHON_FLOAT64, evaluate
from gradcli.expression.hints import glued_call
from gradcli.expression.parser import MAX_VARIABLES, check_variable_name, parse
from gradcli.expression.tree import Node, to_text

# Words float() takes for non-finite numbers: refused as values everywhere.
NON_FINITE_WORDS = ("nan", "inf", "infinity")


class NotAConstant(Exception):
    """Why a text is not a finite constant. ``kind``: "non-finite" (nan/inf, written out or computed),
    "syntax" (``error`` is the parser's GradcliError) or "variable" (``variable`` names the first one)."""

    def __init__(self, kind: str, *, error: GradcliError | None = None, variable: str | None = None):
        super().__init__(kind)
        self.kind, self.error, self.variable = kind, error, variable


def read_constant(text: str) -> tuple[Node, float]:
    """A number or constant expression (``0.1``, ``pi/4``, ``atan2(1,2)``): its tree and its float64 value.
    The one reader behind --at, --grid's bounds and the cells of --points; raises :class:`NotAConstant`."""
    if text.strip().lstrip("+-").lower() in NON_FINITE_WORDS:
        raise NotAConstant("non-finite")
    try:
        expr = parse(text)
    except GradcliError as exc:
        raise NotAConstant("syntax", error=exc) from None
    if expr.variables:
        raise NotAConstant("variable", variable=expr.variables[0])
    try:
        value = float(evaluate(expr.tree, {}, PYTHON_FLOAT64))
    except (ArithmeticError, ValueError):  # PYTHON_FLOAT64 returns inf/nan instead; belt and braces
        value = math.nan
    if not math.isfinite(value):
        raise NotAConstant("non-finite")
    return expr.tree, value


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# "x=1 y=2": a space, then the next name=, where a comma belongs
_SPACE_BEFORE_COORDINATE = re.compile(r"(?<=[^\s,])\s+(?=[A-Za-z_][A-Za-z0-9_]*\s*=(?!=))")


@dataclass(frozen=True)
class Point:
    """Values for variables, in the order the user gave them.

    ``values`` are float64 (what the numerical methods start from); ``exact`` are the parsed value
    trees, so that the symbolic reference is evaluated at exactly what was typed (``pi/4``, ``0.1``).
    """

    values: dict[str, float]
    exact: dict[str, Node]
    # standard deviations typed with the values (x=2±0.1): only where parse_point was asked for them
    sd: dict[str, float] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.values)

    def text(self) -> str:
        return ",".join(f"{k}={to_text(v)}" for k, v in self.exact.items())


def split_top_level(text: str) -> list[tuple[int, str]]:
    """Split on commas outside parentheses (``x=atan2(1,2),y=3`` has two pairs). Returns (offset, piece)."""
    pieces: list[tuple[int, str]] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            pieces.append((start, text[start:i]))
            start = i + 1
    pieces.append((start, text[start:]))
    return pieces


# "2±0.1" and "2+-0.1": a value and its standard deviation
UNCERTAINTY_SIGNS = ("±", "+-")


def split_uncertainty(text: str) -> tuple[str, str | None, int]:
    """``text`` as (value text, standard deviation text or None, offset of the sign): the first ``±`` or
    ``+-`` outside parentheses."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and (ch == "±" or text.startswith("+-", i)):
            width = 1 if ch == "±" else 2
            return text[:i], text[i + width:], i
    return text, None, -1


def has_uncertainty(specs: list[str] | str | None) -> bool:
    """Whether any ``name=value`` of ``specs`` gives a standard deviation (``x=2±0.1``)."""
    if isinstance(specs, str):
        specs = [specs]
    return any(split_uncertainty(piece.partition("=")[2])[1] is not None
               for spec in (specs or []) if spec for _, piece in split_top_level(spec))


def _no_uncertainty_here(option: str, name: str, spec: str, position: int) -> UsageError:
    return UsageError(f"{option}: {name} is given with an uncertainty (±); only gradcli propagate (and eval, "
                      f"which hands it to propagate) takes one: give {name}'s value alone here", source=spec,
                      position=position)


def parse_point(specs: list[str] | str | None, *, option: str = "--at", required: bool = True,
                uncertain: bool = False) -> Point:
    """Parse one or more ``name=value,...`` strings into a :class:`Point`. ``uncertain``: a value may carry a
    standard deviation (``x=2±0.1``, ``x=2+-0.1``: ``sd``); otherwise one is refused (exit 2), never ignored."""
    if isinstance(specs, str):
        specs = [specs]
    specs = [s for s in (specs or []) if s is not None]
    values: dict[str, float] = {}
    exact: dict[str, Node] = {}
    sds: dict[str, float] = {}
    for spec in specs:
        if not spec.strip():
            raise UsageError(f"{option} is empty; write it as {option} x=1,y=2")
        space = _SPACE_BEFORE_COORDINATE.search(spec)
        if space is not None:
            fixed = _SPACE_BEFORE_COORDINATE.sub(",", spec.strip())
            raise UsageError(f"{option}: separate the coordinates with commas: {option} {fixed}", source=spec,
                             position=space.start())
        for offset, piece in split_top_level(spec):
            if not piece.strip():
                raise UsageError(f"{option}: empty entry; write it as {option} x=1,y=2", source=spec, position=offset)
            name, eq, value_text = piece.partition("=")
            name = name.strip()
            if not eq:
                raise UsageError(f"{option}: '{piece.strip()}' is not of the form name=value", source=spec, position=offset)
            if not _NAME.match(name):
                raise UsageError(f"{option}: '{name}' is not a variable name", source=spec, position=offset)
            try:
                check_variable_name(name)
            except GradcliError as exc:
                raise UsageError(f"{option}: {exc.message}", source=spec, position=offset) from None
            if name in values:
                raise UsageError(f"{option}: '{name}' is given twice", source=spec, position=offset)
            value_offset = offset + len(piece.partition("=")[0]) + 1
            value_text, sd_text, sign = split_uncertainty(value_text)
            if sd_text is not None:
                if not uncertain:
                    raise _no_uncertainty_here(option, name, spec, value_offset + sign)
                sds[name] = _read_sd(option, name, sd_text, spec, value_offset + sign + 1)
            try:
                tree, value = read_constant(value_text)
            except NotAConstant as why:
                if why.kind == "syntax":
                    pos = None if why.error.position is None else value_offset + why.error.position
                    raise UsageError(f"{option}: value of {name}: {why.error.message}", source=spec,
                                     position=pos) from None
                if why.kind == "variable":
                    raise UsageError(f"{option}: value of {name} must be a number or constant expression, "
                                     f"not one using '{why.variable}'", source=spec, position=value_offset) from None
                if value_text.strip().lstrip("+-").lower() in NON_FINITE_WORDS:
                    raise UsageError(f"{option}: value of {name} must be a finite number, not {value_text.strip()}",
                                     source=spec, position=value_offset) from None
                raise UsageError(f"{option}: value of {name} is not a finite number", source=spec,
                                 position=value_offset) from None
            values[name] = value
            exact[name] = tree
    if required and not values:
        raise UsageError(f"{option} is required: give a value for every variable, e.g. {option} x=1")
    check_variable_count(len(values), option=option)
    return Point(values, exact, sds)


def _read_sd(option: str, name: str, text: str, spec: str, position: int) -> float:
    """A standard deviation: a finite constant >= 0."""
    try:
        _, sd = read_constant(text)
    except NotAConstant as why:
        detail = why.error.message if why.kind == "syntax" else "must be a finite number"
        raise UsageError(f"{option}: standard deviation of {name}: {detail}", source=spec, position=position) from None
    if sd < 0:
        raise UsageError(f"{option}: standard deviation of {name} must be >= 0, not {number_text(sd)}", source=spec,
                         position=position)
    return sd


# The Hessian has n^2 entries, each computed by three methods (n copies of the point on the tape, 2n^2 fd
# stencil points, n^2 SymPy derivatives): 100 variables took 0.8 GB, 200 took 1.7 GB and 500 5.8 GB.
MAX_HESSIAN_VARIABLES = 100


def check_variable_count(count: int, *, option: str = "--at") -> None:
    """A point gives at most MAX_VARIABLES values (exit 2 above it, saying how many and the limit)."""
    if count > MAX_VARIABLES:
        raise UsageError(f"{option} gives {count:,} variables; the limit is {MAX_VARIABLES:,}")


# A descent keeps a variable (and each Keras optimizer its slots) per variable and optimizer, and compiles a
# loop per optimizer. Peak resident memory of gradcli and its SymPy worker, 1,000 steps of sum(x_i**2): 1,000
# variables with adam 2.04 GiB (over the ~2 GB bound: the limit was 1,000 pairs), 500 with adam 1.35 GiB,
# 76 with all 13 optimizers 1.23 GiB; 200 with all 13 took 2.1 GB.
MAX_DESCENT_PAIRS = 500


def check_descent_size(variables: int, optimizers: int) -> None:
    """At most MAX_DESCENT_PAIRS variables x optimizers (exit 2 above it, saying how many and the limit)."""
    if variables * optimizers > MAX_DESCENT_PAIRS:
        raise UsageError(f"descend: {variables:,} variables x {optimizers} optimizer{'s' if optimizers != 1 else ''} "
                         f"is {variables * optimizers:,} "
                         f"variable-optimizer pairs; the limit is {MAX_DESCENT_PAIRS:,} (race fewer optimizers, or "
                         f"descend on fewer variables)")


def check_hessian_size(wrt: list[str] | tuple[str, ...], *, wrt_given: bool) -> None:
    """A Hessian over at most MAX_HESSIAN_VARIABLES variables (exit 2 above it, saying how many and the limit)."""
    if len(wrt) > MAX_HESSIAN_VARIABLES:
        source = "--wrt names" if wrt_given else "the Hessian is over every variable, and there are"
        raise UsageError(f"{source} {len(wrt):,} variables; the limit for a Hessian is {MAX_HESSIAN_VARIABLES} "
                         f"({'name fewer' if wrt_given else 'choose some'} with --wrt)")


def check_covers(point: Point, variables: list[str] | tuple[str, ...], *, option: str = "--at") -> None:
    """Every variable of the expressions needs a value."""
    missing = [v for v in variables if v not in point.values]
    if missing:
        known = [*point.names, *variables]
        for name in missing:  # sinx is one variable's name to the parser; sin(x) was meant
            call = glued_call(name, known)
            if call is not None:
                raise UsageError(f"{option} has no value for {name}: did you mean {call}? ('{name}' is read as "
                                 f"one variable; a function's argument goes in parentheses)")
        listed = ", ".join(missing)
        example = ",".join(f"{v}=..." for v in missing)
        raise UsageError(f"{option} has no value for {listed} (add {example})")


def wrt_without_value(name: str, point: Point, variables: list[str] | tuple[str, ...] | None = None, *,
                      option: str = "--at") -> UsageError:
    """The error for ``--wrt name`` where the point gives ``name`` no value: the variables there are."""
    if variables is not None and name not in variables:
        there = ", ".join(variables) or "none"
        return UsageError(f"--wrt {name}: '{name}' is not a variable of the expression (its variables: {there}); "
                          f"name one of them with --wrt")
    there = ", ".join(point.names) or "none"
    return UsageError(f"--wrt {name}: '{name}' has no value in {option} (it gives {there}); name one of those with "
                      f"--wrt, or add {name}=... to {option} (a variable the expression does not use has derivative 0)")


def unused_variables_note(point: Point, variables: list[str] | tuple[str, ...], *, option: str = "--at",
                          derivatives: bool = True) -> str | None:
    """The note for values given to variables the expression does not use (None when there are none).
    They are kept, not refused: a variable the function does not depend on is the guide's unconnected
    source, with derivative 0 (an error for descend and derivative, which need the function's own)."""
    unused = [v for v in point.names if v not in variables]
    if not unused:
        return None
    names = ", ".join(unused[:5]) + (f" and {len(unused) - 5:,} more" if len(unused) > 5 else "")
    one = len(unused) == 1
    note = f"{option} gives {names}, which {'is' if one else 'are'} not in the expression"
    if derivatives:
        note += f": {'its' if one else 'their'} derivatives are 0 (unconnected on the tape)"
    return note


LARGEST = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38}
# The smallest positive (subnormal) value of each dtype; half of it and less round to 0.
SMALLEST = {"float64": 5e-324, "float32": 1.401298464324817e-45}


def dtype_misfit(value: float, dtype: str) -> str | None:
    """Why ``value`` cannot be computed in ``dtype`` (beyond its largest value, or nonzero and so small
    that it rounds to 0; subnormals are numbers like any other), or None when it fits."""
    if abs(value) > LARGEST[dtype]:
        return f"does not fit in {dtype} (largest {LARGEST[dtype]:.3g})"
    if value and abs(value) <= SMALLEST[dtype] / 2:
        return f"rounds to 0 in {dtype} (smallest {SMALLEST[dtype]:.2g}); use --dtype float64 or a larger value"
    return None


def check_point_fits(point: Point, dtype: str, *, option: str = "--at") -> None:
    """Every value must be representable in the dtype the numerical methods compute in."""
    for name, v in point.values.items():
        why = dtype_misfit(v, dtype)
        if why:
            raise UsageError(f"{option}: {name}={number_text(v)} {why}")
