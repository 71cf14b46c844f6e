"""Error estimates for finite differences, and the steps that adapt to them.

Every fd value comes with an estimate of its error, from the stencil itself:

- truncation: the same formula at 2h (and 4h); with truncation error ~ c h^a, D(2h) - D(h) ~ (2^a - 1) c h^a,
  so |D(h) - D(2h)| / (2^a - 1) estimates D(h)'s truncation where D(4h) confirms that the differences
  shrink that fast, |D(h) - D(2h)| where they do not (times :data:`TRUNCATION_SAFETY`);
- rounding: each f value's own rounding error through the stencil's |weights|, divided by h^k, plus a few
  eps |f| (the stencil's own sum, and what a wider evaluation cannot see). float32 measures it against f in
  float64 (twice); float64 bounds it by a running-error pass (:mod:`gradcli.methods.fd_bound`) and measures
  it in long double (twice) only where that bound shows a cancellation inside f (:class:`StencilRounding`).

A derivative along one variable (a gradient entry, a k-th derivative) where the estimate at the default
step is poor, where the stencil leaves the domain (f finite at x, not at x + m h) or where the one-sided
derivatives disagree, is recomputed over a short sequence of steps (:data:`STEP_FACTORS`), keeping the one
with the smallest estimate; an explicit ``--eps`` is used as given.
"""

from __future__ import annotations

from gradcli.dtypes import MACHINE_EPSILON

from dataclasses import dataclass, fields

TRUNCATION_SAFETY = 2.0
ROUNDING_ULPS = 2.0
# Steps tried, as multiples of the default one: one larger (rounding-bound points; more lets a decaying f
# look flat, D ~ 0 at every large step, a false plateau), then down to
# ~1e-12 of it (a point next to a domain edge or a kink needs a stencil that stays on one side).
STEP_FACTORS = tuple(4.0 ** j for j in range(1, -21, -1))
# For a point whose default step is merely poor (inside the domain, no kink): the steps near the default one;
# far smaller steps only multiply the rounding (by 4^k per factor 4).
NEAR_FACTORS = STEP_FACTORS[:6]
# The default step's estimate is "poor" above this many times the scheme's best relative error.
POOR_FACTOR = 1e3
# Adapted: where the step sequence was used; one-sided: a one-sided stencil (the two-sided one left the domain).
ADAPTED, ONE_SIDED, SHRUNK = 1, 2, 3  # SHRUNK: adapted because the default stencil left the domain
# A one-sided stencil away from a switch of min/max/clip/where/abs/relu that lies beside the point, inside the
# default stencil (the tree says the point is not at it): the two-sided steps that stay clear of it are too
# small to resolve anything (min(x, y) at y = x + 1e-8).
BESIDE_SWITCH = 4


def np_():
    import numpy as np

    return np


def rounding(dtype: str, fmax, weight_sum, h, order: int, measured=0.0, bounded=None):
    """The rounding part of the estimate: the values' measured rounding errors through the stencil's
    |weights| (``measured``, already divided by h^order), twice, plus a few eps of the largest |f| the
    stencil saw (what the wider evaluation cannot see, e.g. a function NumPy computes in float64 only; a few
    subnormal spacings where that is more).
    Where ``bounded`` (see :class:`StencilRounding`), ``measured`` is made of upper bounds that already
    include every operation's and function's own error: it counts once (the eps |f| term stays: the
    stencil's own sum rounds too)."""
    np = np_()
    # at least the spacing of subnormals (2^-1074 in float64) where f is not 0: below the smallest normal, a
    # value's rounding is that absolute amount, not eps |f| (exp(-x) at 745: 5e-324, and eps |f| says 0); a
    # stencil of exact zeros rounds nothing
    fmax = np.asarray(fmax, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ulp = np.where(fmax > 0, np.maximum(MACHINE_EPSILON[dtype] * fmax, float(np.finfo(dtype).smallest_subnormal)),
                       MACHINE_EPSILON[dtype] * fmax)  # (NaN stays NaN)
    floor = ROUNDING_ULPS * ulp * weight_sum / h ** order
    return floor + (2.0 * measured if bounded is None else np.where(bounded, 1.0, 2.0) * measured)


# The type the rounding of an fd value is measured in: f at the same points, computed wider.
WIDER = {"float32": "float64", "float64": "longdouble"}


def measured_rounding(tree, env: dict, fx, dtype: str):
    """|f in dtype - f in a wider type| at the same (dtype) points: each value's own rounding error, which a
    cancellation inside f (100*(y - x**2)**2 near y = x**2) makes far larger than eps |f|."""
    np = np_()
    from gradcli.expression.evaluate import compile_expression, numpy_backend

    wide = np.dtype(WIDER[dtype])
    if wide.itemsize <= 8 and dtype == "float64":  # no wider type here (longdouble is double): nothing measured
        return np.zeros(np.shape(fx))
    with np.errstate(all="ignore"):
        hi = compile_expression(tree, numpy_backend(wide.name))({k: np.asarray(v).astype(wide) for k, v in env.items()})
        hi = np.broadcast_to(np.asarray(hi, dtype=wide), np.shape(fx))
        wide_err = np.abs(np.asarray(fx, dtype=wide) - hi)
        err = wide_err.astype(np.float64)
        # an error below float64's range (x**2 at 1e-300: 0 beside 1e-600) is not none: it is at most the
        # smallest subnormal, what the float64 value could have been off by
        err = np.where((wide_err > 0) & (err == 0), float(np.finfo(np.float64).smallest_subnormal), err)
    return np.where(np.isfinite(err), err, 0.0)


# A value whose running-error bound (:mod:`gradcli.methods.fd_bound`) is within this many eps of |f| has no
# cancellation to speak of: the bound stands in for the measurement. Above it (f small next to its terms,
# 100*(y - x**2)**2 near y = x**2) the rounding is measured in the wider type.
CANCELLATION_RATIO = 16.0


class StencilRounding:
    """The rounding errors of a stencil's f values, rows of offsets x Q points (``e[m]``: the row of offset m).

    float32: measured in float64 (cheap). float64: the running-error bound of :mod:`gradcli.methods.fd_bound`
    (~1/4 of the cost of long double), and the long-double measurement only at the points where some value's
    bound exceeds :data:`CANCELLATION_RATIO` eps |f|. ``bounded`` [Q]: the points whose rows are bounds (see
    :func:`rounding`). Rows not in ``rows`` stay 0 (not used)."""

    def __init__(self, tree, stacked: dict, fx, dtype: str, offsets, q: int, rows=None):
        np = np_()
        self.row_of = {m: i for i, m in enumerate(offsets)}
        rows = sorted(self.row_of[m] for m in (offsets if rows is None else rows))
        self.values = np.zeros((len(offsets), q))
        self.bounded = np.zeros(q, dtype=bool)
        if len(rows) == len(offsets):  # every row: no copy
            flat, env = slice(None), stacked
        else:
            flat = (np.asarray(rows)[:, None] * q + np.arange(q)[None, :]).reshape(-1)
            env = {k: v[flat] for k, v in stacked.items()}
        if dtype == "float64" and np.dtype(WIDER[dtype]).itemsize > 8:
            from gradcli.methods.fd_bound import rounding_bound

            bound = rounding_bound(tree, env)[1].reshape(len(rows), q)
            with np.errstate(invalid="ignore"):
                tight = bound <= CANCELLATION_RATIO * MACHINE_EPSILON[dtype] * np.abs(fx[flat].reshape(len(rows), q))
            self.bounded = tight.all(axis=0)
            self.values[rows] = np.where(self.bounded, bound, 0.0)
            index = np.nonzero(~self.bounded)[0]
            if not len(index):
                return
            flat = (np.asarray(rows)[:, None] * q + index[None, :]).reshape(-1)
            env = {k: v[flat] for k, v in stacked.items()}
            measured = measured_rounding(tree, env, fx[flat], dtype)
            self.values[np.ix_(rows, index)] = measured.reshape(len(rows), len(index))
        else:
            self.values[rows] = measured_rounding(tree, env, fx[flat], dtype).reshape(len(rows), q)

    def __getitem__(self, m):
        return self.values[self.row_of[m]]

    @classmethod
    def joined(cls, parts: list["StencilRounding"]) -> "StencilRounding":
        """The roundings of stencils evaluated in groups, as one over all their points (same offsets)."""
        if len(parts) == 1:
            return parts[0]
        np = np_()
        out = cls.__new__(cls)
        out.row_of = parts[0].row_of
        out.values = np.concatenate([r.values for r in parts], axis=1)
        out.bounded = np.concatenate([r.bounded for r in parts])
        return out


def truncation(d_h, d_2h, d_4h, accuracy: int):
    """The truncation part of the estimate from the same formula at h, 2h and 4h (error ~ h^accuracy).

    Where the differences shrink about as the theory says (their ratio r = |D(2h) - D(4h)| / |D(h) - D(2h)|
    at least 2^(accuracy-1)), |D(h) - D(2h)| / (min(r, 2^accuracy) - 1) is D(h)'s truncation (the rest of the
    geometric series at the measured rate: at 2^(accuracy-1) < r < 2^accuracy the next term of the series
    still counts), and at least |D(2h) - D(4h)| / (2^accuracy - 1)^2; where they do not (a step too large for
    the function's scale: the series has not settled), nothing is divided: |D(h) - D(2h)|."""
    np = np_()
    near, far = np.abs(d_h - d_2h), np.abs(d_2h - d_4h)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = far / near
        settled = ratio >= 2.0 ** (accuracy - 1)
        divisor = np.minimum(np.where(settled, ratio, 2.0), 2.0 ** accuracy) - 1.0
        # ... and at least the larger steps' difference brought down at the theory's rate: where the leading
        # error term nearly vanishes, the next one can cancel it at 2h (atan's 4th derivative near x = 0.28,
        # accuracy 8: errors -8.0e-3, -8.9e-6, +8.2e-8 at 4h, 2h, h), so that |D(h) - D(2h)| says too little
        settled_estimate = np.maximum(near / divisor, far / (2.0 ** accuracy - 1.0) ** 2)
    return TRUNCATION_SAFETY * np.where(settled, settled_estimate, near)


def aitken_limit(d_4h, d_16h, d_64h):
    """Where D at 4h, 16h, 64h converges geometrically (differences of one sign, shrinking), the limit
    Aitken's delta-squared process extrapolates to; elsewhere D(4h) itself (no extrapolation)."""
    np = np_()
    near, far = d_4h - d_16h, d_16h - d_64h
    with np.errstate(all="ignore"):
        converging = (near * far > 0) & (np.abs(near) < np.abs(far))
        limit = d_4h - near * near / (near - far)
    return np.where(converging & np.isfinite(limit), limit, d_4h)



def best_relative(dtype: str, accuracy: int, order: int = 1) -> float:
    """The scheme's best relative error (truncation h^a balanced against rounding eps/h^k)."""
    return MACHINE_EPSILON[dtype] ** (accuracy / (accuracy + order))


def cannot_resolve(value, estimate, dtype: str, order: int = 1):
    """Where no step reaches accuracy (cancellation, a value too large for the dtype): the estimate is more
    than 1% of the derivative and more than eps^(1/(k+1)) in absolute terms (order k: a derivative that is
    0, e.g. the 6th of a linear function, is only known to within the rounding floor of its stencil, and its
    estimate says so without a warning)."""
    np = np_()
    with np.errstate(invalid="ignore"):
        return (estimate > 0.01 * np.abs(value)) & (estimate > MACHINE_EPSILON[dtype] ** (1.0 / (order + 1)))


@dataclass
class LineResult:
    """Derivatives along one variable at Q points, with what the estimate needs."""

    value: object  # [Q]
    estimate: object  # [Q]
    step: object  # [Q]
    finite: object  # [Q] bool: every stencil value finite
    left: object = None  # [Q]: one-sided derivatives (order 1, two-sided schemes) or None
    right: object = None
    sided_estimate: object = None  # [Q]: their estimates together
    how: object = None  # [Q] int: 0 default step, ADAPTED, ONE_SIDED
    jump: object = None  # [Q] bool: f jumps inside the stencil (two-sided schemes; see fd._jumps)
    noise: object = None  # [Q]: the rounding part of the estimate (one-sided lines: tells divergence from noise)

    def part(self, start: int, stop: int) -> "LineResult":
        """The points start .. stop (a block of a line computed for several variables at once)."""
        return LineResult(*(None if getattr(self, f.name) is None else getattr(self, f.name)[start:stop]
                            for f in fields(self)))


def kink(r: LineResult):
    """Where the one-sided derivatives differ by more than their estimates (bool [Q])."""
    np = np_()
    if r.left is None:
        return np.zeros(r.value.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        gap = np.abs(r.right - r.left)
        return np.isfinite(gap) & (gap > 4.0 * r.sided_estimate + 1e-6 * (np.abs(r.left) + np.abs(r.right)))


def poorly_resolved(r: LineResult, dtype: str, accuracy: int, order: int = 1):
    """Where the estimate is far above what the scheme reaches in ``dtype`` (bool [Q]); the scale is at least
    1, so an exactly zero derivative is not poorly resolved."""
    np = np_()
    with np.errstate(all="ignore"):
        scale = np.maximum(np.abs(r.value), 1.0)
        return r.estimate > POOR_FACTOR * best_relative(dtype, accuracy, order) * scale


def adapt(compute, default: LineResult, x, dtype: str, accuracy: int, order: int, centre_finite,
          one_sided=None, off_switch=None) -> LineResult:
    """The default-step result, with the suspicious points (domain, poor estimate, one-sided mismatch)
    recomputed over :data:`STEP_FACTORS` and the smallest estimate kept.

    ``compute(index, factor)``: a :class:`LineResult` for the points ``index`` at ``factor`` times their
    default step; ``one_sided(index, factor)`` likewise with a one-sided stencil (tried where no two-sided
    step stays in the domain). ``off_switch`` (bool [Q]): points the tree says are not at a switch of a model
    function; where the default stencil saw a kink there and no two-sided step resolved the value, the
    one-sided stencils (away from the switch) are tried too, and kept where their estimate is smaller."""
    np = np_()
    with np.errstate(all="ignore"):
        poor = poorly_resolved(default, dtype, accuracy, order)
        leaves = ~default.finite & centre_finite
        # a stencil wider than |x| crosses the coordinate's 0, where a pole or a kink of f may lie that is not
        # at x (x/y's d/dy at y = 1e-200: y +- h is +-1.6e-195 apart from a pole, the value says 3e-190 +- 7e-11);
        # unresolved there, the steps that stay clear of 0 are tried
        distance = np.abs(np.asarray(x, dtype=np.float64))
        crosses = (distance > 0) & (distance < default.step) & ~(default.estimate < 0.5 * np.abs(default.value))
        suspicious = centre_finite & (leaves | poor | crosses | kink(default) | ~np.isfinite(default.estimate))
    default.how = np.zeros(len(default.value), dtype=int)
    index = np.nonzero(suspicious)[0]
    if not len(index):
        return default
    near_only = ~(leaves | kink(default) | ~np.isfinite(default.estimate))[index]
    best = _search(compute, index, x, dtype, sided=True, near_only=near_only)
    found = ~np.isnan(best.estimate)
    best.how[best.step == default.step[index]] = 0  # the default step won after all
    best.how[(best.how == ADAPTED) & leaves[index]] = SHRUNK
    if one_sided is not None:
        need = ~found & leaves[index]
        if need.any():
            side = _search(one_sided, index[need], x, dtype, sided=False)
            pos = np.nonzero(need)[0]
            for name in ("value", "estimate", "step"):
                getattr(best, name)[pos] = getattr(side, name)
            best.how[pos] = ONE_SIDED
            found = ~np.isnan(best.estimate)
    if one_sided is not None and off_switch is not None:
        with np.errstate(all="ignore"):
            retry = np.asarray(off_switch, dtype=bool)[index] & kink(default)[index] \
                & (~found | poorly_resolved(best, dtype, accuracy, order))
        if retry.any():
            side = _search(one_sided, index[retry], x, dtype, sided=False)
            pos = np.nonzero(retry)[0]
            with np.errstate(invalid="ignore"):
                take = np.isfinite(side.estimate) & ~(side.estimate >= best.estimate[pos])
            for name in ("value", "estimate", "step"):
                getattr(best, name)[pos[take]] = getattr(side, name)[take]
            best.how[pos[take]] = BESIDE_SWITCH
            found = ~np.isnan(best.estimate)
    chosen = index[found]
    for name in ("value", "estimate", "step", "how"):
        getattr(default, name)[chosen] = getattr(best, name)[found]
    default.finite[chosen] = True
    return default


# Steps below the smallest of STEP_FACTORS, for a point nearer an edge than that (sqrt(x) at x = 1e-20,
# log(x) at 1e-30): |x| / 4, |x| / 16, ... (the edge of the common functions is at 0).
NEARER_STEPS = 12


def nearer_factors(x, default, need=True):
    """(factors, need): per-point factors of the ``default`` step [Q] giving the steps |x| 4^-j, j = 1 ..
    NEARER_STEPS, for the points (``need`` [Q]) that ask for them and whose |x| is not far above the
    smallest of :data:`STEP_FACTORS` (within 1e3 of it: a wide stencil, 16h at accuracy 8, needs h well
    below |x|); elsewhere the smallest factor. No factors where no point needs them."""
    np = np_()
    with np.errstate(all="ignore"):
        distance = np.abs(np.asarray(x, dtype=np.float64))
        default = np.asarray(default, dtype=np.float64)
        need = need & (distance > 0) & (distance < 1e3 * default * STEP_FACTORS[-1]) & np.isfinite(default) \
            & (default > 0)
        if not np.any(need):
            return [], need
        return [np.where(need, distance * 4.0 ** -j / default, STEP_FACTORS[-1])
                for j in range(1, NEARER_STEPS + 1)], need


def _usable(r: LineResult, xt, sided: bool):
    """[Q] bool: a finite value and estimate from a stencil that moves x (and, with ``sided``, no kink in it)."""
    np = np_()
    with np.errstate(all="ignore"):
        t = xt.dtype.type
        moves = ((xt + r.step.astype(t)) != xt) & ((xt - r.step.astype(t)) != xt)
        ok = r.finite & np.isfinite(r.value) & np.isfinite(r.estimate) & moves
        return ok & ~kink(r) if sided else ok


def _nearer_steps(compute, index, xt, tried, unresolved, sided: bool) -> tuple[list, object]:
    """([(result, ok)] at the steps of :func:`nearer_factors`, the points [Q] they are for): for the
    ``unresolved`` points, a stencil that fits between the point and an edge at 0."""
    factors, need = nearer_factors(xt, tried[0][0].step / STEP_FACTORS[0], unresolved)
    out = []
    for factor in factors:
        r = compute(index, factor)
        out.append((r, need & _usable(r, xt, sided)))
    return out, need


def _extrapolation_bound(tried, n: int, value):
    """(bound, ok) for one-sided searches: the distance from ``value`` (the step n's) to the limit Aitken's
    process extrapolates from the three larger steps (the three largest, for the first steps), doubled; at
    an edge f is rarely smooth (x^4.25: the 4th derivative converges like h^0.25)."""
    np = np_()
    (a, a_ok), (b, b_ok), (c, c_ok) = (tried[n - 1], tried[n - 2], tried[n - 3]) if n >= 3 else \
        (tried[2], tried[1], tried[0])
    with np.errstate(all="ignore"):
        return TRUNCATION_SAFETY * np.abs(value - aitken_limit(a.value, b.value, c.value)), a_ok & b_ok & c_ok


def _diverged(tried, n: int, r: LineResult, ok):
    """(counted, diverging) at step n >= 2: three values to tell by, and differences that grow as the step
    shrinks (D diverges: an infinite derivative, sqrt(x) at 0; a slow finite limit, x - x^1.02 with D = 1 -
    c h^0.02, has shrinking ones), above the rounding where the line knows it."""
    np = np_()
    (p1, ok1), (p2, ok2) = tried[n - 1], tried[n - 2]
    counted = ok & ok1 & ok2
    with np.errstate(all="ignore"):
        step_change = np.abs(r.value - p1.value)
        grows = step_change > np.abs(p1.value - p2.value)
        if r.noise is not None:  # rounding grows as h shrinks too: only growth above it counts
            grows &= step_change > 2 * (r.noise + p1.noise)
    return counted, counted & grows


def _infinite_at_edge(diverging, counted, kept_at, found, steps: int):
    """[Q] bool: no step resolved the value, and it diverged at most steps down to the one kept (counted
    over the first three at least: the one kept is often the largest): the derivative is infinite at the
    edge (sqrt(x) at 0: D(h) ~ h^-0.5), not a number with a large estimate."""
    np = np_()
    q = len(found)
    upto = np.arange(2, steps)[:, None] <= np.maximum(kept_at, 4)[None, :]
    grew = np.sum(np.array(diverging).reshape(-1, q) & upto, axis=0)
    told = np.sum(np.array(counted).reshape(-1, q) & upto, axis=0)
    return ~found & (told > 0) & (2 * grew > told)


def _search(compute, index, x, dtype, *, sided: bool, near_only=None) -> LineResult:
    """Over the step factors: the smallest finite estimate per point (NaN where no step gave one). With
    ``sided``, steps whose one-sided derivatives disagree are passed over (a kink inside the stencil).
    ``near_only`` (bool [Q]): points that try only :data:`NEAR_FACTORS`.

    A step's estimate is at least its distance to the value at the next smaller step: a large step can
    make D(h) and D(2h) agree by accident (both near 0 where f has decayed), never with a smaller step too.
    Without ``sided`` (one-sided stencils at a domain edge), also at least its distance to the limit the
    larger steps extrapolate to; a value no step resolves whose differences grew (it diverges) at most steps
    down to the one kept is infinite there: NaN."""
    np = np_()
    q = len(index)
    best = LineResult(np.full(q, np.nan), np.full(q, np.nan), np.full(q, np.nan), np.zeros(q, dtype=bool),
                      how=np.full(q, ADAPTED))
    t = np.dtype(dtype).type
    xt = np.asarray(x, dtype=np.float64)[index].astype(t)
    tried = []
    far = np.ones(q, dtype=bool) if near_only is None else ~near_only
    settled = np.zeros(q, dtype=bool)  # some near step resolved the value, confirmed by the step after it
    # [steps, Q]: the steps each point would have tried alone (a prefix of them): a point's result must not
    # depend on the other points of its batch, which may make the batch try further steps
    own = []
    for n, factor in enumerate(STEP_FACTORS):
        if n == len(NEAR_FACTORS):
            far |= ~settled  # no near step resolved it (a pole just past the stencil): go on down
        if n >= len(NEAR_FACTORS) and not far.any():
            break
        r = compute(index, factor)
        ok = _usable(r, xt, sided)
        if n >= len(NEAR_FACTORS):
            ok &= far
        if n:  # the step before is resolved when its estimate, and its distance to this value, are small
            (p, p_ok) = tried[-1]
            with np.errstate(all="ignore"):
                guarded = np.where(ok, np.maximum(p.estimate, np.abs(p.value - r.value)), p.estimate)
                settled |= p_ok & (guarded < 0.5 * np.abs(p.value))
        tried.append((r, ok))
        own.append(far.copy() if n >= len(NEAR_FACTORS) else np.ones(q, dtype=bool))
    nearer, need = _nearer_steps(compute, index, xt, tried, far & ~settled, sided)
    tried += nearer
    own += [need] * len(nearer)
    # A step whose estimate is as large as its value has resolved nothing, however small that estimate is in
    # absolute terms (across a pole, D ~ -2 f(x) / h^2 is small at large h): such steps count only where no
    # step resolves the value.
    resolved = LineResult(*(np.full(q, np.nan) for _ in range(3)), np.zeros(q, dtype=bool))
    diverging, counted = [], []  # per step [Q] bool: the differences grew; there were three values to tell
    kept_at = np.zeros(q, dtype=int)  # the step best holds
    for n, (r, ok) in enumerate(tried):
        # the next smaller step, or the larger one before it where the point's own steps end here
        (after, after_ok), (before, before_ok) = tried[min(n + 1, len(tried) - 1)], tried[max(n - 1, 0)]
        last = ~own[n + 1] if n + 1 < len(tried) else np.ones(q, dtype=bool)
        neighbour = np.where(last, before.value, after.value)
        near_ok = np.where(last, before_ok if n > 0 else False, after_ok)
        with np.errstate(all="ignore"):
            estimate = np.where(near_ok, np.maximum(r.estimate, np.abs(r.value - neighbour)), r.estimate)
            if not sided and len(tried) >= 3:
                tail, tail_ok = _extrapolation_bound(tried, n, r.value)
                estimate = np.where(tail_ok, np.maximum(estimate, tail), estimate)
            better = ok & ~(estimate >= best.estimate)
            sharper = ok & (estimate < 0.5 * np.abs(r.value)) & ~(estimate >= resolved.estimate)
        if n >= 2:
            told, grew = _diverged(tried, n, r, ok)
            counted.append(told)
            diverging.append(grew)
        for target, where in ((best, better), (resolved, sharper)):
            target.value[where], target.step[where], target.estimate[where] = \
                r.value[where], r.step[where], estimate[where]
        kept_at[better] = n
    found = ~np.isnan(resolved.estimate)
    for name in ("value", "step", "estimate"):
        getattr(best, name)[found] = getattr(resolved, name)[found]
    if not sided:
        infinite = _infinite_at_edge(diverging, counted, kept_at, found, len(tried))
        best.value[infinite] = best.estimate[infinite] = best.step[infinite] = np.nan
    best.finite[~np.isnan(best.estimate)] = True
    return best


def absent_columns(tree, wrt: list[str]) -> list[int]:
    """The positions in ``wrt`` of variables ``tree`` does not contain: their derivatives are exactly 0 and so
    are their estimates (f's rounding at the stencil points moves nothing along them; the stencil's
    rounding floor is no error of a value that is 0 by construction)."""
    from gradcli.expression.tree import Var, walk

    used = {node.name for node in walk(tree) if isinstance(node, Var)}
    return [c for c, v in enumerate(wrt) if v not in used]


# Periodic functions: beyond an argument of 1/eps their argument's float spacing is a radian or more, so f
# at neighbouring floats samples unrelated phases and no step the dtype can take resolves the oscillation.
PERIODIC = frozenset({"sin", "cos", "tan", "sec", "csc", "cot"})


def oscillation_unresolved(tree, env: dict, variable: str, dtype: str):
    """[P] bool: where a periodic function's argument that moves with ``variable`` is so large that its float
    spacing is at least a radian (cos(x) at 1e22: spacing 2e6, and a stencil of 1e16 periods whose
    differences, ~1/h, look converged): fd cannot resolve the derivative there."""
    np = np_()
    from gradcli.expression.evaluate import compile_expression, numpy_backend
    from gradcli.expression.tree import Call, Var, inline_rules, walk

    shape = np.shape(next(iter(env.values()))) if env else ()
    out = np.zeros(shape, dtype=bool)
    for node in walk(inline_rules(tree)):
        if not (isinstance(node, Call) and node.func in PERIODIC and len(node.args) == 1):
            continue
        if not any(isinstance(n, Var) and n.name == variable for n in walk(node.args[0])):
            continue
        with np.errstate(all="ignore"):
            a = np.broadcast_to(np.asarray(compile_expression(node.args[0], numpy_backend(dtype))(env),
                                           dtype=np.float64), shape)
            out |= np.isfinite(a) & (np.abs(a) * MACHINE_EPSILON[dtype] >= 1.0)
    return out

