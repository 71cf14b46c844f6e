"""TensorFlow ``GradientTape`` for a batch of P points: gradients, Hessians and k-th derivatives, written once.

A single point is a batch of one: :func:`gradcli.methods.tape.tape_gradient` and ``descend.hessian_at`` are thin
wrappers over this module (``grad``, ``hessian`` and ``derivative`` call it on the --at point as on a batch).

Every function gradcli's expressions use is elementwise, so one tape over tensors of shape [P] gives every
point's derivatives at once: ``tape.gradient(z, x)`` of a [P]-shaped ``z`` is the gradient of its sum, and
point p's entry only depends on point p's inputs (points do not mix). An expression that is constant, or
independent of a variable, still yields arrays of shape [P] (values broadcast; unconnected gradients are 0).

Hessian modes (:func:`tape_hessians`):

- ``"rows"`` (the default up to :data:`ROWS_MAX` variables): the TF guide's nested tapes, one
  ``outer.gradient`` per row, so every entry the tape reports as unconnected (``None``) is known: a
  structural zero, the same at every point.
- ``"stacked"`` (the default above :data:`ROWS_MAX`): all rows from ONE ``outer.gradient``, eagerly. Each point
  is stacked n times (copy k of the point, k = 1..n); the inner tape gives every copy the gradient g; the
  outer tape differentiates ``sum_k g_k(copy k)``, whose derivative in copy k is row k of the Hessian
  (copies do not mix, like points). The expression is evaluated on one tensor holding all variables, with
  the terms of a sum that differ only in their variables (``100*(x2 - x1**2)**2 + 100*(x3 - x2**2)**2 + ...``)
  computed as one vectorised term over gathered columns: a few dozen ops instead of a few per variable.
- ``"jacobian"``: ``outer.jacobian`` (pfor) of the inner gradient summed over the points (points do not mix,
  so one [n]-vector's jacobian covers them all), in a ``tf.function`` cached per (expression, variables,
  dtype) for the process: traced for the first batch size, traced once more with a free batch dimension for
  the second, then reused (a batch runner's chunks do not retrace).

The two all-at-once modes cannot say which single entries were unconnected: only the rows and columns of
variables the expression does not contain are reported as structural. Their grouped sums add in another
order than the expression's left-to-right one (differences of a rounding or two), and, as with any
jacobian, a row's zero cotangent meets the other rows' partials, so an infinite partial elsewhere in the
gradient can turn an entry into NaN where the rows mode gives a number.

Measured with bench/bench_hessian.py on the chained Rosenbrock function (2 shared CPU cores, TF 2.21, cold
calls): at n = 30 and 100 the former jacobian mode (the expression on n scalar slices, pfor) took 1.4 s and
5.2 s against 0.17-0.23 s for a bare ``tape.jacobian`` script; ``"stacked"`` takes 0.05 s and 0.1 s. A
``tf.function`` around the expression as written (one op per node) costs ~0.5 ms per graph node to trace,
seconds at n = 100, hence an eager default; the grouped expression traces in ~0.5 s ("jacobian", cold).

This module is the public one: gradients, derivatives, and :func:`tape_hessians`, which picks the mode and
the chunk size; the modes themselves are in :mod:`gradcli.methods.tape_hessian`, the grouped expression
in :mod:`gradcli.methods.tape_vectorise`, and the [P]-array helpers in :mod:`gradcli.methods.tape_points`.

TensorFlow (and NumPy) are imported inside the functions only: importing this module stays cheap.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from gradcli.expression.evaluate import compile_expression
from gradcli.expression import Node, walk
from gradcli.methods.tape_hessian import TapeHessians, clear_caches, hessian_jacobian, hessian_rows, hessian_stacked
from gradcli.methods.tape_points import batch_size, broadcast, column, variables_of
from gradcli.methods.tape_vectorise import vectorised_function

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

# Up to this many variables the Hessian takes one outer gradient per row (the guide's way), which shows
# every unconnected entry; above it, all rows at once ("stacked").
ROWS_MAX = 10
HESSIAN_MODES = ("rows", "stacked", "jacobian")

# Seconds the nested tapes of tape_derivatives may take: each order re-records every lower one, so the
# cost grows about threefold per order (order 10 of a deep composition would take minutes and gigabytes).
TAPE_TIME_BUDGET = 20.0

# The all-at-once Hessians hold n copies (or pfor iterations) of each point, and every node of the expression
# gives one value per copy and point: about n * P * nodes values per pass. Points are taken in chunks of at
# most this many such values (64 MiB in float64; the tapes keep a few times that).
STACKED_ELEMENTS = 1 << 23


# ---------------------------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------------------------
@dataclass
class TapeGradients:
    values: np.ndarray  # [T, P] float64: each target's value at each point
    gradients: np.ndarray  # [T, P, n] float64 (0 where unconnected)
    unconnected: list[list[str]]  # per target: wrt names the tape reported None for (same at every point)
    summed: np.ndarray  # [P, n]: tape.gradient([z1, z2, ...], xs) (TF sums several targets)
    # wrt names entered as tf.constant and not tape.watch'ed: TF's None (the guide's [None, None]), 0 in the
    # arrays; not "unconnected", which is the expression's doing, not the tape's
    unwatched: list[str] = ()


def one_shot_tape(trees: list[Node], points: Mapping[str, np.ndarray], wrt: list[str], *,
                  dtype: str = "float64") -> tuple[list[float], str]:
    """The guide's one-shot lesson, run: a ``tf.GradientTape()`` without ``persistent=True`` answers one
    ``tape.gradient`` (returned: the first target's gradient at the first point, by ``wrt``) and forgets its
    record; asked again (the next target's gradient, or the same one), TensorFlow raises RuntimeError, whose
    message is returned as TensorFlow words it."""
    import numpy as np

    from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

    tf = load_tensorflow()
    backend = tf_backend(dtype)
    used = list(dict.fromkeys(v for t in trees for v in variables_of(t)))
    size = batch_size(points, list(dict.fromkeys([*wrt, *used])))
    env: dict[str, Any] = {name: tf.constant(column(points, name, dtype, size)) for name in used if name not in wrt}
    variables = [tf.Variable(column(points, name, dtype, size), name=name) for name in wrt]
    env.update(zip(wrt, variables))
    fns = [compile_expression(t, backend) for t in trees]
    with tf.GradientTape() as tape:  # persistent=False, TensorFlow's default
        targets = [tf.identity(fn(env)) for fn in fns]
    first = tape.gradient(targets[0], variables)
    try:
        tape.gradient(targets[-1], variables)
    except RuntimeError as exc:
        said = str(exc)
    else:  # pragma: no cover - TensorFlow has always refused a second gradient of a one-shot tape
        said = ""
    return [float(np.asarray(g.numpy()).reshape(-1)[0]) if g is not None else 0.0 for g in first], said


def tape_gradients(trees: list[Node], points: Mapping[str, np.ndarray], wrt: list[str], *,
                   dtype: str = "float64", constants=(), watch=()) -> TapeGradients:
    """Gradients of each tree at every point with one persistent tape, as the TF guide does.

    The variables in ``wrt`` are ``tf.Variable``s of shape [P]; the others ``tf.constant``s the tape does not
    watch. A gradient the tape reports as not connected (``None``) is 0 here and its name is listed in
    ``unconnected``; that is a property of the expression, the same at every point.

    ``constants`` (names in ``wrt``) enter as ``tf.constant`` although they are differentiated by, as in the
    guide's lesson: the tape does not record them, and ``tape.gradient`` answers ``None`` (listed in
    ``unwatched``) unless they are also in ``watch``, which ``tape.watch``es them (the guide's fix).
    """
    import numpy as np

    from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

    tf = load_tensorflow()
    backend = tf_backend(dtype)
    used = list(dict.fromkeys(v for t in trees for v in variables_of(t)))
    size = batch_size(points, list(dict.fromkeys([*wrt, *used])))
    env: dict[str, Any] = {name: tf.constant(column(points, name, dtype, size))
                           for name in used if name not in wrt}
    variables = [tf.constant(column(points, name, dtype, size)) if name in constants else
                 tf.Variable(column(points, name, dtype, size), name=name) for name in wrt]
    env.update(zip(wrt, variables))
    fns = [compile_expression(t, backend) for t in trees]
    unwatched = [name for name in wrt if name in constants and name not in watch]
    with tf.GradientTape(persistent=True) as tape:
        for name, source in zip(wrt, variables):
            if name in constants and name in watch:
                tape.watch(source)
        # identity: an expression that is just a variable must still be a watched op on the tape
        targets = [tf.identity(fn(env)) for fn in fns]
    n = len(wrt)
    gradients = np.zeros((len(trees), size, n))
    unconnected: list[list[str]] = []
    for t, z in enumerate(targets):
        grads = tape.gradient(z, variables)
        for j, g in enumerate(grads):
            if g is not None:
                gradients[t, :, j] = np.asarray(g.numpy(), dtype=np.float64)
        unconnected.append([name for name, g in zip(wrt, grads) if g is None and name not in unwatched])
    summed = np.zeros((size, n))
    if len(targets) == 1:  # the sum of one target is its gradient (zeros where unconnected, as ZERO gives)
        summed = gradients[0].copy()
    elif targets and variables:
        summed_grads = tape.gradient(targets, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        for j, g in enumerate(summed_grads):
            summed[:, j] = np.asarray(g.numpy(), dtype=np.float64)
    del tape
    values = np.array([broadcast(z.numpy(), size) for z in targets]).reshape(len(trees), size)
    return TapeGradients(values, gradients, unconnected, summed, unwatched)


# ---------------------------------------------------------------------------------------------
# Hessians (the modes are in gradcli.methods.tape_hessian)
# ---------------------------------------------------------------------------------------------
def default_hessian_mode(n: int) -> str:
    return "rows" if n <= ROWS_MAX else "stacked"


def tape_hessians(tree: Node, points: Mapping[str, np.ndarray], wrt: list[str], *, dtype: str = "float64",
                  mode: str | None = None) -> TapeHessians:
    """The Hessian of ``tree`` by nested tapes at every point. ``mode``: "rows" (the guide's loop),
    "stacked", "jacobian", or None (rows up to ROWS_MAX variables, else stacked)."""
    mode = mode or default_hessian_mode(len(wrt))
    if mode not in HESSIAN_MODES:
        raise ValueError(f"unknown tape Hessian mode {mode!r}; expected one of {', '.join(HESSIAN_MODES)}")
    used = variables_of(tree)
    size = batch_size(points, list(dict.fromkeys([*wrt, *used])))
    if mode == "rows" or not wrt:
        return hessian_rows(tree, points, wrt, used, dtype, size)
    fixed = [v for v in used if v not in wrt]
    chunk = _chunk_size(tree, len(wrt))
    if mode == "stacked":
        values, gradients, matrices = hessian_stacked(tree, points, wrt, fixed, dtype, size, chunk)
    else:
        values, gradients, matrices = hessian_jacobian(tree, points, wrt, fixed, dtype, size, chunk)
    # Neither says which single entries were unconnected; the rows and columns of variables the expression
    # does not contain are (the inner tape's gradient there is None).
    present = set(used)
    n = len(wrt)
    structural = [(i, j) for i in range(n) for j in range(n) if wrt[i] not in present or wrt[j] not in present]
    return TapeHessians(values, gradients, matrices, structural, mode)


def _chunk_size(tree: Node, n: int) -> int:
    """Points per pass of an all-at-once Hessian: n * points * nodes stays under STACKED_ELEMENTS."""
    nodes = sum(1 for _ in walk(tree))
    return max(1, STACKED_ELEMENTS // (n * max(n, nodes)))

# ---------------------------------------------------------------------------------------------
# derivatives of one variable
# ---------------------------------------------------------------------------------------------
@dataclass
class TapeDerivatives:
    values: np.ndarray  # [P, k] float64: orders 1..k (k < order when the time budget cut it; a note says so)
    structural: list[bool]  # per computed order: unconnected (None) -> 0 and marked, and every higher order too
    values_at: np.ndarray  # [P] the function value


def tape_derivatives(tree: Node, points: Mapping[str, np.ndarray], variable: str, order: int, *,
                     dtype: str = "float64", time_budget: float | None = TAPE_TIME_BUDGET,
                     notes: list[str] | None = None) -> TapeDerivatives:
    """Derivatives 1..order in ``variable`` by nested tapes, at every point.

    Orders are computed one nesting depth at a time; when the next depth would, at the growth seen so far,
    run past ``time_budget`` seconds, the result stops short (the higher orders are left out) and a note
    is appended to ``notes``.
    """
    import numpy as np

    from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

    tf = load_tensorflow()
    tf_dtype = tf.as_dtype(dtype)
    used = variables_of(tree)
    size = batch_size(points, list(dict.fromkeys([variable, *used])))
    f = compile_expression(tree, tf_backend(dtype))
    x = tf.Variable(column(points, variable, dtype, size), name=variable)
    env: dict[str, Any] = {k: tf.constant(column(points, k, dtype, size)) for k in used if k != variable}
    env[variable] = x

    def derivatives(k: int) -> list:
        """[f, f', ..., f^(k)] as tensors (None once unconnected); the tape of level k records levels < k."""
        if k == 0:
            return [tf.convert_to_tensor(f(env), dtype=tf_dtype)]
        with tf.GradientTape() as tape:
            lower = derivatives(k - 1)
        top = lower[-1]
        return lower + [None if top is None else tape.gradient(top, x)]

    def result(found: list) -> TapeDerivatives:
        values = np.zeros((size, len(found) - 1))
        for k, d in enumerate(found[1:]):
            if d is not None:
                values[:, k] = broadcast(d.numpy(), size)
        return TapeDerivatives(values, [d is None for d in found[1:]], broadcast(found[0].numpy(), size))

    start = time.perf_counter()
    found: list = derivatives(0)
    costs: list[float] = []
    for depth in range(1, order + 1):
        if time_budget is not None and costs:
            growth = min(10.0, max(2.0, costs[-1] / costs[-2])) if len(costs) > 1 else 4.0
            expected = costs[-1] * growth
            if time.perf_counter() - start + expected > time_budget:
                if notes is not None:
                    notes.append(f"tape column stops at order {depth - 1}: order {depth} would take about "
                                 f"{expected:.0f} s more (nested tapes re-record every lower order)")
                return result(found)  # orders 1..depth-1 only
        t0 = time.perf_counter()
        found = derivatives(depth)
        costs.append(max(time.perf_counter() - t0, 1e-4))
    return result(found)


__all__ = ["HESSIAN_MODES", "ROWS_MAX", "TAPE_TIME_BUDGET", "TapeDerivatives", "TapeGradients", "TapeHessians",
           "batch_size", "clear_caches", "default_hessian_mode", "tape_derivatives", "tape_gradients",
           "tape_hessians", "variables_of", "vectorised_function"]


# ---------------------------------------------------------------------------------------------
# one point: the single-point commands' view of the same engine
# ---------------------------------------------------------------------------------------------
def tape_gradient(trees: list[Node], values: dict[str, float], wrt: list[str], *, dtype: str = "float64",
                  constants=(), watch=()):
    """Gradients of each tree with one persistent tape, as the TF guide does: a batch of one point for
    :func:`gradcli.methods.tape.tape_gradients`.

    The variables in ``wrt`` are ``tf.Variable``s; the others are ``tf.constant``s the tape does not
    watch. Returns ``(per_tree, unconnected, summed, values)``: ``per_tree[i][name]`` is a float,
    ``unconnected[i]`` the names the tape reported as not connected (``None``; reported here as 0),
    ``summed`` is ``tape.gradient([z1, z2, ...], xs)`` (TF sums several targets), and ``values`` the
    function values. Unwatched ``constants`` (see :func:`tape_gradients`) are ``None`` in ``per_tree`` and
    ``summed``, as TF answers.
    """
    result = tape_gradients(trees, _one_point(values), wrt, dtype=dtype, constants=constants, watch=watch)
    unwatched = set(result.unwatched)
    per_tree = [{name: None if name in unwatched else float(g) for name, g in zip(wrt, grads[0])}
                for grads in result.gradients]
    summed = {name: None if name in unwatched else float(g) for name, g in zip(wrt, result.summed[0])}
    return per_tree, result.unconnected, summed, [float(v[0]) for v in result.values]


def _one_point(values: dict[str, float]) -> dict:
    """A point as a batch of one: name -> float64 array of shape [1]."""
    import numpy as np

    return {name: np.array([v], dtype=np.float64) for name, v in values.items()}
