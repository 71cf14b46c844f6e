"""What every finite-difference method of gradcli shares (gradients, k-th derivatives, Hessians, one-sided
and shrunk stencils): the step rule, the refusal of a step that vanishes, the typed points, and f evaluated
along a variable at x + m h for many offsets in one NumPy call. A single point is a batch of one."""

from __future__ import annotations

from typing import Mapping

from gradcli.dtypes import MACHINE_EPSILON
from gradcli.errors import UsageError
from gradcli.expression import Node
from gradcli.expression.evaluate import compile_expression, numpy_backend
from gradcli.methods import fd_error
from gradcli.methods.fd_schemes import STEP_POWER, Scheme


def default_step(scheme: Scheme | str, dtype: str, x: float) -> float:
    """The step ``scheme`` asks for at ``x`` when ``--eps`` is not given (before x + h rounds it)."""
    return MACHINE_EPSILON[dtype] ** STEP_POWER[Scheme(scheme).value] * max(1.0, abs(x))


def check_step(eps: float | None, values, names, dtype: str, *, power: int = 1) -> None:
    """Refuse an ``--eps`` that vanishes next to a variable's value in the dtype (x + h == x), or whose
    ``power`` (h**2 for second differences, h**k for order k) underflows to zero.

    ``values`` maps each name to one value or to an array of them (every point of a batch): one point
    and many are refused alike, naming the first point where the step vanishes."""
    if eps is None:
        return
    np = _np()
    t = np.dtype(dtype).type
    h = t(eps)
    for name in names:
        given = np.atleast_1d(np.asarray(values[name], dtype=np.float64))
        with np.errstate(all="ignore"):
            x = given.astype(t)
            vanishes = (x + h == x) | (x - h == x) | (h == 0)
        if vanishes.any():
            where = float(given[int(np.argmax(vanishes))])
            raise UsageError(f"--eps {eps:g} vanishes next to {name}={where:g} in {dtype} "
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


def evaluate(tree: Node, env: Mapping[str, object], dtype: str, shape):
    """``tree`` on arrays (one NumPy call per operation), broadcast to ``shape``, in dtype."""
    np = _np()
    out = compile_expression(tree, numpy_backend(dtype))(env)
    return np.broadcast_to(np.asarray(out, dtype=np.dtype(dtype)), shape)


def typed_env(points: Mapping[str, object], dtype: str) -> dict:
    np = _np()
    with np.errstate(over="ignore"):  # a value beyond float32's range becomes inf: reported as not finite
        return {k: np.asarray(v, dtype=np.float64).astype(dtype) for k, v in points.items()}


def along(tree: Node, env: dict, variable: str, h, offsets, dtype: str, measure=None):
    """f at x + m h for every offset m (one call over all of them), and the rounding errors of the values at
    the offsets in ``measure`` (default: all), see :class:`fd_error.StencilRounding`: ({m: [Q]}, rounding)."""
    np = _np()
    t = np.dtype(dtype).type
    q = len(h)
    stacked = {k: np.tile(v, len(offsets)) for k, v in env.items() if k != variable}
    stacked[variable] = np.concatenate([env[variable] + t(m) * h for m in offsets])
    fx = evaluate(tree, stacked, dtype, (len(offsets) * q,))
    rounding = fd_error.StencilRounding(tree, stacked, fx, dtype, offsets, q, measure)
    return dict(zip(offsets, fx.reshape(len(offsets), q))), rounding


# The most array elements one stencil evaluation over several variables builds per input: every input is
# copied for each variable's block (a block moves only its variable), so blocks are grouped to keep a gradient
# over 1,000 variables at tens of MB, while the Python overhead stays one NumPy call per tree node per group.
GROUP_ELEMENTS = 1 << 22


def along_each(tree: Node, env: dict, moves: list, offsets, dtype: str, measure=None):
    """:func:`along` for several variables at once. ``moves``: blocks ``(variable, points, h)``, each the
    indices of the points (into ``env``'s arrays) where that variable moves by its steps ``h``. Returns the
    blocks' results one after the other: ({m: [sum of the blocks' sizes]}, rounding), each value the one
    ``along`` gives that variable at that point. Blocks are evaluated in groups of bounded size."""
    np = _np()
    t = np.dtype(dtype).type
    values, roundings = {m: [] for m in offsets}, []
    group: list = []
    size = 0
    budget = GROUP_ELEMENTS // max(1, len(env) * len(offsets))
    for block in [*moves, None]:
        if block is not None and (not group or size + len(block[1]) <= budget):
            group.append(block)
            size += len(block[1])
            continue
        points = np.concatenate([index for _, index, _ in group])
        stacked = {name: np.tile(v[points], len(offsets)) for name, v in env.items()}
        start = 0
        for variable, index, h in group:  # each block moves its own variable, at every offset
            for row, m in enumerate(offsets):
                at = row * size + start
                stacked[variable][at:at + len(index)] = env[variable][index] + t(m) * h
            start += len(index)
        fx = evaluate(tree, stacked, dtype, (len(offsets) * size,))
        roundings.append(fd_error.StencilRounding(tree, stacked, fx, dtype, offsets, size, measure))
        for m, row in zip(offsets, fx.reshape(len(offsets), size)):
            values[m].append(row)
        if block is None:
            break
        group, size = [block], len(block[1])
    return {m: np.concatenate(v) for m, v in values.items()}, fd_error.StencilRounding.joined(roundings)


def taken_steps(x64, h_default, factor: float, dtype: str):
    """factor times the default step, as the step x + h really takes in the dtype."""
    np = _np()
    if np.isscalar(factor) and factor == 1.0:
        return h_default
    t = np.dtype(dtype).type
    xt = x64.astype(t)
    requested = (h_default.astype(np.float64) * factor).astype(t)
    h = (xt + requested) - xt
    return np.where(h == 0, requested, h)


def one_point(values: dict[str, float]) -> dict:
    """One point as a batch of one: {name: float64 array of shape [1]}."""
    np = _np()
    return {k: np.array([v], dtype=np.float64) for k, v in values.items()}
