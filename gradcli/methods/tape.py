"""TensorFlow ``GradientTape`` for a batch of P points: gradients, Hessians and k-th derivatives, written once.

A single point is a batch of one: :func:`gradcli.tape.tape_gradient`, :func:`gradcli.hessian.tape_hessian`,
:func:`gradcli.derivative.tape_derivatives` and ``descend.hessian_at`` are thin wrappers over this module.

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

TensorFlow (and NumPy) are imported inside the functions only: importing this module stays cheap.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping

from gradcli.evaluate import PYTHON_FLOAT64, compile_expression, evaluate
from gradcli.expr import Add, Call, Mul, Neg, Node, Pow, Var, is_constant, walk

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

# Terms of a sum are vectorised (one gathered term) when at least this many share their form.
MIN_GROUP = 3


# ---------------------------------------------------------------------------------------------
# points
# ---------------------------------------------------------------------------------------------
def variables_of(tree: Node) -> list[str]:
    """The variables ``tree`` contains, in order of first appearance."""
    seen: dict[str, None] = {}
    for node in walk(tree):
        if isinstance(node, Var):
            seen.setdefault(node.name, None)
    return list(seen)


def batch_size(points: Mapping[str, Any], names) -> int:
    """P: the common length of the [P] arrays of ``names`` (of any array in ``points`` if names is empty;
    1 when there is none). Raises ValueError for a missing name or arrays of different shapes."""
    import numpy as np

    shapes = {}
    for name in names:
        if name not in points:
            raise ValueError(f"no values for variable '{name}'")
        shapes[name] = np.shape(points[name])
    if not shapes:
        shapes = {k: np.shape(v) for k, v in points.items()}
    if not shapes:
        return 1
    distinct = set(shapes.values())
    if len(distinct) != 1 or len(next(iter(distinct))) != 1:
        raise ValueError(f"points must be arrays of one shape [P]; got {shapes}")
    return next(iter(distinct))[0]


def _column(points: Mapping[str, Any], name: str, dtype: str, size: int):
    """The [P] values of ``name`` in ``dtype`` (numpy rounds float64 to float32 to nearest, as TF does)."""
    import numpy as np

    values = np.asarray(points[name], dtype=np.float64).reshape(-1)
    if values.shape[0] != size:
        raise ValueError(f"variable '{name}' has {values.shape[0]} values, expected {size}")
    return values.astype(dtype)


def _broadcast(values, size: int):
    """A [P] float64 array from a tensor's values (a constant expression gives a scalar)."""
    import numpy as np

    return np.broadcast_to(np.asarray(values, dtype=np.float64), (size,)).copy()


# ---------------------------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------------------------
@dataclass
class TapeGradients:
    values: np.ndarray  # [T, P] float64: each target's value at each point
    gradients: np.ndarray  # [T, P, n] float64 (0 where unconnected)
    unconnected: list[list[str]]  # per target: wrt names the tape reported None for (same at every point)
    summed: np.ndarray  # [P, n]: tape.gradient([z1, z2, ...], xs) (TF sums several targets)


def tape_gradients(trees: list[Node], points: Mapping[str, np.ndarray], wrt: list[str], *,
                   dtype: str = "float64") -> TapeGradients:
    """Gradients of each tree at every point with one persistent tape, as the TF guide does.

    The variables in ``wrt`` are ``tf.Variable``s of shape [P]; the others ``tf.constant``s the tape does not
    watch. A gradient the tape reports as not connected (``None``) is 0 here and its name is listed in
    ``unconnected``; that is a property of the expression, the same at every point.
    """
    import numpy as np

    from gradcli.tape import load_tensorflow, tf_backend

    tf = load_tensorflow()
    backend = tf_backend(dtype)
    used = list(dict.fromkeys(v for t in trees for v in variables_of(t)))
    size = batch_size(points, list(dict.fromkeys([*wrt, *used])))
    env: dict[str, Any] = {name: tf.constant(_column(points, name, dtype, size))
                           for name in used if name not in wrt}
    variables = [tf.Variable(_column(points, name, dtype, size), name=name) for name in wrt]
    env.update(zip(wrt, variables))
    fns = [compile_expression(t, backend) for t in trees]
    with tf.GradientTape(persistent=True) as tape:
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
        unconnected.append([name for name, g in zip(wrt, grads) if g is None])
    summed = np.zeros((size, n))
    if targets and variables:
        summed_grads = tape.gradient(targets, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        for j, g in enumerate(summed_grads):
            summed[:, j] = np.asarray(g.numpy(), dtype=np.float64)
    del tape
    values = np.array([_broadcast(z.numpy(), size) for z in targets]).reshape(len(trees), size)
    return TapeGradients(values, gradients, unconnected, summed)


# ---------------------------------------------------------------------------------------------
# Hessians
# ---------------------------------------------------------------------------------------------
@dataclass
class TapeHessians:
    values: np.ndarray  # [P]
    gradients: np.ndarray  # [P, n]
    matrices: np.ndarray  # [P, n, n]
    structural: list[tuple[int, int]]  # (row, column) entries the tape reported unconnected: structural zeros
    mode: str  # "rows" | "stacked" | "jacobian" (see the module's docstring)


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
        return _hessian_rows(tree, points, wrt, used, dtype, size)
    fixed = [v for v in used if v not in wrt]
    if mode == "stacked":
        values, gradients, matrices = _hessian_stacked(tree, points, wrt, fixed, dtype, size)
    else:
        values, gradients, matrices = _hessian_jacobian(tree, points, wrt, fixed, dtype, size)
    # Neither says which single entries were unconnected; the rows and columns of variables the expression
    # does not contain are (the inner tape's gradient there is None).
    present = set(used)
    n = len(wrt)
    structural = [(i, j) for i in range(n) for j in range(n) if wrt[i] not in present or wrt[j] not in present]
    return TapeHessians(values, gradients, matrices, structural, mode)


def _hessian_rows(tree, points, wrt, used, dtype, size) -> TapeHessians:
    """The guide's loop, on [P] tensors: one outer gradient per row; None where an entry is unconnected."""
    import numpy as np

    from gradcli.tape import load_tensorflow, tf_backend

    tf = load_tensorflow()
    f = compile_expression(tree, tf_backend(dtype))
    env: dict[str, Any] = {k: tf.constant(_column(points, k, dtype, size)) for k in used if k not in wrt}
    xs = [tf.Variable(_column(points, k, dtype, size), name=k) for k in wrt]
    env.update(zip(wrt, xs))
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape() as inner:
            z = tf.convert_to_tensor(f(env), dtype=tf.as_dtype(dtype))
        grads = inner.gradient(z, xs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    # The guide's loop: None where a gradient entry does not depend on a variable at all.
    rows = [outer.gradient(g, xs) for g in grads]
    del outer
    n = len(wrt)
    structural = [(i, j) for i, row in enumerate(rows) for j, h in enumerate(row) if h is None]
    matrices = np.zeros((size, n, n))
    for i, row in enumerate(rows):
        for j, h in enumerate(row):
            if h is not None:
                matrices[:, i, j] = np.asarray(h.numpy(), dtype=np.float64)
    gradients = np.zeros((size, n))
    for j, g in enumerate(grads):
        gradients[:, j] = np.asarray(g.numpy(), dtype=np.float64)
    return TapeHessians(_broadcast(z.numpy(), size), gradients, matrices, structural, "rows")


def _matrix_inputs(points, wrt, fixed, dtype, size):
    """[P, n] values of the variables differentiated, [P, m] of those held fixed (numpy, in dtype)."""
    import numpy as np

    x = np.stack([_column(points, k, dtype, size) for k in wrt], axis=-1)
    c = (np.stack([_column(points, k, dtype, size) for k in fixed], axis=-1) if fixed
         else np.zeros((size, 0), dtype=dtype))
    return x, c


def _hessian_stacked(tree, points, wrt, fixed, dtype, size):
    """All rows from one outer gradient over n stacked copies of each point (see the module's docstring)."""
    import numpy as np

    from gradcli.tape import load_tensorflow

    tf = load_tensorflow()
    tf_dtype = tf.as_dtype(dtype)
    f = vectorised_function(tree, [*wrt, *fixed], dtype)
    n = len(wrt)
    x, c = _matrix_inputs(points, wrt, fixed, dtype, size)
    eye = tf.eye(n, dtype=tf_dtype)[:, None, :]
    chunk = _chunk_size(tree, n)
    values, gradients, matrices = [], [], []
    for start in range(0, size, chunk):
        p = min(chunk, size - start)
        copies = tf.tile(tf.constant(x[start:start + p])[None], [n, 1, 1])  # [copy k, point, variable]
        held = tf.tile(tf.constant(c[start:start + p])[None], [n, 1, 1])
        with tf.GradientTape() as outer:
            outer.watch(copies)
            with tf.GradientTape() as inner:
                inner.watch(copies)
                z = f(tf.concat([copies, held], axis=-1) if fixed else copies)
                z = tf.broadcast_to(z, [n, p])  # a constant expression gives a scalar
                total = tf.reduce_sum(z)
            g = tf.convert_to_tensor(
                inner.gradient(total, copies, unconnected_gradients=tf.UnconnectedGradients.ZERO))
            # copy k keeps gradient component k: its derivative there is row k of the Hessian
            picked = tf.reduce_sum(g * eye)
        h = tf.convert_to_tensor(outer.gradient(picked, copies, unconnected_gradients=tf.UnconnectedGradients.ZERO))
        values.append(np.asarray(z[0].numpy(), dtype=np.float64))
        gradients.append(np.asarray(g[0].numpy(), dtype=np.float64))
        matrices.append(np.transpose(np.asarray(h.numpy(), dtype=np.float64), (1, 0, 2)))  # [point, row, col]
    return np.concatenate(values), np.concatenate(gradients), np.concatenate(matrices)


def _chunk_size(tree: Node, n: int) -> int:
    """Points per pass of an all-at-once Hessian: n * points * nodes stays under STACKED_ELEMENTS."""
    nodes = sum(1 for _ in walk(tree))
    return max(1, STACKED_ELEMENTS // (n * max(n, nodes)))


def _hessian_jacobian(tree, points, wrt, fixed, dtype, size):
    """``outer.jacobian`` of the inner gradient in a traced function reused across calls and chunks."""
    import numpy as np

    from gradcli.tape import load_tensorflow

    tf = load_tensorflow()
    fn = _jacobian_function(tree, tuple(wrt), tuple(fixed), dtype)
    x, c = _matrix_inputs(points, wrt, fixed, dtype, size)
    chunk = _chunk_size(tree, len(wrt))
    values, gradients, matrices = [], [], []
    for start in range(0, size, chunk):
        z, g, h = fn(tf.constant(x[start:start + chunk]), tf.constant(c[start:start + chunk]))
        values.append(np.asarray(z.numpy(), dtype=np.float64))
        gradients.append(np.asarray(g.numpy(), dtype=np.float64))
        matrices.append(np.asarray(h.numpy(), dtype=np.float64))
    return np.concatenate(values), np.concatenate(gradients), np.concatenate(matrices)


_CACHE_SIZE = 32
_JACOBIAN_FUNCTIONS: OrderedDict = OrderedDict()
_VECTORISED: OrderedDict = OrderedDict()


def _cached(cache: OrderedDict, key, make):
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = cache[key] = make()
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)
    return value


def clear_caches() -> None:
    """Forget the traced functions and compiled expressions (benchmarks time a cold start with this)."""
    _JACOBIAN_FUNCTIONS.clear()
    _VECTORISED.clear()


def _jacobian_function(tree: Node, wrt: tuple[str, ...], fixed: tuple[str, ...], dtype: str):
    def make():
        from gradcli.tape import load_tensorflow

        tf = load_tensorflow()
        f = vectorised_function(tree, [*wrt, *fixed], dtype)
        zero = tf.UnconnectedGradients.ZERO

        # Traced for the first batch size seen; reduce_retracing makes the second size seen trace once more
        # with a free batch dimension, reused for every size after it. (A free batch dimension from the start,
        # input_signature=[TensorSpec([None, n])], traces 1.5-2.5x slower: a single point would pay for it.)
        @tf.function(reduce_retracing=True)
        def nested(x, c):
            with tf.GradientTape() as outer:
                outer.watch(x)
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    z = tf.broadcast_to(f(tf.concat([x, c], axis=-1)), tf.shape(x)[:1])
                    total = tf.reduce_sum(z)
                g = tf.convert_to_tensor(inner.gradient(total, x, unconnected_gradients=zero))
                # points do not mix: d(sum over points of g_i)/dx[p, j] is H_ij at point p, so one
                # jacobian of an [n] vector covers every point (batch_jacobian traces ~1.5x slower)
                summed = tf.reduce_sum(g, axis=0)
            h = outer.jacobian(summed, x, unconnected_gradients=zero)  # [row i, point p, column j]
            return z, g, tf.transpose(h, [1, 0, 2])

        return nested

    return _cached(_JACOBIAN_FUNCTIONS, (tree, wrt, fixed, dtype), make)


# ---------------------------------------------------------------------------------------------
# the expression on one tensor of all variables, alike terms of a sum vectorised
# ---------------------------------------------------------------------------------------------
# Names no parsed variable can have (identifiers never hold a NUL): sums of alike terms, and slots.
_GROUP = "\0group"
_SLOT = "\0slot"


class _LazyEnv(dict):
    """Variable name -> tensor, each made on first use (one slice or one gathered group per name)."""

    def __init__(self, make: Callable[[str], Any]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, key: str):
        value = self[key] = self._make(key)
        return value


def _signature(node: Node, slots: dict[str, int]):
    """The form of ``node`` with its variables numbered by first appearance (constants by their value):
    two terms with the same signature differ only in which variables they use."""
    if is_constant(node):
        return ("c", float.hex(float(evaluate(node, {}, PYTHON_FLOAT64))))
    if isinstance(node, Var):
        return ("v", slots.setdefault(node.name, len(slots)))
    if isinstance(node, Neg):
        return ("neg", _signature(node.operand, slots))
    if isinstance(node, Add):
        return ("add", tuple((s, _signature(t, slots)) for s, t in node.terms))
    if isinstance(node, Mul):
        return ("mul", tuple((d, _signature(f, slots)) for d, f in node.factors))
    if isinstance(node, Pow):
        return ("pow", _signature(node.base, slots), _signature(node.exponent, slots))
    if isinstance(node, Call):
        return ("call", node.func, tuple(_signature(a, slots) for a in node.args))
    raise TypeError(node)


def _rename(node: Node, names: dict[str, str]) -> Node:
    if isinstance(node, Var):
        return Var(names[node.name])
    return _map_children(node, lambda child: _rename(child, names))


def _map_children(node: Node, fn) -> Node:
    if isinstance(node, Neg):
        return replace(node, operand=fn(node.operand))
    if isinstance(node, Add):
        return replace(node, terms=tuple((s, fn(t)) for s, t in node.terms))
    if isinstance(node, Mul):
        return replace(node, factors=tuple((d, fn(f)) for d, f in node.factors))
    if isinstance(node, Pow):
        return replace(node, base=fn(node.base), exponent=fn(node.exponent))
    if isinstance(node, Call):
        return replace(node, args=tuple(fn(a) for a in node.args))
    return node


def _group_terms(node: Node, groups: list[tuple[Node, list[list[str]]]]) -> Node:
    """``node`` with each set of at least MIN_GROUP alike terms of a sum replaced by one variable named
    ``_GROUP + i``; ``groups[i]`` is (template over slot variables, per slot the members' variable names)."""
    if is_constant(node) or isinstance(node, Var):
        return node
    if not isinstance(node, Add):
        return _map_children(node, lambda child: _group_terms(child, groups))
    keyed = []
    members: dict[Any, list[int]] = {}
    for i, (sign, term) in enumerate(node.terms):
        if is_constant(term):
            keyed.append((None, None))
            continue
        slots: dict[str, int] = {}
        key = (sign, _signature(term, slots))
        keyed.append((key, slots))
        members.setdefault(key, []).append(i)
    terms = []
    for i, (sign, term) in enumerate(node.terms):
        key, slots = keyed[i]
        alike = members.get(key, []) if key is not None else []
        if len(alike) < MIN_GROUP:
            terms.append((sign, _group_terms(term, groups)))
        elif alike[0] == i:  # the whole group stands where its first member stood (so the first sign stays +)
            template = _rename(term, {name: f"{_SLOT}{k}" for name, k in slots.items()})
            columns: list[list[str]] = [[] for _ in slots]
            for m in alike:
                member_slots: dict[str, int] = {}
                _signature(node.terms[m][1], member_slots)
                for name, k in member_slots.items():
                    columns[k].append(name)
            terms.append((sign, Var(f"{_GROUP}{len(groups)}")))
            groups.append((template, columns))
    if len(terms) == 1 and terms[0][0] > 0:
        return terms[0][1]
    return replace(node, terms=tuple(terms))


def vectorised_function(tree: Node, columns: list[str], dtype: str) -> Callable[[Any], Any]:
    """``f(V)``: ``tree`` evaluated on a tensor V of shape [..., len(columns)] whose last axis holds the
    variables in the order of ``columns``; the result has V's leading shape (a scalar if ``tree`` is constant).

    The terms of a sum that share a form (MIN_GROUP or more) become one term over gathered columns, summed
    with ``reduce_sum``: same values up to the order of the additions. Cached per (tree, columns, dtype).
    """
    def make():
        from gradcli.tape import load_tensorflow, tf_backend

        tf = load_tensorflow()
        backend = tf_backend(dtype)
        index = {name: i for i, name in enumerate(columns)}
        groups: list[tuple[Node, list[list[str]]]] = []
        outer = compile_expression(_group_terms(tree, groups), backend)
        compiled = []
        for template, slot_names in groups:
            indices = [tf.constant([index[name] for name in names], dtype=tf.int32) for names in slot_names]
            compiled.append((compile_expression(template, backend), indices))

        def f(v):
            columns_of_v: list = []

            def make_entry(name: str):
                if name.startswith(_GROUP):
                    fn, indices = compiled[int(name[len(_GROUP):])]
                    gathered = {f"{_SLOT}{k}": tf.gather(v, idx, axis=-1) for k, idx in enumerate(indices)}
                    r = fn(gathered)
                    first = gathered[f"{_SLOT}0"]
                    if r.shape.rank != first.shape.rank:
                        r = tf.broadcast_to(r, tf.shape(first))
                    return tf.reduce_sum(r, axis=-1)
                if not columns_of_v:  # one op for every single variable (cheaper than a slice each)
                    columns_of_v.extend(tf.unstack(v, num=len(columns), axis=-1))
                return columns_of_v[index[name]]

            return outer(_LazyEnv(make_entry))

        return f

    return _cached(_VECTORISED, (tree, tuple(columns), dtype), make)


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

    from gradcli.tape import load_tensorflow, tf_backend

    tf = load_tensorflow()
    tf_dtype = tf.as_dtype(dtype)
    used = variables_of(tree)
    size = batch_size(points, list(dict.fromkeys([variable, *used])))
    f = compile_expression(tree, tf_backend(dtype))
    x = tf.Variable(_column(points, variable, dtype, size), name=variable)
    env: dict[str, Any] = {k: tf.constant(_column(points, k, dtype, size)) for k in used if k != variable}
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
                values[:, k] = _broadcast(d.numpy(), size)
        return TapeDerivatives(values, [d is None for d in found[1:]], _broadcast(found[0].numpy(), size))

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
