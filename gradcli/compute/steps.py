"""``gradcli steps``: the error of each difference formula over a sweep of steps.

For every formula (forward, backward, central, the wider central stencils, Richardson extrapolation and,
at order 1, the complex step) and every step h from 1e-1 down to the dtype's eps (times max(1, |x|),
every half decade), the formula is evaluated in the dtype and its error measured against SymPy's exact
derivative at the dtype's own point (so that the point's rounding is nobody's error): the V of
truncation (~h^p, falling) and rounding (~eps |f| sum|w| / h^n, rising). Three steps are marked:

- gradcli's default: eps^(1/(n+p)) * max(1, |x|), the step x + h really takes (as gradcli.methods.fd);
- the best step of the sweep;
- theory's optimal step: the minimum of |c| |f^(n+p)| h^p + eps |f| sum|w| / h^n, with the stencil's
  truncation constant c and SymPy's derivative of order n + p (left out when SymPy does not give it in
  time, or when it is 0: no truncation, no optimum).

The complex step has no rounding term (no subtraction): its error falls with h^2 until the dtype's floor.
All formulas are written as one stencil, offsets m and weights w: D(h) = sum w_m f(x + m h) / h^n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from gradcli.errors import ComputeError, UsageError
from gradcli.expression import Node, parse
from gradcli.expression.points import check_covers, check_point_fits, parse_point, wrt_without_value
from gradcli.expression.tree import Num
from gradcli.methods import symbolic
from gradcli.dtypes import MACHINE_EPSILON
from gradcli.methods.fd_stencils import central_coefficients
from gradcli.methods.worker import BoundedJob, CancelFlag, SymbolicTimeout
from gradcli.results import clean, point_text

DTYPES = ("float64", "float32")
MAX_ORDER = 4
LARGEST_STEP = 0.1
STEPS_PER_DECADE = 2
STENCIL_ACCURACIES = (4, 6, 8)


# ---------------------------------------------------------------------------------------------
# The formulas as stencils
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Formula:
    name: str
    accuracy: int  # p: truncation error ~ h^p
    offsets: tuple[Fraction, ...]
    weights: tuple[Fraction, ...]

    @property
    def weight_sum(self) -> float:
        return float(sum(abs(w) for w in self.weights))

    def truncation_constant(self, order: int) -> float:
        """c in D(h) - f^(n) = c f^(n+p) h^p + ...: sum w m^(n+p) / (n+p)!."""
        k = order + self.accuracy
        return float(sum(w * m ** k for m, w in zip(self.offsets, self.weights)) / math.factorial(k))


def _binomial_stencil(order: int, sign: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """Forward (sign +1: offsets 0..n) or backward (sign -1: offsets -n..0) n-th differences."""
    offsets = tuple(Fraction(sign * k) for k in range(order + 1))
    weights = tuple(Fraction((-1) ** (order - k) * math.comb(order, k) * (1 if sign > 0 else (-1) ** order))
                    for k in range(order + 1))
    return offsets, weights


def _richardson(order: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """(4 D(h/2) - D(h)) / 3 with D the 3-point central difference: offsets in units of h."""
    offsets, weights = central_coefficients(order, 2)
    combined: dict[Fraction, Fraction] = {}
    for m, w in zip(offsets, weights):
        combined[Fraction(m, 2)] = combined.get(Fraction(m, 2), 0) + Fraction(4 * 2 ** order, 3) * w
        combined[Fraction(m)] = combined.get(Fraction(m), 0) - w / 3
    items = sorted((m, w) for m, w in combined.items() if w != 0)
    return tuple(m for m, _ in items), tuple(w for _, w in items)


def formulas(order: int) -> list[Formula]:
    """Every fd formula of the study for derivatives of ``order`` (the complex step is apart)."""
    central = central_coefficients(order, 2)
    out = [Formula("forward", 1, *_binomial_stencil(order, 1)), Formula("backward", 1, *_binomial_stencil(order, -1)),
           Formula("central", 2, tuple(map(Fraction, central[0])), central[1])]
    for a in STENCIL_ACCURACIES:
        offsets, weights = central_coefficients(order, a)
        out.append(Formula(f"stencil{a}", a, tuple(map(Fraction, offsets)), weights))
    out.append(Formula("richardson", 4, *_richardson(order)))
    return out


COMPLEX = "complex"


# ---------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------
@dataclass
class FormulaSweep:
    name: str
    accuracy: int
    points: int
    errors: list[float | None]  # per step of the sweep; None where the formula gives no finite number
    default_step: float | None = None
    default_error: float | None = None
    best_step: float | None = None
    best_error: float | None = None
    theory_step: float | None = None
    theory_error: float | None = None

    def to_dict(self) -> dict:
        return {"formula": self.name, "accuracy": self.accuracy, "points": self.points, "errors": self.errors,
                "default": {"step": self.default_step, "error": self.default_error},
                "best": {"step": self.best_step, "error": self.best_error},
                "theory": {"step": self.theory_step, "error": self.theory_error}}


@dataclass
class DtypeSweep:
    dtype: str
    x: float  # the point's coordinate in the dtype
    exact: float  # the exact derivative at the dtype's point
    steps: list[float]
    formulas: list[FormulaSweep]

    def to_dict(self) -> dict:
        return {"dtype": self.dtype, "x": self.x, "exact": self.exact, "steps": self.steps,
                "formulas": [f.to_dict() for f in self.formulas]}


@dataclass
class StepsReport:
    expression: str
    variable: str
    point: dict[str, float]
    order: int
    value: float | None
    exact: float | None  # at the typed point
    sweeps: list[DtypeSweep]
    marked: str  # the formula the plot marks (gradcli's own: central at order 1, stencil8 above)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "steps"

    def to_dict(self) -> dict:
        return clean({"command": self.command, "expression": self.expression, "variable": self.variable,
                      "point": self.point, "order": self.order, "value": self.value, "exact": self.exact,
                      "sweeps": [s.to_dict() for s in self.sweeps], "warnings": self.warnings,
                      "notes": self.notes})


# ---------------------------------------------------------------------------------------------
# SymPy: the exact derivatives of orders n .. n + 8 at the typed point and at each dtype's point
# ---------------------------------------------------------------------------------------------
def exact_derivatives(tree: Node, names: list[str], variable: str, orders: list[int],
                      points: list[dict[str, Node]], cancel: CancelFlag) -> dict[int, list[float | None]]:
    """{order: [value at each point]} (order 0: f). A :class:`BoundedJob` work function."""
    syms = symbolic.symbols_for(names)
    subs = [symbolic.exact_point(p, syms) for p in points]
    d = symbolic.to_sympy(tree, syms)
    out = {0: [symbolic.value_at(d, s) for s in subs]}
    for k in range(1, max(orders) + 1):
        cancel.check()
        d = symbolic.diff(d, syms[variable])
        if k in orders:
            out[k] = [symbolic.value_at(d, s) for s in subs]
    return out


def _exact(tree, point, variable, order: int, dtype_points: list[dict[str, Node]], time_limit: float, notes):
    """The job above with every order the theory needs; on a timeout, once more with order n only."""
    all_points = [dict(point.exact), *dtype_points]
    wanted = sorted({order, *(order + a for a in (1, 2, 4, 6, 8))})
    for orders in (wanted, [order]):
        try:
            return BoundedJob(exact_derivatives, (tree, list(point.names), variable, orders, all_points),
                              time_limit, parallel=True, cancellable=True).result()
        except SymbolicTimeout as exc:
            if orders == [order]:
                raise ComputeError(f"steps needs SymPy's exact derivative: {exc} (raise --symbolic-timeout)") \
                    from None
            notes.append(f"theory's optimal steps left out: SymPy gave no derivatives above order {order} "
                         f"within {time_limit:g} s")
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------------
def sweep_steps(dtype: str, x: float) -> list[float]:
    """1e-1 * max(1, |x|) down to eps * max(1, |x|), every half decade."""
    scale = max(1.0, abs(x))
    eps = MACHINE_EPSILON[dtype]
    count = int(math.floor(STEPS_PER_DECADE * math.log10(LARGEST_STEP / eps))) + 1
    return [LARGEST_STEP * 10 ** (-k / STEPS_PER_DECADE) * scale for k in range(count)]


def parse_dtypes(text: str) -> list[str]:
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    if not names:
        raise UsageError("--dtype is empty: name float64, float32 or both (float32,float64)")
    for n in names:
        if n not in DTYPES:
            raise UsageError(f"--dtype: '{n}' is not float64 or float32")
    return list(dict.fromkeys(names))


FORMULA_NAMES = ("forward", "backward", "central", *(f"stencil{a}" for a in STENCIL_ACCURACIES), "richardson",
                 COMPLEX)


def parse_formulas(text: str | None, order: int) -> list[str]:
    """``--formulas central,forward,complex``: the formulas to study, in the order given (default: all)."""
    if text is None or text.strip().lower() == "all":
        return [n for n in FORMULA_NAMES if n != COMPLEX or order == 1]
    names = [p.strip().lower() for p in text.split(",")]
    if not any(names):
        raise UsageError(f"--formulas is empty: name some of {', '.join(FORMULA_NAMES)} (or all)")
    for n in names:
        if n not in FORMULA_NAMES:
            raise UsageError(f"--formulas: '{n}' is not a formula; known: {', '.join(FORMULA_NAMES)} (or all)")
    if COMPLEX in names and order != 1:
        raise UsageError(f"--formulas: the complex step gives first derivatives only (here --order {order}); "
                         f"leave complex out")
    return list(dict.fromkeys(n for n in names if n))


def _variable(wrt: str | None, point, variables) -> str:
    if wrt:
        if wrt.strip() not in point.values:
            raise wrt_without_value(wrt.strip(), point, variables)
        return wrt.strip()
    if len(point.values) == 1:
        return point.names[0]
    raise UsageError(f"steps studies one variable: --at gives {len(point.values)} ({', '.join(point.names)}); "
                     "choose one with --wrt (the others stay fixed)")


def compute_steps(expression: str, *, at: list[str] | str, wrt: str | None = None, order: int = 1,
                  dtypes: str = "float64", symbolic_time_limit: float = symbolic.DEFAULT_TIME_LIMIT,
                  formula_names: str | None = None) -> StepsReport:
    """Everything ``gradcli steps`` shows, as a :class:`StepsReport`."""
    from gradcli.compute.steps_eval import sweep_dtype  # NumPy, only once the input is checked

    expr = parse(expression)
    point = parse_point(at)
    check_covers(point, expr.variables)
    variable = _variable(wrt, point, expr.variables)
    if not 1 <= order <= MAX_ORDER:
        raise UsageError(f"--order must be between 1 and {MAX_ORDER}, not {order}")
    chosen = parse_dtypes(dtypes)
    studied = parse_formulas(formula_names, order)
    for d in chosen:
        check_point_fits(point, d)
    typed = [_dtype_point(point.values, d) for d in chosen]
    notes: list[str] = []
    exact = _exact(expr.tree, point, variable, order, [{k: _num(v) for k, v in p.items()} for p in typed],
                   symbolic_time_limit, notes)
    pt = point_text(point.values)
    value, at_typed = exact[0][0], exact[order][0]
    if value is None or not math.isfinite(value):
        raise ComputeError(f"{expr.text} is undefined or not finite at {pt}: no derivative to study")
    if at_typed is None or not math.isfinite(at_typed):
        raise ComputeError(f"the derivative of order {order} of {expr.text} is undefined or not finite at {pt}")
    own = "central" if order == 1 else "stencil8"  # gradcli's own formula; else the first one chosen
    report = StepsReport(expr.text, variable, dict(point.values), order, value, at_typed, [],
                         marked=own if own in studied else studied[0], notes=notes)
    stencils = [f for f in formulas(order) if f.name in studied]
    for j, (d, values) in enumerate(zip(chosen, typed), start=1):
        higher = {k - order: v[j] for k, v in exact.items() if k > order}
        sweep = sweep_dtype(expr.tree, values, variable, order, d, exact[order][j], abs(exact[0][j] or 0.0),
                            higher, stencils)
        by_name = {f.name: f for f in sweep.formulas}  # the complex step comes with every order-1 sweep
        sweep.formulas = [by_name[n] for n in studied]
        report.sweeps.append(sweep)
    return report


def _dtype_point(values: dict[str, float], dtype: str) -> dict[str, float]:
    import numpy as np

    return {k: float(np.asarray(v, dtype=np.float64).astype(dtype)) for k, v in values.items()}


def _num(x: float) -> Num:
    """The float as an exact number node (the dtype's point, exactly)."""
    return Num(Fraction(x), repr(x))


__all__ = ["COMPLEX", "FORMULA_NAMES", "DtypeSweep", "Formula", "FormulaSweep", "StepsReport", "compute_steps",
           "formulas", "parse_dtypes", "parse_formulas", "sweep_steps"]
