"""``hessian``: the matrix of second derivatives at a point, three ways, and what it says there.

- tape: nested ``GradientTape``s, the outer one over the inner one's gradient, as the TF guide does.
  For a few variables, one ``outer.gradient`` per row exactly like the guide, so every entry the tape
  reports as unconnected (``None``) is known and shown as a structural zero. For more variables, all
  rows from one ``outer.gradient`` over n stacked copies of the point (the expression's alike terms
  vectorised). Written once, for batches of points, in :mod:`gradcli.methods.tape`.
- fd: central second differences, every stencil point evaluated at once with NumPy arrays.
- symbolic: SymPy's exact Hessian, its value at the exactly-typed point, started first as a
  :class:`gradcli.methods.worker.BoundedJob`.

The analysis (eigenvalues, definiteness, critical point, ...) is :func:`gradcli.compute.analysis.analyse_hessian`
on the most trustworthy matrix available: exact, else tape, else fd.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gradcli.methods import symbolic
from gradcli.compute.analysis import HessianAnalysis
from gradcli.errors import UsageError
from gradcli.expression.evaluate import PYTHON_FLOAT64, compile_expression
from gradcli.expression import Expression, parse
from gradcli.methods.fd_engine import check_step
from gradcli.compute.request import check_dtype, check_eps, parse_methods, resolve_wrt
# ROWS_MAX: up to this many variables the tape takes one outer gradient per row (the guide's way), which
# shows every unconnected entry; above it, all rows at once (see gradcli.methods.tape).
from gradcli.methods.tape import ROWS_MAX  # noqa: F401
from gradcli.expression.points import (Point, check_covers, check_hessian_size, check_point_fits, parse_point,
                                      unused_variables_note)
from gradcli.results import METHODS, clean, flag_undefined_value, point_text, shortest
from gradcli.methods.worker import SymbolicTimeout
from gradcli.compute.hessian_judge import (best_analysis, cross_check_hessian, entry_tolerance,  # noqa: F401
                                           hessian_tolerance, judge_hessian)

Matrix = list[list[float | None]]

# the methods, one point each (re-exported: tests and --show-code's check patch them here)
from gradcli.compute.hessian_methods import (FdHessian, SymbolicHessian, TapeHessian, fd_hessian,  # noqa: E402,F401
                                             start_symbolic_hessian, symbolic_hessian, symbolic_hessian_work,
                                             tape_hessian)


@dataclass
class HessianReport:
    """``gradcli hessian``: everything computed, independent of how it is shown."""

    expression: str
    point: dict[str, float]
    dtype: str
    variables: list[str]
    methods: list[str]
    value: float | None
    gradient: dict[str, dict[str, float | None]] = field(default_factory=dict)
    hessian: dict[str, Matrix] = field(default_factory=dict)
    formulas: list[list[str]] | None = None
    error: dict[str, float | None] = field(default_factory=dict)
    symmetry: dict[str, float | None] = field(default_factory=dict)
    structural_zeros: list[tuple[str, str]] = field(default_factory=list)
    tape_mode: str | None = None
    fd_steps: dict[str, float] = field(default_factory=dict)
    fd_sides: dict[str, str] = field(default_factory=dict)  # per variable: central, forward or backward
    fd_error_estimate: Matrix | None = None  # fd's own error estimate per entry (gradcli.methods.fd_error)
    point_shift: Matrix | None = None  # exact entries' move from the typed point to the dtype's
    analysis: HessianAnalysis | None = None
    analysis_source: str | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "hessian"

    @property
    def fd_scheme(self) -> str:
        """'central second differences', or which variables' differences are one-sided (a domain edge)."""
        sided = [f"{name} {side}" for name, side in self.fd_sides.items() if side != "central"]
        if not sided:
            return "central second differences"
        return f"second differences, one-sided in {', '.join(sided)} (accuracy 2)"

    def to_dict(self) -> dict:
        a = self.analysis
        doc: dict[str, Any] = {
            "command": self.command,
            "expression": self.expression,
            "point": self.point,
            "dtype": self.dtype,
            "variables": self.variables,
            "methods": self.methods,
            "value": self.value,
            "gradient": self.gradient,
            "hessian": self.hessian,
            "error": self.error,
            "symmetry": self.symmetry,
            "structural_zeros": [list(p) for p in self.structural_zeros],
            "tape": None if self.tape_mode is None else {"mode": self.tape_mode},
            "fd": None if "fd" not in self.methods else {"scheme": self.fd_scheme, "step": self.fd_steps,
                                                         "sides": self.fd_sides},
            "fd_error_estimate": self.fd_error_estimate,
            "analysis_source": self.analysis_source,
            "eigenvalues": a.eigenvalues if a else None,
            "definiteness": a.definiteness if a else None,
            "critical_point": a.critical_point if a else None,
            "condition_number": a.condition_number if a else None,
            "max_stable_learning_rate": a.max_stable_learning_rate if a else None,
        }
        if self.formulas is not None:
            doc["formulas"] = self.formulas
        doc["warnings"] = self.warnings
        doc["notes"] = self.notes
        return clean(doc)


# ---------------------------------------------------------------------------------------------
# the command's core
# ---------------------------------------------------------------------------------------------
@dataclass
class HessianSetup:
    """The validated input of ``gradcli hessian``: all that --show-code needs, nothing computed yet."""

    expr: Expression
    point: Point
    variables: list[str]
    methods: list[str]
    dtype: str
    eps: float | None
    formulas: bool


def prepare_hessian(expression: str, *, at: list[str] | str, wrt: str | None = None,
                    methods: str | list[str] | None = None, eps: float | None = None, dtype: str = "float64",
                    formulas: bool = False) -> HessianSetup:
    """Parse and check everything (UsageError/ParseError: exit 2) without computing anything."""
    expr: Expression = parse(expression)
    point = parse_point(at)
    check_covers(point, expr.variables)
    variables = resolve_wrt(wrt, point)
    check_hessian_size(variables, wrt_given=bool(wrt and wrt.strip()))
    chosen = parse_methods(methods) if not isinstance(methods, list) else list(methods)
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    eps = check_eps(eps)
    if "fd" in chosen:
        check_step(eps, point.values, variables, dtype, power=2)
    if formulas and "symbolic" not in chosen:
        raise UsageError("--formulas needs the symbolic method (add symbolic to --method)")
    return HessianSetup(expr, point, variables, chosen, dtype, eps, formulas)


_TAPE_MODE_TEXT = {
    "rows": "per-row outer.gradient (the guide's loop)",
    "stacked": "the jacobian of the inner gradient as one outer.gradient over n stacked copies of the point "
               "(vectorised, no pfor)",
    "jacobian": "outer.jacobian of the inner gradient (vectorised, in one tf.function)",
}


def compute_hessian(expression: str, *, at: list[str] | str, wrt: str | None = None,
                    methods: str | list[str] | None = None, eps: float | None = None, dtype: str = "float64",
                    formulas: bool = False, symbolic_time_limit: float = symbolic.DEFAULT_TIME_LIMIT,
                    tape_mode: str | None = None) -> HessianReport:
    """Everything ``gradcli hessian`` shows, as a :class:`HessianReport`."""
    setup = prepare_hessian(expression, at=at, wrt=wrt, methods=methods, eps=eps, dtype=dtype, formulas=formulas)
    expr, point, variables, chosen = setup.expr, setup.point, setup.variables, setup.methods
    dtype, eps = setup.dtype, setup.eps

    # SymPy first, before anything imports TensorFlow (see gradcli.methods.worker.BoundedJob).
    job = (start_symbolic_hessian(expr.tree, point, variables, time_limit=symbolic_time_limit, formulas=formulas,
                                  dtype=dtype)
           if "symbolic" in chosen else None)

    value = compile_expression(expr.tree, PYTHON_FLOAT64)(point.values)
    report = HessianReport(expression=expr.text, point=dict(point.values), dtype=dtype, variables=variables,
                           methods=list(chosen), value=value)
    if note := unused_variables_note(point, expr.variables):
        report.notes.append(note)
    names = variables

    if "tape" in chosen:
        t = tape_hessian(expr.tree, point.values, variables, dtype=dtype, mode=tape_mode)
        report.hessian["tape"] = [[shortest(x, dtype) for x in row] for row in t.matrix]
        report.gradient["tape"] = {k: shortest(g, dtype) for k, g in zip(names, t.gradient)}
        report.structural_zeros = [(names[i], names[j]) for i, j in t.structural]
        report.tape_mode = _TAPE_MODE_TEXT[t.mode]
        if t.mode == "jacobian":
            report.notes.append("tape.jacobian (vectorised) does not say which single entries were "
                                "unconnected; only variables the expression lacks are marked structural")
        elif t.mode == "stacked":
            report.notes.append("the stacked tape (all rows in one outer gradient) does not say which single "
                                "entries were unconnected; only variables the expression lacks are marked structural")
    if "fd" in chosen:
        fd = fd_hessian(expr.tree, point.values, variables, dtype=dtype, eps=eps)
        report.hessian["fd"] = [[shortest(x, dtype) for x in row] for row in fd.matrix]
        report.gradient["fd"] = {k: shortest(g, dtype) for k, g in zip(names, fd.gradient)}
        report.fd_steps = dict(zip(names, fd.steps))
        report.fd_error_estimate = fd.estimates
        from gradcli.methods.fd_notes import SIDE_NAMES, fd_hessian_note, unresolved_hessian_warning

        report.fd_sides = dict(zip(names, (SIDE_NAMES[s] for s in fd.sides)))
        note = fd_hessian_note(fd.how, fd.steps, fd.sides, names)
        if note:
            report.notes.append(note)
        if fd.unresolved:
            report.warnings.append(unresolved_hessian_warning(fd.matrix, fd.estimates, names, dtype))
    if job is not None:
        try:
            s = job.result()
        except SymbolicTimeout as exc:
            report.notes.append(f"symbolic column left out: {exc} (raise --symbolic-timeout to wait longer)")
            report.methods = [m for m in report.methods if m != "symbolic"]
        else:
            report.hessian["symbolic"] = s.matrix
            report.point_shift = s.shift
            _note_rounded_point(report, s)
            report.gradient["symbolic"] = dict(zip(names, s.gradient))
            if formulas:
                report.formulas = s.formulas
            if s.value is not None:
                report.value = s.value
    # Canonical order in the output, whatever order they ran in.
    report.hessian = {m: report.hessian[m] for m in METHODS if m in report.hessian}
    report.gradient = {m: report.gradient[m] for m in METHODS if m in report.gradient}
    _compare(report)
    _analyse(report)
    return report


def _note_rounded_point(report: HessianReport, s: SymbolicHessian) -> None:
    """Where the point's rounding moves an exact entry by more than the dtype's roundings: a note."""
    from gradcli.compute.point_rounding import rounded_point_note, rounding_matters

    if s.shift is None:
        return
    names = report.variables
    moved = {(i, j): x for i, row in enumerate(s.shift) for j, x in enumerate(row) if j >= i and x
             and rounding_matters(x, s.matrix[i][j], report.dtype)}
    if moved:
        (i, j), x = max(moved.items(), key=lambda item: item[1])
        report.notes.append(rounded_point_note(report, report.expression, {f"{names[i]}d{names[j]}": x},
                                               order=None).replace("d(", "d2(", 1))


def _max_abs(a: Matrix, b: Matrix) -> float | None:
    diffs = [abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)
             if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
    return max(diffs, default=None)  # None: no entry where both are finite


def _finite(m: Matrix) -> bool:
    return all(x is not None and math.isfinite(x) for row in m for x in row)


def _compare(report: HessianReport) -> None:
    pt = point_text(report.point)
    flag_undefined_value(report)
    for method, m in report.hessian.items():
        report.symmetry[method] = _max_abs(m, [list(r) for r in zip(*m)]) if _finite(m) else None
        if not _finite(m):
            report.warnings.append(f"the {method} Hessian is not finite at {pt}")
            report.failed = True
    exact = report.hessian.get("symbolic")
    if exact is None:
        if "tape" in report.hessian and "fd" in report.hessian and report.fd_error_estimate is not None:
            warning = cross_check_hessian(report.hessian["tape"], report.hessian["fd"], report.fd_error_estimate,
                                          wrt=report.variables, dtype=report.dtype)
            if warning:
                report.warnings.append(warning)
        return
    scale = max([1.0] + [abs(x) for row in exact for x in row if x is not None])
    if not _finite(exact):
        return
    step = min(report.fd_steps.values(), default=None)
    for method in ("tape", "fd"):
        if method not in report.hessian:
            continue
        err, warning = judge_hessian(method, report.hessian[method], exact, wrt=report.variables,
                                     dtype=report.dtype, value=report.value, step=step,
                                     estimates=report.fd_error_estimate if method == "fd" else None,
                                     shift=report.point_shift)
        report.error[method] = err
        if warning:
            report.warnings.append(warning)
    if report.symmetry.get("tape") and report.symmetry["tape"] > hessian_tolerance(
            "tape", dtype=report.dtype, scale=scale):
        report.warnings.append(f"the tape Hessian is not symmetric (max |H - H^T| = {report.symmetry['tape']:.3g})")


def _analyse(report: HessianReport) -> None:
    """Analyse the exact matrix when there is one, else the tape's, else fd's."""
    found = best_analysis(report.hessian, {m: list(g.values()) if all(v is not None for v in g.values()) else None
                                           for m, g in report.gradient.items()},
                          dtype=report.dtype, step=min(report.fd_steps.values(), default=None),
                          fd_estimates=report.fd_error_estimate)
    if found is None:
        return
    report.analysis_source, report.analysis, from_fd = found
    if from_fd:
        report.notes.append("the analysis uses the fd Hessian: an eigenvalue within its entries' error "
                            "estimates (each entry on its own scale) is taken as zero")
