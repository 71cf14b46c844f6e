"""The complex-step column of ``grad`` and ``derivative --order 1`` (issue 8, item 7).

:mod:`gradcli.methods.complex_step` computes the derivatives and their error estimates; this module
puts them into the reports and judges them against the exact column: a value further from SymPy's than
its estimate plus the effect of rounding the point to the dtype (f's second derivatives times how far
the dtype's point is from the typed one) is a warning, as for the other methods. Where the expression
is not analytic at the point (abs at its kink, atan2 on its cut, sqrt at 0), there is a note and no
number, and the command does not fail for it.
"""

from __future__ import annotations

import math

from gradcli.errors import UsageError
from gradcli.methods.complex_step import COMPLEX_STEP, complex_gradients, not_analytic_note
from gradcli.results import point_text, shortest

# The reference itself is a float64 rounding of the exact value.
REFERENCE_ULPS = 4.0
FLOAT64_EPS = 2.220446049250313e-16


def refuse_higher_orders(methods: list[str], order: int) -> None:
    """``derivative -m complex --order 2``: the complex step gives first derivatives only."""
    if "complex" in methods and order > 1:
        raise UsageError(f"--method complex gives first derivatives only, not --order {order} "
                         "(use symbolic, tape or fd for higher orders)")


def _batch(values: dict[str, float]):
    import numpy as np

    return {k: np.array([v], dtype=np.float64) for k, v in values.items()}


def point_shift(tree, values: dict[str, float], wrt: list[str], dtype: str) -> list[float]:
    """For each partial derivative: how far it moves between the typed point and the dtype's point, about
    sum_k |d^2 f / dx_j dx_k| * |x_k - x_k in dtype| (the mixed derivatives by central differences of
    float64 complex-step gradients; the typed value is taken as within 2 float64 ulps of ``values``)."""
    import numpy as np

    names = list(values)
    x = np.array([values[k] for k in names], dtype=np.float64)
    delta = np.abs(x - x.astype(dtype).astype(np.float64)) + 2 * FLOAT64_EPS * np.abs(x)
    if not np.any(delta):
        return [0.0] * len(wrt)
    step = FLOAT64_EPS ** (1 / 3) * np.maximum(1.0, np.abs(x))
    shifted = np.repeat(x[None, :], 2 * len(names), axis=0)  # rows: +step_k, -step_k
    for k in range(len(names)):
        shifted[2 * k, k] += step[k]
        shifted[2 * k + 1, k] -= step[k]
    g = complex_gradients(tree, {n: shifted[:, k] for k, n in enumerate(names)}, wrt, dtype="float64").values
    with np.errstate(invalid="ignore"):
        second = np.abs(g[0::2] - g[1::2]) / (2 * step[:, None])  # [names, wrt]
        shift = np.nansum(second * delta[:, None], axis=0)
    return shift.tolist()


def _judge(method_value, exact, estimate, shift):
    """(error, tolerance) against the exact value; None where nothing is compared."""
    if method_value is None or exact is None or not (math.isfinite(method_value) and math.isfinite(exact)):
        return None, None
    tolerance = estimate + shift + REFERENCE_ULPS * FLOAT64_EPS * abs(exact)
    return abs(method_value - exact), tolerance


def _warning(text: str, variable: str, error: float, tolerance: float, dtype: str) -> str:
    return (f"complex and symbolic disagree on d({text})/d{variable}: error {error:.3g} is more than "
            f"its estimate and the rounding of the point to {dtype} (~{tolerance:.1g})")


def _column(tree, values: dict[str, float], wrt: list[str], dtype: str):
    """(derivative or None, estimate or None, not analytic) per variable, and the point shifts."""
    r = complex_gradients(tree, _batch(values), wrt, dtype=dtype)
    out = {}
    for j, v in enumerate(wrt):
        d, est = float(r.values[0, j]), float(r.estimates[0, j])
        finite = math.isfinite(d)
        out[v] = (shortest(d, dtype) if finite else None, est if finite else None, bool(r.not_analytic[0, j]))
    return out, point_shift(tree, values, wrt, dtype)


def add_complex_gradient(report, exprs, point, variables: list[str], dtype: str) -> None:
    """Fill ``report`` (a :class:`gradcli.results.GradientReport`) with the complex-step column and judge it."""
    pt = point_text(point.values)
    report.complex_step = COMPLEX_STEP[dtype]
    for e, r in zip(exprs, report.results):
        column, shifts = _column(e.tree, point.values, variables, dtype)
        r.gradient["complex"] = {v: column[v][0] for v in variables}
        r.complex_error_estimate = {v: column[v][1] for v in variables}
        if r.value is None:  # an undefined value: already a warning, its derivatives mean nothing
            r.gradient["complex"] = {v: None for v in variables}
            continue
        exact = r.gradient.get("symbolic", {})
        for j, v in enumerate(variables):
            d, est, not_analytic = column[v]
            if not_analytic:
                report.notes.append(not_analytic_note(e.text, v, pt, e.tree))
                continue
            if d is None:
                report.warnings.append(f"d({e.text})/d{v} is not finite at {pt} (complex: {d})")
                report.failed = True
                continue
            err, tol = _judge(d, exact.get(v), est, shifts[j])
            if err is None:
                continue
            r.error["complex"] = {**r.error.get("complex", {}), v: err}
            if err > tol:
                report.warnings.append(_warning(e.text, v, err, tol, dtype))
    if len(exprs) > 1:
        rows = [r.gradient["complex"] for r in report.results]
        report.sum = report.sum or {}
        report.sum["complex"] = {v: None if any(row[v] is None for row in rows) else sum(row[v] for row in rows)
                                 for v in variables}


def add_complex_derivative(report, tree, point, variable: str, dtype: str) -> None:
    """Fill the first row of ``report`` (a :class:`gradcli.compute.derivative.DerivativeReport`) with the
    complex-step derivative and judge it; the other rows (orders above 1) get none."""
    report.methods = [*report.methods, "complex"]
    row = report.derivatives[0]
    column, shifts = _column(tree, point.values, [variable], dtype)
    d, est, not_analytic = column[variable]
    row.complex, row.complex_error_estimate = d, est
    if report.value is None:
        row.complex = row.complex_error_estimate = None
        return
    pt = point_text(point.values)
    if not_analytic:
        report.notes.append(not_analytic_note(report.expression, variable, pt, tree))
        return
    if d is None:
        report.warnings.append(f"derivative of order 1 is not finite at {pt} (complex)")
        report.failed = True
        return
    err, tol = _judge(d, row.symbolic if "symbolic" in report.methods else None, est, shifts[0])
    if err is not None:
        row.error["complex"] = err
        if err > tol:
            report.warnings.append(_warning(report.expression, variable, err, tol, dtype))


__all__ = ["add_complex_derivative", "add_complex_gradient", "point_shift", "refuse_higher_orders"]
