"""Finite-difference Hessians for a batch of points: central second differences, every stencil point of every
point in one NumPy call, with an error estimate per entry (the same differences at 2h and 4h, and the
values' rounding), and steps that shrink where the stencil leaves the domain (issue 8 follow-up, item 2).
Part of :mod:`gradcli.methods.fd`, which re-exports it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from gradcli.expression import Node
from gradcli.methods import fd_error


def _np():
    import numpy as np

    return np


@dataclass
class FdHessians:
    values: object  # [P]
    gradients: object  # [P, n]: central first differences from the same stencil (step eps^(1/4): rough)
    matrices: object  # [P, n, n]
    steps: object  # [P, n]
    estimates: object = None  # [P, n, n]: each entry's error estimate (the same differences at 2h)
    how: object = None  # [P] int: 0 the default steps, fd_error.SHRUNK (the stencil left the domain)


def _hessian_offsets(n: int, scale: float = 1.0, centre: bool = True):
    """Stencil offsets in units of the steps: the centre, +-e_i, then the four corners of each pair
    (times ``scale``: the same stencil at 2h, for the estimate, follows without its centre)."""
    np = _np()
    offsets = [np.zeros(n)] if centre else []
    for i in range(n):
        for s in (1, -1):
            e = np.zeros(n)
            e[i] = s * scale
            offsets.append(e)
    for i in range(n):
        for j in range(i + 1, n):
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                e = np.zeros(n)
                e[i], e[j] = si * scale, sj * scale
                offsets.append(e)
    return np.array(offsets).reshape(-1, n)


def fd_hessians(tree: Node, points: Mapping[str, object], wrt: list[str], *, dtype: str = "float64",
                eps: float | None = None) -> FdHessians:
    """Central second differences, all 1 + 2n^2 stencil points of all P points in one call.

    diagonal: (f(x+h_i) - 2 f(x) + f(x-h_i)) / h_i^2
    mixed:    (f(x+h_i+h_j) - f(x+h_i-h_j) - f(x-h_i+h_j) + f(x-h_i-h_j)) / (4 h_i h_j)

    Without ``eps``, a point whose stencil (at h, 2h or 4h) leaves the domain (f finite at x, not at some
    stencil point) or resolves no value (an estimate above half its entry: across a pole) is recomputed
    with the offending steps shrunk by 4^-1 .. 4^-20, keeping the finite result with the smallest estimate
    relative to its entries (``how``: fd_error.SHRUNK there)."""
    # (imported here: gradcli.methods.fd imports this module at its end, so either can be imported first)
    from gradcli.methods.fd import SECOND_DIFFERENCE_POWER, _taken_steps, _typed_env, steps

    np = _np()
    t = np.dtype(dtype).type
    env = _typed_env(points, dtype)
    n = len(wrt)
    p = len(next(iter(env.values()))) if env else 1
    h = np.stack([steps(points[v], dtype, SECOND_DIFFERENCE_POWER, eps) for v in wrt], axis=1) if n else \
        np.zeros((p, 0), dtype=t)
    with np.errstate(all="ignore"):
        f0, gradients, matrices, estimates, finite = _hessians_at(tree, env, wrt, h, dtype)
        how = np.zeros(p, dtype=int)
        relative = estimates / np.maximum(np.abs(matrices), 1.0)  # [P, n, n]
        leaves = ~finite.all(axis=0)
        unresolved = np.any(relative.reshape(p, -1) > 0.5, axis=1)  # across a pole: finite, but no value
        suspicious = np.isfinite(f0) & (leaves | unresolved) & (eps is None) & (n > 0)
        index = np.nonzero(suspicious)[0]
        if len(index):
            # the steps that shrink: those whose axis leaves the domain, or whose own entry is unresolved
            diagonal = np.diagonal(relative[index], axis1=1, axis2=2)  # [Q, n]
            worst = diagonal == np.max(diagonal, axis=1, keepdims=True)
            shrink = np.where(leaves[index, None], _leaving_variables(finite[:, index], n), worst)
            x64 = {v: np.asarray(points[v], dtype=np.float64)[index] for v in wrt}
            sub = {k: a[index] for k, a in env.items()}
            # judged by the shrinking variables' own diagonal entries (a mixed or other entry's rounding
            # grows as a step shrinks, and says so in its own estimate)
            best = np.where(leaves[index], np.inf, np.max(np.where(shrink, diagonal, 0.0), axis=1))
            h0 = h[index].copy()
            for factor in fd_error.STEP_FACTORS[1:]:  # 1/4 of the default step and down
                hs = np.stack([np.where(shrink[:, c], _taken_steps(x64[v], h0[:, c], factor, dtype), h0[:, c])
                               for c, v in enumerate(wrt)], axis=1)
                g0, gg, mm, ee, ok = _hessians_at(tree, sub, wrt, hs, dtype)
                own = np.diagonal(ee / np.maximum(np.abs(mm), 1.0), axis1=1, axis2=2)
                score = np.max(np.where(shrink, own, 0.0), axis=1)
                better = ok.all(axis=0) & np.isfinite(score) & (score < best)
                if better.any():
                    at = index[better]
                    gradients[at], matrices[at], estimates[at], h[at] = gg[better], mm[better], ee[better], hs[better]
                    best[better], how[at] = score[better], fd_error.SHRUNK
    return FdHessians(f0.astype(np.float64), gradients, matrices, h.astype(np.float64),
                      estimates.astype(np.float64), how)


def _hessians_at(tree: Node, env: dict, wrt: list[str], h, dtype: str):
    """(f(x), gradients [P, n], matrices [P, n, n], estimates [P, n, n], finite [S, P]: each stencil value
    finite) at steps h [P, n] in dtype."""
    from gradcli.methods.fd import _evaluate

    np = _np()
    t = np.dtype(dtype).type
    n, p = len(wrt), len(h)
    offsets = np.concatenate([_hessian_offsets(n), _hessian_offsets(n, 2.0, centre=False),
                              _hessian_offsets(n, 4.0, centre=False)]).astype(t)  # [S, n]
    count = len(offsets)
    stacked = {k: np.tile(x, count) for k, x in env.items() if k not in wrt}
    for c, v in enumerate(wrt):
        # [S, P]: x + offset * h, in dtype
        stacked[v] = (env[v][None, :] + offsets[:, c:c + 1] * h[None, :, c]).reshape(-1)
    fx = _evaluate(tree, stacked, dtype, (count * p,))
    half = 1 + 2 * n + 2 * n * (n - 1)  # the stencil at h; the ones at 2h and 4h follow (without the centre)
    e = fd_error.StencilRounding(tree, stacked, fx, dtype, tuple(range(count)), p, range(half))
    fx = fx.reshape(count, p)
    f0 = fx[0]
    gradients = np.empty((p, n), dtype=np.float64)
    for i in range(n):
        gradients[:, i] = (fx[1 + 2 * i] - fx[2 + 2 * i]) / (2 * h[:, i])
    matrices = _second_differences(fx[:half], f0, h, n)
    wide = _second_differences(np.concatenate([fx[:1], fx[half:2 * half - 1]]), f0, 2 * h, n)
    wider = _second_differences(np.concatenate([fx[:1], fx[2 * half - 1:]]), f0, 4 * h, n)
    fmax = np.max(np.abs(fx), axis=0)[:, None, None]
    hh = h[:, :, None] * h[:, None, :]
    weights = np.where(np.eye(n, dtype=bool), 4.0, 1.0)[None]
    # each value's rounding, through the |weights| of the entry's own formula
    measured = np.abs(_second_differences(e.values[:half], -e.values[0], h, n, absolute=True))
    estimates = fd_error.truncation(matrices, wide, wider, 2) + fd_error.rounding(
        dtype, fmax, weights, hh ** 0.5, 2, measured, e.bounded[:, None, None])
    return f0, gradients, matrices, estimates, np.isfinite(fx)


def _leaving_variables(finite, n: int):
    """[Q, n] bool from the stencil rows' finiteness [S, Q]: the variables along whose axis (at h, 2h or 4h)
    a value is not finite; where only corners are, every variable (the pair's direction is unknown)."""
    np = _np()
    half = 1 + 2 * n + 2 * n * (n - 1)
    axis_rows = [[1 + 2 * i, 2 + 2 * i] + [start + 2 * i + d for start in (half, 2 * half - 1) for d in (0, 1)]
                 for i in range(n)]
    out = np.stack([~finite[rows].all(axis=0) for rows in axis_rows], axis=1)
    out[~out.any(axis=1)] = True
    return out


def _second_differences(fx, f0, h, n: int, absolute: bool = False):
    """[P, n, n] from the rows of one stencil (centre, +-e_i, then the corners of each pair) at steps h [P, n].

    diagonal: (f(x+h_i) - 2 f(x) + f(x-h_i)) / h_i^2
    mixed:    (f(x+h_i+h_j) - f(x+h_i-h_j) - f(x-h_i+h_j) + f(x-h_i-h_j)) / (4 h_i h_j)
    """
    np = _np()
    out = np.empty((fx.shape[1], n, n), dtype=np.float64)
    sign = 1.0 if absolute else -1.0  # absolute: every weight taken as |w| (with f0 passed as -|f0|)
    for i in range(n):
        fp, fm = fx[1 + 2 * i], fx[2 + 2 * i]
        out[:, i, i] = (fp - 2 * f0 + fm) / (h[:, i] * h[:, i])
    k = 1 + 2 * n
    for i in range(n):
        for j in range(i + 1, n):
            pp, pm, mp, mm = fx[k], fx[k + 1], fx[k + 2], fx[k + 3]
            k += 4
            out[:, i, j] = out[:, j, i] = (pp + sign * pm + sign * mp + mm) / (4 * h[:, i] * h[:, j])
    return out


