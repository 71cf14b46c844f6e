"""The numbers of ``gradcli steps`` for one dtype (see :mod:`gradcli.compute.steps`): every formula at every
step in one NumPy call, and the complex step at every step in another."""

from __future__ import annotations

import math

from gradcli.compute.steps import COMPLEX, DtypeSweep, Formula, FormulaSweep, sweep_steps
from gradcli.expression import Node
from gradcli.expression.evaluate import compile_expression, numpy_backend
from gradcli.methods.complex_step import COMPLEX_DTYPE, COMPLEX_STEP, complex_backend
from gradcli.dtypes import MACHINE_EPSILON


def _np():
    import numpy as np

    return np


def effective_steps(x: float, steps, dtype: str):
    """The steps x + h really takes in the dtype, (x + h) - x (0 where h vanishes next to x)."""
    np = _np()
    t = np.dtype(dtype).type
    with np.errstate(all="ignore"):
        xt = t(x)
        return ((xt + np.asarray(steps, dtype=np.float64).astype(dtype)) - xt).astype(dtype)


def default_step(formula_accuracy: int, order: int, dtype: str, x: float) -> float:
    """gradcli's rule (gradcli.methods.fd_engine.steps): eps^(1/(n+p)) * max(1, |x|), the step x + h takes."""
    requested = MACHINE_EPSILON[dtype] ** (1.0 / (order + formula_accuracy)) * max(1.0, abs(x))
    return float(effective_steps(x, [requested], dtype)[0])


def theory_step(formula: Formula, order: int, dtype: str, f_abs: float, higher: float | None) -> float | None:
    """argmin of |c f^(n+p)| h^p + eps |f| sum|w| / h^n; None without a truncation or a rounding term."""
    if higher is None or not math.isfinite(higher) or f_abs == 0:
        return None
    truncation = abs(formula.truncation_constant(order) * higher)
    rounding = MACHINE_EPSILON[dtype] * f_abs * formula.weight_sum
    if truncation == 0 or rounding == 0:
        return None
    p = formula.accuracy
    return (order * rounding / (p * truncation)) ** (1.0 / (order + p))


def _stencil_values(tree: Node, values: dict[str, float], variable: str, order: int, dtype: str,
                    stencils: list[Formula], steps: list):
    """D(h) for each formula and its steps: one evaluation of every stencil point. ``steps[i]`` are the
    effective steps (dtype) of formula i. Returns a list of float64 arrays."""
    np = _np()
    t = np.dtype(dtype).type
    x = t(values[variable])
    columns, shapes = [], []
    for formula, h in zip(stencils, steps):
        m = np.array([float(o) for o in formula.offsets], dtype=dtype)
        columns.append((x + m[:, None] * h[None, :]).reshape(-1))
        shapes.append((len(m), len(h)))
    moved = np.concatenate(columns)
    env = {k: np.full(moved.shape, t(v)) for k, v in values.items() if k != variable}
    env[variable] = moved
    with np.errstate(all="ignore"):
        f = np.broadcast_to(np.asarray(compile_expression(tree, numpy_backend(dtype))(env), dtype=dtype), moved.shape)
        out, start = [], 0
        for formula, h, (s, k) in zip(stencils, steps, shapes):
            block = f[start:start + s * k].reshape(s, k)
            start += s * k
            w = np.array([float(c) for c in formula.weights], dtype=dtype)
            acc = w[0] * block[0]
            for row in range(1, s):  # term by term, in a fixed order, as gradcli.methods.fd does
                acc = acc + w[row] * block[row]
            d = acc / h ** order
            out.append(np.where(h == 0, np.nan, d).astype(np.float64))
    return out


def _complex_values(tree: Node, values: dict[str, float], variable: str, dtype: str, steps):
    """Im f(x + ih) / h for each step h."""
    np = _np()
    t = np.dtype(COMPLEX_DTYPE[dtype]).type
    real = np.dtype(dtype).type
    h = np.asarray(steps, dtype=np.float64).astype(dtype)
    env = {k: np.full(h.shape, t(real(v))) for k, v in values.items() if k != variable}
    env[variable] = real(values[variable]) + h.astype(t) * t(1j)
    with np.errstate(all="ignore"):
        f = np.broadcast_to(np.asarray(compile_expression(tree, complex_backend(dtype))(env), dtype=t), h.shape)
        return (np.imag(f) / h).astype(np.float64)


def _errors(d, exact: float | None) -> list[float | None]:
    np = _np()
    if exact is None or not math.isfinite(exact):
        return [None] * len(d)
    with np.errstate(all="ignore"):
        err = np.abs(d - exact)
    return [float(e) if math.isfinite(e) else None for e in err.tolist()]


def _sweep(name, accuracy, points, errors: list, grid: list[float], default, theory) -> FormulaSweep:
    """A formula's row: errors on the grid (then at the default and theory steps, the last entries)."""
    n = len(grid)
    row = FormulaSweep(name, accuracy, points, errors[:n])
    finite = [(e, h) for e, h in zip(errors[:n], grid) if e is not None]
    if finite:
        best = min(finite, key=lambda eh: (eh[0], -eh[1]))
        row.best_error, row.best_step = best
    row.default_step, row.default_error = default, errors[n]
    if theory is not None:
        row.theory_step, row.theory_error = theory, errors[n + 1]
    return row


def sweep_dtype(tree: Node, values: dict[str, float], variable: str, order: int, dtype: str, exact: float | None,
                f_abs: float, higher: dict[int, float | None], stencils: list[Formula]) -> DtypeSweep:
    """Every formula over the sweep of steps in ``dtype`` at ``values`` (the dtype's point)."""
    x = values[variable]
    grid = sweep_steps(dtype, x)
    defaults = [default_step(f.accuracy, order, dtype, x) for f in stencils]
    theories = [theory_step(f, order, dtype, f_abs, higher.get(f.accuracy)) for f in stencils]
    steps = [effective_steps(x, grid + [d] + ([th] if th is not None else []), dtype)
             for d, th in zip(defaults, theories)]
    theories = [None if th is None else float(h[-1]) for th, h in zip(theories, steps)]
    d_values = _stencil_values(tree, values, variable, order, dtype, stencils, steps)
    rows = [_sweep(f.name, f.accuracy, len(f.offsets), _errors(d, exact), grid, default, theory)
            for f, d, default, theory in zip(stencils, d_values, defaults, theories)]
    if order == 1:
        d = _complex_values(tree, values, variable, dtype, grid + [COMPLEX_STEP[dtype]])
        rows.append(_sweep(COMPLEX, 2, 1, _errors(d, exact), grid, COMPLEX_STEP[dtype], None))
    return DtypeSweep(dtype, float(x), exact, grid, rows)


__all__ = ["default_step", "effective_steps", "sweep_dtype", "theory_step"]
