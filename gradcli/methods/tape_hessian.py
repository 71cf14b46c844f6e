"""The Hessian modes of :func:`gradcli.methods.tape.tape_hessians` on a batch of P points: ``rows`` (the TF
guide's nested tapes, one outer gradient per row), ``stacked`` (all rows from one outer gradient over n
stacked copies of each point) and ``jacobian`` (pfor, in a ``tf.function`` cached per expression). The
module docstring of :mod:`gradcli.methods.tape` says how they work and what each costs.

TensorFlow (and NumPy) are imported inside the functions only: importing this module stays cheap.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gradcli.expression.evaluate import compile_expression
from gradcli.expression import Node
from gradcli.methods.tape_points import broadcast, column
from gradcli.methods.tape_vectorise import VECTORISED, cached, vectorised_function

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


@dataclass
class TapeHessians:
    values: np.ndarray  # [P]
    gradients: np.ndarray  # [P, n]
    matrices: np.ndarray  # [P, n, n]
    structural: list[tuple[int, int]]  # (row, column) entries the tape reported unconnected: structural zeros
    mode: str  # "rows" | "stacked" | "jacobian" (see gradcli.methods.tape's docstring)


def hessian_rows(tree, points, wrt, used, dtype, size) -> TapeHessians:
    """The guide's loop, on [P] tensors: one outer gradient per row; None where an entry is unconnected."""
    import numpy as np

    from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

    tf = load_tensorflow()
    f = compile_expression(tree, tf_backend(dtype))
    env: dict[str, Any] = {k: tf.constant(column(points, k, dtype, size)) for k in used if k not in wrt}
    xs = [tf.Variable(column(points, k, dtype, size), name=k) for k in wrt]
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
    return TapeHessians(broadcast(z.numpy(), size), gradients, matrices, structural, "rows")


def _matrix_inputs(points, wrt, fixed, dtype, size):
    """[P, n] values of the variables differentiated, [P, m] of those held fixed (numpy, in dtype)."""
    import numpy as np

    x = np.stack([column(points, k, dtype, size) for k in wrt], axis=-1)
    c = (np.stack([column(points, k, dtype, size) for k in fixed], axis=-1) if fixed
         else np.zeros((size, 0), dtype=dtype))
    return x, c


def hessian_stacked(tree, points, wrt, fixed, dtype, size, chunk):
    """All rows from one outer gradient over n stacked copies of each point, ``chunk`` points per pass
    (see gradcli.methods.tape's docstring)."""
    import numpy as np

    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()
    tf_dtype = tf.as_dtype(dtype)
    f = vectorised_function(tree, [*wrt, *fixed], dtype)
    n = len(wrt)
    x, c = _matrix_inputs(points, wrt, fixed, dtype, size)
    eye = tf.eye(n, dtype=tf_dtype)[:, None, :]
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


def hessian_jacobian(tree, points, wrt, fixed, dtype, size, chunk):
    """``outer.jacobian`` of the inner gradient in a traced function reused across calls and chunks of
    ``chunk`` points."""
    import numpy as np

    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()
    fn = jacobian_function(tree, tuple(wrt), tuple(fixed), dtype)
    x, c = _matrix_inputs(points, wrt, fixed, dtype, size)
    values, gradients, matrices = [], [], []
    for start in range(0, size, chunk):
        z, g, h = fn(tf.constant(x[start:start + chunk]), tf.constant(c[start:start + chunk]))
        values.append(np.asarray(z.numpy(), dtype=np.float64))
        gradients.append(np.asarray(g.numpy(), dtype=np.float64))
        matrices.append(np.asarray(h.numpy(), dtype=np.float64))
    return np.concatenate(values), np.concatenate(gradients), np.concatenate(matrices)


_JACOBIAN_FUNCTIONS: OrderedDict = OrderedDict()


def clear_caches() -> None:
    """Forget the traced functions and compiled expressions (benchmarks time a cold start with this)."""
    _JACOBIAN_FUNCTIONS.clear()
    VECTORISED.clear()


def jacobian_function(tree: Node, wrt: tuple[str, ...], fixed: tuple[str, ...], dtype: str):
    """The traced function of the jacobian mode: (x [P, n], c [P, m]) -> values, gradients, Hessians."""
    def make():
        from gradcli.methods.tf_runtime import load_tensorflow

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

    return cached(_JACOBIAN_FUNCTIONS, (tree, wrt, fixed, dtype), make)
