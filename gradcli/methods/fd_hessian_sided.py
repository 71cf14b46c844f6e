"""One-sided Hessians: where no two-sided stencil of any step stays in the domain (``x**2.5`` at x = 0,
``sqrt(x - y)`` on x = y), each leaving variable's differences go forward or backward, the others stay
central. Part of :mod:`gradcli.methods.fd_hessian`.

Every entry is a product of one-variable stencils of accuracy 2:

- diagonal, one-sided: (2 f(x) - 5 f(x + u h) + 4 f(x + 2u h) - f(x + 3u h)) / h^2 (u = +1 forward, -1 backward);
- mixed: the first-derivative stencils of i and j multiplied, each one-sided
  (-3 f(x) + 4 f(x + u h) - f(x + 2u h)) / (2u h) or central (f(x + h) - f(x - h)) / 2h.

The estimate is the same formula at 2h and 4h, extrapolated geometrically: at an edge f is often not smooth
(x^2.5: D(h) ~ h^0.5, not h^2), so where the differences shrink slower than the theory says, the truncation
left in D(h) is |D(h) - D(2h)| / (r - 1), r their measured ratio, not |D(h) - D(2h)|.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from gradcli.expression import Node
from gradcli.methods.fd_engine import evaluate
from gradcli.methods import fd_error

# offsets (in units of u h) and weights of the one-variable stencils, accuracy 2
FIRST = {0: ((-1, 1), (Fraction(-1, 2), Fraction(1, 2))),  # 0: central
         1: ((0, 1, 2), (Fraction(-3, 2), Fraction(2), Fraction(-1, 2)))}  # one-sided, times u
SECOND = {0: ((-1, 0, 1), (Fraction(1), Fraction(-2), Fraction(1))),
          1: ((0, 1, 2, 3), (Fraction(2), Fraction(-5), Fraction(4), Fraction(-1)))}
SCALES = (1.0, 2.0, 4.0)


def _np():
    import numpy as np

    return np


def directions(finite, n: int, leaving):
    """[Q, n] in {-1, 0, 1} from the central stencil's finiteness [S, Q] (its rows as
    :func:`gradcli.methods.fd_hessian._hessian_offsets` lays them out, at h, 2h, 4h) and the leaving
    variables [Q, n]: 0 (central) for a variable that stays, +1 where its forward axis stays in the domain
    (or neither does), else -1."""
    np = _np()
    half = 1 + 2 * n + 2 * n * (n - 1)
    out = np.zeros(leaving.shape, dtype=int)
    for i in range(n):
        plus = [1 + 2 * i, half + 2 * i, 2 * half - 1 + 2 * i]
        forward = finite[plus].all(axis=0)
        out[:, i] = np.where(leaving[:, i], np.where(forward, 1, -1), 0)
    return out


@dataclass
class SidedHessians:
    gradients: object  # [Q, n]
    matrices: object  # [Q, n, n]
    estimates: object  # [Q, n, n]
    finite: object  # [Q] bool: every stencil value and estimate finite
    growing: object  # [Q, n, n] bool: |D(2h) - D(4h)| < |D(h) - D(2h)|, above the rounding: diverging
    rounding: object  # [Q, n, n]: the rounding part of the estimates


def sided_hessians(tree: Node, env: dict, wrt: list[str], h, signs, dtype: str) -> SidedHessians:
    """The Hessians at Q points with steps h [Q, n] and directions ``signs`` [Q, n] (see :func:`directions`);
    points sharing a pattern are computed together."""
    np = _np()
    q, n = h.shape
    out = SidedHessians(np.full((q, n), np.nan), np.full((q, n, n), np.nan), np.full((q, n, n), np.nan),
                        np.zeros(q, dtype=bool), np.zeros((q, n, n), dtype=bool), np.full((q, n, n), np.nan))
    patterns, group = np.unique(signs.reshape(q, n), axis=0, return_inverse=True)
    for g, pattern in enumerate(patterns):
        at = np.nonzero(group.reshape(-1) == g)[0]
        sub = {k: a[at] for k, a in env.items()}
        for name, value in zip(("gradients", "matrices", "estimates", "finite", "growing", "rounding"),
                               _pattern(tree, sub, wrt, h[at], pattern, dtype)):
            getattr(out, name)[at] = value
    return out


def _terms(n: int, pattern):
    """{entry: [(offset tuple in units of h, weight)]} for entries (i, j), i <= j, and ("g", i) (gradients)."""
    u = [int(s) if s else 1 for s in pattern]
    kind = [1 if s else 0 for s in pattern]
    terms = {}
    for i in range(n):
        ms, ws = FIRST[kind[i]]
        terms[("g", i)] = [(_axis(n, i, m * u[i]), w * u[i]) for m, w in zip(ms, ws)]
        ms, ws = SECOND[kind[i]]
        terms[(i, i)] = [(_axis(n, i, m * u[i]), w) for m, w in zip(ms, ws)]
        for j in range(i + 1, n):
            (ai, wi), (aj, wj) = FIRST[kind[i]], FIRST[kind[j]]
            terms[(i, j)] = [(_axis(n, i, a * u[i], j, b * u[j]), x * u[i] * y * u[j])
                             for a, x in zip(ai, wi) for b, y in zip(aj, wj)]
    return terms


def _axis(n: int, i: int, a: int, j: int | None = None, b: int = 0) -> tuple:
    e = [0] * n
    e[i] = a
    if j is not None:
        e[j] = b
    return tuple(e)


def _pattern(tree, env, wrt, h, pattern, dtype):

    np = _np()
    t = np.dtype(dtype).type
    q, n = h.shape
    terms = _terms(n, pattern)
    unit = sorted({m for parts in terms.values() for m, _ in parts})
    rows = [(s, m) for s in SCALES for m in unit]
    row_of = {r: k for k, r in enumerate(rows)}
    stacked = {k: np.tile(x, len(rows)) for k, x in env.items() if k not in wrt}
    for c, v in enumerate(wrt):
        off = np.array([s * m[c] for s, m in rows], dtype=t)[:, None]
        stacked[v] = (env[v][None, :] + off * h[None, :, c]).reshape(-1)
    with np.errstate(all="ignore"):
        fx = evaluate(tree, stacked, dtype, (len(rows) * q,))
        rounding = fd_error.StencilRounding(tree, stacked, fx, dtype, tuple(rows), q, [(1.0, m) for m in unit])
        fx = fx.reshape(len(rows), q)

        def combine(entry, scale, values, absolute=False):
            total = 0.0
            for m, w in terms[entry]:
                weight = abs(float(w)) if absolute else float(w)
                total = total + weight * values[row_of[(scale, m)]].astype(np.float64)
            return total

        gradients = np.stack([combine(("g", i), 1.0, fx) / h[:, i] for i in range(n)], axis=1)
        matrices, estimates = np.empty((q, n, n)), np.empty((q, n, n))
        growing, roundings = np.zeros((q, n, n), dtype=bool), np.empty((q, n, n))
        fmax = np.max(np.abs(fx[[row_of[(1.0, m)] for m in unit]]), axis=0)
        for i in range(n):
            for j in range(i, n):
                hh = (h[:, i] * h[:, j]).astype(np.float64)
                d = [combine((i, j), s, fx) / (s * s * hh) for s in SCALES]
                measured = combine((i, j), 1.0, rounding.values, absolute=True) / hh
                weight_sum = sum(abs(float(w)) for _, w in terms[(i, j)])
                noise = fd_error.rounding(dtype, fmax, weight_sum, hh ** 0.5, 2, measured, rounding.bounded)
                matrices[:, i, j] = matrices[:, j, i] = d[0]
                # differences that grow as h shrinks, by more than rounding can: a diverging entry (rounding
                # alone grows too, as h^-2: a zero mixed entry's noise is no divergence)
                near = np.abs(d[0] - d[1])
                growing[:, i, j] = growing[:, j, i] = (np.abs(d[1] - d[2]) < near) & (near > 2 * noise)
                estimates[:, i, j] = estimates[:, j, i] = geometric_truncation(*d, 2) + noise
                roundings[:, i, j] = roundings[:, j, i] = noise
        finite = np.isfinite(fx).all(axis=0) & np.isfinite(estimates).all(axis=(1, 2))
    return gradients, matrices, estimates, finite, growing, roundings


def geometric_truncation(d_h, d_2h, d_4h, accuracy: int):
    """:func:`fd_error.truncation`, or where the differences shrink by a ratio r below the theory's 2^a but
    above 1 (f not smooth at the edge), the rest of a geometric series |D(h) - D(2h)| / (r - 1) if larger.
    (Steps spaced by 4 instead of 2: pass twice the accuracy.)"""
    np = _np()
    near, far = np.abs(d_h - d_2h), np.abs(d_2h - d_4h)
    with np.errstate(all="ignore"):
        ratio = far / near
        slow = (ratio > 1.0) & (ratio < 2.0 ** accuracy)
        tail = np.where(slow, near / (ratio - 1.0), 0.0)
    return np.maximum(fd_error.truncation(d_h, d_2h, d_4h, accuracy), fd_error.TRUNCATION_SAFETY * tail)

