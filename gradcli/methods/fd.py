"""Finite differences for a batch of points: gradients, Hessians and k-th derivatives.

Every stencil point of every point of the batch is evaluated in ONE NumPy call, in the chosen dtype,
so float32 shows float32's own error. Points are ``{name: float64 array of shape [P]}``; a single
point is a batch of one.

The formulas are written as a person writes them (``(f(x+h) - f(x-h)) / (2*h)``), so ``--eps 1e-3``
reproduces the TensorFlow guide's 7.999999999999119 for 3x^2+2x-1 at 1.

Steps, one rule for every command: ``--eps`` is used as given (the guide's ``(f(x + eps) - f(x - eps))
/ (2 * eps)``); a default step is the one ``x + h`` actually takes in the dtype, ``(x + h) - x``, from
eps**p * max(1, |x|) with p balancing truncation against rounding: forward/backward 1/2, central 1/3,
Richardson 1/5, second differences 1/4, order k with accuracy a 1/(k + a).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Mapping

from gradcli.errors import UsageError
from gradcli.expression.evaluate import compile_expression, numpy_backend
from gradcli.expression import Node

MACHINE_EPSILON = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07}


class Scheme(str, enum.Enum):
    """The first-derivative formulas ``--scheme`` offers."""

    central = "central"
    forward = "forward"
    backward = "backward"
    richardson = "richardson"


SCHEMES = tuple(s.value for s in Scheme)
# Exponent p in step = eps**p * max(1, |x|): the step that balances truncation and rounding error.
STEP_POWER = {"central": 1 / 3, "forward": 1 / 2, "backward": 1 / 2, "richardson": 1 / 5}
SECOND_DIFFERENCE_POWER = 1 / 4
# Truncation order of each first-derivative scheme (error ~ h**p).
SCHEME_ORDER = {"central": 2, "forward": 1, "backward": 1, "richardson": 4}
# Stencil accuracies tried for k-th derivatives, widest first where the wide one leaves the domain.
ACCURACY_ORDERS = (2, 4, 6, 8)
DEFAULT_ACCURACY = 8


def default_step(scheme: Scheme | str, dtype: str, x: float) -> float:
    """The step ``scheme`` asks for at ``x`` when ``--eps`` is not given (before x + h rounds it)."""
    return MACHINE_EPSILON[dtype] ** STEP_POWER[Scheme(scheme).value] * max(1.0, abs(x))


def check_step(eps: float | None, values: dict[str, float], names, dtype: str, *, power: int = 1) -> None:
    """Refuse an ``--eps`` that vanishes next to a variable's value in the dtype (x + h == x), or whose
    ``power`` (h**2 for second differences, h**k for order k) underflows to zero."""
    if eps is None:
        return
    np = _np()
    t = np.dtype(dtype).type
    h = t(eps)
    for name in names:
        x = t(values[name])
        if h == 0 or x + h == x or x - h == x:
            raise UsageError(f"--eps {eps:g} vanishes next to {name}={values[name]:g} in {dtype} "
                             f"(x + h == x): use a larger step")
    if power > 1 and float(h) ** power == 0:
        raise UsageError(f"--eps {eps:g} is too small: h**{power} underflows to 0")


def _np():
    import numpy as np

    return np


def steps(x, dtype: str, power: float, eps: float | None):
    """The step at each float64 ``x`` (array), in dtype: ``eps`` as given, else the one ``x + h``
    actually takes from eps**power * max(1, |x|) (computed in float64, then rounded to dtype)."""
    np = _np()
    t = np.dtype(dtype).type
    x = np.asarray(x, dtype=np.float64)
    if eps is not None:
        return np.full(x.shape, t(eps))
    with np.errstate(all="ignore"):
        requested = (MACHINE_EPSILON[dtype] ** power * np.maximum(1.0, np.abs(x))).astype(t)
        xt = x.astype(t)
        h = (xt + requested) - xt  # exact in dtype: the step the stencil really takes
    return np.where(h == 0, requested, h)


def _evaluate(tree: Node, env: Mapping[str, object], dtype: str, shape):
    """``tree`` on arrays (one NumPy call per operation), broadcast to ``shape``, in dtype."""
    np = _np()
    out = compile_expression(tree, numpy_backend(dtype))(env)
    return np.broadcast_to(np.asarray(out, dtype=np.dtype(dtype)), shape)


def _typed_env(points: Mapping[str, object], dtype: str) -> dict:
    np = _np()
    with np.errstate(over="ignore"):  # a value beyond float32's range becomes inf: reported as not finite
        return {k: np.asarray(v, dtype=np.float64).astype(dtype) for k, v in points.items()}


# ---------------------------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------------------------
@dataclass
class FdGradients:
    values: object  # [P, n] float64
    steps: object  # [P, n] float64: the step taken per point and variable
    scheme: str


# (offset multiples of h in the stencil, combination) for each scheme; the combination is written
# exactly like the one-dimensional formula so that a single point gives the textbook digits.
_OFFSETS = {"central": (1.0, -1.0), "forward": (1.0, 0.0), "backward": (0.0, -1.0),
            "richardson": (1.0, -1.0, 0.5, -0.5)}


def _combine(scheme: str, f, h):
    if scheme == "central":
        return (f[0] - f[1]) / (2 * h)
    if scheme == "forward":
        return (f[0] - f[1]) / h
    if scheme == "backward":
        return (f[0] - f[1]) / h
    # Richardson: central differences at h and h/2 combined to cancel the h^2 term (error O(h^4)).
    d1 = (f[0] - f[1]) / (2 * h)
    half = h / 2
    d2 = (f[2] - f[3]) / (2 * half)
    return d2 + (d2 - d1) / 3


def fd_gradients(tree: Node, points: Mapping[str, object], wrt: list[str], *, scheme: str = "central",
                 dtype: str = "float64", eps: float | None = None) -> FdGradients:
    """Partial derivatives at every point by ``scheme``; all stencil points in one call."""
    np = _np()
    env = _typed_env(points, dtype)
    p = len(next(iter(env.values()))) if env else 1
    offsets = _OFFSETS[scheme]
    s = len(offsets)
    h = {v: steps(points[v], dtype, STEP_POWER[scheme], eps) for v in wrt}
    # rows (variable i, offset j): the point with x_i moved by offset_j * h_i; flattened to one axis.
    stacked = {}
    with np.errstate(all="ignore"):
        for name, x in env.items():
            rows = []
            for v in wrt:
                for m in offsets:
                    if name != v or m == 0.0:
                        rows.append(x)
                    elif m == 0.5 or m == -0.5:
                        rows.append(x + h[v] / 2 if m > 0 else x - h[v] / 2)
                    else:
                        rows.append(x + h[v] if m > 0 else x - h[v])
            stacked[name] = np.concatenate(rows) if rows else x
        total = len(wrt) * s * p
        fx = _evaluate(tree, stacked, dtype, (total,)).reshape(len(wrt), s, p)
        values = np.empty((p, len(wrt)), dtype=np.float64)
        step_out = np.empty((p, len(wrt)), dtype=np.float64)
        for i, v in enumerate(wrt):
            values[:, i] = _combine(scheme, fx[i], h[v]).astype(np.float64)
            step_out[:, i] = h[v]
    return FdGradients(values, step_out, scheme)


# ---------------------------------------------------------------------------------------------
# Hessians
# ---------------------------------------------------------------------------------------------
@dataclass
class FdHessians:
    values: object  # [P]
    gradients: object  # [P, n]: central first differences from the same stencil (step eps^(1/4): rough)
    matrices: object  # [P, n, n]
    steps: object  # [P, n]


def _hessian_offsets(n: int):
    """Stencil offsets in units of the steps: the centre, +-e_i, then the four corners of each pair."""
    np = _np()
    offsets = [np.zeros(n)]
    for i in range(n):
        for s in (1, -1):
            e = np.zeros(n)
            e[i] = s
            offsets.append(e)
    for i in range(n):
        for j in range(i + 1, n):
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                e = np.zeros(n)
                e[i], e[j] = si, sj
                offsets.append(e)
    return np.array(offsets)


def fd_hessians(tree: Node, points: Mapping[str, object], wrt: list[str], *, dtype: str = "float64",
                eps: float | None = None) -> FdHessians:
    """Central second differences, all 1 + 2n^2 stencil points of all P points in one call.

    diagonal: (f(x+h_i) - 2 f(x) + f(x-h_i)) / h_i^2
    mixed:    (f(x+h_i+h_j) - f(x+h_i-h_j) - f(x-h_i+h_j) + f(x-h_i-h_j)) / (4 h_i h_j)
    """
    np = _np()
    t = np.dtype(dtype).type
    env = _typed_env(points, dtype)
    n = len(wrt)
    p = len(next(iter(env.values()))) if env else 1
    h = np.stack([steps(points[v], dtype, SECOND_DIFFERENCE_POWER, eps) for v in wrt], axis=1) if n else \
        np.zeros((p, 0), dtype=t)
    offsets = _hessian_offsets(n).astype(t)  # [S, n]
    count = len(offsets)
    with np.errstate(all="ignore"):
        stacked = {k: np.tile(x, count) for k, x in env.items() if k not in wrt}
        for c, v in enumerate(wrt):
            # [S, P]: x + offset * h, in dtype
            stacked[v] = (env[v][None, :] + offsets[:, c:c + 1] * h[None, :, c]).reshape(-1)
        fx = _evaluate(tree, stacked, dtype, (count * p,)).reshape(count, p)
        f0 = fx[0]
        gradients = np.empty((p, n), dtype=np.float64)
        matrices = np.empty((p, n, n), dtype=np.float64)
        for i in range(n):
            fp, fm = fx[1 + 2 * i], fx[2 + 2 * i]
            gradients[:, i] = (fp - fm) / (2 * h[:, i])
            matrices[:, i, i] = (fp - 2 * f0 + fm) / (h[:, i] * h[:, i])
        k = 1 + 2 * n
        for i in range(n):
            for j in range(i + 1, n):
                pp, pm, mp, mm = fx[k], fx[k + 1], fx[k + 2], fx[k + 3]
                k += 4
                mixed = (pp - pm - mp + mm) / (4 * h[:, i] * h[:, j])
                matrices[:, i, j] = matrices[:, j, i] = mixed
    return FdHessians(f0.astype(np.float64), gradients, matrices, h.astype(np.float64))


# ---------------------------------------------------------------------------------------------
# k-th derivatives
# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def central_coefficients(order: int, accuracy: int) -> tuple[tuple[int, ...], tuple[Fraction, ...]]:
    """Offsets -p..p and exact weights w with sum w_m f(x + m h) / h^order = f^(order)(x) + O(h^accuracy).

    Solves the Taylor conditions sum w_m m^j = order! [j == order], j = 0..2p, in fractions.
    """
    p = (order + 1) // 2 - 1 + accuracy // 2
    offsets = list(range(-p, p + 1))
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
    weights = tuple(rows[i][size] / rows[i][i] for i in range(size))
    return tuple(offsets), weights


@dataclass
class FdDerivatives:
    values: object  # [P, order]
    steps: object  # [P, order]
    accuracy: object  # [P, order] int: the stencil's accuracy order actually used at each point
    points: object  # [P, order] int: its number of points
    value: object  # [P]: f at the point


def fd_derivatives(tree: Node, points: Mapping[str, object], variable: str, order: int, *,
                   dtype: str = "float64", eps: float | None = None,
                   accuracy: int = DEFAULT_ACCURACY) -> FdDerivatives:
    """Derivatives 1..order by central stencils of accuracy ``accuracy`` (error ~h^accuracy).

    Where a stencil point is not finite while f(x) is (the stencil reaches past a singularity or the
    domain's edge), that point is recomputed with narrower stencils and smaller steps.
    """
    np = _np()
    env = _typed_env(points, dtype)
    x0 = env[variable]
    x64 = np.asarray(points[variable], dtype=np.float64)
    p = len(x0)
    others = {k: v for k, v in env.items() if k != variable}
    values = np.full((p, order), np.nan)
    step_out = np.full((p, order), np.nan)
    acc_out = np.zeros((p, order), dtype=int)
    count_out = np.zeros((p, order), dtype=int)
    with np.errstate(all="ignore"):
        centre = _evaluate(tree, env, dtype, (p,))
        centre_finite = np.isfinite(centre)
        tries = [a for a in ACCURACY_ORDERS if a <= accuracy][::-1] or [accuracy]
        for k in range(1, order + 1):
            todo = np.ones(p, dtype=bool)
            for n_try, acc in enumerate(tries):
                idx = np.nonzero(todo)[0]
                if not len(idx):
                    break
                d, h, fine, size = _stencil(tree, others, variable, x0[idx], x64[idx], idx, k, acc, dtype, eps)
                last = n_try == len(tries) - 1
                keep = fine | ~centre_finite[idx] | last
                chosen = idx[keep]
                values[chosen, k - 1] = d[keep]
                step_out[chosen, k - 1] = h[keep]
                acc_out[chosen, k - 1] = acc
                count_out[chosen, k - 1] = size
                todo[chosen] = False
    return FdDerivatives(values, step_out, acc_out, count_out, centre.astype(np.float64))


def _stencil(tree, others, variable, x, x64, idx, k, acc, dtype, eps):
    """Order-k derivatives at the points ``idx`` (values ``x``) with the accuracy-``acc`` stencil.

    Returns (derivative, step, every stencil value finite, stencil size), arrays over ``idx``."""
    np = _np()
    t = np.dtype(dtype).type
    offsets, weights = central_coefficients(k, acc)
    size = len(offsets)
    h = steps(x64, dtype, 1.0 / (k + acc), eps)
    m = np.array(offsets, dtype=t)
    env = {name: np.tile(v[idx], size) for name, v in others.items()}
    env[variable] = (x[None, :] + m[:, None] * h[None, :]).reshape(-1)  # [S * Q], in dtype
    fx = _evaluate(tree, env, dtype, (size * len(x),)).reshape(size, len(x))
    w = np.array([float(c) for c in weights], dtype=t)
    # term by term in a fixed order (not a BLAS product, whose order depends on the batch size), so a
    # point gets the same digits alone or among many
    acc = w[0] * fx[0]
    for m_row in range(1, size):
        acc = acc + w[m_row] * fx[m_row]
    d = acc / h ** k
    return d.astype(np.float64), h.astype(np.float64), np.all(np.isfinite(fx), axis=0), size


# ---------------------------------------------------------------------------------------------
# one point: the single-point commands' view of the same engine
# ---------------------------------------------------------------------------------------------
def _one(values: dict[str, float]) -> dict:
    np = _np()
    return {k: np.array([v], dtype=np.float64) for k, v in values.items()}


def fd_gradient(tree: Node, values: dict[str, float], wrt: list[str], *, scheme: Scheme | str = Scheme.central,
                dtype: str = "float64", eps: float | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """Partial derivatives at one point (a batch of one): (derivative per variable, step per variable)."""
    check_step(eps, values, wrt, dtype)
    r = fd_gradients(tree, _one(values), wrt, scheme=Scheme(scheme).value, dtype=dtype, eps=eps)
    return dict(zip(wrt, r.values[0].tolist())), dict(zip(wrt, r.steps[0].tolist()))
