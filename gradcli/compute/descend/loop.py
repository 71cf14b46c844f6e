"""The compiled loop: one ``tf.function`` per run, a TF while-loop whose condition holds the stopping tests.

Long runs (more than ``JIT_MIN_STEPS`` steps allowed) are also compiled by XLA. A run is read back in
chunks: one compiled call runs until it stops, its history buffer is full or a progress update is due.
TensorFlow is imported only when a run starts.
"""

from __future__ import annotations

import math
import time
from typing import Callable

from gradcli.compute.descend.optimizers import make_optimizer
from gradcli.compute.descend.options import DEFAULT_MOMENTUM, DEFAULT_STEPS, DEFAULT_TOL
from gradcli.compute.descend.results import DescentRun, HistoryRow
from gradcli.compute.descend.rules import (
    CONVERGED, DIVERGED, MAX_STEPS, PAUSED, RUNNING, STALL_STEPS, STALLED, STATUS_NAME, UNBOUNDED, VALUE_BOUND, WINDOW,
)
from gradcli.compute.descend.trajectory import Trajectory
from gradcli.compute.descend.verdicts import _explain_stop
from gradcli.expression.evaluate import compile_expression
from gradcli.results import shortest
from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

# Runs allowed more steps than this are compiled by XLA as well (compiling costs ~0.3-0.8 s).
JIT_MIN_STEPS = 5000
# History rows read back per compiled call; a longer trajectory is read in several calls.
HISTORY_ROWS = 4096
# Without a progress bar, one compiled call runs at most this many steps (a bound on memory, not time).
PROGRESS_CHUNK = 10_000


class _Runner:
    """One run's variables, optimizer and compiled chunk function."""

    def __init__(self, tree, names: list[str], start: dict[str, float], *, optimizer: str, lr: float,
                 momentum: float, dtype: str, tol: float, maximize: bool, max_steps: int, every: int | None,
                 jit: bool):
        tf = self.tf = load_tensorflow()
        self.names = names
        self.dtype = dtype
        tdt = self.tdt = tf.as_dtype(dtype)
        n = len(names)
        self.fn = compile_expression(tree, tf_backend(dtype))
        self.variables = [tf.Variable(start[v], dtype=tdt, name=v) for v in names]
        self.env = dict(zip(names, self.variables))
        sign = -1.0 if maximize else 1.0
        self.optimizer = None if optimizer == "manual" else make_optimizer(optimizer, lr, momentum, dtype)
        if self.optimizer is not None:
            self.optimizer.build(self.variables)  # slots exist before tracing: no variables created in the loop
        f0 = float(sign * _as_float(self.fn({k: tf.constant(v, tdt) for k, v in start.items()})))
        scale = max(1.0, abs(f0)) if math.isfinite(f0) else 1.0
        self.hi = tf.constant(f0 + VALUE_BOUND * scale if math.isfinite(f0) else math.inf, tdt)
        self.lo = tf.constant(f0 - VALUE_BOUND * scale if math.isfinite(f0) else -math.inf, tdt)
        self.tol = tf.constant(tol, tdt)
        self.lr = tf.constant(lr, tdt)
        self.sign = tf.constant(sign, tdt)
        self.every = tf.constant(every or max_steps + 1, tf.int64)
        self.max_steps = tf.constant(max_steps, tf.int64)
        self.stall_on = tf.constant(tol > 0)
        # Rows: the point, then f, then |grad|.
        self.history = tf.Variable(tf.zeros([HISTORY_ROWS, n + 2], tdt), trainable=False)
        self.history_steps = tf.Variable(tf.zeros([HISTORY_ROWS], tf.int64), trainable=False)
        self.window = tf.Variable(tf.fill([WINDOW, n + 2], tf.constant(math.nan, tdt)), trainable=False)
        self.jit = jit
        self._chunk = tf.function(self.chunk, jit_compile=jit)
        self._fallback = tf.function(self.chunk, jit_compile=False)

    def objective(self):
        return self.sign * self.tf.convert_to_tensor(self.fn(self.env), dtype=self.tdt)

    def update(self, grads) -> None:
        if self.optimizer is None:
            for var, g in zip(self.variables, grads):
                var.assign_sub(self.lr * g)  # the guide's x.assign_sub(learning_rate * dz_dx)
        else:
            self.optimizer.apply_gradients(zip(grads, self.variables))

    def record(self, row, k, values):
        # Scatter, not slice assignment: XLA needs slice bounds known when compiling.
        self.history.scatter_nd_update([[row]], [values])
        self.history_steps.scatter_nd_update([[row]], [k])
        return row + 1

    def point(self):
        return self.tf.stack([self.tf.convert_to_tensor(v) for v in self.variables])

    def stop_status(self, x, z, g, gnorm, k, k_end, stall, moved):
        """The stopping rules (the package docstring's list): the first test that holds gives the status."""
        return stop_status(self.tf, x, z, g, gnorm, k, k_end, stall, moved, lo=self.lo, hi=self.hi, tol=self.tol,
                           stall_on=self.stall_on, max_steps=self.max_steps, tdt=self.tdt)

    def iteration(self, k, k_end, stall, moved, row):
        """One step of the while-loop: evaluate, decide, record, update."""
        tf = self.tf
        x = self.point()
        with tf.GradientTape() as tape:
            z = self.objective()
        grads = tape.gradient(z, self.variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        g = tf.stack(grads)
        gnorm = tf.norm(g)
        status = self.stop_status(x, z, g, gnorm, k, k_end, stall, moved)
        values = tf.concat([x, tf.reshape(self.sign * z, [1]), tf.reshape(gnorm, [1])], 0)
        self.window.scatter_nd_update([[k % WINDOW]], [values])
        stopping = tf.logical_and(tf.not_equal(status, RUNNING), tf.not_equal(status, PAUSED))
        wanted = tf.logical_and(tf.not_equal(status, PAUSED),
                                tf.logical_or(tf.equal(k % self.every, 0), stopping))
        row = tf.cond(wanted, lambda: self.record(row, k, values), lambda: row)

        def step():
            self.update(grads)
            same = tf.reduce_all(tf.equal(self.point(), x))
            return k + 1, tf.where(same, stall + 1, tf.zeros_like(stall)), tf.logical_or(moved, tf.logical_not(same))

        k, stall, moved = tf.cond(tf.equal(status, RUNNING), step, lambda: (k, stall, moved))
        return k, status, stall, moved, row

    def chunk(self, k, k_end, stall, moved):
        """Steps from ``k`` until the run stops or reaches ``k_end``: (k, status, stall, moved, rows recorded)."""
        tf = self.tf

        def cond(k, status, stall, moved, row):
            return tf.equal(status, RUNNING)

        def body(k, status, stall, moved, row):
            return self.iteration(k, k_end, stall, moved, row)

        return tf.while_loop(cond, body, [k, tf.constant(RUNNING), stall, moved, tf.constant(0)],
                             maximum_iterations=None)

    def run_chunk(self, k: int, k_end: int, stall: int, moved: bool):
        tf = self.tf
        args = (tf.constant(k, tf.int64), tf.constant(k_end, tf.int64), tf.constant(stall, tf.int64),
                tf.constant(moved))
        if self.jit:
            try:
                return self._chunk(*args)
            except tf.errors.OpError:
                # XLA refused an op (or this platform has no XLA): the run starts again as a plain graph,
                # which computes the same thing (a genuine error there is reported by the caller).
                raise _RetryWithoutXLA from None
        return self._fallback(*args)

    def rows(self, count: int) -> list[HistoryRow]:
        """The first ``count`` rows of the history buffer."""
        if not count:
            return []
        data = self.history[:count].numpy()
        steps = self.history_steps[:count].numpy()
        n, dtype = len(self.names), self.dtype
        return [HistoryRow(int(s), {v: shortest(float(r[i]), dtype) for i, v in enumerate(self.names)},
                           shortest(float(r[n]), dtype), shortest(float(r[n + 1]), dtype))
                for s, r in zip(steps, data)]


def stop_status(tf, x, z, g, gnorm, k, k_end, stall, moved, *, lo, hi, tol, stall_on, max_steps, tdt, axis=None):
    """The stopping rules (the package docstring's list): the first test that holds gives the status.

    One run: ``x`` and ``g`` are [n], the rest scalars (``axis=None``). Many starts
    (gradcli.compute.descend.batch_loop): ``x`` and ``g`` are [P, n], ``axis=1``, and ``z``, ``gnorm``,
    ``stall``, ``moved``, ``lo``, ``hi`` are [P]; the result is then a status per start. Only comparisons:
    no arithmetic, so nothing to round differently.
    """
    x_ok = tf.reduce_all(tf.math.is_finite(x), axis=axis)
    finite = tf.logical_and(tf.logical_and(x_ok, tf.math.is_finite(z)),
                            tf.reduce_all(tf.math.is_finite(g), axis=axis))
    fell_to_minus_inf = tf.logical_and(x_ok, tf.equal(z, tf.constant(-math.inf, tdt)))
    rules = [
        (tf.logical_not(finite), tf.where(fell_to_minus_inf, UNBOUNDED, DIVERGED)),
        (z < lo, UNBOUNDED),
        (z > hi, DIVERGED),
        (gnorm < tol, CONVERGED),
        (tf.logical_and(stall_on, tf.logical_and(moved, stall >= STALL_STEPS)), STALLED),
        (k >= max_steps, MAX_STEPS),
        (k >= k_end, PAUSED),
    ]
    status = RUNNING
    for test, code in reversed(rules):
        status = tf.where(test, code, status)
    return status


class _RetryWithoutXLA(Exception):
    pass


def _as_float(x) -> float:
    try:
        return float(x.numpy())
    except AttributeError:
        return float(x)


def run_descent(tree, names: list[str], start: dict[str, float], *, optimizer: str, lr: float,
                momentum: float = DEFAULT_MOMENTUM, dtype: str = "float64", tol: float | None = None,
                maximize: bool = False, max_steps: int = DEFAULT_STEPS, every: int | None = None,
                jit: bool | None = None,
                progress: Callable[[int, int], None] | None = None) -> DescentRun:
    """One compiled descent run. ``progress(done, total)`` is called between compiled chunks."""
    tol = DEFAULT_TOL[dtype] if tol is None else tol
    use_jit = max_steps > JIT_MIN_STEPS if jit is None else jit
    for attempt in (use_jit, False):
        try:
            return _run(tree, names, start, optimizer=optimizer, lr=lr, momentum=momentum, dtype=dtype, tol=tol,
                        maximize=maximize, max_steps=max_steps, every=every, jit=attempt, progress=progress)
        except _RetryWithoutXLA:
            continue
    raise AssertionError("unreachable")  # pragma: no cover


def _chunk_steps(max_steps: int, every: int | None, progress) -> int:
    """Steps one compiled call runs: as many as its history buffer can hold, or until the next progress update."""
    chunk = max_steps
    if every is not None:
        chunk = min(chunk, (HISTORY_ROWS - 2) * every)
    if progress is not None:
        chunk = min(chunk, PROGRESS_CHUNK)
    return chunk


def _run(tree, names, start, *, optimizer, lr, momentum, dtype, tol, maximize, max_steps, every, jit, progress):
    t0 = time.perf_counter()
    runner = _Runner(tree, names, start, optimizer=optimizer, lr=lr, momentum=momentum, dtype=dtype, tol=tol,
                     maximize=maximize, max_steps=max_steps, every=every, jit=jit)
    chunk = _chunk_steps(max_steps, every, progress)
    k, stall, moved = 0, 0, False
    trajectory = Trajectory(every or max_steps + 1)  # bounded: thinned evenly past TRAJECTORY_MAX_ROWS rows
    while True:
        k_out, status, stall_out, moved_out, rows = runner.run_chunk(k, min(k + chunk, max_steps), stall, moved)
        k, stall, moved = int(k_out.numpy()), int(stall_out.numpy()), bool(moved_out.numpy())
        status = int(status.numpy())
        trajectory.add(runner.rows(int(rows.numpy())), last=status != PAUSED)
        if progress is not None:
            progress(k, max_steps)
        if status != PAUSED:
            break
    history = trajectory.rows
    last = history[-1]
    run = DescentRun(
        optimizer=optimizer, learning_rate=lr, status=STATUS_NAME[status], steps=k, final=last.point,
        value=last.value, gradient_norm=last.gradient_norm, message="",
        history=history if every is not None else [],
        compiled="tf.function+XLA" if runner.jit else "tf.function",
    )
    _explain_stop(run, status, k, tol, dtype, maximize, runner.window.numpy(), start, names)
    run.seconds = time.perf_counter() - t0
    return run
