"""``gradcli implicit``: the curve's derivatives three ways side by side, judged, with the point's residual.

The point must lie on the curve: |F - G| within RESIDUAL_TOLERANCE of the size of F's two sides (else it is
refused with the residual, and the y on the curve that Newton's method finds from it). F_y = 0 there is
refused with its reason: a vertical tangent, or a singular point where F_x = 0 too. Every number is judged
as gradcli's other commands judge theirs (:mod:`gradcli.compute.judge`): the tape by its roundings, fd by
its own estimate, against the exact value; without it, tape and fd against each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gradcli.compute import judge
from gradcli.errors import ComputeError, UsageError
from gradcli.expression.points import Point, check_covers
from gradcli.curves.equation import Equation
from gradcli.curves.numeric import EPS, TAPE_ORDERS, fd_derivatives, tape_derivatives, tape_partials

METHODS = ("symbolic", "tape", "fd")
MAX_ORDER = 4
# on the curve: |F - G| at most this much of max(1, |F|, |G|) (a point typed to about 8 digits or more)
RESIDUAL_TOLERANCE = EPS ** 0.5


@dataclass
class ImplicitReport:
    equation: Equation
    dependent: str
    independents: list[str]
    point: Point
    order: int
    methods: list[str]
    residual: float
    residual_tolerance: float
    partials: dict  # {"F_y": v, "F_x": {x: v}}
    rows: list[dict]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False

    @property
    def status(self) -> str:
        if self.failed:
            return "undefined"
        return "warning" if self.warnings else "ok"

    def to_dict(self) -> dict:
        return {"command": "implicit", "equation": self.equation.text, "F": self.equation.difference_text,
                "dependent": self.dependent, "independent": self.independents,
                "point": dict(self.point.values), "dtype": "float64", "methods": self.methods, "order": self.order,
                "residual": self.residual, "residual_tolerance": self.residual_tolerance,
                "F_y": self.partials["F_y"], "F_x": self.partials["F_x"], "derivatives": self.rows,
                "status": self.status, "warnings": self.warnings, "notes": self.notes}


def subject(x: str, dependent: str, k: int) -> str:
    return f"d{dependent}/d{x}" if k == 1 else f"d{k}{dependent}/d{x}{k}"


def implicit_derivatives(equation: Equation, dependent: str, point: Point, *, order: int = 1,
                         methods: list[str], symbolic_timeout: float = 10.0) -> ImplicitReport:
    variables = equation.variables
    if dependent not in variables:
        raise UsageError(f"--dependent {dependent}: the equation has no variable {dependent!r} (its variables: "
                         f"{', '.join(variables) or 'none'})")
    check_covers(point, variables)
    independents = [v for v in variables if v != dependent]
    if not independents:
        raise UsageError(f"the equation has no variable besides {dependent}: nothing for it to depend on")
    if not 1 <= order <= MAX_ORDER:
        raise UsageError(f"-n {order}: the order is 1 to {MAX_ORDER}")
    values = {v: point.values[v] for v in variables}
    job = _start_exact(equation, dependent, independents, order, point, symbolic_timeout) \
        if "symbolic" in methods else None
    scale, residual = _residual(equation, values)
    exact, notes = _exact_result(job)
    if exact is not None and exact["residual"] is not None:
        residual = abs(exact["residual"])
    tolerance = RESIDUAL_TOLERANCE * scale
    if not residual <= tolerance:
        raise ComputeError(_off_the_curve(equation, dependent, values, residual, tolerance))
    partials = _partials(equation, values, dependent, independents, exact)
    _refuse_singular(partials, dependent, independents, scale)
    report = ImplicitReport(equation, dependent, independents, point, order, list(methods), residual, tolerance,
                            partials, [], notes=notes)
    for x in independents:
        report.rows += _rows(report, x, values, exact, scale)
    if "tape" in methods and order > TAPE_ORDERS:
        report.notes.append(f"the tape gives orders 1 and {TAPE_ORDERS} (from F's gradient and Hessian); higher "
                            "orders are symbolic and fd only")
    report.failed = any(r["symbolic"] is None and r["tape"] is None and r["fd"] is None for r in report.rows)
    return report


def _start_exact(equation, dependent, independents, order, point, seconds):
    from gradcli.curves.exact import implicit_exact
    from gradcli.methods.worker import BoundedJob

    typed = {v: point.exact[v] for v in equation.variables}
    return BoundedJob(implicit_exact, (equation.tree, dependent, independents, order, typed), seconds, parallel=True)


def _exact_result(job):
    if job is None:
        return None, []
    from gradcli.methods.worker import SymbolicTimeout

    try:
        return job.result(), []
    except SymbolicTimeout as exc:
        return None, [f"symbolic: {exc}; the symbolic column is left out"]
    except Exception as exc:  # noqa: BLE001 - SymPy could not: the other columns stand, judged by each other
        return None, [f"symbolic: SymPy could not differentiate the equation ({type(exc).__name__}); the "
                      "symbolic column is left out"]


def _residual(equation: Equation, values: dict) -> tuple[float, float]:
    """(the size of F's sides, |F - G| in float64) at the point."""
    from gradcli.expression.evaluate import PYTHON_FLOAT64, evaluate

    sides = [evaluate(e.tree, values, PYTHON_FLOAT64) for e in (equation.lhs, equation.rhs) if e is not None]
    if not all(math.isfinite(s) for s in sides):
        raise ComputeError("the equation is not finite at the point: " +
                           ", ".join(f"{n}={v!r}" for n, v in values.items()))
    scale = max([1.0] + [abs(s) for s in sides])
    return scale, abs(sides[0] - (sides[1] if len(sides) > 1 else 0.0))


def _off_the_curve(equation, dependent, values, residual, tolerance) -> str:
    from gradcli.expression.evaluate import compile_expression, numpy_backend
    from gradcli.curves.numeric import follow_to_curve

    there = follow_to_curve(compile_expression(equation.tree, numpy_backend("float64")), values, dependent)
    hint = f"; {dependent}={there!r} is on it (Newton's method from {dependent}={values[dependent]!r})" \
        if there is not None else ""
    return (f"the point is not on the curve: |F - G| = {residual:.3g} there, more than {tolerance:.2g}" + hint)


def _partials(equation, values, dependent, independents, exact) -> dict:
    if exact is not None and exact["F_y"] is not None:
        return {"F_y": exact["F_y"], "F_x": dict(exact["F_x"])}
    first = {x: tape_partials(equation.tree, values, dependent, x) for x in independents}
    return {"F_y": first[independents[0]][1], "F_x": {x: p[0] for x, p in first.items()}}


def _refuse_singular(partials, dependent, independents, scale) -> None:
    """F_y = 0 at the point: y is no function of the others there. A singular point where every F_x is 0
    too (the curve crosses itself, has a cusp, or is an isolated point), else a vertical tangent."""
    fy = partials["F_y"]
    if fy is None or abs(fy) > 8 * EPS * scale:
        return
    steep = [x for x in independents if partials["F_x"][x] is None or abs(partials["F_x"][x]) > 8 * EPS * scale]
    if not steep:
        names = " = ".join(f"F_{x}" for x in independents)
        raise ComputeError(f"a singular point of the curve: F_{dependent} = {names} = 0 there (it crosses itself, "
                           f"has a cusp or is an isolated point), so {dependent} is no function of "
                           f"{', '.join(independents)} at it")
    x = steep[0]
    raise ComputeError(f"a vertical tangent: F_{dependent} = 0 there while F_{x} = {partials['F_x'][x]:.6g}, so "
                       f"d{dependent}/d{x} is infinite ({dependent} is no function of {x} at the point)")


def _rows(report: ImplicitReport, x: str, values: dict, exact, scale: float) -> list[dict]:
    methods, order, dependent = report.methods, report.order, report.dependent
    tape = tape_derivatives(tape_partials(report.equation.tree, values, dependent, x), order) \
        if "tape" in methods else [None] * order
    fd = fd_derivatives(report.equation.tree, values, dependent, x, order, scale) if "fd" in methods else None
    fy = abs(report.partials["F_y"] or 0.0)
    conditioning = max(1.0, scale / fy) if fy else 1.0
    rows = []
    for k in range(1, order + 1):
        formula, reference = exact["derivatives"][x][k - 1] if exact is not None else (None, None)
        f = fd[k - 1] if fd is not None else None
        row = {"variable": x, "order": k, "formula": formula, "symbolic": reference, "tape": _finite(tape[k - 1]),
               "fd": None if f is None else _finite(f.value), "fd_estimate": None if f is None else f.estimate,
               "errors": {}}
        if f is not None and f.why:
            report.notes.append(f"fd: {subject(x, dependent, k)}: {f.why}")
        _judge(report, row, subject(x, dependent, k), k, conditioning)
        rows.append(row)
    return rows


def _finite(v):
    return v if v is not None and math.isfinite(v) else None


def _judge(report, row: dict, what: str, k: int, conditioning: float) -> None:
    ref, tape, fd, estimate = row["symbolic"], row["tape"], row["fd"], row["fd_estimate"]
    size = max(1.0, *(abs(v) for v in (ref, tape, fd) if v is not None))
    tape_tol = judge.tolerance("tape", dtype="float64", order=k, scale=size * conditioning)
    fd_tol = None if fd is None else judge.tolerance("fd", dtype="float64", estimate=estimate or 0.0,
                                                     reference=ref if ref is not None else fd)
    if ref is not None:
        for method, value, tol in (("tape", tape, tape_tol), ("fd", fd, fd_tol)):
            if value is None:
                continue
            error = abs(value - ref)
            row["errors"][method] = error
            if error > tol:
                report.warnings.append(judge.disagreement(method, what, error, dtype="float64", tol=tol))
    elif tape is not None and fd is not None:
        gap = abs(tape - fd)
        if gap > tape_tol + fd_tol:
            report.warnings.append(judge.cross_disagreement(what, gap, tape_tol + fd_tol, False, dtype="float64"))
