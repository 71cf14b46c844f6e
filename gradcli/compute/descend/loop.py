"""The compiled loop: one optimizer's descent from P starts (P = 1 for ``--from``), every start a row.

Each optimizer gets one compiled chunk function, traced once and reused for every batch of starts, over one
``tf.Variable`` of shape [P] per variable: a step evaluates f at every row, takes the gradient of
``tf.reduce_sum(f(X))`` (row i of it is start i's gradient: the rows never mix) and applies the stopping
rules (:func:`stop_status`, the package docstring's list) to every row. A row that stops keeps its status
and its point: the update still runs on all rows (the guide's ``x.assign_sub(lr * dz_dx)`` or Keras'
``apply_gradients``, both elementwise) and the stopped rows are put back with a ``tf.where`` mask. The loop
ends when no row is running or when a chunk's last step is reached.

Long runs (more than ``JIT_MIN_STEPS`` steps allowed) are also compiled by XLA (a fraction of a second once,
then well under a microsecond a step); a platform or op XLA refuses runs as a plain graph instead.

Bounded work per compiled call: a call runs at most ``CHUNK_WORK / P`` steps (between ``MIN_CHUNK_STEPS``
and ``MAX_CHUNK_STEPS``), so Ctrl-C and a progress bar are served between calls whatever ``--steps`` says.
Each row keeps its last ``WINDOW`` evaluations for the post-mortem of a start that used up its steps
(oscillating, unbounded). The trajectory is recorded only when asked (``every``): every ``every``-th step
of every row, read back between calls (a buffer of ``HISTORY_ROWS`` steps).

No typer or rich here; TensorFlow and NumPy are imported when a runner is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from gradcli.compute.descend.optimizers import make_optimizer
from gradcli.compute.descend.rules import (
    CONVERGED, DIVERGED, MAX_STEPS, RUNNING, STALL_STEPS, STALLED, UNBOUNDED, VALUE_BOUND, WINDOW,
)
from gradcli.expression.evaluate import compile_expression

# Runs allowed more steps than this are compiled by XLA as well (compiling costs ~0.3-0.8 s).
JIT_MIN_STEPS = 5000
# Start-steps one compiled call may run (P starts x steps): a bound on the time between two chances to
# honour Ctrl-C or move a progress bar.
CHUNK_WORK = 2_000_000
MIN_CHUNK_STEPS = 100
MAX_CHUNK_STEPS = 10_000
# Trajectory steps one compiled call may record; a longer trajectory is read in several calls.
HISTORY_ROWS = 4096


@dataclass
class BatchRows:
    """What one optimizer's loop leaves for each row (NumPy arrays, padding rows included)."""

    codes: Any      # [P] int: the loop's final status code
    steps: Any      # [P] int: updates made
    final: Any      # [P, n]: where each row stopped
    value: Any      # [P]: f there (not -f, with --maximize)
    gnorm: Any      # [P]
    window: Any     # [WINDOW, P, n + 2]: the last evaluations, row k % WINDOW the newest
    compiled: str
    seconds: float = 0.0  # the whole call: building (first batch), tracing, compiling, stepping
    # with ``every``: (steps [R], values [R, P, n + 2]) per compiled call, the recorded steps of every row
    history: list = field(default_factory=list)


class RetryWithoutXLA(Exception):
    """XLA refused an op (or this platform has none): the run starts again as a plain graph."""


def stop_status(tf, x, z, g, gnorm, k, stall, moved, *, lo, hi, tol, stall_on, max_steps, tdt):
    """The stopping rules (the package docstring's list): the first test that holds gives each row's status.

    ``x`` and ``g`` are [P, n]; ``z``, ``gnorm``, ``stall``, ``moved``, ``lo``, ``hi`` are [P]. Only
    comparisons: no arithmetic, so nothing to round differently.
    """
    x_ok = tf.reduce_all(tf.math.is_finite(x), axis=1)
    finite = tf.logical_and(tf.logical_and(x_ok, tf.math.is_finite(z)),
                            tf.reduce_all(tf.math.is_finite(g), axis=1))
    fell_to_minus_inf = tf.logical_and(x_ok, tf.equal(z, tf.constant(-math.inf, tdt)))
    rules = [
        (tf.logical_not(finite), tf.where(fell_to_minus_inf, UNBOUNDED, DIVERGED)),
        (z < lo, UNBOUNDED),
        (z > hi, DIVERGED),
        (gnorm < tol, CONVERGED),
        (tf.logical_and(stall_on, tf.logical_and(moved, stall >= STALL_STEPS)), STALLED),
        (k >= max_steps, MAX_STEPS),
    ]
    status = RUNNING
    for test, code in reversed(rules):
        status = tf.where(test, code, status)
    return status


class Runner:
    """One optimizer's variables and compiled chunk for batches of ``size`` starts (one trace for all batches)."""

    def __init__(self, tree, names: list[str], size: int, *, optimizer: str, lr: float, momentum: float,
                 dtype: str, tol: float, maximize: bool, max_steps: int, jit: bool, every: int | None = None):
        from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

        tf = self.tf = load_tensorflow()
        self.names = names
        self.size = size
        tdt = self.tdt = tf.as_dtype(dtype)
        n = len(names)
        self.fn = compile_expression(tree, tf_backend(dtype))
        # One variable of shape [P] per name: each optimizer slot is then [P] too, and the update elementwise.
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
        self.every = every
        if every is not None:
            self.history = tf.Variable(tf.zeros([HISTORY_ROWS, size, n + 2], tdt), trainable=False)
            self.history_steps = tf.Variable(tf.zeros([HISTORY_ROWS], tf.int64), trainable=False)
        self.tol = tf.constant(tol, tdt)
        self.lr = tf.constant(lr, tdt)
        self.sign = tf.constant(-1.0 if maximize else 1.0, tdt)
        self.max_steps = tf.constant(max_steps, tf.int64)
        self.max_steps_int = max_steps
        self.stall_on = tf.constant(tol > 0)
        self.jit = jit
        self._chunk = tf.function(self.chunk, jit_compile=jit)
        self.chunk_steps = max(MIN_CHUNK_STEPS, min(MAX_CHUNK_STEPS, CHUNK_WORK // size))
        if every is not None:  # a call records at most HISTORY_ROWS steps
            self.chunk_steps = min(self.chunk_steps, (HISTORY_ROWS - 1) * every)

    # ---- inside the compiled loop ------------------------------------------------------------
    def iteration(self, k, k_end, status, stall, moved, steps, last_value, last_gnorm, row):
        """One step for every row: evaluate, decide per row, remember, update the rows still running."""
        tf = self.tf
        x = self.point()
        with tf.GradientTape() as tape:
            z = self.sign * tf.convert_to_tensor(self.fn(self.env), dtype=self.tdt)
            total = tf.reduce_sum(z)  # row i of its gradient is start i's gradient: rows do not mix
        grads = tape.gradient(total, self.variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        g = tf.stack(grads, axis=1)
        gnorm = tf.norm(g, axis=1)
        decided = stop_status(tf, x, z, g, gnorm, k, stall, moved, lo=self.lo, hi=self.hi, tol=self.tol,
                              stall_on=self.stall_on, max_steps=self.max_steps, tdt=self.tdt)
        active = tf.equal(status, RUNNING)  # rows that had not stopped before this step
        status = tf.where(active, decided, status)
        value = self.sign * z
        last_value = tf.where(active, value, last_value)
        last_gnorm = tf.where(active, gnorm, last_gnorm)
        slot = k % WINDOW
        values = tf.concat([x, value[:, None], gnorm[:, None]], 1)
        # Unmasked: only a row that ran to --steps reads its window, and every such row was running until the
        # last step (rows that stopped before never read theirs).
        self.window.scatter_nd_update([[slot]], [values])
        stopped_now = tf.logical_and(active, tf.not_equal(status, RUNNING))
        steps = tf.where(stopped_now, k, steps)
        running = tf.equal(status, RUNNING)
        if self.every is not None:
            # Every every-th step, evaluated (a stopped row's later rows are dropped when read back).
            # Scatter, not slice assignment: XLA needs slice bounds known when compiling.
            wanted = tf.logical_and(tf.equal(k % self.every, 0), tf.reduce_any(active))

            def record():
                self.history.scatter_nd_update([[row]], [values])
                self.history_steps.scatter_nd_update([[row]], [k])
                return row + 1

            row = tf.cond(wanted, record, lambda: row)

        # The update runs on every row, unconditionally (a branch costs XLA a good part of its compile time):
        # a row that has stopped is put back where it stopped, and its optimizer state, which changes, is
        # never read again. A row stops for good: the chunk ends before evaluating a step it must not take.
        if self.optimizer is None:
            for var, grad in zip(self.variables, grads):
                var.assign_sub(self.lr * grad)  # the guide's x.assign_sub(learning_rate * dz_dx), every row
        else:
            self.optimizer.apply_gradients(zip(grads, self.variables))
        for i, var in enumerate(self.variables):  # stopped rows stay where they stopped
            var.assign(tf.where(running, var, x[:, i]))
        new = self.point()
        same = tf.reduce_all(tf.equal(new, x), axis=1)
        stall = tf.where(running, tf.where(same, stall + 1, tf.zeros_like(stall)), stall)
        moved = tf.where(running, tf.logical_or(moved, tf.logical_not(same)), moved)
        return k + 1, status, stall, moved, steps, last_value, last_gnorm, row

    def point(self):
        """[P, n]: every row's point."""
        return self.tf.stack([self.tf.convert_to_tensor(v) for v in self.variables], axis=1)

    def chunk(self, k, k_end, status, stall, moved, steps, last_value, last_gnorm):
        """Steps from ``k`` until no row runs or step ``k_end`` is next (rows still running then go on in the
        next call, from that step); ``k_end`` past --steps: to the end."""
        tf = self.tf

        def cond(k, status, *rest):
            return tf.logical_and(tf.reduce_any(tf.equal(status, RUNNING)), k < k_end)

        def body(k, status, stall, moved, steps, last_value, last_gnorm, row):
            return self.iteration(k, k_end, status, stall, moved, steps, last_value, last_gnorm, row)

        return tf.while_loop(cond, body, [k, status, stall, moved, steps, last_value, last_gnorm, tf.constant(0)])

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

    def run(self, starts, f0, rows: int, progress: Callable[[int, int], None] | None = None) -> BatchRows:
        """Descend from every row of ``starts``; rows from ``rows`` on are padding (stopped from the start).
        ``progress(done, total)`` is called between compiled calls."""
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
        history = []
        k = 0
        while True:
            k_end = k + self.chunk_steps
            if k_end > self.max_steps_int:  # the last call evaluates step --steps too (its status: max_steps)
                k_end = self.max_steps_int + 1
            args = (tf.constant(k, tf.int64), tf.constant(k_end, tf.int64), tf.constant(status),
                    tf.constant(stall), tf.constant(moved), tf.constant(steps), tf.constant(last_value),
                    tf.constant(last_gnorm))
            try:
                out = self._chunk(*args)
            except tf.errors.OpError:
                if not self.jit:
                    raise
                raise RetryWithoutXLA from None
            k_t, status_t, stall_t, moved_t, steps_t, value_t, gnorm_t, recorded = out
            k = int(k_t.numpy())
            status, stall, moved = status_t.numpy(), stall_t.numpy(), moved_t.numpy()
            steps, last_value, last_gnorm = steps_t.numpy(), value_t.numpy(), gnorm_t.numpy()
            if self.every is not None:
                count = int(recorded.numpy())
                history.append((self.history_steps[:count].numpy(), self.history[:count].numpy()))
            if progress is not None:
                progress(min(k, self.max_steps_int), self.max_steps_int)
            if not (status == RUNNING).any():
                break
        return BatchRows(status, steps, self.point().numpy(), last_value, last_gnorm, self.window.numpy(),
                         "tf.function+XLA" if self.jit else "tf.function", history=history)

