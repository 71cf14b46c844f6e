"""``gradcli steps``: the error of each difference formula over a sweep of steps.

For every formula (forward, backward, central, the wider central stencils, Richardson extrapolation and,
at order 1, the complex step) and every step h from 1e-1 down to the dtype's eps (times max(1, |x|),
every half decade), the formula is evaluated in the dtype and its error measured against SymPy's exact
derivative at the dtype's own point (so that the point's rounding is nobody's error): the V of
truncation (~h^p, falling) and rounding (~eps |f| sum|w| / h^n, rising). Three steps are marked:

- gradcli's default: the step grad and derivative take (eps^q * max(1, |x|) as x + h takes it, q =
  1/(n+p); the complex step's chosen power of two);
- the best step found: the smallest error of the sweep, of a finer search around the sweep's minimum,
  and of the default and theory steps, so never worse than the default;
- theory's optimal step: the minimum of |c| |f^(n+p)| h^p + eps |f| sum|w| / h^n, with the stencil's
  truncation constant c and SymPy's derivative of order n + p (left out when SymPy does not give it in
  time, or when it is 0: no truncation, no optimum).

The complex step has no rounding term (no subtraction): its error falls with h^2 until the dtype's floor.
The formulas, their step rule and their evaluation are the methods' own (:mod:`gradcli.methods.fd_stencils`,
:mod:`gradcli.methods.fd_engine`, :mod:`gradcli.methods.complex_step`): what steps shows at the default step
is what the other commands compute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from gradcli.compute.steps_sweep import COMPLEX, DtypeSweep, FormulaSweep, sweep_steps
from gradcli.errors import ComputeError, UsageError
from gradcli.expression import Node, parse
from gradcli.expression.points import check_covers, check_point_fits, parse_point, wrt_without_value
from gradcli.expression.tree import Num
from gradcli.methods import symbolic
from gradcli.methods.fd_stencils import STENCIL_NAMES, named_stencil
from gradcli.methods.worker import BoundedJob, CancelFlag, SymbolicTimeout
from gradcli.results import clean, point_text

DTYPES = ("float64", "float32")
MAX_ORDER = 4


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
def parse_dtypes(text: str) -> list[str]:
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    if not names:
        raise UsageError("--dtype is empty: name float64, float32 or both (float32,float64)")
    for n in names:
        if n not in DTYPES:
            raise UsageError(f"--dtype: '{n}' is not float64 or float32")
    return list(dict.fromkeys(names))


FORMULA_NAMES = (*STENCIL_NAMES, COMPLEX)


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
    stencils = [named_stencil(n, order) for n in studied if n != COMPLEX]
    for j, (d, values) in enumerate(zip(chosen, typed), start=1):
        higher = {k - order: v[j] for k, v in exact.items() if k > order}
        sweep = sweep_dtype(expr.tree, values, variable, order, d, exact[order][j], abs(exact[0][j] or 0.0),
                            higher, stencils, with_complex=COMPLEX in studied)
        by_name = {f.name: f for f in sweep.formulas}
        sweep.formulas = [by_name[n] for n in studied]
        report.sweeps.append(sweep)
    return report


def _dtype_point(values: dict[str, float], dtype: str) -> dict[str, float]:
    import numpy as np

    return {k: float(np.asarray(v, dtype=np.float64).astype(dtype)) for k, v in values.items()}


def _num(x: float) -> Num:
    """The float as an exact number node (the dtype's point, exactly)."""
    return Num(Fraction(x), repr(x))


__all__ = ["COMPLEX", "FORMULA_NAMES", "DtypeSweep", "FormulaSweep", "StepsReport", "compute_steps", "parse_dtypes",
           "parse_formulas", "sweep_steps"]
