"""``derivative``: the first n derivatives of a function of one variable, three ways.

- tape: k nested ``GradientTape``s for order k (each tape records the gradient the one inside it
  takes), all orders in one pass. A derivative the tape reports as unconnected (``None``: the third
  derivative of x**2, which the TF backend computes as x*x) is 0, marked structural, and so is every
  order above it.
- fd: a central stencil whose coefficients are solved exactly (fractions) for order k, with
  accuracy order ``accuracy`` (default 8: error ~h^8) and step eps^(1/(k+accuracy))*max(1,|x|),
  which balances truncation h^accuracy against rounding eps/h^k. Measured on sin and exp at 1 in
  float64, this wide stencil beats Richardson extrapolation of the 3-point stencil at every order
  from 2 up (halving the step multiplies the rounding error by 2^k), so Richardson is not used.
  Where the wide stencil leaves the function's domain, narrower ones are tried.
- symbolic: SymPy's k-th derivatives and their exact values, started first as a
  :class:`gradcli.methods.worker.BoundedJob`.

Judging the columns against each other is :mod:`gradcli.compute.derivative_judge`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gradcli.methods import symbolic
from gradcli.errors import UsageError
from gradcli.expression.evaluate import PYTHON_FLOAT64, compile_expression
from gradcli.expression import Expression, Node, parse
from gradcli.methods.fd_engine import check_step
from gradcli.methods.fd_schemes import ACCURACY_ORDERS, DEFAULT_ACCURACY
from gradcli.methods.fd_notes import fd_line_notes
from gradcli.compute.point_rounding import rounded_point_note, rounding_matters
from gradcli.compute import request
from gradcli.compute.request import check_dtype, check_eps, parse_methods
# Seconds the nested tapes may take (each order re-records every lower one): see gradcli.methods.tape.
from gradcli.methods.tape import TAPE_TIME_BUDGET
from gradcli.expression.points import Point, check_covers, check_point_fits, parse_point
from gradcli.compute.complex_column import add_complex_derivative, refuse_higher_orders
# judging lives in its own module; re-exported for the batch and the tests
from gradcli.compute.derivative_judge import (compare_derivatives, cross_derivative,  # noqa: F401
                                              derivative_tolerance, judge_derivative)
from gradcli.results import FIRST_ORDER_METHODS, METHODS, clean, point_text, shortest
from gradcli.methods.worker import BoundedJob, CancelFlag, SymbolicTimeout

MAX_ORDER = 10


@dataclass
class DerivativeRow:
    order: int
    symbolic: float | None = None
    tape: float | None = None
    fd: float | None = None
    formula: str | None = None
    error: dict[str, float | None] = field(default_factory=dict)
    structural: bool = False  # the tape reported this order as unconnected (None)
    tape_left_out: bool = False  # past the nested tapes' time budget (see TAPE_TIME_BUDGET)
    fd_step: float | None = None
    fd_accuracy: int | None = None
    fd_points: int | None = None
    complex: float | None = None  # order 1 only (gradcli.compute.complex_column)
    complex_error_estimate: float | None = None
    fd_error_estimate: float | None = None  # fd's own error estimate (gradcli.methods.fd_error)
    one_sided: dict[str, float] | None = None  # at a kink (any order): {"left", "right"}
    point_shift: float = 0.0  # how far the exact value moves between the typed point and the dtype's

    def to_dict(self, methods: list[str], with_formula: bool) -> dict:
        doc: dict[str, Any] = {"order": self.order}
        for m in METHODS:
            if m in methods:
                doc[m] = getattr(self, m)
        if with_formula:
            doc["formula"] = self.formula
        doc["error"] = self.error
        if "tape" in methods:
            doc["structural_zero"] = self.structural
        if "fd" in methods:
            doc["fd_step"] = self.fd_step
            doc["fd_accuracy"] = self.fd_accuracy
            doc["fd_points"] = self.fd_points
            doc["fd_error_estimate"] = self.fd_error_estimate
            if self.one_sided:
                doc["one_sided"] = self.one_sided
        if "complex" in methods:
            doc["complex"], doc["complex_error_estimate"] = self.complex, self.complex_error_estimate
        return doc


@dataclass
class DerivativeReport:
    expression: str
    variable: str
    point: dict[str, float]
    dtype: str
    order: int
    methods: list[str]
    value: float | None
    derivatives: list[DerivativeRow]
    formulas: bool = False
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "derivative"

    def to_dict(self) -> dict:
        return clean({
            "command": self.command,
            "expression": self.expression,
            "variable": self.variable,
            "point": self.point,
            "dtype": self.dtype,
            "order": self.order,
            "methods": self.methods,
            "value": self.value,
            "derivatives": [r.to_dict(self.methods, self.formulas) for r in self.derivatives],
            "warnings": self.warnings,
            "notes": self.notes,
        })


# ---------------------------------------------------------------------------------------------
# tape
# ---------------------------------------------------------------------------------------------
def tape_derivatives(tree: Node, values: dict[str, float], variable: str, order: int, *,
                     dtype: str = "float64", time_budget: float | None = TAPE_TIME_BUDGET,
                     notes: list[str] | None = None) -> list[float | None]:
    """Derivatives 1..order by nested tapes; None where the tape reported the order as unconnected.

    A batch of one point for :func:`gradcli.methods.tape.tape_derivatives`: when the next nesting depth
    would run past ``time_budget`` seconds, the list stops short (the higher orders are left out) and a
    note says so.
    """
    import numpy as np

    from gradcli.methods.tape import tape_derivatives as batch_derivatives

    t = batch_derivatives(tree, {k: np.array([v], dtype=np.float64) for k, v in values.items()}, variable, order,
                          dtype=dtype, time_budget=time_budget, notes=notes)
    return [None if structural else float(v) for v, structural in zip(t.values[0], t.structural)]


# ---------------------------------------------------------------------------------------------
# finite differences
# ---------------------------------------------------------------------------------------------
@dataclass
class FdDerivative:
    value: float
    step: float
    accuracy: int
    points: int
    estimate: float = math.nan
    how: int = 0


def fd_derivatives(tree: Node, values: dict[str, float], variable: str, order: int, *, dtype: str = "float64",
                   eps: float | None = None, accuracy: int = DEFAULT_ACCURACY) -> list[FdDerivative]:
    """Derivatives 1..order at one point: :func:`gradcli.methods.fd_stencils.fd_derivatives` on a batch of one."""
    from gradcli.methods import fd_stencils
    from gradcli.methods.fd_engine import one_point

    r = fd_stencils.fd_derivatives(tree, one_point(values), variable, order, dtype=dtype, eps=eps,
                                   accuracy=accuracy)
    return [FdDerivative(float(r.values[0, k]), float(r.steps[0, k]), int(r.accuracy[0, k]), int(r.points[0, k]),
                         float(r.estimates[0, k]), int(r.how[0, k])) for k in range(order)]


# ---------------------------------------------------------------------------------------------
# symbolic
# ---------------------------------------------------------------------------------------------
def symbolic_derivatives_work(tree: Node, point_exact: dict[str, Node], names: list[str], variable: str,
                             order: int, rounded: dict[str, float] | None = None, cancel: CancelFlag | None = None):
    """(value, [f', ..., f^(order)] at the exact point, formulas), and with ``rounded`` (the dtype's point) a
    fourth item: how far each derivative moves from the typed point to the dtype's. A
    :class:`gradcli.methods.worker.BoundedJob` work function (module-level, picklable arguments)."""
    syms = symbolic.symbols_for(names)
    subs = symbolic.exact_point(point_exact, syms)
    moved = symbolic.rounded_point(subs, rounded, syms)
    d = symbolic.to_sympy(tree, syms)
    value = symbolic.value_at(d, subs)
    values, formulas, shifts = [], [], []
    for _ in range(order):
        cancel.check()
        d = symbolic.diff(d, syms[variable])
        values.append(symbolic.value_at(d, subs))
        formulas.append(symbolic.formula_text(d))
        shifts.append(symbolic.point_shift(d, subs, moved, values[-1]))
    return (value, values, formulas) if rounded is None else (value, values, formulas, shifts)


def start_symbolic_derivatives(tree: Node, point: Point, variable: str, order: int, *, time_limit: float,
                               parallel: bool = True, dtype: str | None = None) -> BoundedJob:
    """Start :func:`symbolic_derivatives_work` as a :class:`gradcli.methods.worker.BoundedJob` (with ``dtype``,
    also the point shifts)."""
    from gradcli.compute.point_rounding import dtype_point

    rounded = None if dtype is None else dtype_point(point, dtype)
    return BoundedJob(symbolic_derivatives_work, (tree, dict(point.exact), list(point.names), variable, order,
                                                  rounded), time_limit, parallel=parallel, cancellable=True)


def symbolic_derivatives(tree: Node, point: Point, variable: str, order: int, *,
                         time_limit: float) -> tuple[float | None, list[float | None], list[str]]:
    """(value, [f', ..., f^(order)] at the exact point, formulas); SymbolicTimeout past time_limit."""
    return start_symbolic_derivatives(tree, point, variable, order, time_limit=time_limit).result()


# ---------------------------------------------------------------------------------------------
# the command's core
# ---------------------------------------------------------------------------------------------
def check_order(order: int) -> int:
    return request.check_order(order, MAX_ORDER)


def resolve_variable(wrt: str | None, point: Point, expr: Expression) -> str:
    name = request.derivative_variable(wrt, expr.variables, point.names)
    if name not in point.values:
        raise UsageError(f"--wrt: '{name}' has no value in --at")
    return name


@dataclass
class DerivativeSetup:
    """The validated input of ``gradcli derivative``: all that --show-code needs, nothing computed yet."""

    expr: Expression
    point: Point
    variable: str
    order: int
    methods: list[str]
    dtype: str
    eps: float | None
    accuracy: int
    formulas: bool


def prepare_derivatives(expression: str, *, at: list[str] | str, order: int = 1, wrt: str | None = None,
                        methods: str | list[str] | None = None, eps: float | None = None,
                        dtype: str = "float64", accuracy: int = DEFAULT_ACCURACY,
                        formulas: bool = False) -> DerivativeSetup:
    """Parse and check everything (UsageError/ParseError: exit 2) without computing anything."""
    expr = parse(expression)
    point = parse_point(at)
    check_covers(point, expr.variables)
    variable = resolve_variable(wrt, point, expr)
    order = check_order(order)
    chosen = parse_methods(methods, allowed=FIRST_ORDER_METHODS) if not isinstance(methods, list) else list(methods)
    refuse_higher_orders(chosen, order)
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    eps = check_eps(eps)
    if "fd" in chosen:
        check_step(eps, point.values, [variable], dtype, power=order)
    if accuracy not in ACCURACY_ORDERS:
        raise UsageError(f"--accuracy must be one of {', '.join(map(str, ACCURACY_ORDERS))}, not {accuracy}")
    if formulas and "symbolic" not in chosen:
        raise UsageError("--formulas needs the symbolic method (add symbolic to --method)")
    return DerivativeSetup(expr, point, variable, order, chosen, dtype, eps, accuracy, formulas)


def compute_derivatives(expression: str, *, at: list[str] | str, order: int = 1, wrt: str | None = None,
                        methods: str | list[str] | None = None, eps: float | None = None,
                        dtype: str = "float64", accuracy: int = DEFAULT_ACCURACY, formulas: bool = False,
                        symbolic_time_limit: float = symbolic.DEFAULT_TIME_LIMIT) -> DerivativeReport:
    """Everything ``gradcli derivative`` shows, as a :class:`DerivativeReport`."""
    setup = prepare_derivatives(expression, at=at, order=order, wrt=wrt, methods=methods, eps=eps, dtype=dtype,
                                accuracy=accuracy, formulas=formulas)
    expr, point, variable, order, chosen = setup.expr, setup.point, setup.variable, setup.order, setup.methods
    dtype, eps = setup.dtype, setup.eps
    complex_step = "complex" in chosen  # added after the other columns are judged (complex_column)
    chosen = [m for m in chosen if m != "complex"]

    # SymPy first, before anything imports TensorFlow (see gradcli.methods.worker.BoundedJob).
    job = (start_symbolic_derivatives(expr.tree, point, variable, order, time_limit=symbolic_time_limit, dtype=dtype)
           if "symbolic" in chosen else None)

    value = compile_expression(expr.tree, PYTHON_FLOAT64)(point.values)
    rows = [DerivativeRow(order=k) for k in range(1, order + 1)]
    report = DerivativeReport(expression=expr.text, variable=variable, point=dict(point.values), dtype=dtype,
                              order=order, methods=list(chosen), value=value, derivatives=rows,
                              formulas=formulas)
    if "tape" in chosen:
        tape = tape_derivatives(expr.tree, point.values, variable, order, dtype=dtype, notes=report.notes)
        for r, d in zip(rows, tape):
            r.tape = 0.0 if d is None else shortest(d, dtype)
            r.structural = d is None
        for r in rows[len(tape):]:
            r.tape, r.tape_left_out = None, True
    if "fd" in chosen:
        for r, d in zip(rows, fd_derivatives(expr.tree, point.values, variable, order, dtype=dtype, eps=eps,
                                             accuracy=setup.accuracy)):
            r.fd, r.fd_step, r.fd_accuracy, r.fd_points = shortest(d.value, dtype), d.step, d.accuracy, d.points
            r.fd_error_estimate = d.estimate
            _fd_notes(report, r, d, explicit_step=eps is not None)
        _kink(report, rows, expr.tree, point, variable, dtype, eps)
    if job is not None:
        try:
            sym_value, values, texts, shifts = job.result()
        except SymbolicTimeout as exc:
            report.notes.append(f"symbolic column left out: {exc} (raise --symbolic-timeout to wait longer)")
            report.methods = [m for m in report.methods if m != "symbolic"]
        else:
            for r, v, text, shift in zip(rows, values, texts, shifts):
                r.symbolic, r.formula, r.point_shift = v, text, shift
            worst = max(range(len(shifts)), key=lambda k: shifts[k] / max(1.0, abs(values[k] or 0.0)), default=None)
            if worst is not None and rounding_matters(shifts[worst], values[worst], dtype):
                report.notes.append(rounded_point_note(report, f"{expr.text}", {variable: shifts[worst]},
                                                       order=worst + 1))
            if sym_value is not None:
                report.value = sym_value
    compare_derivatives(report)
    if complex_step:
        add_complex_derivative(report, expr.tree, point, variable, dtype)
    return report


def _fd_notes(report: DerivativeReport, row: DerivativeRow, d: FdDerivative, *, explicit_step: bool) -> None:
    warnings, notes, _ = fd_line_notes(f"derivative {row.order}", point_text(report.point), dtype=report.dtype,
                                       value=d.value, estimate=d.estimate, step=d.step, how=d.how,
                                       explicit_step=explicit_step, order=row.order)
    report.warnings += warnings
    report.notes += notes


def _kink(report: DerivativeReport, rows: list[DerivativeRow], tree: Node, point: Point, variable: str, dtype: str,
          eps: float | None) -> None:
    """Order 1: the one-sided derivatives (as grad's central fd sees them); apart beyond their estimates: a kink.
    Orders 2 and up: one-sided stencils of each order (:func:`gradcli.methods.fd_stencils.sided_kinks`)."""
    from gradcli.methods.fd import fd_gradients
    from gradcli.methods.fd_engine import one_point
    from gradcli.methods.fd_stencils import sided_kinks

    g = fd_gradients(tree, one_point(point.values), [variable], scheme="central", dtype=dtype, eps=eps)
    kinks, left, right = sided_kinks(tree, one_point(point.values), variable, len(rows), dtype=dtype)
    kinks[0, 0], left[0, 0], right[0, 0] = g.kinks[0, 0], g.left[0, 0], g.right[0, 0]
    for k, row in enumerate(rows):
        if kinks[0, k]:
            warnings, _, row.one_sided = fd_line_notes(
                f"derivative {k + 1}", point_text(report.point), dtype=dtype, value=row.fd or 0.0,
                estimate=row.fd_error_estimate or 0.0, step=row.fd_step or 0.0, how=0, kink=True,
                left=float(left[0, k]), right=float(right[0, k]))
            report.warnings += warnings
