"""The compiled loop: one optimizer's descent from P starts (P = 1 for ``--from``), every start a row.

Each optimizer gets one compiled steps function, traced once and reused for every batch of starts, over one
``tf.Variable`` of shape [P] per variable: a step evaluates f at every row, takes the gradient of
``tf.reduce_sum(f(X))`` (row i of it is start i's gradient: the rows never mix) and updates every row (the
guide's ``x.assign_sub(lr * dz_dx)`` or Keras' ``apply_gradients``, both elementwise). A call runs one
block of untested steps (100, then twice as many each call up to ``MAX_BLOCK_STEPS``) and hands back what
each step evaluated (x, the gradient, f); the stopping rules (:func:`stop_status`, the package
docstring's list) are then applied in NumPy to each step of the block at once: a row stops at the first step
whose test holds, with that step's point, value and gradient norm, exactly as if it had been tested after
every step (a row's steps never depend on its tests; a stopped row's later steps are never read). The loop
ends when no row is running or step --steps has been tested.

Only the steps are traced and compiled, so a run costs what the bare loop costs (its graph, its XLA compile)
plus a call and a few NumPy comparisons per block: the tests are comparisons, with nothing to round, and the
gradient norm they use is TensorFlow's own (``tf.norm``, on the block's gradients). Long runs (more than
``JIT_MIN_STEPS`` steps allowed) have their steps compiled by XLA (a fraction of a second once, then well
under a microsecond a step); a platform or op XLA refuses runs as a plain graph.

Ctrl-C is served between calls (a block at a time); a progress bar moves every ``PROGRESS_WORK / P`` steps
(between ``MIN_PROGRESS_STEPS`` and ``MAX_PROGRESS_STEPS``). The last ``WINDOW`` evaluations before --steps
are kept for the post-mortem of a start that used up its steps (oscillating, unbounded). The trajectory is recorded
only when asked (``every``): every ``every``-th step of every row, taken from each block's evaluations.

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
# Start-steps (P starts x steps) between two moves of a progress bar.
PROGRESS_WORK = 2_000_000
MIN_PROGRESS_STEPS = 100
MAX_PROGRESS_STEPS = 10_000
# Steps one call runs before the tests (a block): FIRST_BLOCK_STEPS, then twice as many each call up to
# MAX_BLOCK_STEPS, so that a short run wastes few untested steps past its stop and a long one pays a call
# (~0.1-0.5 ms) per hundreds of steps. Many starts make blocks shorter (down to SHORT_BLOCK_STEPS) when a
# block of long ones would hold more than BLOCK_BUDGET numbers: there a step's own work dwarfs a call's anyway.
FIRST_BLOCK_STEPS = 100
MAX_BLOCK_STEPS = 800
SHORT_BLOCK_STEPS = 8
BLOCK_BUDGET = 4_000_000


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
    # with ``every``: (steps [R], values [R, P, n + 2]) per block, the recorded steps of every row
    history: list = field(default_factory=list)


class RetryWithoutXLA(Exception):
    """XLA refused an op (or this platform has none): the run starts again as a plain graph."""


def stop_status(x, z, g_ok, gnorm, k, stalled, *, lo, hi, tol, max_steps):
    """The stopping rules (the package docstring's list): the first test that holds gives each row's status.

    NumPy arrays: ``x`` is [..., P, n]; ``z``, ``g_ok`` (every gradient component finite), ``gnorm``,
    ``stalled`` are [..., P]; ``lo``, ``hi`` are [P] and ``k`` broadcasts against them. Only comparisons: no
    arithmetic, so nothing to round differently from the steps' own dtype.
    """
    import numpy as np

    x_ok = np.all(np.isfinite(x), axis=-1)
    finite = x_ok & np.isfinite(z) & g_ok
    fell_to_minus_inf = x_ok & (z == -math.inf)
    rules = [
        (~finite, np.where(fell_to_minus_inf, UNBOUNDED, DIVERGED)),
        (z < lo, UNBOUNDED),
        (z > hi, DIVERGED),
        (gnorm < tol, CONVERGED),
        (stalled, STALLED),
        (k >= max_steps, MAX_STEPS),
    ]
    status = np.full(np.shape(z), RUNNING, np.int32)
    for test, code in reversed(rules):
        status = np.where(test, code, status).astype(np.int32)
    return status


@dataclass
class RowsState:
    """Every row's state between blocks (NumPy arrays [P]): its status, and where a stopped row stopped."""

    status: Any     # int32: RUNNING until the row stops
    stall: Any      # int64: evaluations of the point the next block starts from, before it, if unchanged
    moved: Any      # bool: the point ever changed (a start that never moves is not a stall)
    steps: Any      # int64: the step a stopped row stopped at
    value: Any      # f there (not -f, with --maximize)
    gnorm: Any
    final: Any      # [P, n]: the point there
    previous: Any = None  # [P, n]: the last point evaluated (None before the first block)

    @classmethod
    def fresh(cls, size: int, rows: int, starts, npdt) -> RowsState:
        import numpy as np

        status = np.full(size, RUNNING, np.int32)
        status[rows:] = CONVERGED  # padding: frozen, never reported
        nan = np.full(size, math.nan, npdt)
        return cls(status, np.zeros(size, np.int64), np.zeros(size, bool), np.zeros(size, np.int64), nan,
                   nan.copy(), np.array(starts, npdt))  # a padding row's final: where it never moved from

    def test_block(self, k: int, length: int, evaluated, g_ok, runner: Runner):
        """The tests of steps ``k`` .. ``k + length - 1`` for every row at once (``evaluated``: [B, P, n + 2],
        the block's evaluations; rows from ``length`` on are not steps of this block): a row stops at the
        first step whose test holds, with that step's point, value and gradient norm, as if it had been
        tested after each step (a row's steps never depend on its tests). Returns the block's kept trajectory
        steps (steps [R], values [R, P, n + 2]) when the runner records one, else None."""
        import numpy as np

        n, size, block = len(runner.names), runner.size, runner.block_steps
        j = np.arange(block, dtype=np.int64)
        x, value, gnorm = evaluated[:, :, :n], evaluated[:, :, n], evaluated[:, :, n + 1]
        in_block = j < length
        # Stall: the point unchanged, bit for bit, for STALL_STEPS evaluations, counting those before the block
        # (``stall``) while it has not changed since the last block's last step.
        changed_first = (np.zeros((1, size), bool) if self.previous is None
                         else np.any(x[:1] != self.previous, axis=-1))
        changed = np.concatenate([changed_first, np.any(x[1:] != x[:-1], axis=-1)], 0)
        last_change = np.maximum.accumulate(np.where(changed, j[:, None], -1), axis=0)  # [B, P]: -1 if none yet
        unchanged_for = np.where(last_change < 0, self.stall + j[:, None], j[:, None] - last_change)
        moved = self.moved | (last_change >= 0)
        stalled = runner.stall_on & moved & (unchanged_for >= STALL_STEPS)
        decided = stop_status(x, runner.sign * value, g_ok, gnorm, (k + j)[:, None], stalled, lo=runner.lo,
                              hi=runner.hi, tol=runner.tol, max_steps=runner.max_steps_int)
        fired = in_block[:, None] & (decided != RUNNING)
        first = np.min(np.where(fired, j[:, None], block), axis=0)  # [P]: block if none fired
        active = self.status == RUNNING  # rows that had not stopped before this block
        stops = active & (first < block)
        at = np.minimum(first, length - 1)
        every_row = np.arange(size)
        picked = evaluated[at, every_row]  # [P, n + 2]
        self.status = np.where(stops, decided[at, every_row], self.status).astype(np.int32)
        self.steps = np.where(stops, k + first, self.steps)
        self.value = np.where(stops, picked[:, n], self.value)
        self.gnorm = np.where(stops, picked[:, n + 1], self.gnorm)
        self.final = np.where(stops[:, None], picked[:, :n], self.final)
        # What the next block starts from (its first step's point is compared with this block's last).
        self.stall = unchanged_for[length - 1] + 1
        self.moved = moved[length - 1]
        self.previous = x[length - 1]
        if runner.every is None:
            return None
        # Every every-th step while some row ran (a stopped row's later steps are dropped when read back).
        ran = active[None, :] & (j[:, None] <= first[None, :])
        wanted = in_block & ((k + j) % runner.every == 0) & ran.any(axis=1)
        return (k + j)[wanted], evaluated[wanted]


class Runner:
    """One optimizer's variables and compiled steps for batches of ``size`` starts (one trace for all batches)."""

    def __init__(self, tree, names: list[str], size: int, *, optimizer: str, lr: float, momentum: float,
                 dtype: str, tol: float, maximize: bool, max_steps: int, jit: bool, every: int | None = None):
        from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

        tf = self.tf = load_tensorflow()
        self.names = names
        self.size = size
        tdt = self.tdt = tf.as_dtype(dtype)
        npdt = tdt.as_numpy_dtype
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
        # A block's evaluations (x, the gradient, f minimised: 2n + 1 numbers a row and step) come back whole.
        fitting = BLOCK_BUDGET // (size * (2 * n + 1))
        self.block_steps = max(SHORT_BLOCK_STEPS, min(MAX_BLOCK_STEPS, fitting))
        self.every = every
        self.lo = self.hi = None  # [P] bounds on f, set by load()
        self.tol = npdt(tol)
        self.lr = tf.constant(lr, tdt)
        self.sign = npdt(-1.0 if maximize else 1.0)  # the tests' (NumPy), and the steps':
        self.sign_t = tf.constant(self.sign, tdt)
        self.max_steps_int = max_steps
        self.stall_on = tol > 0
        self.jit = jit
        # Only the steps are compiled (by XLA with ``jit``), traced once on the first run: its concrete
        # function is called directly (a tf.function's own dispatch costs more than a block's tests).
        self._steps = tf.function(self.plain_steps, jit_compile=jit, autograph=False)
        self._steps_call = None
        self.progress_steps = max(MIN_PROGRESS_STEPS, min(MAX_PROGRESS_STEPS, PROGRESS_WORK // size))
        self._window = None  # [WINDOW, P, n + 2]: the last steps' evaluations, step k at row k % WINDOW

    # ---- inside the compiled loop ------------------------------------------------------------
    def plain_steps(self, k0, k_stop):
        """Steps ``k0`` .. ``k_stop - 1`` for every row, untested (compiled by XLA with ``jit``): each evaluates,
        is written to the block's row k - k0, and updates. Returns the block's rows [block_steps, P, 2n + 1]
        (zeros past ``k_stop - k0``)."""
        tf = self.tf

        def step(k, evaluations):
            with tf.GradientTape() as tape:
                z = self.sign_t * tf.convert_to_tensor(self.fn(self.env), dtype=self.tdt)
                total = tf.reduce_sum(z)  # row i of its gradient is start i's gradient: rows do not mix
            grads = tape.gradient(total, self.variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            # As few ops as a step allows: the tests derive the rest (gradient norm, finiteness) in NumPy.
            evaluations = evaluations.write(tf.cast(k - k0, tf.int32), tf.stack([*self.variables, *grads, z], 1))
            # The update runs on every row, stopped or not (a branch or a mask costs XLA compile time and the
            # graph a step's time): a stopped row's point and value were taken when it stopped, and what it
            # does afterwards is never read.
            if self.optimizer is None:
                for var, grad in zip(self.variables, grads):
                    var.assign_sub(self.lr * grad)  # the guide's x.assign_sub(learning_rate * dz_dx), every row
            else:
                self.optimizer.apply_gradients(zip(grads, self.variables))
            return k + 1, evaluations

        # A TensorArray, not a variable scattered into: XLA compiles it as the bare loop's cost plus ~15%.
        block = tf.TensorArray(self.tdt, size=self.block_steps, element_shape=[self.size, 2 * len(self.names) + 1])
        _, block = tf.while_loop(lambda k, _: k < k_stop, step, [k0, block])
        return block.stack()

    # ---- from Python ------------------------------------------------------------------------------
    def evaluations(self, block):
        """[..., P, n + 2] from a block's rows [..., P, 2n + 1] (NumPy): x, f (not -f with --maximize), the
        gradient's norm; and [..., P], every gradient component finite. The norm is TensorFlow's (``tf.norm``'s
        own arithmetic, whose sum of squares is ordered as Eigen's SIMD lanes are, not as NumPy's)."""
        import numpy as np

        tf, n = self.tf, len(self.names)
        g = block[..., n:2 * n]
        g_t = tf.constant(g)
        gnorm = tf.sqrt(tf.reduce_sum(g_t * g_t, axis=-1)).numpy()
        values = np.concatenate([block[..., :n], self.sign * block[..., 2 * n:], gnorm[..., None]], -1)
        return values, np.all(np.isfinite(g), axis=-1)

    def load(self, starts, f0) -> None:
        """New starts ([size, n], in the run's dtype) and f at them (float64, minimised sign): fresh state."""
        import numpy as np

        for i, var in enumerate(self.variables):
            var.assign(starts[:, i])
        finite = np.isfinite(f0)
        scale = np.where(finite, np.maximum(1.0, np.abs(f0)), 1.0)
        npdt = self.tdt.as_numpy_dtype
        with np.errstate(invalid="ignore", over="ignore"):
            self.hi = np.where(finite, f0 + VALUE_BOUND * scale, math.inf).astype(npdt)
            self.lo = np.where(finite, f0 - VALUE_BOUND * scale, -math.inf).astype(npdt)
        self._window = np.full((WINDOW, self.size, len(self.names) + 2), math.nan, npdt)
        for variable, value in self._fresh:
            variable.assign(value)

    def run(self, starts, f0, rows: int, progress: Callable[[int, int], None] | None = None) -> BatchRows:
        """Descend from every row of ``starts``; rows from ``rows`` on are padding (stopped from the start).
        ``progress(done, total)`` is called every ``progress_steps`` steps and at the end."""
        tf = self.tf
        self.load(starts, f0)
        if self._steps_call is None:
            scalar = tf.TensorSpec([], tf.int64)
            self._steps_call = self._steps.get_concrete_function(scalar, scalar)
        state = RowsState.fresh(self.size, rows, starts, self.tdt.as_numpy_dtype)
        history = []
        last = self.max_steps_int  # the last block evaluates step --steps too (its status: max_steps)
        k = reported = 0
        block = min(FIRST_BLOCK_STEPS, self.block_steps)
        while k <= last and (state.status == RUNNING).any():
            length = min(block, last + 1 - k)
            try:
                rows_t = self._steps_call(tf.constant(k, tf.int64), tf.constant(k + length, tf.int64))
            except tf.errors.OpError:
                if not self.jit:
                    raise
                raise RetryWithoutXLA from None
            evaluated, g_ok = self.evaluations(rows_t.numpy())
            kept = state.test_block(k, length, evaluated, g_ok, self)
            if kept is not None:
                history.append(kept)
            self._keep_window(k, length, evaluated)
            k += length
            block = min(2 * block, self.block_steps)
            if progress is not None and k - reported >= self.progress_steps:
                reported = k
                progress(min(k, last), last)
        if progress is not None and reported < min(k, last):
            progress(min(k, last), last)
        return BatchRows(state.status, state.steps, state.final, state.value, state.gnorm, self._window,
                         "tf.function+XLA" if self.jit else "tf.function", history=history)

    def _keep_window(self, k: int, length: int, evaluated) -> None:
        """Keep the block's steps among the last WINDOW before --steps (what a row that ran out of steps is
        judged by; NaN for steps before 0), step k at row k % WINDOW."""
        first = max(k, self.max_steps_int - WINDOW + 1)
        for step in range(first, k + length):
            self._window[step % WINDOW] = evaluated[step - k]
