"""Finite-difference Hessians for a batch of points: central second differences, every stencil point of every
point in one NumPy call, with an error estimate per entry (the same differences at 2h and 4h, and the
values' rounding), and steps that shrink where the stencil leaves the domain.
Shares :mod:`gradcli.methods.fd_engine` with the other fd methods."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from gradcli.expression import Node
from gradcli.methods import fd_error
from gradcli.methods.fd_schemes import SECOND_DIFFERENCE_POWER
from gradcli.methods.fd_engine import evaluate, steps, taken_steps, typed_env
from gradcli.methods.fd_error import aitken_limit
from gradcli.methods.fd_hessian_sided import directions, geometric_truncation, sided_hessians


# An entry whose estimate is above this part of max(|entry|, 1) is not resolved (across a pole, at an edge
# where the derivative is infinite).
UNRESOLVED = 0.5
# A one-sided step is clean where rounding is at most this part of its estimates (see _sided_steps).
CLEAN = 0.5
# A one-sided entry whose estimate is above this many times max(|entry|, 1) is no number at all.
MEANINGLESS = 2.0


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
    how: object = None  # [P] int: 0 the default steps, fd_error.SHRUNK or ONE_SIDED (the stencil left the domain)
    sides: object = None  # [P, n] int: ONE_SIDED points' directions (1 forward, -1 backward, 0 central)
    unresolved: object = None  # [P] bool: one-sided, and no step resolved the entries (warn: see _one_sided)


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
    relative to its entries (``how``: fd_error.SHRUNK there). Where no smaller two-sided stencil stays in
    the domain (``x**2.5`` at x = 0), the leaving variables' differences go one-sided
    (:mod:`gradcli.methods.fd_hessian_sided`; ``how``: fd_error.ONE_SIDED, ``sides`` the directions)."""

    np = _np()
    t = np.dtype(dtype).type
    env = typed_env(points, dtype)
    n = len(wrt)
    p = len(next(iter(env.values()))) if env else 1
    h = np.stack([steps(points[v], dtype, SECOND_DIFFERENCE_POWER, eps) for v in wrt], axis=1) if n else \
        np.zeros((p, 0), dtype=t)
    with np.errstate(all="ignore"):
        f0, gradients, matrices, estimates, finite = _hessians_at(tree, env, wrt, h, dtype)
        r = FdHessians(f0, gradients, matrices, h, estimates, np.zeros(p, dtype=int), np.zeros((p, n), dtype=int),
                       np.zeros(p, dtype=bool))
        relative = estimates / np.maximum(np.abs(matrices), 1.0)  # [P, n, n]
        leaves = ~finite.all(axis=0)
        unresolved = np.any(relative.reshape(p, -1) > UNRESOLVED, axis=1)  # across a pole: finite, but no value
        suspicious = np.isfinite(f0) & (leaves | unresolved) & (eps is None) & (n > 0)
        index = np.nonzero(suspicious)[0]
        if len(index):
            # the steps that shrink: those whose axis leaves the domain, or whose own entry is unresolved
            diagonal = np.diagonal(relative[index], axis1=1, axis2=2)  # [Q, n]
            worst = diagonal == np.max(diagonal, axis=1, keepdims=True)
            shrink = np.where(leaves[index, None], _leaving_variables(finite[:, index], n), worst)
            _shrink(tree, points, env, wrt, dtype, r, index, shrink, np.where(leaves[index], np.inf,
                    np.max(np.where(shrink, diagonal, 0.0), axis=1)))
            edge = leaves[index] & (r.how[index] == 0)  # no smaller two-sided stencil stays in the domain
            if edge.any():
                _one_sided(tree, points, env, wrt, dtype, r, index[edge],
                           directions(finite[:, index[edge]], n, shrink[edge]))
    r.values, r.steps, r.estimates = f0.astype(np.float64), r.steps.astype(np.float64), r.estimates.astype(np.float64)
    _exact_zeros(tree, wrt, r)
    if n and eps is None:  # an explicit --eps: a large estimate is the step's, shown with the value
        with np.errstate(invalid="ignore"):
            relative = r.estimates / np.maximum(np.abs(r.matrices), 1.0)
        # any entry whose estimate is above half of max(|entry|, 1) after every step tried says nothing (a
        # huge f's rounding beside a small entry: exp(x)*1e100 + y**2's (y, y)), one-sided or not
        r.unresolved |= np.isfinite(f0) & np.any(relative.reshape(p, -1) > UNRESOLVED, axis=1)
    return r


def _exact_zeros(tree: Node, wrt: list[str], r: FdHessians) -> None:
    """A variable f does not contain (an unused --at one): its gradient entry, row and column are exactly 0,
    their estimates too (:func:`gradcli.methods.fd_error.absent_columns`)."""
    finite = _np().isfinite(r.values)
    for c in fd_error.absent_columns(tree, wrt):
        for a in (r.matrices, r.estimates):
            a[finite, c, :] = 0.0
            a[finite, :, c] = 0.0
        r.gradients[finite, c] = 0.0


def _shrink(tree, points, env, wrt, dtype, r: FdHessians, index, shrink, best) -> None:
    """The points ``index`` recomputed with the ``shrink`` [Q, n] variables' steps times 4^-1 .. 4^-20 (then
    |x| 4^-j for a variable nearer an edge at 0 than that), judged by those variables' own diagonal entries
    (a mixed or other entry's rounding grows as a step shrinks, and says so in its own estimate); a finite
    result better than ``best`` [Q] is kept (``how``: SHRUNK)."""

    np = _np()
    x64 = {v: np.asarray(points[v], dtype=np.float64)[index] for v in wrt}
    sub = {k: a[index] for k, a in env.items()}
    h0 = r.steps[index].copy().astype(np.float64)
    factors = [(factor,) * len(wrt) for factor in fd_error.STEP_FACTORS[1:]]  # 1/4 of the default step and down
    # then, for a variable nearer an edge at 0 than the smallest of those (log(x)*y at x = 1e-30): |x| 4^-j
    nearer = [fd_error.nearer_factors(x64[v], h0[:, c])[0] for c, v in enumerate(wrt)]
    if any(nearer):
        factors += [tuple(a[j] if a else np.full(len(index), fd_error.STEP_FACTORS[-1]) for a in nearer)
                    for j in range(fd_error.NEARER_STEPS)]
    for factor in factors:
        hs = np.stack([np.where(shrink[:, c], taken_steps(x64[v], h0[:, c], factor[c], dtype), h0[:, c])
                       for c, v in enumerate(wrt)], axis=1)
        _, gg, mm, ee, ok = _hessians_at(tree, sub, wrt, hs, dtype)
        own = np.diagonal(ee / np.maximum(np.abs(mm), 1.0), axis1=1, axis2=2)
        score = np.max(np.where(shrink, own, 0.0), axis=1)
        better = ok.all(axis=0) & np.isfinite(score) & (score < best) & _moves(sub, wrt, hs)
        if better.any():
            at = index[better]
            r.gradients[at], r.matrices[at], r.estimates[at], r.steps[at] = gg[better], mm[better], ee[better], hs[better]
            best[better], r.how[at] = score[better], fd_error.SHRUNK


def _one_sided(tree, points, env, wrt, dtype, r: FdHessians, index, signs) -> None:
    """The points ``index`` with the leaving variables' differences one-sided (``signs`` [Q, n], see
    :func:`gradcli.methods.fd_hessian_sided.directions`; the mirrored pattern where that is not finite), over
    :data:`fd_error.STEP_FACTORS` of those variables' steps: the finite result with the smallest relative
    estimate in their rows is kept (``how``: ONE_SIDED, ``sides``: the directions).

    A step where an entry's differences grow as h shrinks (it diverges), where most of the last
    :data:`RECENT` steps diverged, or whose estimate is above :data:`MEANINGLESS` times max(|entry|, 1), is
    passed over. Where every step is passed over: an entry still diverging at the step with the smallest
    estimate is infinite at the edge (d2/dx2 sqrt(x) at 0) and the point stays not finite; otherwise
    (x^2.25 in float32: D(h) ~ h^0.25, and rounding hides the trend) the step with the smallest estimate is
    kept. Either way a result whose estimate is above
    :data:`UNRESOLVED` of max(|entry|, 1) is marked ``unresolved`` (a warning, not a number passed off as
    known)."""
    np = _np()
    sub = {k: a[index] for k, a in env.items()}
    q = len(index)
    best, fallback = np.full(q, np.inf), np.full(q, np.inf)
    kept = {}  # per point, the fallback: (gradients, matrix, estimates, steps, pattern, not diverging there)
    for pattern in (signs, -signs):
        recent = []  # per finite step: it diverged (the last RECENT of them decide the trend)
        for step in _sided_steps(tree, points, sub, wrt, dtype, r.steps[index], pattern, index):
            hs, s, estimates, score, grows, clean, ok = step
            recent.append(np.where(ok, grows.astype(int), -1))
            trend = _diverging(recent)
            doubtful = grows | trend | (score > MEANINGLESS)
            better = clean & ~doubtful & (score < best)
            if better.any():
                at = index[better]
                r.gradients[at], r.matrices[at], r.estimates[at], r.steps[at] = \
                    s.gradients[better], s.matrices[better], estimates[better], hs[better]
                r.sides[at], best[better], r.how[at] = pattern[better], score[better], fd_error.ONE_SIDED
            other = ok & (score < fallback)
            fallback[other] = score[other]
            for k in np.nonzero(other)[0]:
                kept[k] = (s.gradients[k], s.matrices[k], estimates[k], hs[k], pattern[k], not trend[k])
        if np.isfinite(best).all():
            break
    r.unresolved[index] |= np.isfinite(best) & (best > UNRESOLVED)
    for k, (gg, mm, ee, hh, pattern, trend) in kept.items():
        if np.isfinite(best[k]) or not trend:  # resolved after all, or diverging there: infinite
            continue
        at = index[k]
        r.gradients[at], r.matrices[at], r.estimates[at], r.steps[at], r.sides[at] = gg, mm, ee, hh, pattern
        r.how[at], r.unresolved[at] = fd_error.ONE_SIDED, True


# The trend at a step: the last RECENT finite steps (this one included), diverging at most of them. The steps
# where rounding hides the growth (an infinite entry's noisy small steps) follow the steps that showed it.
RECENT = 3


def _diverging(recent: list):
    """[Q] bool from the per-step flags (1 diverged, 0 not, -1 not finite there): the trend is divergence."""
    np = _np()
    flags = np.array(recent)  # [steps, Q]
    grew, told = np.zeros(flags.shape[1], dtype=int), np.zeros(flags.shape[1], dtype=int)
    for column in range(flags.shape[1]):
        seen = flags[:, column][flags[:, column] >= 0][-RECENT:]
        grew[column], told[column] = seen.sum(), len(seen)
    return 2 * grew > told


def _sided_steps(tree, points, sub, wrt, dtype, h0, pattern, index):
    """Per step factor: (steps, :class:`SidedHessians`, estimates, score, grows, clean, ok) for the points
    ``index``. The estimate is at least the geometric tail of the value and the values at 4h and 16h (the
    two steps before: larger, so less rounding; a lucky small estimate at a small step is not believed),
    and at least its distance to the limit Aitken's process extrapolates from the three steps before;
    ``score`` the largest relative estimate in the one-sided variables' rows; ``grows`` where an entry's
    differences grow as h shrinks, by more than rounding (it diverges); ``ok`` where every value is finite
    and the stencil moves; ``clean`` where besides rounding is at most half of each estimate (at smaller
    steps the noise can fake a small estimate: 1e6*x**2.01 gave 2.5e6 +- 7.4e5 of 0)."""

    np = _np()
    x64 = {v: np.asarray(points[v], dtype=np.float64)[index] for v in wrt}
    sided = pattern != 0
    rows = sided[:, :, None] | sided[:, None, :]  # the entries the one-sided steps enter
    history = []  # the values at the larger steps, most recent last
    for factor in fd_error.STEP_FACTORS:
        hs = np.stack([np.where(sided[:, c], taken_steps(x64[v], h0[:, c], factor, dtype), h0[:, c])
                       for c, v in enumerate(wrt)], axis=1)
        s = sided_hessians(tree, sub, wrt, hs, pattern, dtype)
        estimates, growing = s.estimates, s.growing
        if len(history) >= 2:  # 4h and 16h: their spacing is 4, so the theory's ratio is 4^2
            d4, d16 = history[-1], history[-2]
            estimates = np.maximum(estimates, geometric_truncation(s.matrices, d4, d16, 4))
            near = np.abs(s.matrices - d4)
            growing = growing | ((np.abs(d4 - d16) < near) & (near > 2 * s.rounding))
        if len(history) >= 3:  # and at least the distance to the limit the larger steps extrapolate to
            estimates = np.maximum(estimates, fd_error.TRUNCATION_SAFETY * np.abs(
                s.matrices - aitken_limit(history[-1], history[-2], history[-3])))
        history.append(s.matrices)
        relative = np.where(rows, estimates / np.maximum(np.abs(s.matrices), 1.0), 0.0)
        score = np.max(relative, axis=(1, 2))
        # (whatever its estimate: x^1.6's entry D(h) ~ h^-0.4 has an estimate below half of it at every step,
        # and a small infinite entry, 0.75 y^2 x^-0.5 at y = 0.3, looks resolved against max(|entry|, 1))
        grows = np.any(rows & growing, axis=(1, 2))
        ok = s.finite & np.isfinite(score) & _moves(sub, wrt, hs)
        # rounding at most half of the estimate of every entry not already known closely (relative estimate
        # above 1%): where it is more, a lucky step's noise can fake a small estimate
        noisy = (s.rounding > CLEAN * estimates) & (relative > 0.01)
        clean = ~np.any(rows & noisy, axis=(1, 2))
        yield hs, s, estimates, score, grows, ok & clean, ok


def _hessians_at(tree: Node, env: dict, wrt: list[str], h, dtype: str):
    """(f(x), gradients [P, n], matrices [P, n, n], estimates [P, n, n], finite [S, P]: each stencil value
    finite) at steps h [P, n] in dtype."""

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
    fx = evaluate(tree, stacked, dtype, (count * p,))
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


def _moves(env: dict, wrt: list[str], h):
    """[Q] bool: every x +- h differs from x in the dtype (a step below x's ulp leaves f(x) unchanged, and
    a stencil that does not move gives 0 with an estimate of 0)."""
    np = _np()
    out = np.ones(len(h), dtype=bool)
    for c, v in enumerate(wrt):
        x = env[v]
        step = h[:, c].astype(x.dtype)
        out &= (x + step != x) & (x - step != x)
    return out


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


