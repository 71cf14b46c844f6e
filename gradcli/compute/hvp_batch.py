"""``hvp`` at many points, a chunk of points at a time: the tape compositions and fd of the tape gradient on
one tensor of shape [points, variables], so that a chunk costs the eager TensorFlow calls one point costs.

The points of a chunk are independent: the vectorised function (:func:`gradcli.methods.tape_vectorise.
vectorised_function`) maps each row to its own value, the tapes differentiate the sum of those values, and
row p of each gradient is point p's gradient; with the direction v on every row, row p of each H·v is point
p's. A chunk is padded to whole SIMD lanes (:data:`PAD`), so a point's numbers do not depend on where it
sits in its chunk: the one-point command (a chunk of one) shows what --points writes for it, bit for bit.

TensorFlow and NumPy are imported inside the functions only.
"""

from __future__ import annotations

import math
import time

from gradcli.dtypes import MACHINE_EPSILON

# A chunk's rows are padded (with copies of its last point) to a multiple of PAD: TensorFlow's CPU kernels
# compute SIMD lanes and a scalar tail differently (exp, log, tanh differ by an ulp), and with every
# tensor's length a multiple of the widest lane count (16 float32 in AVX-512) each point goes through the
# lanes, wherever it sits in its chunk and however many points the chunk holds.
PAD = 16
# A chunk holds at most this many numbers (points × variables), and at most MAX_CHUNK points: each method's
# tensors of a chunk stay a few MiB however many variables there are.
CHUNK_NUMBERS = 1 << 18
MAX_CHUNK = 512


def chunk_size(n_variables: int) -> int:
    return max(PAD, min(MAX_CHUNK, CHUNK_NUMBERS // max(1, n_variables)) // PAD * PAD)


def fd_step(x: list[float], v: list[float], dtype: str) -> float:
    """fd's step along v at x: the cube root of epsilon, scaled by the largest coordinate v moves, a power
    of two (so that h * v is exact) -- the one-point code's step."""
    big = max(abs(b) for b in v) if v else 0.0
    if not big:
        return 1.0
    moved = [abs(a) for a, b in zip(x, v) if b != 0]
    h = MACHINE_EPSILON[dtype] ** (1 / 3) * max([1.0] + moved) / big
    return 2.0 ** round(math.log2(h))


def tape_hvps_batch(f, X, v, dtype: str, methods: list[str]):
    """({method: (H·v as float64 array [points, variables], seconds for the chunk)}, fd) for the rows of X
    (float64 [points, variables]) along v; fd: (estimate [points, variables], steps [points]) where fd is
    asked, else None. ``f``: the vectorised function of the expression over the variables' columns."""
    import numpy as np

    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()
    tf_dtype = tf.as_dtype(dtype)
    zero = tf.UnconnectedGradients.ZERO
    X = np.asarray(X, dtype=np.float64)
    xt = X.astype(dtype)
    vd = np.broadcast_to(np.asarray(v, dtype=dtype), X.shape).copy()
    V = tf.Variable(xt, dtype=tf_dtype)
    vt = tf.constant(vd, dtype=tf_dtype)
    out: dict[str, tuple] = {}

    def total(z):
        # the sum over the rows: its gradient's row p is point p's gradient (the rows do not meet)
        return tf.reduce_sum(tf.convert_to_tensor(z, dtype=tf_dtype))

    def forward_over_reverse():
        with tf.autodiff.ForwardAccumulator(primals=V, tangents=vt) as acc:
            with tf.GradientTape() as tape:
                z = total(f(V))
            g = tape.gradient(z, V, unconnected_gradients=zero)
        return acc.jvp(g, unconnected_gradients=zero)

    def reverse_over_reverse():
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                z = total(f(V))
            g = inner.gradient(z, V, unconnected_gradients=zero)
            gv = tf.reduce_sum(g * vt)
        return outer.gradient(gv, V, unconnected_gradients=zero)

    def reverse_over_forward():
        with tf.GradientTape() as tape:
            with tf.autodiff.ForwardAccumulator(primals=V, tangents=vt) as acc:
                z = total(f(V))
            jv = acc.jvp(z, unconnected_gradients=zero)
        return tape.gradient(jv, V, unconnected_gradients=zero)

    runs = {"forward-over-reverse": forward_over_reverse, "reverse-over-reverse": reverse_over_reverse,
            "reverse-over-forward": reverse_over_forward}
    for m in methods:
        if m in runs:
            start = time.perf_counter()
            result = runs[m]().numpy()
            out[m] = (np.asarray(result, dtype=np.float64), time.perf_counter() - start)
    fd = None
    if "fd-of-gradient" in methods:
        start = time.perf_counter()

        def gradient(at):
            xs = tf.constant(at, dtype=tf_dtype)
            with tf.GradientTape() as tape:
                tape.watch(xs)
                z = total(f(xs))
            return tape.gradient(z, xs, unconnected_gradients=zero).numpy().astype(np.float64)

        steps = np.array([fd_step(row.tolist(), list(v), dtype) for row in X], dtype=np.float64)
        h = steps[:, None]
        t = np.dtype(dtype).type

        def central(step):
            plus, minus = gradient(xt + step.astype(t) * vd), gradient(xt - step.astype(t) * vd)
            return (plus - minus) / (2 * step), np.maximum(np.abs(plus), np.abs(minus))

        with np.errstate(all="ignore"):
            d1, size = central(h)
            d2, _ = central(2 * h)
            estimate = np.abs(d1 - d2) / 3 + 4 * MACHINE_EPSILON[dtype] * size / h
        out["fd-of-gradient"] = (d1, time.perf_counter() - start)
        fd = (estimate, steps)
    return out, fd
