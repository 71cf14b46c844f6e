"""``grad``: the gradient of one or more expressions at one point, three ways."""

from __future__ import annotations

import math

from gradcli.expression.evaluate import PYTHON_FLOAT64, compile_expression
from gradcli.expression import Expression
from gradcli.expression.functions import value_only, value_only_note, where_nan_note
from gradcli.dtypes import MACHINE_EPSILON
from gradcli.methods.fd import fd_gradients
from gradcli.methods.fd_engine import check_step, one_point
from gradcli.methods.fd_schemes import Scheme
from gradcli.methods.fd_notes import fd_line_notes
from gradcli.expression.points import Point, check_covers, check_point_fits, parse_point, unused_variables_note
from gradcli.results import FIRST_ORDER_METHODS, ExpressionGradient, GradientReport, point_text, shortest, value_warning
from gradcli.methods import symbolic
from gradcli.methods.worker import BoundedJob, CancelFlag, SymbolicTimeout
from gradcli.compute.judge import cross_check, cross_disagreement, disagreement, judge_gradients
from gradcli.compute.request import (check_dtype, check_eps, parse_expressions, parse_methods, resolve_constants,
                                     resolve_wrt)


def plan_gradient(expressions: list[str], *, at: list[str] | str, wrt: str | None = None,
                  dtype: str = "float64", methods: str | list[str] | None = None, scheme: str = "central",
                  eps: float | None = None, constants: str | None = None,
                  watch: str | None = None) -> tuple[list[Expression], Point, list[str], str]:
    """The checked inputs of ``grad``: expressions, point, variables to differentiate by, dtype. Every
    option is checked here, so ``--show-code`` refuses what a computation would refuse (``constants`` and
    ``watch`` too: :func:`plan_sources` gives them)."""
    exprs = parse_expressions(expressions)
    point = parse_point(at)
    check_covers(point, [v for e in exprs for v in e.variables])
    variables = resolve_wrt(wrt, point)
    resolve_constants(constants, watch, point, variables)
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    chosen = parse_methods(methods, allowed=FIRST_ORDER_METHODS) if not isinstance(methods, list) else methods
    eps = check_eps(eps)
    if "fd" in chosen:
        check_step(eps, point.values, variables, dtype)
    Scheme(scheme)
    return exprs, point, variables, dtype


def compute_gradient(expressions: list[str], *, at: list[str] | str, wrt: str | None = None,
                     methods: str | list[str] | None = None, scheme: str = "central",
                     eps: float | None = None, dtype: str = "float64",
                     symbolic_time_limit: float = symbolic.DEFAULT_TIME_LIMIT,
                     constants: str | None = None, watch: str | None = None) -> GradientReport:
    """Everything ``gradcli grad`` shows, as a :class:`GradientReport`.

    ``constants`` (``--constants x1,x2``) enter the tape as ``tf.constant``: its column is ``None`` for them
    (listed in the report's ``unwatched``) unless ``watch`` names them too (``tape.watch``)."""
    exprs, point, variables, dtype = plan_gradient(expressions, at=at, wrt=wrt, dtype=dtype, methods=methods,
                                                   scheme=scheme, eps=eps, constants=constants, watch=watch)
    constant_names, watched = resolve_constants(constants, watch, point, variables)
    chosen = parse_methods(methods, allowed=FIRST_ORDER_METHODS) if not isinstance(methods, list) else methods
    scheme = Scheme(scheme)

    report = GradientReport(
        expressions=[e.text for e in exprs], point=dict(point.values), dtype=dtype, wrt=variables,
        methods=chosen, results=[],
        fd_scheme=scheme.value if "fd" in chosen else None,
        constants=constant_names, watched=watched,
    )
    if note := unused_variables_note(point, [v for e in exprs for v in e.variables]):
        report.notes.append(note)
    for e in exprs:
        value = compile_expression(e.tree, PYTHON_FLOAT64)(point.values)
        report.results.append(ExpressionGradient(expression=e.text, value=value))

    # SymPy first, before anything imports TensorFlow (see gradcli.methods.worker.BoundedJob).
    job = _start_symbolic(exprs, point, variables, symbolic_time_limit, dtype) if "symbolic" in chosen else None
    if "tape" in chosen:
        per_tree, unconnected, summed, _ = _tape(exprs, point, variables, dtype, constant_names, watched)
        for r, g, u in zip(report.results, per_tree, unconnected):
            r.gradient["tape"] = {k: shortest(v, dtype) for k, v in g.items()}
            r.unconnected = u
        if len(exprs) > 1:
            report.sum = report.sum or {}
            report.sum["tape"] = {k: shortest(v, dtype) for k, v in summed.items()}
        if constant_names:
            report.notes.append(_constants_note(report))
    if "fd" in chosen:
        check_step(eps, point.values, variables, dtype)
        for e, r in zip(exprs, report.results):
            fd = fd_gradients(e.tree, one_point(point.values), variables, scheme=scheme.value, dtype=dtype, eps=eps)
            r.gradient["fd"] = {k: shortest(v, dtype) for k, v in zip(variables, fd.values[0].tolist())}
            r.fd_error_estimate = dict(zip(variables, fd.estimates[0].tolist()))
            report.fd_steps = dict(zip(variables, fd.steps[0].tolist()))
            _fd_notes(report, e.text, fd, variables, point, explicit_step=eps is not None)
        if len(exprs) > 1:
            report.sum = report.sum or {}
            report.sum["fd"] = _sum_rows([r.gradient["fd"] for r in report.results], variables)
    if "complex" in chosen:  # its notes now; judged with the other columns below
        from gradcli.compute.complex_column import add_complex_gradient

        add_complex_gradient(report, exprs, point, variables, dtype)
    if job is not None:
        _symbolic_column(job, report, variables, len(exprs))
    for r in report.results:  # JSON lists the methods in their usual order
        r.gradient = {m: r.gradient[m] for m in FIRST_ORDER_METHODS if m in r.gradient}
    if report.sum:
        report.sum = {m: report.sum[m] for m in FIRST_ORDER_METHODS if m in report.sum}
    _errors_and_warnings(report, exprs, point, scheme, eps)
    return report


def _tape(exprs, point, variables, dtype, constants=(), watch=()):
    from gradcli.methods.tape import tape_gradient

    return tape_gradient([e.tree for e in exprs], point.values, variables, dtype=dtype, constants=constants,
                         watch=watch)


def _constants_note(report: GradientReport) -> str:
    """What --constants/--watch did to the tape column, in the guide's terms."""
    words = []
    if report.unwatched:
        one = len(report.unwatched) == 1
        words.append(f"{', '.join(report.unwatched)} entered the tape as tf.constant and "
                     f"{'is' if one else 'are'} not watched, so tape.gradient returns None for "
                     f"{'it' if one else 'them'} (symbolic and fd still differentiate by {'it' if one else 'them'}; "
                     f"--watch {','.join(report.unwatched)} is the fix)")
    if report.watched:
        words.append(f"{', '.join(report.watched)} entered as tf.constant and tape.watch() made the tape record "
                     f"them")
    return "; ".join(words)


def _sum_rows(rows: list[dict[str, float | None]], variables: list[str]) -> dict[str, float | None]:
    out = {}
    for v in variables:
        vals = [row.get(v) for row in rows]
        out[v] = None if any(x is None for x in vals) else sum(vals)
    return out


def symbolic_gradients(trees, point_exact: dict, names: list[str], variables: list[str],
                       rounded: dict[str, float] | None = None, cancel: CancelFlag | None = None):
    """For each tree: (value, {var: formula}, {var: exact derivative value}), and with ``rounded`` (the dtype's
    point) a fourth item, {var: how far the exact derivative moves from the typed point to the dtype's} (the
    point's rounding is no method's error). A :class:`gradcli.methods.worker.BoundedJob`
    work function (module-level, picklable arguments)."""
    symbols = symbolic.symbols_for(names)
    subs = symbolic.exact_point(point_exact, symbols)
    moved = symbolic.rounded_point(subs, rounded, symbols)
    out = []
    for tree in trees:
        f = symbolic.to_sympy(tree, symbols)
        value = symbolic.value_at(f, subs)
        formulas, values, shifts = {}, {}, {}
        for v in variables:
            cancel.check()
            d = symbolic.diff(f, symbols[v])
            formulas[v] = symbolic.formula_text(d)
            values[v] = symbolic.value_at(d, subs)
            shifts[v] = symbolic.point_shift(d, subs, moved, values[v])
        out.append((value, formulas, values) if rounded is None else (value, formulas, values, shifts))
    return out


def _start_symbolic(exprs, point: Point, variables, time_limit: float, dtype: str = "float64") -> BoundedJob:
    return BoundedJob(symbolic_gradients, ([e.tree for e in exprs], dict(point.exact), list(point.names),
                                           list(variables), dtype_point(point, dtype)), time_limit, parallel=True,
                      cancellable=True)


def dtype_point(point: Point, dtype: str) -> dict[str, float]:
    """The point tape and fd start from: each typed value rounded to the dtype (as float64 numbers)."""
    import numpy as np

    with np.errstate(over="ignore"):
        return {k: float(np.float64(v).astype(dtype)) for k, v in point.values.items()}


def _symbolic_column(job: BoundedJob, report: GradientReport, variables, count: int) -> None:
    try:
        columns = job.result()
    except SymbolicTimeout as exc:
        report.notes.append(f"symbolic column left out: {exc} (raise --symbolic-timeout to wait longer)")
        report.methods = [m for m in report.methods if m != "symbolic"]
        return
    for r, (value, formulas, values, shifts) in zip(report.results, columns):
        r.formula = formulas
        r.gradient["symbolic"] = values
        r.point_shift = {v: x for v, x in shifts.items() if x}
        noted = {v: x for v, x in r.point_shift.items() if rounding_matters(x, values.get(v), report.dtype)}
        if noted:
            report.notes.append(rounded_point_note(report, r.expression, noted))
        if value is not None and math.isfinite(value):
            r.value = value
    if count > 1:
        report.sum = report.sum or {}
        report.sum["symbolic"] = _sum_rows([r.gradient["symbolic"] for r in report.results], variables)


def _errors_and_warnings(report: GradientReport, exprs, point: Point, scheme: Scheme, eps) -> None:
    """The single point's judgement: :func:`judge_gradients` on a batch of one, with the point in the words."""
    import numpy as np

    pt = point_text(point.values)
    wrt = report.wrt
    nan = float("nan")
    for e, r in zip(exprs, report.results):
        warning = value_warning(e.text, r.value, point.values)
        if warning:
            report.warnings.append(warning)
            report.failed = True
            r.value = None
        columns = {m: np.array([[[nan if g.get(v) is None else g[v] for v in wrt]]]) for m, g in r.gradient.items()}
        values = np.array([[nan if r.value is None else r.value]])
        x = np.array([[point.values[v] for v in wrt]])
        steps = np.array([[report.fd_steps.get(v, nan) for v in wrt]]) if report.fd_steps else None
        estimates = np.array([[[r.fd_error_estimate.get(v, nan) for v in wrt]]]) if r.fd_error_estimate else None
        shift = np.array([[[r.point_shift.get(v, 0.0) for v in wrt]]]) if r.point_shift else None
        complex_estimates = np.array([[[nan if r.complex_error_estimate.get(v) is None else
                                        r.complex_error_estimate[v] for v in wrt]]])
        errors, disagree, tols = judge_gradients(values, columns, x, steps, dtype=report.dtype, scheme=scheme,
                                                 estimates=estimates, shift=shift, complex_estimates=complex_estimates)
        cross = cross_check(values, columns, x, estimates, dtype=report.dtype)
        cross_complex = _cross_check_complex(values, columns, x, estimates, complex_estimates, report.dtype)
        if value_only(e.tree):  # stop_gradient: fd differentiates the value, by design apart from the tape
            disagree = {m: d for m, d in disagree.items() if m not in ("fd", "complex")}
            cross = cross_complex = None
            report.notes.append(value_only_note(e.text))
        for m, err in errors.items():
            r.error[m] = {v: (float(err[0, 0, j]) if math.isfinite(err[0, 0, j]) else None)
                          for j, v in enumerate(wrt)}
        for j, v in enumerate(wrt):
            # an unwatched constant's None is the lesson, not a failure: nothing to compare it with
            skip = {"tape"} if v in report.unwatched else set()
            bad = {m: g.get(v) for m, g in r.gradient.items() if (g.get(v) is None or not math.isfinite(g.get(v)))
                   and not (m == "complex" and v in r.not_analytic) and m not in skip}  # not analytic: a note already
            if bad:
                said = ", ".join(f"{m}: {_show(x)}" for m, x in bad.items())
                report.warnings.append(f"d({e.text})/d{v} is not finite at {pt} ({said})")
                report.failed = True
                exact = r.gradient.get("symbolic", {}).get(v)
                if "tape" in bad and exact is not None and math.isfinite(exact) and \
                        (note := where_nan_note(e.tree, e.text, v)):
                    report.notes.append(note)
                continue
            if r.value is None:
                continue
            for m, d in disagree.items():
                if m in skip:
                    continue
                if d[0, 0, j] and not (m == "fd" and v in r.one_sided):  # a kink: fd's warning says it
                    report.warnings.append(disagreement(m, e.text, v, float(errors[m][0, 0, j]), dtype=report.dtype,
                                                        tol=float(tols[m][0, 0, j])))
            if skip:  # the cross-checks below compare with the tape
                continue
            if cross is not None and cross[1][0, 0, j]:
                report.warnings.append(cross_disagreement(e.text, v, float(cross[0][0, 0, j]), float(cross[2][0, 0, j]),
                                                          bool(cross[3][0, 0, j]), dtype=report.dtype))
            if cross_complex is not None:
                from gradcli.compute.complex_column import complex_cross_warnings

                report.warnings += complex_cross_warnings(cross_complex, (0, 0, j), f"d({e.text})/d{v}",
                                                          dtype=report.dtype)


def _cross_check_complex(values, columns, x, estimates, complex_estimates, dtype: str):
    """The complex step against tape and fd, without the exact column (None when it did not run)."""
    if "complex" not in columns:
        return None
    from gradcli.compute.complex_column import cross_check_complex

    return cross_check_complex(values, columns, x, {"fd": estimates, "complex": complex_estimates}, dtype=dtype)


def rounding_matters(shift: float, exact: float | None, dtype: str) -> bool:
    """Whether the point's rounding moves the exact value by more than the dtype's own roundings would."""
    return shift > 100 * MACHINE_EPSILON[dtype] * max(1.0, abs(exact or 0.0))


def rounded_point_note(report, text: str, shifts: dict[str, float], *, order: int | None = None) -> str:
    """The note for a typed point the dtype cannot hold: the exact values are at the typed point, tape and fd
    at the dtype's, and the difference is allowed for in the comparison."""
    def what(v):
        return f"d({text})/d{v}" if order is None else f"derivative {order} of {text}"

    moved = ", ".join(f"{what(v)} by {x:.3g}" if math.isfinite(x) else
                      f"{what(v)} to no finite value (the rounded point is outside its domain)"
                      for v, x in shifts.items())
    return (f"the point is not exactly a {report.dtype} number: symbolic is evaluated at the point as typed, tape "
            f"and fd at its {report.dtype} rounding, which moves {moved}; that is allowed for in the comparison")


def _fd_notes(report: GradientReport, text: str, fd, variables, point: Point, *, explicit_step: bool) -> None:
    """Adapted steps, one-sided stencils, kinks and unresolvable values, in words (see methods.fd_notes)."""
    r = next(r for r in report.results if r.expression == text and "fd" in r.gradient)
    for j, v in enumerate(variables):
        warnings, notes, kink = fd_line_notes(f"d({text})/d{v}", point_text(point.values), dtype=report.dtype,
                                              value=float(fd.values[0, j]), estimate=float(fd.estimates[0, j]),
                                              step=float(fd.steps[0, j]), how=int(fd.how[0, j]),
                                              kink=bool(fd.kinks[0, j]), left=float(fd.left[0, j]),
                                              right=float(fd.right[0, j]), explicit_step=explicit_step)
        report.warnings += warnings
        report.notes += notes
        if kink:
            r.one_sided[v] = kink


def _show(x: float | None) -> str:
    return "undefined" if x is None else repr(x)
