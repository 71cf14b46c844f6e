"""Finite differences of order k along one variable: central stencils with exact weights, an error
estimate from the same stencil at 2h, and steps that adapt where the default one is poor or leaves the
domain (see :mod:`gradcli.methods.fd_error`). Shares :mod:`gradcli.methods.fd_engine` with the other fd methods."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Mapping

import numpy as np

from gradcli.expression import Node
from gradcli.methods import fd_error
from gradcli.methods.fd_engine import along, evaluate, steps, taken_steps, typed_env
from gradcli.methods.fd_schemes import ACCURACY_ORDERS, DEFAULT_ACCURACY, SCHEME_ORDER, step_power


@lru_cache(maxsize=None)
def central_coefficients(order: int, accuracy: int) -> tuple[tuple[int, ...], tuple[Fraction, ...]]:
    """Offsets -p..p and exact weights w with sum w_m f(x + m h) / h^order = f^(order)(x) + O(h^accuracy).

    Solves the Taylor conditions sum w_m m^j = order! [j == order], j = 0..2p, in fractions.
    """
    p = (order + 1) // 2 - 1 + accuracy // 2
    offsets = tuple(range(-p, p + 1))
    return offsets, taylor_weights(offsets, order)


def taylor_weights(offsets: tuple[int, ...], order: int) -> tuple[Fraction, ...]:
    """Exact weights w for these offsets with sum w_m m^j = order! [j == order], j = 0..len-1 (the Taylor
    conditions), in fractions: the stencil for f^(order) on any set of offsets."""
    size = len(offsets)
    rows = [[Fraction(m) ** j for m in offsets] + [Fraction(math.factorial(order) if j == order else 0)]
            for j in range(size)]
    for c in range(size):  # Gauss-Jordan; the Vandermonde system is non-singular
        pivot = next(r for r in range(c, size) if rows[r][c] != 0)
        rows[c], rows[pivot] = rows[pivot], rows[c]
        for r in range(size):
            if r != c and rows[r][c] != 0:
                factor = rows[r][c] / rows[c][c]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[c])]
    return tuple(rows[i][size] / rows[i][i] for i in range(size))


def stencil_sum(weights, rows, dtype: str):
    """sum w_m f_m over a stencil's weights and its rows of f values, in the dtype: term by term in a fixed
    order (not a BLAS product, whose order depends on the batch size), so a point gets the same digits alone
    or among many."""
    t = np.dtype(dtype).type
    total = t(float(weights[0])) * rows[0]
    for w, row in zip(weights[1:], rows[1:]):
        total = total + t(float(w)) * row
    return total


@dataclass
class FdDerivatives:
    values: object  # [P, order]
    steps: object  # [P, order]
    accuracy: object  # [P, order] int: the stencil's accuracy order actually used at each point
    points: object  # [P, order] int: its number of points
    value: object  # [P]: f at the point
    estimates: object = None  # [P, order]: each value's error estimate
    how: object = None  # [P, order] int: 0 the default step, fd_error.ADAPTED


def fd_derivatives(tree: Node, points: Mapping[str, object], variable: str, order: int, *,
                   dtype: str = "float64", eps: float | None = None,
                   accuracy: int = DEFAULT_ACCURACY) -> FdDerivatives:
    """Derivatives 1..order by central stencils of accuracy ``accuracy`` (error ~h^accuracy), with estimates.

    Without ``eps``, a point whose estimate is poor or whose stencil leaves the domain (f finite at x, not at
    x + m h) tries a sequence of steps and keeps the smallest estimate; what is still not finite is
    recomputed with narrower stencils at the default step.
    """
    env = typed_env(points, dtype)
    x64 = np.asarray(points[variable], dtype=np.float64)
    p = len(x64)
    out = {name: np.full((p, order), np.nan) for name in ("values", "steps", "estimates")}
    acc_out = np.zeros((p, order), dtype=int)
    count_out = np.zeros((p, order), dtype=int)
    how_out = np.zeros((p, order), dtype=int)
    with np.errstate(all="ignore"):
        centre = evaluate(tree, env, dtype, (p,))
        centre_finite = np.isfinite(centre)
        tries = [a for a in ACCURACY_ORDERS if a <= accuracy][::-1] or [accuracy]
        for k in range(1, order + 1):
            todo = np.ones(p, dtype=bool)
            for n_try, acc in enumerate(tries):
                idx = np.nonzero(todo)[0]
                if not len(idx):
                    break
                r = _adapted_line(tree, env, variable, x64, idx, k, acc, dtype, eps if n_try else eps,
                                  centre_finite, adapt=eps is None and n_try == 0)
                last = n_try == len(tries) - 1
                keep = r.finite | ~centre_finite[idx] | last
                chosen = idx[keep]
                out["values"][chosen, k - 1] = r.value[keep]
                out["steps"][chosen, k - 1] = r.step[keep]
                out["estimates"][chosen, k - 1] = r.estimate[keep]
                how_out[chosen, k - 1] = 0 if r.how is None else r.how[keep]
                acc_out[chosen, k - 1] = acc
                count_out[chosen, k - 1] = len(central_coefficients(k, acc)[0])
                sided = chosen[how_out[chosen, k - 1] == fd_error.ONE_SIDED]  # forward_coefficients(k, 2)
                acc_out[sided, k - 1], count_out[sided, k - 1] = 2, k + 2
                todo[chosen] = False
    return FdDerivatives(out["values"], out["steps"], acc_out, count_out, centre.astype(np.float64),
                         out["estimates"], how_out)


def _adapted_line(tree, env, variable, x64, idx, k, acc, dtype, eps, centre_finite, *, adapt: bool):
    sub = {name: a[idx] for name, a in env.items()}
    h0 = steps(x64[idx], dtype, step_power(k, acc), eps)
    r = _derivative_line(tree, sub, variable, h0, k, acc, dtype)
    if not adapt:
        return r

    def at(index, factor):
        h = taken_steps(x64[idx][index], h0[index], factor, dtype)
        return _derivative_line(tree, {name: a[index] for name, a in sub.items()}, variable, h, k, acc, dtype)

    def one_sided(index, factor):  # where no two-sided stencil stays in the domain (x**2.5 at 0)
        h = taken_steps(x64[idx][index], h0[index], factor, dtype)
        return _one_sided_line(tree, {name: a[index] for name, a in sub.items()}, variable, h, k, dtype)

    with np.errstate(all="ignore"):
        return fd_error.adapt(at, r, x64[idx], dtype, acc, k, centre_finite[idx], one_sided=one_sided)


def _one_sided_line(tree, env, variable, h, k: int, dtype: str) -> fd_error.LineResult:
    """Order-k derivatives by the forward or the backward stencil (accuracy 2): each point keeps the finite
    one with the smaller estimate."""
    (hi, hi_est, hi_noise), (lo, lo_est, lo_noise) = (_one_side(tree, env, variable, h, k, sign, dtype)
                                                      for sign in (1.0, -1.0))
    hi_ok, lo_ok = np.isfinite(hi) & np.isfinite(hi_est), np.isfinite(lo) & np.isfinite(lo_est)
    use_hi = hi_ok & ~(lo_ok & (lo_est < hi_est))
    value, estimate = np.where(use_hi, hi, lo), np.where(use_hi, hi_est, lo_est)
    return fd_error.LineResult(value.astype(np.float64), estimate.astype(np.float64), h.astype(np.float64),
                               hi_ok | lo_ok, noise=np.where(use_hi, hi_noise, lo_noise).astype(np.float64))


def _derivative_line(tree, env, variable, h, k: int, acc: int, dtype: str) -> fd_error.LineResult:
    """Order-k derivatives at Q points with the accuracy-``acc`` stencil at step h [Q], and at 2h and 4h (the
    estimate)."""
    t = np.dtype(dtype).type
    offsets, weights = central_coefficients(k, acc)
    wide = sorted(set(float(m) for m in offsets) | {2.0 * m for m in offsets} | {4.0 * m for m in offsets})
    f, e = along(tree, env, variable, h, tuple(wide), dtype, measure=[float(m) for m in offsets])

    def combine(scale: float):
        return stencil_sum(weights, [f[scale * m] for m in offsets], dtype) / (t(scale) * h) ** k

    value = combine(1.0)
    truncation = fd_error.truncation(value, combine(2.0), combine(4.0), acc)
    fmax = np.maximum.reduce([np.abs(f[float(m)]) for m in offsets])
    weight_sum = sum(abs(float(c)) for c in weights)
    measured = sum(abs(float(c)) * e[float(m)] for c, m in zip(weights, offsets)) / h ** k
    estimate = truncation + fd_error.rounding(dtype, fmax, weight_sum, h, k, measured, e.bounded)
    finite = np.all(np.isfinite(np.stack([f[float(m)] for m in offsets])), axis=0)
    return fd_error.LineResult(value.astype(np.float64), estimate.astype(np.float64), h.astype(np.float64), finite)


# ---------------------------------------------------------------------------------------------
# kinks above order 1: one-sided k-th derivatives
# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def forward_coefficients(order: int, accuracy: int) -> tuple[tuple[int, ...], tuple[Fraction, ...]]:
    """Offsets 0..order+accuracy-1 and exact weights of the forward stencil for f^(order) (error ~h^accuracy)."""
    offsets = tuple(range(order + accuracy))
    return offsets, taylor_weights(offsets, order)


# The one-sided stencils are compared at the default step and at 1/16 of it: near a kink but not at it the
# smaller one stays on one side (no warning); at the kink both differ.
SIDED_LEVELS = (1.0, 1.0 / 16.0)


def sided_kinks(tree: Node, points: Mapping[str, object], variable: str, order: int, *, dtype: str = "float64"):
    """For k = 2..order: (kink [P, order] bool, left [P, order], right [P, order]) where the one-sided k-th
    derivatives (forward and backward stencils of accuracy 2) differ beyond their estimates (the distance to
    the accuracy-1 stencil's value, and the values' rounding) at every level of :data:`SIDED_LEVELS`. Column
    0 (order 1) is left False: grad's central fd sees order 1's kinks."""
    env = typed_env(points, dtype)
    x64 = np.asarray(points[variable], dtype=np.float64)
    p = len(x64)
    kink = np.zeros((p, order), dtype=bool)
    left, right = np.full((p, order), np.nan), np.full((p, order), np.nan)
    with np.errstate(all="ignore"):
        for k in range(2, order + 1):
            h0 = steps(x64, dtype, step_power(k, 2), None)
            index = np.arange(p)
            for n, level in enumerate(SIDED_LEVELS):  # each level only where the ones before found a kink
                h = taken_steps(x64[index], h0[index], level, dtype)
                sub = {name: a[index] for name, a in env.items()}
                (lo, lo_est, _), (hi, hi_est, _) = (_one_side(tree, sub, variable, h, k, sign, dtype)
                                                    for sign in (-1.0, 1.0))
                gap = np.abs(hi - lo)
                apart = np.isfinite(gap) & (gap > 4.0 * (lo_est + hi_est) + 1e-6 * (np.abs(lo) + np.abs(hi)))
                if n == 0:
                    left[:, k - 1], right[:, k - 1] = lo, hi
                index = index[apart]
            kink[index, k - 1] = True
    return kink, left, right


def _one_side(tree, env, variable, h, k: int, sign: float, dtype: str):
    """The k-th derivative from one side (sign -1: backward), accuracy 2, with its estimate and the
    estimate's rounding part: (value, estimate, rounding)."""
    t = np.dtype(dtype).type
    offsets, weights = forward_coefficients(k, 2)
    rough_offsets, rough = forward_coefficients(k, 1)
    f, e = along(tree, env, variable, h, tuple(sign * float(m) for m in offsets), dtype)
    scale = (t(sign) * h) ** k

    def combine(ws, ms):
        return stencil_sum(ws, [f[sign * float(m)] for m in ms], dtype) / scale

    value = combine(weights, offsets)
    fmax = np.maximum.reduce([np.abs(v) for v in f.values()])
    measured = sum(abs(float(c)) * e[sign * float(m)] for c, m in zip(weights, offsets)) / h ** k
    rounding = fd_error.rounding(dtype, fmax, sum(abs(float(c)) for c in weights), h, k, measured, e.bounded)
    estimate = fd_error.TRUNCATION_SAFETY * np.abs(value - combine(rough, rough_offsets)) + rounding
    return value.astype(np.float64), estimate.astype(np.float64), rounding.astype(np.float64)


# ---------------------------------------------------------------------------------------------
# every formula by name, at steps the caller chooses (the study of errors against h)
# ---------------------------------------------------------------------------------------------
# The wider central stencils studied beside the accuracy-2 one.
WIDE_ACCURACIES = (4, 6, 8)
STENCIL_NAMES = ("forward", "backward", "central", *(f"stencil{a}" for a in WIDE_ACCURACIES), "richardson")


@dataclass(frozen=True)
class Stencil:
    """A formula for f^(order): sum w_m f(x + m h) / h^order = f^(order)(x) + O(h^accuracy), offsets m and
    weights w exact. ``extrapolates``: Richardson's, evaluated as (4 D(h/2) - D(h)) / 3 of that stencil D,
    written as ``--scheme richardson`` writes it (offsets and weights are the combination, for the theory)."""

    name: str
    order: int
    accuracy: int
    offsets: tuple[Fraction, ...]
    weights: tuple[Fraction, ...]
    extrapolates: Stencil | None = None

    @property
    def weight_sum(self) -> float:
        return float(sum(abs(w) for w in self.weights))

    @property
    def truncation_constant(self) -> float:
        """c in D(h) - f^(n) = c f^(n+p) h^p + ...: sum w m^(n+p) / (n+p)!."""
        k = self.order + self.accuracy
        return float(sum(w * m ** k for m, w in zip(self.offsets, self.weights)) / math.factorial(k))

    @property
    def step_power(self) -> float:
        """q in the default step eps^q * max(1, |x|): 1/(order + accuracy), as grad's schemes and the k-th
        derivatives take it."""
        return step_power(self.order, self.accuracy)


@lru_cache(maxsize=None)
def named_stencil(name: str, order: int) -> Stencil:
    """The formula ``name`` (one of :data:`STENCIL_NAMES`) for f^(order): forward and backward differences
    (accuracy 1), the central stencils (2, 4, 6, 8) and Richardson's extrapolation of the central one (4)."""
    if name in ("forward", "backward"):
        sign = 1 if name == "forward" else -1
        accuracy = SCHEME_ORDER[name]
        offsets = tuple(sign * m for m in range(order + accuracy))
        return Stencil(name, order, accuracy, tuple(map(Fraction, offsets)), taylor_weights(offsets, order))
    if name == "central" or name in {f"stencil{a}" for a in WIDE_ACCURACIES}:
        accuracy = SCHEME_ORDER["central"] if name == "central" else int(name.removeprefix("stencil"))
        offsets, weights = central_coefficients(order, accuracy)
        return Stencil(name, order, accuracy, tuple(map(Fraction, offsets)), weights)
    if name == "richardson":
        central = named_stencil("central", order)
        combined: dict[Fraction, Fraction] = {}
        # (4 D(h/2) - D(h)) / 3 with D(h/2) = 2^n sum w f(x + m h/2) / h^n
        for m, w in zip(central.offsets, central.weights):
            combined[m / 2] = combined.get(m / 2, 0) + Fraction(4 * 2 ** order, 3) * w
            combined[m] = combined.get(m, 0) - w / 3
        items = sorted((m, w) for m, w in combined.items() if w != 0)
        # the extrapolation cancels the central stencil's h**2 term: accuracy 2 + 2
        return Stencil(name, order, SCHEME_ORDER["richardson"], tuple(m for m, _ in items), tuple(w for _, w in items),
                       extrapolates=central)
    raise ValueError(f"no stencil named {name!r}; known: {', '.join(STENCIL_NAMES)}")


def stencil_values(tree: Node, point: Mapping[str, float], variable: str, requests, dtype: str) -> list:
    """Each stencil's f^(order) at one point, at each of its own steps: ``requests`` is a list of (stencil,
    steps [S] in the dtype, as x + h takes them, see :func:`fd_engine.taken_steps`); every f value of every
    request in ONE evaluation, each sum by :func:`stencil_sum` as :func:`fd_derivatives` takes it. Returns a
    float64 array [S] per request."""
    t = np.dtype(dtype).type
    x = t(point[variable])
    pieces = []  # (request, scale, stencil, h): Richardson's two central differences, at h and at h/2
    for r, (stencil, h) in enumerate(requests):
        h = np.asarray(h, dtype=dtype)
        base = stencil.extrapolates or stencil
        pieces += [(r, scale, base, h) for scale in ((1.0, 0.5) if stencil.extrapolates else (1.0,))]
    columns = [x + t(float(m) * scale) * h for _, scale, base, h in pieces for m in base.offsets]
    moved = np.concatenate(columns) if columns else np.zeros(0, dtype=dtype)
    env = {k: np.full(moved.shape, t(v)) for k, v in point.items() if k != variable}
    env[variable] = moved
    out: list = [None] * len(requests)
    with np.errstate(all="ignore"):
        f, start = evaluate(tree, env, dtype, moved.shape), 0
        for r, scale, base, h in pieces:
            rows = [f[start + i * len(h):start + (i + 1) * len(h)] for i in range(len(base.offsets))]
            start += len(base.offsets) * len(h)
            d = stencil_sum(base.weights, rows, dtype) / (t(scale) * h) ** base.order
            out[r] = d if out[r] is None else d + (d - out[r]) / 3  # Richardson: D(h/2) + (D(h/2) - D(h)) / 3
    return [d.astype(np.float64) for d in out]
