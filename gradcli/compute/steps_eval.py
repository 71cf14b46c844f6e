"""The numbers of ``gradcli steps`` for one dtype (see :mod:`gradcli.compute.steps`): every formula at every
step of the sweep, through the methods' own code (the stencils of :mod:`gradcli.methods.fd_stencils` in one
NumPy call, the complex step of :mod:`gradcli.methods.complex_step` in another, the steps as
:mod:`gradcli.methods.fd_engine` takes them), then a finer search around each formula's smallest error."""

from __future__ import annotations

import math

import numpy as np

from gradcli.compute.steps_sweep import COMPLEX, DtypeSweep, FormulaSweep, sweep_steps
from gradcli.dtypes import MACHINE_EPSILON
from gradcli.expression import Node
from gradcli.methods.complex_step import complex_gradients, complex_step_values
from gradcli.methods.fd_engine import one_point, steps, taken_steps
from gradcli.methods.fd_stencils import Stencil, stencil_values

# The finer search: REFINE_POINTS steps evenly spread in log h between the sampled neighbours of the
# sweep's smallest error (a decade), then REFINE_POINTS between the neighbours of the best of those. The
# errors near the bottom of the V are rounding noise: a dense look finds what a bisection would step over.
REFINE_POINTS = 17
REFINE_ROUNDS = 2


def taken(x: float, requested, dtype: str):
    """The steps as x + h really takes them in the dtype, (x + h) - x: fd_engine's rule for every fd step."""
    h = np.asarray(requested, dtype=np.float64)
    return taken_steps(np.full(h.shape, x), h, np.ones(h.shape), dtype)


def default_step(stencil: Stencil, dtype: str, x: float) -> float:
    """The step gradcli's fd takes at x without --eps: eps^q * max(1, |x|) as x + h takes it."""
    return float(steps(np.array([x]), dtype, stencil.step_power, None)[0])


def theory_step(stencil: Stencil, dtype: str, f_abs: float, higher: float | None) -> float | None:
    """argmin of |c f^(n+p)| h^p + eps |f| sum|w| / h^n; None without a truncation or a rounding term."""
    if higher is None or not math.isfinite(higher) or f_abs == 0:
        return None
    truncation = abs(stencil.truncation_constant * higher)
    rounding = MACHINE_EPSILON[dtype] * f_abs * stencil.weight_sum
    if truncation == 0 or rounding == 0:
        return None
    n, p = stencil.order, stencil.accuracy
    return (n * rounding / (p * truncation)) ** (1.0 / (n + p))


class _Study:
    """The formulas of one sweep, evaluated together: ``errors(step lists)`` gives |D(h) - exact| for each
    formula at its own steps (NaN where the formula gives no finite number), one NumPy call per method."""

    def __init__(self, tree: Node, values: dict[str, float], variable: str, dtype: str, exact: float | None,
                 stencils: list[Stencil], with_complex: bool):
        self.tree, self.values, self.variable, self.dtype, self.exact = tree, values, variable, dtype, exact
        self.stencils, self.with_complex = stencils, with_complex

    def take(self, requested: list) -> list:
        """Each formula's steps as it takes them: x + h for the stencils; the complex step only moves the
        imaginary part, so its h is the dtype's rounding of the one requested."""
        x = self.values[self.variable]
        out = [taken(x, r, self.dtype) for r in requested[:len(self.stencils)]]
        return out + [np.asarray(r, dtype=np.float64).astype(self.dtype) for r in requested[len(self.stencils):]]

    def errors(self, step_lists: list) -> list:
        fd = stencil_values(self.tree, self.values, self.variable, list(zip(self.stencils, step_lists)),
                            self.dtype) if self.stencils else []
        cx = [complex_step_values(self.tree, self.values, self.variable, step_lists[-1], dtype=self.dtype)] \
            if self.with_complex else []
        with np.errstate(all="ignore"):
            out = [np.abs(d - self.exact) if self.exact is not None and math.isfinite(self.exact)
                   else np.full(d.shape, np.nan) for d in fd + cx]
        return [np.where(np.isfinite(e), e, np.nan) for e in out]


def _best(candidates: list[tuple[float, float]]) -> tuple[float, float] | None:
    """The (step, error) with the smallest error; of equal errors, the largest step."""
    finite = [(h, e) for h, e in candidates if math.isfinite(e)]
    return min(finite, key=lambda he: (he[1], -he[0])) if finite else None


def _refine(study: _Study, grid: list[float], sampled: list) -> list[list[tuple[float, float]]]:
    """The finer search around each formula's smallest sampled error (``sampled``: its errors on the grid):
    the (step, error) pairs it tried, per formula, every formula's round in one evaluation."""
    low, high = math.log10(grid[-1]), math.log10(grid[0])
    spans, tried = [], [[] for _ in sampled]
    for errors in sampled:
        finite = [i for i, e in enumerate(errors) if math.isfinite(e)]
        k = min(finite, key=lambda i: (errors[i], -grid[i])) if finite else None
        if k is None or errors[k] == 0:  # nothing to find below an error of 0
            spans.append(None)
        else:  # between the sampled neighbours
            spans.append((math.log10(grid[min(k + 1, len(grid) - 1)]), math.log10(grid[max(k - 1, 0)])))
    for _ in range(REFINE_ROUNDS):
        if all(s is None for s in spans):
            break
        h = study.take([np.zeros(0) if s is None else 10.0 ** np.linspace(s[0], s[1], REFINE_POINTS)
                        for s in spans])
        for i, (steps_i, errors_i) in enumerate(zip(h, study.errors(h))):
            if spans[i] is None:
                continue
            pairs = list(zip(steps_i.astype(np.float64).tolist(), errors_i.tolist()))
            tried[i] += pairs
            best = _best(pairs)
            width = (spans[i][1] - spans[i][0]) / (REFINE_POINTS - 1)
            spans[i] = None if best is None else (max(low, math.log10(best[0]) - width),
                                                  min(high, math.log10(best[0]) + width))
    return tried


def sweep_dtype(tree: Node, values: dict[str, float], variable: str, order: int, dtype: str, exact: float | None,
                f_abs: float, higher: dict[int, float | None], stencils: list[Stencil], *,
                with_complex: bool = False) -> DtypeSweep:
    """Every formula over the sweep of steps in ``dtype`` at ``values`` (the dtype's point)."""
    x = values[variable]
    grid = sweep_steps(dtype, x)
    defaults = [default_step(s, dtype, x) for s in stencils]
    theories = [theory_step(s, dtype, f_abs, higher.get(s.accuracy)) for s in stencils]
    theories = [None if t is None else float(taken(x, [t], dtype)[0]) for t in theories]
    if with_complex:  # the power of two complex_gradients chooses for this point
        defaults.append(float(complex_gradients(tree, one_point(values), [variable], dtype=dtype).steps[0, 0]))
        theories.append(None)
    study = _Study(tree, values, variable, dtype, exact, stencils, with_complex)
    n = len(grid)
    marked = [[d] + ([t] if t is not None else []) for d, t in zip(defaults, theories)]
    grid_taken = study.take([grid] * len(marked))
    first = study.errors([np.concatenate([g, np.asarray(m, dtype=dtype)]) for g, m in zip(grid_taken, marked)])
    refined = _refine(study, grid, [e[:n].tolist() for e in first])
    rows = []
    names = [(s.name, s.accuracy, len(s.offsets)) for s in stencils] + ([(COMPLEX, 2, 1)] if with_complex else [])
    for (name, accuracy, points), errors, default, theory, tried in zip(names, first, defaults, theories, refined):
        sampled = list(zip(grid, errors[:n].tolist()))  # the sweep's steps as the table names them
        row = FormulaSweep(name, accuracy, points, [None if math.isnan(e) else e for _, e in sampled])
        row.default_step, row.default_error = default, _finite(errors[n])
        candidates = sampled + tried + [(default, float(errors[n]))]
        if theory is not None:
            row.theory_step, row.theory_error = theory, _finite(errors[n + 1])
            candidates.append((theory, float(errors[n + 1])))
        best = _best(candidates)
        if best is not None:
            row.best_step, row.best_error = best
        rows.append(row)
    return DtypeSweep(dtype, float(x), exact, grid, rows)


def _finite(e) -> float | None:
    e = float(e)
    return e if math.isfinite(e) else None


__all__ = ["default_step", "sweep_dtype", "taken", "theory_step"]
