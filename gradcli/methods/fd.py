"""Finite differences for a batch of points: first derivatives and gradients (k-th derivatives are in
:mod:`gradcli.methods.fd_stencils`, Hessians in :mod:`gradcli.methods.fd_hessian`, what they share in
:mod:`gradcli.methods.fd_engine`).

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

from dataclasses import dataclass
from typing import Mapping

from gradcli.expression import Node
from gradcli.methods import fd_error
from gradcli.methods.fd_switches import switch_beside
from gradcli.methods.fd_engine import along_each, check_step, evaluate, one_point, steps, taken_steps, typed_env
from gradcli.methods.fd_schemes import Scheme
from gradcli.methods.fd_stencils import named_stencil


def _np():
    import numpy as np

    return np


# ---------------------------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------------------------
@dataclass
class FdGradients:
    values: object  # [P, n] float64
    steps: object  # [P, n] float64: the step taken per point and variable
    scheme: str
    estimates: object = None  # [P, n]: the error estimate of each value (see gradcli.methods.fd_error)
    left: object = None  # [P, n]: one-sided derivatives (two-sided schemes), for kinks
    right: object = None
    kinks: object = None  # [P, n] bool: the one-sided derivatives differ beyond their estimates
    how: object = None  # [P, n] int: 0 the default step, fd_error.ADAPTED, fd_error.ONE_SIDED


# Each scheme's stencil for f' (offsets and exact weights): a two-point difference, or Richardson's extrapolation
# of the central one.
_STENCILS = {scheme.value: named_stencil(scheme.value, 1) for scheme in Scheme}
# How far (in default steps) the stencils of a line reach, the wider ones of the estimate included: a switch
# of a model function this close is one the default stencil can straddle.
SWITCH_REACH = 16.0


def _used(stencil) -> tuple:
    """The offsets whose weight is not 0 (the central stencil's f(x) has weight 0)."""
    return tuple(m for m, w in zip(stencil.offsets, stencil.weights) if w != 0)


def _textbook_reads(stencil) -> tuple[float, ...]:
    """The offsets in the order :func:`_combine` reads them: each two-point difference's upper then lower
    value, at h (then at h/2 for Richardson's)."""
    base = stencil.extrapolates or stencil
    return tuple(scale * float(m) for scale in ((1.0, 0.5) if stencil.extrapolates else (1.0,))
                 for m in sorted(_used(base), reverse=True))


def _two_sided(stencil) -> bool:
    return set(_used(stencil)) == {-m for m in _used(stencil)}


# Offsets (multiples of h) each scheme evaluates: its formula at h, 2h and 4h (the estimate) and, for the two-sided
# schemes, f(x) for the one-sided derivatives (kinks). The order is the one the values are stacked in.
_OFFSETS = {name: tuple(dict.fromkeys(s * m for s in (1.0, 2.0, 4.0) for m in _textbook_reads(st)))
            + ((0.0,) if _two_sided(st) and 0 not in _used(st) else ()) for name, st in _STENCILS.items()}
_WEIGHT_SUM = {name: st.weight_sum for name, st in _STENCILS.items()}
# |weight| of each f value in the scheme's formula, times h: what each value's own rounding error costs (largest
# weights first, then by offset: the order in which the estimate sums them)
_WEIGHTS = {name: {float(m): float(abs(w))
                   for w, m in sorted(zip(st.weights, st.offsets), key=lambda wm: (-abs(wm[0]), -wm[1])) if w != 0}
            for name, st in _STENCILS.items()}


def _difference(stencil, F, s: float, step):
    """A two-point difference (F(s b) - F(s a)) / ((b - a) step), offsets a < b, ``step`` = s h."""
    lo, hi = sorted(_used(stencil))
    return (F(s * float(hi)) - F(s * float(lo))) / (float(hi - lo) * step)


def _combine(scheme: str, F, h, s=1.0):
    """The scheme's formula at step s*h from ``F(m)`` = f(x + m h); written exactly like the textbook
    formula so that s = 1 gives the textbook digits (the guide's 7.999999999999119)."""
    stencil = _STENCILS[scheme]
    if stencil.extrapolates is None:
        return _difference(stencil, F, s, s * h)
    # Richardson: central differences at h and h/2 combined to cancel the h^p term (p its accuracy), as
    # D(h/2) + (D(h/2) - D(h)) / (2^p - 1).
    base = stencil.extrapolates
    d1 = _difference(base, F, s, s * h)
    d2 = _difference(base, F, s / 2, s * h / 2)
    return d2 + (d2 - d1) / (2 ** base.accuracy - 1)


def _sided(dtype: str, F, E, h):
    """Second-order one-sided derivatives from f(x), f(x +- h), f(x +- 2h), with their estimates (the
    first-order ones' distance, and the values' rounding, ``E`` a :class:`fd_error.StencilRounding`) together:
    (left, right, estimate)."""
    np = _np()
    right = (-3 * F(0.0) + 4 * F(1.0) - F(2.0)) / (2 * h)
    left = (3 * F(0.0) - 4 * F(-1.0) + F(-2.0)) / (2 * h)
    fmax = np.maximum.reduce([np.abs(F(m)) for m in (0.0, 1.0, -1.0, 2.0, -2.0)])
    measured = (3 * E[0.0] + 2 * (E[1.0] + E[-1.0]) + 0.5 * (E[2.0] + E[-2.0])) / h
    est = np.abs(right - (F(1.0) - F(0.0)) / h) + np.abs(left - (F(0.0) - F(-1.0)) / h) \
        + fd_error.rounding(dtype, fmax, 8.0, h, 1, measured, E.bounded)
    return left, right, est


def _needed_rows(scheme: str) -> set[float]:
    """The offsets whose values' rounding the estimate uses (the formula's, and the one-sided stencils')."""
    two_sided = _two_sided(_STENCILS[scheme])
    return set(_WEIGHTS[scheme]) | ({0.0, 1.0, -1.0, 2.0, -2.0} if two_sided else set())


def _gradient_lines(tree, env, moves: list, scheme: str, dtype: str) -> fd_error.LineResult:
    """Partial derivatives with estimates for the blocks ``moves`` = [(variable, points, h)] (see
    :func:`fd_engine.along_each`), one after the other in one line: every variable's stencils in one
    evaluation per group, not one per variable (a sum of 1,000 variables has 1,000 nodes)."""
    np = _np()
    f, e = along_each(tree, env, moves, _OFFSETS[scheme], dtype, measure=_needed_rows(scheme))
    return _line(f, e, np.concatenate([h for _, _, h in moves]), scheme, dtype)


def _weighted(weights: dict, e, h):
    """sum(w e[m]) / h: the stencil's rounding errors through its |weights|. Where that is 0 beside a nonzero
    error (a subnormal error, from an f that underflows, halved by a weight of 1/2 rounds to 0) each error
    is divided by h first."""
    np = _np()
    total = sum(w * e[m] for m, w in weights.items()) / h
    lost = (total == 0) & np.logical_or.reduce([e[m] > 0 for m in weights])
    if not np.any(lost):
        return total
    return np.where(lost, sum(w * (e[m] / h) for m, w in weights.items()), total)


def _line(f, e, h, scheme: str, dtype: str) -> fd_error.LineResult:
    """The scheme's values, estimates and (two-sided) one-sided derivatives from f at the stencil points
    (``f[m]`` = f(x + m h), ``e`` their rounding)."""
    np = _np()
    two_sided = _two_sided(_STENCILS[scheme])

    def F(m):
        return f[m]

    value = _combine(scheme, F, h)
    wide, wider = _combine(scheme, F, h, 2.0), _combine(scheme, F, h, 4.0)
    fmax = np.maximum.reduce([np.abs(v) for v in f.values()])
    truncation = fd_error.truncation(value, wide, wider, _STENCILS[scheme].accuracy)
    estimate = truncation + fd_error.rounding(dtype, fmax, _WEIGHT_SUM[scheme], h, 1,
                                              _weighted(_WEIGHTS[scheme], e, h), e.bounded)
    finite = np.all(np.isfinite(np.stack(list(f.values()))), axis=0)
    r = fd_error.LineResult(value.astype(np.float64), estimate.astype(np.float64), h.astype(np.float64), finite)
    if two_sided:  # the one-sided derivatives show kinks
        left, right, est = _sided(dtype, F, e, h)
        r.left, r.right, r.sided_estimate = (a.astype(np.float64) for a in (left, right, est))
        r.jump = _jumps(F, fmax, dtype, e) & np.isfinite(r.left) & np.isfinite(r.right)
    return r


def _jumps(F, fmax, dtype: str, rounding=None):
    """Where f jumps inside the stencil (bool [Q]): one increment next to the point dwarfs its neighbours.
    Smooth f has increments of one size over a few steps, a kink two sizes of the same order, a pole next to
    the point large increments on both sides; only a step in f (atan2's branch cut, a sign-like piece) makes
    one increment alone far larger than both neighbours (and than rounding: f's own, and the measured
    rounding of its values, which is what a function that cancels to ~0 has, log2(x)*log(2) - log(x))."""
    np = _np()
    noise = 64 * float(np.finfo(dtype).eps) * fmax
    if rounding is not None:
        noise = noise + 16 * np.maximum.reduce([np.asarray(rounding[m], dtype=np.float64)
                                                for m in (0.0, 1.0, -1.0, 2.0, -2.0)])
    dl1, dl2, dr1, dr2 = (np.abs(F(a) - F(b)) for a, b in ((0.0, -1.0), (-1.0, -2.0), (1.0, 0.0), (2.0, 1.0)))
    return (dl1 > 16 * (dl2 + dr1) + noise) | (dr1 > 16 * (dr2 + dl1) + noise)


def _one_sided_lines(tree, env, moves: list, dtype: str) -> fd_error.LineResult:
    """Second-order forward and backward derivatives; each point keeps the finite one with the smaller estimate
    (blocks ``moves`` as in :func:`_gradient_lines`)."""
    np = _np()
    f, e = along_each(tree, env, moves, (0.0, 1.0, 2.0, -1.0, -2.0), dtype)
    h = np.concatenate([h for _, _, h in moves])
    left, right, _ = _sided(dtype, lambda m: f[m], e, h)
    out = []
    for sign, d in ((1.0, right), (-1.0, left)):
        first = (f[sign] - f[0.0]) / (sign * h)
        fmax = np.maximum.reduce([np.abs(f[m * sign]) for m in (0.0, 1.0, 2.0)])
        measured = _weighted({0.0: 1.5, sign: 2.0, 2 * sign: 0.5}, e, h)
        noise = fd_error.rounding(dtype, fmax, 4.0, h, 1, measured, e.bounded)
        est = fd_error.TRUNCATION_SAFETY * np.abs(d - first) + noise
        finite = np.isfinite(f[0.0]) & np.isfinite(f[sign]) & np.isfinite(f[2 * sign])
        out.append((d, np.where(finite, est, np.nan), finite, noise))
    # the forward one unless it is not finite or the backward one's estimate is smaller (a right-hand edge:
    # (1 - x**2)**2.5 at x = 1 has only the backward one)
    use_right = np.isfinite(out[0][1]) & ~(out[1][1] < out[0][1])
    pick = [np.where(use_right, a, b) for a, b in zip(out[0], out[1])]
    return fd_error.LineResult(pick[0].astype(np.float64), pick[1].astype(np.float64), h.astype(np.float64),
                               pick[2], noise=pick[3].astype(np.float64))


def fd_gradients(tree: Node, points: Mapping[str, object], wrt: list[str], *, scheme: str = "central",
                 dtype: str = "float64", eps: float | None = None) -> FdGradients:
    """Partial derivatives at every point by ``scheme``, with error estimates; each variable's stencil
    points in one call. Without ``eps``, suspicious points get adapted steps (see :mod:`fd_error`)."""
    np = _np()
    env = typed_env(points, dtype)
    p = len(next(iter(env.values()))) if env else 1
    out = {name: np.empty((p, len(wrt)), dtype=dtype_) for name, dtype_ in
           (("values", np.float64), ("steps", np.float64), ("estimates", np.float64), ("left", np.float64),
            ("right", np.float64), ("kinks", bool), ("how", int))}
    with np.errstate(all="ignore"):
        centre = evaluate(tree, env, dtype, (p,)) if wrt else None
        # every variable's line at every point, one after the other: entry i p + k is variable i at point k
        x64 = np.concatenate([np.asarray(points[v], dtype=np.float64) for v in wrt]) if wrt else np.empty(0)
        h0 = steps(x64, dtype, _STENCILS[scheme].step_power, eps)
        every = np.arange(p)
        whole = _gradient_lines(tree, env, [(v, every, h0[i * p:(i + 1) * p]) for i, v in enumerate(wrt)], scheme,
                                dtype) if wrt else None
        beside = None  # [len(wrt) * p]: a model function's switch beside the point, inside the stencil
        if eps is None and wrt:
            def at(index, factor, one_sided=False):
                """The line at the entries ``index`` (sorted: grouped by variable), at factor times their steps."""
                h = taken_steps(x64[index], h0[index], factor, dtype)
                moves = []
                for i, v in enumerate(wrt):
                    lo, hi = np.searchsorted(index, (i * p, (i + 1) * p))
                    if hi > lo:
                        moves.append((v, index[lo:hi] - i * p, h[lo:hi]))
                if one_sided:
                    return _one_sided_lines(tree, env, moves, dtype)
                return _gradient_lines(tree, env, moves, scheme, dtype)

            # a kink the default stencil sees that is a model function's switch beside the point, not at it
            beside = np.concatenate([switch_beside(tree, env, v, SWITCH_REACH * h0[i * p:(i + 1) * p], p)
                                     for i, v in enumerate(wrt)])
            whole = fd_error.adapt(at, whole, x64, dtype, _STENCILS[scheme].accuracy, 1, np.tile(np.isfinite(centre), len(wrt)),
                                   one_sided=lambda index, factor: at(index, factor, True), off_switch=beside)
        for i, v in enumerate(wrt):
            r = whole.part(i * p, (i + 1) * p)
            out["values"][:, i], out["steps"][:, i], out["estimates"][:, i] = r.value, r.step, r.estimate
            out["left"][:, i] = np.nan if r.left is None else r.left
            out["right"][:, i] = np.nan if r.right is None else r.right
            # a kink where the one-sided derivatives differ and no step got a stencil clear of it: the default
            # step won, or the step the search kept resolves nothing (at tiny steps rounding hides the gap
            # between the sides, so a tie in max(x, 2 - x) at 1 looks smooth there, with an estimate of 0.1)
            clear = (r.how != 0) & ~fd_error.poorly_resolved(r, dtype, _STENCILS[scheme].accuracy)
            kinks = fd_error.kink(r) & (~clear if r.how is not None else True)
            if r.jump is not None:  # a jump at the default step that no other step resolved (every one straddles
                # it): the one-sided values differ too, one of them without bound as h shrinks
                kinks |= r.jump & ~(r.estimate < 0.5 * np.abs(r.value))
            # a kink seen only by the default stencil, which crosses the coordinate's 0 beside a nonzero x,
            # while the step kept stays clear of 0: it is not at x (sqrt(x**2 + y**2) at 1e-200 has the kink
            # of |x| at 0, 1e-200 away); the kept step's estimate says how well the value is resolved
            x_i, h_i = np.abs(x64[i * p:(i + 1) * p]), h0[i * p:(i + 1) * p].astype(np.float64)
            if r.how is not None:
                kinks &= ~((x_i > 0) & (x_i < h_i) & (r.how != 0) & (r.step < x_i))
            # no step resolves an oscillation finer than the float spacing of its argument: no estimate, and
            # the one-sided values' disagreement there is noise, not a kink
            lost = fd_error.oscillation_unresolved(tree, env, v, dtype)
            out["estimates"][lost, i] = np.inf
            kinks &= ~lost
            # the tree decides: a switch of min/max/clip/where/abs/relu inside the stencil, with no tie at the
            # point, is a kink beside x (1e-8 from a tie every resolving two-sided step straddles it), not at x
            if beside is not None:
                kinks &= ~beside[i * p:(i + 1) * p]
            out["kinks"][:, i] = kinks
            out["how"][:, i] = 0 if r.how is None else r.how
        # a variable f does not contain (an unused --at one): its derivative is exactly 0, and so is its
        # estimate (f's rounding at the stencil points moves nothing along it)
        finite = np.isfinite(centre) if centre is not None else np.ones(p, dtype=bool)
        for c in fd_error.absent_columns(tree, wrt):
            for name in ("values", "estimates"):
                out[name][finite, c] = 0.0
            out["kinks"][:, c] = False
    return FdGradients(out["values"], out["steps"], scheme, out["estimates"], out["left"], out["right"],
                       out["kinks"], out["how"])


# ---------------------------------------------------------------------------------------------
# one point: the single-point commands' view of the same engine
# ---------------------------------------------------------------------------------------------
def fd_gradient(tree: Node, values: dict[str, float], wrt: list[str], *, scheme: Scheme | str = Scheme.central,
                dtype: str = "float64", eps: float | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """Partial derivatives at one point (a batch of one): (derivative per variable, step per variable)."""
    check_step(eps, values, wrt, dtype)
    r = fd_gradients(tree, one_point(values), wrt, scheme=Scheme(scheme).value, dtype=dtype, eps=eps)
    return dict(zip(wrt, r.values[0].tolist())), dict(zip(wrt, r.steps[0].tolist()))
