"""The compiled loop for many starts: one optimizer's batched descent, every start a row.

Each optimizer gets one compiled chunk function, traced once and reused for every batch of starts,
over one ``tf.Variable`` of shape [P] per variable (P starts): the single-start loop's graph
(:mod:`gradcli.compute.descend.loop`) with a batch dimension. A step evaluates f at every row, takes the
gradient of ``tf.reduce_sum(f(X))`` (row i of it is start i's gradient: the rows never mix) and applies
the single-start stopping rules (:func:`gradcli.compute.descend.loop.stop_status`) to every row. A row
that stops keeps its status and its point: the update still runs on all rows (the hand-written
``x.assign_sub(lr * dz_dx)`` or Keras' ``apply_gradients``, both elementwise) and the stopped rows are put
back with a ``tf.where`` mask. The loop ends when no row is running or when ``--steps`` is reached.
Keeping the single-start graph's shape (a variable per name, not one [P, n] variable) matters:
TensorFlow's graph rewrites sum a gradient's terms in an order of their choosing, and a different graph
gets a different order. So in float64 an elementwise expression (sums, products, powers) gives every
start the same final point and step count as a run from that start alone; with transcendental functions
the vectorised kernels may differ from the scalar ones in the last bit.

Bounded work per compiled call: a call runs at most ``CHUNK_WORK / P`` steps (between
``MIN_CHUNK_STEPS`` and ``MAX_CHUNK_STEPS``), so Ctrl-C is honoured between calls whatever ``--steps``
says. No trajectory is recorded; each row keeps its last ``WINDOW`` evaluations for the post-mortem of
a start that used up its steps (oscillating, unbounded), as one run does.

No typer or rich here; TensorFlow and NumPy are imported when a runner is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gradcli.compute.descend.loop import _RetryWithoutXLA, stop_status
from gradcli.compute.descend.optimizers import make_optimizer
from gradcli.compute.descend.rules import CONVERGED, PAUSED, RUNNING, VALUE_BOUND, WINDOW
from gradcli.expression.evaluate import compile_expression

# Start-steps one compiled call may run (P starts x steps): a bound on the time between two
# chances to honour Ctrl-C.
CHUNK_WORK = 2_000_000
MIN_CHUNK_STEPS = 100
MAX_CHUNK_STEPS = 10_000


@dataclass
class BatchRows:
    """What one optimizer's batched loop leaves for each row (NumPy arrays, padding rows included)."""

    codes: Any      # [P] int: the loop's final status code
    steps: Any      # [P] int: updates made
    final: Any      # [P, n]: where each row stopped
    value: Any      # [P]: f there (not -f, with --maximize)
    gnorm: Any      # [P]
    window: Any     # [WINDOW, P, n + 2]: the last evaluations, row k % WINDOW the newest
    compiled: str


class BatchRunner:
    """One optimizer's variables and compiled chunk for batches of ``size`` starts (one trace for all batches)."""

    def __init__(self, tree, names: list[str], size: int, *, optimizer: str, lr: float, momentum: float,
                 dtype: str, tol: float, maximize: bool, max_steps: int, jit: bool):
        from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

        tf = self.tf = load_tensorflow()
        self.names = names
        self.size = size
        tdt = self.tdt = tf.as_dtype(dtype)
        n = len(names)
        self.fn = compile_expression(tree, tf_backend(dtype))
        # One variable of shape [P] per name, used exactly as one run uses its scalar variables: the same
        # graph with a batch dimension, so that TensorFlow's graph rewrites (which sum the gradient's
        # terms in an order of their choosing) treat both alike.
        self.variables = [tf.Variable(tf.zeros([size], tdt), name=v) for v in names]
        self.env = dict(zip(names, self.variables))
        self.optimizer = None if optimizer == "manual" else make_optimizer(optimizer, lr, momentum, dtype)
        self._fresh: list = []
        if self.optimizer is not None:
            self.optimizer.build(self.variables)  # slots exist before tracing: no variables created in the loop
            self._fresh = [(v, v.numpy()) for v in self.optimizer.variables]  # its state before any step
        self.lo = tf.Variable(tf.zeros([size], tdt), trainable=False)
        self.hi = tf.Variable(tf.zeros([size], tdt), trainable=False)
        self.window = tf.Variable(tf.fill([WINDOW, size, n + 2], tf.constant(math.nan, tdt)), trainable=False)
        self.tol = tf.constant(tol, tdt)
        self.lr = tf.constant(lr, tdt)
        self.sign = tf.constant(-1.0 if maximize else 1.0, tdt)
        self.max_steps = tf.constant(max_steps, tf.int64)
        self.max_steps_int = max_steps
        self.stall_on = tf.constant(tol > 0)
        self.jit = jit
        self._chunk = tf.function(self.chunk, jit_compile=jit)
        self._fallback = tf.function(self.chunk, jit_compile=False)
        self.chunk_steps = max(MIN_CHUNK_STEPS, min(MAX_CHUNK_STEPS, CHUNK_WORK // size))

    # ---- inside the compiled loop ------------------------------------------------------------
    def iteration(self, k, k_end, status, stall, moved, steps, last_value, last_gnorm):
        """One step for every row: evaluate, decide per row, remember, update the rows still running."""
        tf = self.tf
        x = self.point()
        with tf.GradientTape() as tape:
            z = self.sign * tf.convert_to_tensor(self.fn(self.env), dtype=self.tdt)
            total = tf.reduce_sum(z)  # row i of its gradient is start i's gradient: rows do not mix
        grads = tape.gradient(total, self.variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        g = tf.stack(grads, axis=1)
        gnorm = tf.norm(g, axis=1)
        decided = stop_status(tf, x, z, g, gnorm, k, k_end, stall, moved, lo=self.lo, hi=self.hi, tol=self.tol,
                              stall_on=self.stall_on, max_steps=self.max_steps, tdt=self.tdt, axis=1)
        active = tf.equal(status, RUNNING)  # rows that had not stopped before this step
        status = tf.where(active, decided, status)
        value = self.sign * z
        last_value = tf.where(active, value, last_value)
        last_gnorm = tf.where(active, gnorm, last_gnorm)
        slot = k % WINDOW
        values = tf.concat([x, value[:, None], gnorm[:, None]], 1)
        self.window.scatter_nd_update([[slot]], [tf.where(active[:, None], values, self.window[slot])])
        stopped_now = tf.logical_and(active, tf.logical_and(tf.not_equal(status, RUNNING),
                                                            tf.not_equal(status, PAUSED)))
        steps = tf.where(stopped_now, k, steps)
        running = tf.equal(status, RUNNING)

        def step():
            if self.optimizer is None:
                for var, grad in zip(self.variables, grads):
                    var.assign_sub(self.lr * grad)  # the guide's x.assign_sub(learning_rate * dz_dx), every row
            else:
                self.optimizer.apply_gradients(zip(grads, self.variables))
            for i, var in enumerate(self.variables):  # stopped rows stay where they stopped
                var.assign(tf.where(running, var, x[:, i]))
            new = self.point()
            same = tf.reduce_all(tf.equal(new, x), axis=1)
            new_stall = tf.where(running, tf.where(same, stall + 1, tf.zeros_like(stall)), stall)
            new_moved = tf.where(running, tf.logical_or(moved, tf.logical_not(same)), moved)
            return k + 1, new_stall, new_moved

        k, stall, moved = tf.cond(tf.reduce_any(running), step, lambda: (k, stall, moved))
        return k, status, stall, moved, steps, last_value, last_gnorm

    def point(self):
        """[P, n]: every row's point."""
        return self.tf.stack([self.tf.convert_to_tensor(v) for v in self.variables], axis=1)

    def chunk(self, k, k_end, status, stall, moved, steps, last_value, last_gnorm):
        """Steps from ``k`` until no row runs or ``k_end`` is reached (running rows are then PAUSED)."""
        tf = self.tf

        def cond(k, status, *rest):
            return tf.reduce_any(tf.equal(status, RUNNING))

        def body(k, status, stall, moved, steps, last_value, last_gnorm):
            return self.iteration(k, k_end, status, stall, moved, steps, last_value, last_gnorm)

        return tf.while_loop(cond, body, [k, status, stall, moved, steps, last_value, last_gnorm])

    # ---- from Python ------------------------------------------------------------------------------
    def load(self, starts, f0) -> None:
        """New starts ([size, n], in the run's dtype) and f at them (float64, minimised sign): fresh state."""
        import numpy as np

        tf = self.tf
        for i, var in enumerate(self.variables):
            var.assign(starts[:, i])
        finite = np.isfinite(f0)
        scale = np.where(finite, np.maximum(1.0, np.abs(f0)), 1.0)
        with np.errstate(invalid="ignore", over="ignore"):
            self.hi.assign(tf.constant(np.where(finite, f0 + VALUE_BOUND * scale, math.inf), self.tdt))
            self.lo.assign(tf.constant(np.where(finite, f0 - VALUE_BOUND * scale, -math.inf), self.tdt))
        self.window.assign(tf.fill(self.window.shape, tf.constant(math.nan, self.tdt)))
        for variable, value in self._fresh:
            variable.assign(value)

    def run(self, starts, f0, rows: int) -> BatchRows:
        """Descend from every row of ``starts``; rows from ``rows`` on are padding (stopped from the start)."""
        import numpy as np

        tf = self.tf
        self.load(starts, f0)
        status = np.full(self.size, RUNNING, np.int32)
        status[rows:] = CONVERGED  # padding: frozen, never reported
        stall = np.zeros(self.size, np.int64)
        moved = np.zeros(self.size, bool)
        steps = np.zeros(self.size, np.int64)
        nan = np.full(self.size, math.nan, self.tdt.as_numpy_dtype)
        last_value, last_gnorm = nan, nan.copy()
        k = 0
        while True:
            k_end = min(k + self.chunk_steps, self.max_steps_int)
            args = (tf.constant(k, tf.int64), tf.constant(k_end, tf.int64), tf.constant(status),
                    tf.constant(stall), tf.constant(moved), tf.constant(steps), tf.constant(last_value),
                    tf.constant(last_gnorm))
            if self.jit:
                try:
                    out = self._chunk(*args)
                except tf.errors.OpError:
                    raise _RetryWithoutXLA from None
            else:
                out = self._fallback(*args)
            k_t, status_t, stall_t, moved_t, steps_t, value_t, gnorm_t = out
            k = int(k_t.numpy())
            status, stall, moved = status_t.numpy(), stall_t.numpy(), moved_t.numpy()
            steps, last_value, last_gnorm = steps_t.numpy(), value_t.numpy(), gnorm_t.numpy()
            paused = status == PAUSED
            if not paused.any():
                break
            status[paused] = RUNNING
        return BatchRows(status, steps, self.point().numpy(), last_value, last_gnorm, self.window.numpy(),
                     "tf.function+XLA" if self.jit else "tf.function")
