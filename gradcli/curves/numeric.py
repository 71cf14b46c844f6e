"""The numerical implicit derivatives, both of the level curve F(x, y) = F(x0, y0) through the point (on the
curve F = 0 itself where the point is on it, as the residual check requires):

- the tape: F's gradient and Hessian by nested ``tf.GradientTape`` s, then dy/dx = -F_x/F_y and
  d²y/dx² = -(F_xx + 2 F_xy y' + F_yy y'²)/F_y (the implicit-function formula); orders 1 and 2;
- fd: y(x0 + m h) found by Newton's method from y0 (F_y by a central difference: no tape), then gradcli's
  central stencil of the order (:func:`gradcli.methods.fd_stencils.central_coefficients`) over those y's,
  with an error estimate: the change from step h to 2h (about three times the truncation left at h) plus
  the stencil's sum of |weights| times the rounding of each y.

Both in float64 at the point's float64 coordinates; NumPy and TensorFlow imported when called.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradcli.dtypes import MACHINE_EPSILON
from gradcli.expression.tree import Node

EPS = MACHINE_EPSILON["float64"]
TAPE_ORDERS = 2  # the tape's formulas: from F's gradient and Hessian
NEWTON_STEPS = 60
FD_ACCURACY = 2


@dataclass
class FdDerivative:
    value: float | None
    estimate: float | None
    why: str = ""  # why there is no value


def tape_partials(tree: Node, point: dict[str, float], dependent: str, x: str):
    """(F_x, F_y, F_xx, F_xy, F_yy) at ``point`` by nested tapes (float64)."""
    from gradcli.expression.evaluate import compile_expression
    from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

    tf = load_tensorflow()
    fn = compile_expression(tree, tf_backend("float64"))
    env = {n: tf.Variable(v, dtype=tf.float64) for n, v in point.items()}
    xs, ys = env[x], env[dependent]
    zero = tf.UnconnectedGradients.ZERO
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape() as inner:
            f = fn(env)
        fx, fy = inner.gradient(f, [xs, ys], unconnected_gradients=zero)
    fxx, fxy = outer.gradient(fx, [xs, ys], unconnected_gradients=zero)
    fyy = outer.gradient(fy, ys, unconnected_gradients=zero)
    del outer
    return tuple(float(t.numpy()) for t in (fx, fy, fxx, fxy, fyy))


def tape_derivatives(partials, order: int) -> list[float | None]:
    """dy/dx and d²y/dx² from F's partials; None for the orders above :data:`TAPE_ORDERS`."""
    fx, fy, fxx, fxy, fyy = partials
    with _quiet_floats():
        first = -fx / fy if fy != 0 else math.nan
        second = -(fxx + 2 * fxy * first + fyy * first * first) / fy if fy != 0 else math.nan
    return [first, second][:order] + [None] * max(0, order - TAPE_ORDERS)


class _quiet_floats:
    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        return kind in (ZeroDivisionError, OverflowError)


def fd_derivatives(tree: Node, point: dict[str, float], dependent: str, x: str, order: int,
                   scale: float) -> list[FdDerivative]:
    """Orders 1..``order`` by central stencils over y(x0 + m h) on the level curve; ``scale``: the size of
    F's terms at the point (the rounding of F, which sets how well Newton's y is known)."""
    import numpy as np

    from gradcli.expression.evaluate import compile_expression, numpy_backend
    from gradcli.methods.fd_stencils import central_coefficients

    fn = compile_expression(tree, numpy_backend("float64"))
    x0, y0 = point[x], point[dependent]
    f0 = float(fn(dict(point)))
    out = []
    for k in range(1, order + 1):
        offsets, weights = central_coefficients(k, FD_ACCURACY)
        w = np.array([float(c) for c in weights])
        h = EPS ** (1.0 / (k + 2)) * max(1.0, abs(x0))
        values, rounding = [], 0.0
        for step in (h, 2 * h):
            ts = x0 + np.array(offsets, dtype=np.float64) * step
            ys, fy, ok = _follow(fn, point, dependent, x, ts, y0, f0)
            if not ok:
                out.append(FdDerivative(None, None, "Newton's method did not find the curve at every step of the "
                                                    "stencil (it turns or ends within the step)"))
                break
            values.append(float(np.dot(w, ys)) / step ** k)
            if step == h:  # each y is known to about the rounding of F over |F_y|
                dy = 8 * EPS * (np.abs(ys) + scale / np.maximum(np.abs(fy), np.finfo(float).tiny))
                rounding = float(np.dot(np.abs(w), dy)) / step ** k
        else:
            out.append(FdDerivative(values[0], abs(values[0] - values[1]) + rounding))
    return out


def _follow(fn, point: dict[str, float], dependent: str, x: str, ts, y0: float, f0: float):
    """y at each x in ``ts`` with F(x, y) = F(x0, y0), by Newton's method from y0; (ys, F_y there, converged)."""
    import numpy as np

    env = {n: np.full(len(ts), v) for n, v in point.items()}
    env[x] = ts
    y = np.full(len(ts), y0)
    fy = np.zeros(len(ts))
    with np.errstate(all="ignore"):
        for _ in range(NEWTON_STEPS):
            delta = 1e-6 * np.maximum(1.0, np.abs(y))
            env[dependent] = y + delta
            up = np.asarray(fn(env), dtype=np.float64)
            env[dependent] = y - delta
            down = np.asarray(fn(env), dtype=np.float64)
            env[dependent] = y
            g = np.asarray(fn(env), dtype=np.float64) - f0
            fy = (up - down) / (2 * delta)
            move = g / fy
            y = y - move
            if not np.all(np.isfinite(y)):
                return y, fy, False
            if np.all(np.abs(move) <= 2 * EPS * np.maximum(1.0, np.abs(y))):
                break
        else:
            settled = np.abs(move) <= 1e3 * EPS * np.maximum(1.0, np.abs(y))
            if not np.all(settled):
                return y, fy, False
    far = np.abs(y - y0) > 0.5 * max(1.0, abs(y0))  # another branch of the curve, not this one
    return y, fy, not np.any(far)


def follow_to_curve(fn, point: dict[str, float], dependent: str) -> float | None:
    """The y on F = 0 nearest the point's by Newton's method from it (the other coordinates kept), or None."""
    import numpy as np

    env = {n: np.full(1, v) for n, v in point.items()}
    x = next(n for n in point if n != dependent)
    ys, _, ok = _follow(fn, point, dependent, x, env[x], point[dependent], 0.0)
    return float(ys[0]) if ok and np.isfinite(ys[0]) else None
