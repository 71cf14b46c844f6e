"""The compiled loop: one optimizer's descent from P starts (P = 1 for ``--from``), every start a row.

Each optimizer gets one compiled chunk function, traced once and reused for every batch of starts, over one
``tf.Variable`` of shape [P] per variable: a step evaluates f at every row, takes the gradient of
``tf.reduce_sum(f(X))`` (row i of it is start i's gradient: the rows never mix) and updates every row (the
guide's ``x.assign_sub(lr * dz_dx)`` or Keras' ``apply_gradients``, both elementwise), writing what it
evaluated (x, the gradient, f) into a ring of the last steps. The stopping rules
(:func:`stop_status`, the package docstring's list) are applied once a block of ``BLOCK_STEPS`` steps, to
each step of the block at once: a row stops at the first step whose test holds, with that step's point,
value and gradient norm, exactly as if it had been tested after every step (a row's steps never depend on
its tests; a stopped row's later steps are never read). The loop ends when no row is running or when a
chunk's last step is reached. Testing once a block keeps a step's graph as small as the bare loop's.

Long runs (more than ``JIT_MIN_STEPS`` steps allowed) have their untested steps compiled by XLA (a fraction
of a second once, then well under a microsecond a step); the tests run as a plain graph around them (XLA
took longer compiling them than they take there). A platform or op XLA refuses runs as a plain graph.

Bounded work per compiled call: a call runs at most ``CHUNK_WORK / P`` steps (between ``MIN_CHUNK_STEPS``
and ``MAX_CHUNK_STEPS``), so Ctrl-C and a progress bar are served between calls whatever ``--steps`` says.
The ring keeps the last ``WINDOW`` evaluations for the post-mortem of a start that used up its steps
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
# Steps run between two rounds of tests (a block): at most STALL_STEPS, so that a stall can only begin
# before a block (see Runner.block). Many starts make blocks short (SHORT_BLOCK_STEPS) when a ring of long
# ones would hold more than RING_BUDGET numbers: there a step's own work dwarfs the tests' anyway.
BLOCK_STEPS = 100
SHORT_BLOCK_STEPS = 8
RING_BUDGET = 4_000_000
assert BLOCK_STEPS <= STALL_STEPS


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


def stop_status(tf, x, z, g_ok, gnorm, k, stalled, *, lo, hi, tol, max_steps, tdt):
    """The stopping rules (the package docstring's list): the first test that holds gives each row's status.

    ``x`` is [..., P, n]; ``z``, ``g_ok`` (every gradient component finite), ``gnorm``, ``stalled`` are
    [..., P]; ``lo``, ``hi`` are [P] and ``k`` broadcasts against them. Only comparisons: no arithmetic,
    so nothing to round differently.
    """
    x_ok = tf.reduce_all(tf.math.is_finite(x), axis=-1)
    finite = tf.logical_and(tf.logical_and(x_ok, tf.math.is_finite(z)), g_ok)
    fell_to_minus_inf = tf.logical_and(x_ok, tf.equal(z, tf.constant(-math.inf, tdt)))
    rules = [
        (tf.logical_not(finite), tf.where(fell_to_minus_inf, UNBOUNDED, DIVERGED)),
        (z < lo, UNBOUNDED),
        (z > hi, DIVERGED),
        (gnorm < tol, CONVERGED),
        (stalled, STALLED),
        (k >= max_steps, MAX_STEPS),
    ]
    status = tf.constant(RUNNING)
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
        # Each step's evaluation of every row (x, the gradient, f minimised), at row k % self.ring_rows: the last
        # block for its tests, the WINDOW steps before it for a post-mortem.
        self.block_steps = BLOCK_STEPS
        if (BLOCK_STEPS + WINDOW) * size * (2 * n + 1) > RING_BUDGET:
            self.block_steps = SHORT_BLOCK_STEPS
        self.ring_rows = self.block_steps + WINDOW  # the last block and the WINDOW - 1 steps before it
        self.ring = tf.Variable(tf.fill([self.ring_rows, size, 2 * n + 1], tf.constant(math.nan, tdt)),
                                trainable=False)
        self.every = every
        if every is not None:  # one more row: the scatter's target for a block's steps that are not kept
            self.history = tf.Variable(tf.zeros([HISTORY_ROWS + 1, size, n + 2], tdt), trainable=False)
            self.history_steps = tf.Variable(tf.zeros([HISTORY_ROWS + 1], tf.int64), trainable=False)
        self.tol = tf.constant(tol, tdt)
        self.lr = tf.constant(lr, tdt)
        self.sign = tf.constant(-1.0 if maximize else 1.0, tdt)
        self.max_steps = tf.constant(max_steps, tf.int64)
        self.max_steps_int = max_steps
        self.stall_on = tf.constant(tol > 0)
        self.jit = jit
        # XLA compiles the untested steps only: the tests, once a block, run as a plain graph (compiling them
        # cost XLA more than they cost there).
        self._steps = tf.function(self.plain_steps, jit_compile=True, autograph=False) if jit else self.plain_steps
        self._chunk = tf.function(self.chunk, autograph=False)
        self.chunk_steps = max(MIN_CHUNK_STEPS, min(MAX_CHUNK_STEPS, CHUNK_WORK // size))
        if every is not None:  # a call records at most HISTORY_ROWS steps
            self.chunk_steps = min(self.chunk_steps, (HISTORY_ROWS - 1) * every)

    # ---- inside the compiled loop ------------------------------------------------------------
    def plain_step(self, k):
        """Step ``k`` for every row, no test: evaluate, write the ring's row k % self.ring_rows, update."""
        tf = self.tf
        with tf.GradientTape() as tape:
            z = self.sign * tf.convert_to_tensor(self.fn(self.env), dtype=self.tdt)
            total = tf.reduce_sum(z)  # row i of its gradient is start i's gradient: rows do not mix
        grads = tape.gradient(total, self.variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        # As few ops as a step allows (each costs a plain graph microseconds a step): the tests derive the
        # rest (gradient norm, finiteness) for a whole block at once.
        # Scatter, not slice assignment: XLA needs slice bounds known when compiling.
        self.ring.scatter_nd_update([[k % self.ring_rows]], [tf.stack([*self.variables, *grads, z], axis=1)])
        # The update runs on every row, stopped or not (a branch or a mask costs XLA compile time and the
        # graph a step's time): a stopped row's point and value were taken from the ring when it stopped,
        # and what it does afterwards is never read.
        if self.optimizer is None:
            for var, grad in zip(self.variables, grads):
                var.assign_sub(self.lr * grad)  # the guide's x.assign_sub(learning_rate * dz_dx), every row
        else:
            self.optimizer.apply_gradients(zip(grads, self.variables))
        return (k + 1,)

    def plain_steps(self, k, k_stop):
        """Steps ``k`` .. ``k_stop - 1``, untested (compiled by XLA with ``jit``)."""
        return self.tf.while_loop(lambda k: k < k_stop, self.plain_step, [k])[0]

    def evaluations(self, ring_rows):
        """[..., P, n + 2] from ring rows [..., P, 2n + 1]: x, f (not -f with --maximize), the gradient's norm;
        and [..., P], every gradient component finite."""
        tf, n = self.tf, len(self.names)
        g = ring_rows[..., n:2 * n]
        values = tf.concat([ring_rows[..., :n], self.sign * ring_rows[..., 2 * n:], tf.norm(g, axis=-1)[..., None]],
                           -1)
        return values, tf.reduce_all(tf.math.is_finite(g), axis=-1)

    def block(self, k, k_end, status, stall, moved, steps, last_value, last_gnorm, final, row):
        """Steps ``k`` .. ``k + L - 1`` (``L`` = BLOCK_STEPS, or fewer to reach ``k_end``) without tests, then
        every row's tests for each of them at once, from the ring: a row stops at the first step whose test
        holds, with that step's point, value and gradient norm, as if it had been tested after each step
        (a row's steps never depend on its tests)."""
        tf = self.tf
        n = len(self.names)
        length = tf.minimum(tf.constant(self.block_steps, tf.int64), k_end - k)
        self._steps(k, k + length)
        j = tf.range(self.block_steps, dtype=tf.int64)
        evaluated, g_ok = self.evaluations(tf.gather(self.ring, (k + j) % self.ring_rows))  # [block steps, P, ...]
        x, value, gnorm = evaluated[:, :, :n], evaluated[:, :, n], evaluated[:, :, n + 1]
        in_block = j < length  # the rest of the slice is older steps
        # Stall: the point unchanged, bit for bit, since the block's first step (a change inside the block
        # leaves fewer than BLOCK_STEPS <= STALL_STEPS unchanged steps).
        changed = tf.concat([tf.zeros([1, self.size], tf.bool),
                             tf.reduce_any(tf.not_equal(x[1:], x[:-1]), axis=-1)], 0)
        unchanged = tf.equal(tf.cumsum(tf.cast(changed, tf.int32), axis=0), 0)
        stalled = tf.logical_and(tf.logical_and(self.stall_on, moved),
                                 tf.logical_and(unchanged, stall + j[:, None] >= STALL_STEPS))
        decided = stop_status(tf, x, self.sign * value, g_ok, gnorm, (k + j)[:, None], stalled, lo=self.lo,
                              hi=self.hi, tol=self.tol, max_steps=self.max_steps, tdt=self.tdt)
        fired = tf.logical_and(in_block[:, None], tf.not_equal(decided, RUNNING))
        first = tf.reduce_min(tf.where(fired, j[:, None], self.block_steps), axis=0)  # [P]: block_steps if none
        active = tf.equal(status, RUNNING)  # rows that had not stopped before this block
        stops = tf.logical_and(active, first < self.block_steps)
        at = tf.minimum(first, length - 1)
        picked = tf.gather(tf.transpose(evaluated, [1, 0, 2]), at, axis=1, batch_dims=1)  # [P, n + 2]
        status = tf.where(stops, tf.gather(tf.transpose(decided), at, axis=1, batch_dims=1), status)
        steps = tf.where(stops, k + first, steps)
        last_value = tf.where(stops, picked[:, n], last_value)
        last_gnorm = tf.where(stops, picked[:, n + 1], last_gnorm)
        final = tf.where(stops[:, None], picked[:, :n], final)
        # What the next block starts from: the unchanged steps up to the point after the last update.
        moved_last = tf.reduce_any(tf.not_equal(self.point(), tf.gather(x, length - 1)), axis=-1)
        last_change = tf.maximum(tf.reduce_max(tf.where(tf.logical_and(changed, in_block[:, None]),
                                                        j[:, None], -1), axis=0),
                                 tf.where(moved_last, length, -1))
        stall = tf.where(last_change < 0, stall + length, length - last_change)
        moved = tf.logical_or(moved, last_change >= 0)
        if self.every is not None:
            # Every every-th step while some row ran (a stopped row's later rows are dropped when read
            # back); the steps not kept go to the history's spare last row.
            ran = tf.logical_and(active[None, :], j[:, None] <= first[None, :])
            wanted = tf.logical_and(tf.logical_and(in_block, tf.equal((k + j) % self.every, 0)),
                                    tf.reduce_any(ran, axis=1))
            rows = row + tf.cumsum(tf.cast(wanted, tf.int32)) - 1
            target = tf.where(wanted, rows, HISTORY_ROWS)[:, None]
            self.history.scatter_nd_update(target, evaluated)
            self.history_steps.scatter_nd_update(target, k + j)
            row = row + tf.reduce_sum(tf.cast(wanted, tf.int32))
        return k + length, status, stall, moved, steps, last_value, last_gnorm, final, row

    def point(self):
        """[P, n]: every row's point."""
        return self.tf.stack([self.tf.convert_to_tensor(v) for v in self.variables], axis=1)

    def chunk(self, k, k_end, status, stall, moved, steps, last_value, last_gnorm, final):
        """Blocks from ``k`` until no row runs or step ``k_end`` is next (rows still running then go on in the
        next call, from that step); ``k_end`` past --steps: to the end."""
        tf = self.tf

        def cond(k, status, *rest):
            return tf.logical_and(tf.reduce_any(tf.equal(status, RUNNING)), k < k_end)

        def body(k, *rest):
            return self.block(k, k_end, *rest)

        return tf.while_loop(cond, body, [k, status, stall, moved, steps, last_value, last_gnorm, final,
                                          tf.constant(0)])

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
        self.ring.assign(tf.fill(self.ring.shape, tf.constant(math.nan, self.tdt)))
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
        final = np.array(starts, self.tdt.as_numpy_dtype)  # a padding row's: where it never moved from
        history = []
        k = 0
        while True:
            k_end = k + self.chunk_steps
            if k_end > self.max_steps_int:  # the last call evaluates step --steps too (its status: max_steps)
                k_end = self.max_steps_int + 1
            args = (tf.constant(k, tf.int64), tf.constant(k_end, tf.int64), tf.constant(status),
                    tf.constant(stall), tf.constant(moved), tf.constant(steps), tf.constant(last_value),
                    tf.constant(last_gnorm), tf.constant(final))
            try:
                out = self._chunk(*args)
            except tf.errors.OpError:
                if not self.jit:
                    raise
                raise RetryWithoutXLA from None
            k_t, status_t, stall_t, moved_t, steps_t, value_t, gnorm_t, final_t, recorded = out
            k = int(k_t.numpy())
            status, stall, moved = status_t.numpy(), stall_t.numpy(), moved_t.numpy()
            steps, last_value, last_gnorm, final = steps_t.numpy(), value_t.numpy(), gnorm_t.numpy(), final_t.numpy()
            if self.every is not None:
                count = int(recorded.numpy())
                history.append((self.history_steps[:count].numpy(), self.history[:count].numpy()))
            if progress is not None:
                progress(min(k, self.max_steps_int), self.max_steps_int)
            if not (status == RUNNING).any():
                break
        return BatchRows(status, steps, final, last_value, last_gnorm, self.window(),
                         "tf.function+XLA" if self.jit else "tf.function", history=history)

    def window(self):
        """[WINDOW, P, n + 2]: the evaluations of steps --steps - WINDOW + 1 .. --steps, step k at row
        k % WINDOW (what a row that ran out of steps is judged by; NaN for steps before 0)."""
        import numpy as np

        last = self.max_steps_int
        window = np.full((WINDOW, self.size, len(self.names) + 2), math.nan, self.tdt.as_numpy_dtype)
        kept = [k for k in range(last - WINDOW + 1, last + 1) if k >= 0]
        values, _ = self.evaluations(self.tf.gather(self.ring, [k % self.ring_rows for k in kept]))
        window[[k % WINDOW for k in kept]] = values.numpy()
        return window
