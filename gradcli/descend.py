"""``descend``: gradient descent the two ways the TensorFlow guide shows, compiled, with guardrails.

The guide's hand-written loop (``x.assign_sub(lr * dz_dx)``, optimizer ``manual``) and Keras 3's
optimizers (``optimizer.apply_gradients``) run inside one ``tf.function`` per run: a TF while-loop
whose condition holds the stopping tests, so a step costs microseconds instead of the eager loop's
milliseconds. Long runs (more than ``JIT_MIN_STEPS`` steps allowed) are also compiled by XLA, which
costs a fraction of a second once and makes each step cost well under a microsecond.

Every step evaluates f and its gradient at the current point x_k and then decides, in this order:
- the point, the value or the gradient is not finite -> ``diverged`` (``unbounded`` when the value
  is -inf at a finite point: f fell to -inf, e.g. log at 0);
- the value fell more than ``VALUE_BOUND`` x max(1, |f(start)|) below f(start) -> ``unbounded``;
  rose that far above it -> ``diverged`` (descent should never go up that much);
- the gradient norm is below ``--tol`` -> ``converged``;
- the point has not changed (bit for bit) for ``STALL_STEPS`` steps after having moved ->
  ``converged``, with a note: the steps have fallen below the dtype's precision;
- k reached ``--steps`` -> ``max_steps``, then looked at more closely (:func:`_classify_stop`):
  ``oscillating`` when the last steps bounce without shrinking, ``unbounded`` when the value keeps
  falling at an undiminished rate while the point runs away;
- otherwise one update, k += 1.

With ``--maximize`` the loop minimises -f and everything is reported in terms of f.
TensorFlow (and with it Keras) is imported only inside the functions that run the loop.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from gradcli.errors import UsageError
from gradcli.expr import Expression, parse
from gradcli.finite_diff import MACHINE_EPSILON
from gradcli.points import check_point_fits, parse_point
from gradcli.results import clean, shortest
from gradcli.gradient import check_dtype
from gradcli import symbolic

# Keras 3 optimizer classes by CLI name; "manual" is the guide's hand-written loop.
OPTIMIZERS = ("manual", "sgd", "momentum", "nesterov", "adam", "adamw", "rmsprop", "adagrad", "adadelta",
              "adamax", "nadam", "lion", "ftrl")
_KERAS_CLASSES = {
    "sgd": "SGD", "momentum": "SGD", "nesterov": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop",
    "adagrad": "Adagrad", "adadelta": "Adadelta", "adamax": "Adamax", "nadam": "Nadam", "lion": "Lion",
    "ftrl": "Ftrl",
}
STATUSES = ("converged", "max_steps", "diverged", "unbounded", "oscillating")

DEFAULT_LEARNING_RATE = 0.1  # the guide's
DEFAULT_STEPS = 1000
DEFAULT_MOMENTUM = 0.9
# Gradient-norm tolerance: far below what matters in practice, above what each dtype's rounding leaves
# (float32 gradients carry noise ~1e-7 x the size of the terms).
DEFAULT_TOL = {"float64": 1e-10, "float32": 1e-6}
DEFAULT_STATIONARY_TIME_LIMIT = 2.0
# Largest --steps / --every: far beyond any run that could finish, well inside the loop's int64 counter.
MAX_STEP_COUNT = 10**15
# Largest --stationary-timeout (s): the waits below it must fit the OS's timeouts (~24 days).
MAX_STATIONARY_TIME_LIMIT = 1e6
# How far the value may move from f(start), relative to max(1, |f(start)|), before the run is called
# diverged (upwards) or unbounded (downwards): no honest descent travels 30 orders of magnitude.
VALUE_BOUND = 1e30
# A point unchanged for this many consecutive steps is a fixed point of the iteration in this dtype.
STALL_STEPS = 100
# Steps kept for the post-mortem of a run that ran out of steps (oscillation, runaway).
WINDOW = 32
# Runs allowed more steps than this are compiled by XLA as well (compiling costs ~0.3-0.8 s).
JIT_MIN_STEPS = 5000
# History rows read back per compiled call; a longer trajectory is read in several calls.
HISTORY_ROWS = 4096
# Without a progress bar, one compiled call runs at most this many steps (a bound on memory, not time).
PROGRESS_CHUNK = 10_000

# Loop status codes inside the compiled loop.
_RUNNING, _CONVERGED, _MAX_STEPS, _DIVERGED, _UNBOUNDED, _STALLED, _PAUSED = range(7)
_STATUS_NAME = {_CONVERGED: "converged", _MAX_STEPS: "max_steps", _DIVERGED: "diverged",
                _UNBOUNDED: "unbounded", _STALLED: "converged"}


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------
@dataclass
class HistoryRow:
    step: int
    point: dict[str, float]
    value: float | None
    gradient_norm: float | None

    def to_dict(self) -> dict:
        return {"step": self.step, "point": self.point, "value": self.value, "gradient_norm": self.gradient_norm}


@dataclass
class StationaryPoint:
    point: dict[str, float]
    value: float | None
    kind: str | None  # minimum | maximum | saddle | degenerate | None (Hessian undefined there)
    distance: float | None = None  # from where the run ended

    def to_dict(self) -> dict:
        return {"point": self.point, "value": self.value, "kind": self.kind, "distance": self.distance}


@dataclass
class DescentRun:
    optimizer: str
    learning_rate: float
    status: str
    steps: int  # updates made
    final: dict[str, float]
    value: float | None
    gradient_norm: float | None
    message: str
    stopped_at: int | None = None  # the step that diverged or went unbounded
    suggested_learning_rate: float | None = None
    end_kind: str | None = None  # what the Hessian says about the end point, when it is stationary
    nearest_stationary: StationaryPoint | None = None
    history: list[HistoryRow] = field(default_factory=list)
    compiled: str = "tf.function"  # or "tf.function+XLA"
    seconds: float = 0.0

    def to_dict(self, with_history: bool) -> dict:
        doc: dict[str, Any] = {
            "optimizer": self.optimizer,
            "learning_rate": self.learning_rate,
            "steps": self.steps,
            "status": self.status,
            "final": self.final,
            "value": self.value,
            "gradient_norm": self.gradient_norm,
            "message": self.message,
            "stopped_at": self.stopped_at,
            "suggested_learning_rate": self.suggested_learning_rate,
            "end_point_kind": self.end_kind,
            "nearest_stationary_point": None if self.nearest_stationary is None else self.nearest_stationary.to_dict(),
            "compiled": self.compiled,
            "seconds": self.seconds,
        }
        if with_history:
            doc["history"] = [h.to_dict() for h in self.history]
        return doc


@dataclass
class DescentReport:
    """``gradcli descend``: one or more optimizers racing from the same start."""

    expression: str
    variables: list[str]
    start: dict[str, float]
    dtype: str
    maximize: bool
    learning_rate: float
    max_steps: int
    tol: float
    momentum: float
    every: int | None  # --every as given: JSON carries the history only then
    runs: list[DescentRun]
    stationary_points: list[StationaryPoint] | None = None  # None: SymPy gave no answer in time
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "descend"

    def to_dict(self) -> dict:
        return clean({
            "command": self.command,
            "expression": self.expression,
            "start": self.start,
            "dtype": self.dtype,
            "maximize": self.maximize,
            "learning_rate": self.learning_rate,
            "max_steps": self.max_steps,
            "tol": self.tol,
            "momentum": self.momentum,
            "every": self.every,
            "runs": [r.to_dict(self.every is not None) for r in self.runs],
            "stationary_points": None if self.stationary_points is None
            else [s.to_dict() for s in self.stationary_points],
            "warnings": self.warnings,
            "notes": self.notes,
        })


# ---------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------
def parse_optimizers(text: str | None) -> list[str]:
    """``sgd,adam`` -> ["sgd", "adam"] (in the order given); ``all`` -> every optimizer."""
    if text is None:
        return ["manual"]
    if not text.strip():
        raise UsageError("--optimizer is empty: name one or more, e.g. --optimizer manual,sgd")
    if text.strip().lower() == "all":
        return list(OPTIMIZERS)
    chosen: list[str] = []
    for part in text.split(","):
        name = part.strip().lower()
        if name not in OPTIMIZERS:
            raise UsageError(f"--optimizer: unknown optimizer '{part.strip()}' (choose from {', '.join(OPTIMIZERS)}, "
                             "or all)")
        if name in chosen:
            raise UsageError(f"--optimizer: '{name}' is given twice")
        chosen.append(name)
    return chosen


def _positive(name: str, value: float) -> float:
    if value is None or not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name} must be a positive finite number, not {value!r}")
    return float(value)


def check_options(*, lr: float, steps: int, tol: float | None, every: int | None, momentum: float | None,
                  dtype: str) -> tuple[float, int, float, int | None, float]:
    lr = _positive("--lr", lr)
    if steps is None or steps < 1:
        raise UsageError(f"--steps must be at least 1, not {steps!r}")
    if steps > MAX_STEP_COUNT:
        raise UsageError(f"--steps must be at most {MAX_STEP_COUNT:.0e}, not {steps!r}")
    if tol is None:
        tol = DEFAULT_TOL[dtype]
    if not math.isfinite(tol) or tol < 0:
        raise UsageError(f"--tol must be a finite number >= 0, not {tol!r}")
    if every is not None and every < 1:
        raise UsageError(f"--every must be at least 1, not {every!r}")
    if every is not None and every > MAX_STEP_COUNT:
        raise UsageError(f"--every must be at most {MAX_STEP_COUNT:.0e}, not {every!r}")
    if momentum is None:
        momentum = DEFAULT_MOMENTUM
    if not math.isfinite(momentum) or not 0 <= momentum < 1:
        raise UsageError(f"--momentum must be in [0, 1), not {momentum!r}")
    return lr, int(steps), float(tol), every, float(momentum)


def check_stationary_time_limit(seconds: float | None) -> float:
    """--stationary-timeout: 0 (skip SymPy) or a finite number of seconds up to MAX_STATIONARY_TIME_LIMIT."""
    if seconds is None or not math.isfinite(seconds) or not 0 <= seconds <= MAX_STATIONARY_TIME_LIMIT:
        raise UsageError(f"--stationary-timeout must be a number of seconds from 0 (skip) to "
                         f"{MAX_STATIONARY_TIME_LIMIT:g}, not {seconds!r}")
    return float(seconds)


def start_point(expression: Expression, specs: list[str] | str | None,
                dtype: str = "float64") -> tuple[dict[str, float], list[str]]:
    """``--from``: values for the expression's variables; the ones left out start at 0 (returned)."""
    point = parse_point(specs, option="--from", required=False)
    check_point_fits(point, dtype, option="--from")
    extra = [n for n in point.values if n not in expression.variables]
    if extra:
        raise UsageError(f"--from: '{extra[0]}' is not a variable of {expression.text} "
                         f"(its variables: {', '.join(expression.variables)})")
    defaulted = [v for v in expression.variables if v not in point.values]
    # The order the user wrote in --from (x before y in Rosenbrock's 100*(y-x**2)**2+(1-x)**2), then the rest.
    values = dict(point.values)
    values.update({v: 0.0 for v in defaulted})
    return values, defaulted


# ---------------------------------------------------------------------------------------------
# The compiled loop
# ---------------------------------------------------------------------------------------------
def optimizer_hyperparameters(name: str, momentum: float, cls=None) -> dict[str, float]:
    """The optimizer's float hyper-parameters (momentum, betas, epsilon, rho, ...) as gradcli sets them:
    Keras' defaults, with ``momentum`` for momentum and nesterov. The learning rate is not among them."""
    import inspect

    if cls is None:
        from gradcli.tape import load_tensorflow

        load_tensorflow()  # quiet import first: Keras imports TensorFlow
        import keras

        cls = getattr(keras.optimizers, _KERAS_CLASSES[name])
    params: dict[str, float] = {}
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name in ("learning_rate", "ema_momentum") or type(p.default) is not float:
            continue
        params[p.name] = p.default
    if name in ("momentum", "nesterov"):
        params["momentum"] = float(momentum)
    return params


# Hyper-parameters Keras 3 turns into tensors by ``ops.cast(value, dtype)`` (or a Constant initializer),
# which rounds a Python float through float32; numpy.float64 keeps them exact. The others (epsilon, rho,
# Ftrl's) only meet tensors in arithmetic, which converts a Python float straight to the tensor's dtype
# (and Adadelta's ``rho * variable`` fails in a graph when rho is a numpy scalar).
_CAST_HYPERPARAMETERS = frozenset({"momentum", "beta_1", "beta_2", "weight_decay", "initial_accumulator_value"})


def make_optimizer(name: str, lr: float, momentum: float, dtype: str):
    """A Keras 3 optimizer whose learning rate and hyper-parameters are held in ``dtype``.

    Keras keeps the learning rate in a ``floatx()`` (float32) variable by default, so a float64 run
    would step with 0.10000000149011612 instead of 0.1 and part from the hand-written loop after a few
    steps; building it under ``floatx = dtype`` keeps the two identical. Its updates also
    ``ops.cast(self.momentum, dtype)`` (and beta_1, beta_2, ...), which turns a Python float into a
    float32 tensor first (0.9 -> 0.8999999761581421); handing those over as ``numpy.float64`` (still
    a ``float``) keeps them exact in a float64 run. (Nadam's fixed decay 0.96 is cast the same way
    inside Keras and stays rounded through float32.)
    """
    from gradcli.tape import load_tensorflow

    load_tensorflow()  # quiet import first: Keras imports TensorFlow
    import keras

    cls = getattr(keras.optimizers, _KERAS_CLASSES[name])
    kwargs: dict[str, Any] = {"learning_rate": float(lr)}
    hyper = optimizer_hyperparameters(name, momentum, cls)
    if dtype == "float64":
        import numpy as np

        kwargs.update({k: np.float64(v) if k in _CAST_HYPERPARAMETERS else v for k, v in hyper.items()})
    elif name in ("momentum", "nesterov"):
        kwargs["momentum"] = hyper["momentum"]
    if name == "nesterov":
        kwargs["nesterov"] = True
    saved = keras.config.floatx()
    keras.config.set_floatx(dtype)
    try:
        return cls(**kwargs)
    finally:
        keras.config.set_floatx(saved)


class _Runner:
    """One run's variables, optimizer and compiled chunk function."""

    def __init__(self, tree, names: list[str], start: dict[str, float], *, optimizer: str, lr: float,
                 momentum: float, dtype: str, tol: float, maximize: bool, max_steps: int, every: int | None,
                 jit: bool):
        from gradcli.evaluate import compile_expression
        from gradcli.tape import load_tensorflow, tf_backend

        tf = load_tensorflow()
        self.tf = tf
        self.names = names
        self.dtype = dtype
        tdt = tf.as_dtype(dtype)
        n = len(names)
        fn = compile_expression(tree, tf_backend(dtype))
        self.variables = [tf.Variable(start[v], dtype=tdt, name=v) for v in names]
        env = dict(zip(names, self.variables))
        sign = -1.0 if maximize else 1.0
        self.optimizer = None if optimizer == "manual" else make_optimizer(optimizer, lr, momentum, dtype)
        if self.optimizer is not None:
            self.optimizer.build(self.variables)  # slots exist before tracing: no variables created in the loop
        f0 = float(sign * _as_float(fn({k: tf.constant(v, tdt) for k, v in start.items()})))
        scale = max(1.0, abs(f0)) if math.isfinite(f0) else 1.0
        hi = tf.constant(f0 + VALUE_BOUND * scale if math.isfinite(f0) else math.inf, tdt)
        lo = tf.constant(f0 - VALUE_BOUND * scale if math.isfinite(f0) else -math.inf, tdt)
        tol_t = tf.constant(tol, tdt)
        lr_t = tf.constant(lr, tdt)
        sign_t = tf.constant(sign, tdt)
        every_t = tf.constant(every or max_steps + 1, tf.int64)
        max_t = tf.constant(max_steps, tf.int64)
        stall_on = tf.constant(tol > 0)
        # Rows: the point, then f, then |grad|.
        self.history = tf.Variable(tf.zeros([HISTORY_ROWS, n + 2], tdt), trainable=False)
        self.history_steps = tf.Variable(tf.zeros([HISTORY_ROWS], tf.int64), trainable=False)
        self.window = tf.Variable(tf.fill([WINDOW, n + 2], tf.constant(math.nan, tdt)), trainable=False)
        variables = self.variables
        opt = self.optimizer

        def objective():
            return sign_t * tf.convert_to_tensor(fn(env), dtype=tdt)

        def update(grads):
            if opt is None:
                for var, g in zip(variables, grads):
                    var.assign_sub(lr_t * g)  # the guide's x.assign_sub(learning_rate * dz_dx)
            else:
                opt.apply_gradients(zip(grads, variables))

        def record(row, k, values):
            # Scatter, not slice assignment: XLA needs slice bounds known when compiling.
            self.history.scatter_nd_update([[row]], [values])
            self.history_steps.scatter_nd_update([[row]], [k])
            return row + 1

        def chunk(k, k_end, stall, moved):
            def cond(k, status, stall, moved, row):
                return tf.equal(status, _RUNNING)

            def body(k, status, stall, moved, row):
                x = tf.stack([tf.convert_to_tensor(v) for v in variables])
                with tf.GradientTape() as tape:
                    z = objective()
                grads = tape.gradient(z, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
                g = tf.stack(grads)
                gnorm = tf.norm(g)
                x_ok = tf.reduce_all(tf.math.is_finite(x))
                finite = tf.logical_and(tf.logical_and(x_ok, tf.math.is_finite(z)),
                                        tf.reduce_all(tf.math.is_finite(g)))
                fell_to_minus_inf = tf.logical_and(x_ok, tf.equal(z, tf.constant(-math.inf, tdt)))
                status = tf.where(
                    tf.logical_not(finite), tf.where(fell_to_minus_inf, _UNBOUNDED, _DIVERGED),
                    tf.where(z < lo, _UNBOUNDED,
                    tf.where(z > hi, _DIVERGED,
                    tf.where(gnorm < tol_t, _CONVERGED,
                    tf.where(tf.logical_and(stall_on, tf.logical_and(moved, stall >= STALL_STEPS)), _STALLED,
                    tf.where(k >= max_t, _MAX_STEPS,
                    tf.where(k >= k_end, _PAUSED, _RUNNING)))))))
                values = tf.concat([x, tf.reshape(sign_t * z, [1]), tf.reshape(gnorm, [1])], 0)
                self.window.scatter_nd_update([[k % WINDOW]], [values])
                stopping = tf.logical_and(tf.not_equal(status, _RUNNING), tf.not_equal(status, _PAUSED))
                wanted = tf.logical_and(tf.not_equal(status, _PAUSED),
                                        tf.logical_or(tf.equal(k % every_t, 0), stopping))
                row = tf.cond(wanted, lambda: record(row, k, values), lambda: row)

                def step():
                    update(grads)
                    x_new = tf.stack([tf.convert_to_tensor(v) for v in variables])
                    same = tf.reduce_all(tf.equal(x_new, x))
                    return k + 1, tf.where(same, stall + 1, tf.zeros_like(stall)), \
                        tf.logical_or(moved, tf.logical_not(same))

                k, stall, moved = tf.cond(tf.equal(status, _RUNNING), step, lambda: (k, stall, moved))
                return k, status, stall, moved, row

            return tf.while_loop(cond, body, [k, tf.constant(_RUNNING), stall, moved, tf.constant(0)],
                                 maximum_iterations=None)

        self.jit = jit
        self._chunk = tf.function(chunk, jit_compile=jit)
        self._fallback = tf.function(chunk, jit_compile=False)

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


def _run(tree, names, start, *, optimizer, lr, momentum, dtype, tol, maximize, max_steps, every, jit, progress):
    t0 = time.perf_counter()
    runner = _Runner(tree, names, start, optimizer=optimizer, lr=lr, momentum=momentum, dtype=dtype, tol=tol,
                     maximize=maximize, max_steps=max_steps, every=every, jit=jit)
    # One compiled call runs as many steps as its history buffer can hold, or until the next progress update.
    chunk = max_steps
    if every is not None:
        chunk = min(chunk, (HISTORY_ROWS - 2) * every)
    if progress is not None:
        chunk = min(chunk, PROGRESS_CHUNK)
    k, stall, moved = 0, 0, False
    history: list[HistoryRow] = []
    n = len(names)
    while True:
        k_out, status, stall_out, moved_out, rows = runner.run_chunk(k, min(k + chunk, max_steps), stall, moved)
        rows = int(rows.numpy())
        if rows:
            data = runner.history[:rows].numpy()
            steps_ = runner.history_steps[:rows].numpy()
            for s, r in zip(steps_, data):
                history.append(HistoryRow(int(s), {v: shortest(float(r[i]), dtype) for i, v in enumerate(names)},
                                          shortest(float(r[n]), dtype), shortest(float(r[n + 1]), dtype)))
        k, stall, moved = int(k_out.numpy()), int(stall_out.numpy()), bool(moved_out.numpy())
        status = int(status.numpy())
        if progress is not None:
            progress(k, max_steps)
        if status != _PAUSED:
            break
    last = history[-1]
    window = runner.window.numpy()
    run = DescentRun(
        optimizer=optimizer, learning_rate=lr, status=_STATUS_NAME[status], steps=k, final=last.point,
        value=last.value, gradient_norm=last.gradient_norm, message="",
        history=history if every is not None else [],
        compiled="tf.function+XLA" if runner.jit else "tf.function",
    )
    _describe(run, status, k, tol, dtype, maximize, window, start, names)
    run.seconds = time.perf_counter() - t0
    return run


def _describe(run: DescentRun, status: int, k: int, tol: float, dtype: str, maximize: bool, window, start,
              names) -> None:
    """Fill in the status message; look closer at a run that used up its steps."""
    if status == _CONVERGED:
        run.message = f"gradient norm {run.gradient_norm:.3g} < tol {tol:g} after {k} steps"
    elif status == _STALLED:
        run.message = (f"the point stopped changing in {dtype} at step {k} (the steps are below its precision); "
                       f"gradient norm {run.gradient_norm:.3g}")
    elif status == _DIVERGED and k == 0:
        run.stopped_at = 0
        run.message = "f or its gradient is not finite at the start point: choose another --from"
    elif status == _DIVERGED:
        run.stopped_at = k
        if run.value is not None and math.isfinite(run.value) and run.gradient_norm is not None and all(
                v is not None and math.isfinite(v) for v in run.final.values()):
            why = (f"f {'fell' if maximize else 'rose'} more than {VALUE_BOUND:g} x max(1, |f(start)|) "
                   f"{'below' if maximize else 'above'} its value at the start")
        else:
            why = "the point, value or gradient is not finite"
        run.message = f"diverged at step {k}: {why}"
    elif status == _UNBOUNDED and k == 0:
        # e.g. log(x) from x=0: f is already infinite where the descent would start
        run.stopped_at = 0
        run.message = "f is infinite at the start point: choose another --from"
    elif status == _UNBOUNDED:
        run.stopped_at = k
        direction = "above" if maximize else "below"
        run.message = (f"unbounded {direction}: f passed {run.value if run.value is not None else '-inf'} "
                       f"at step {k} and keeps going")
    elif status == _MAX_STEPS and run.gradient_norm == 0:
        run.status = "converged"
        run.message = f"the gradient is exactly 0 after {k} steps"
    elif status == _MAX_STEPS:
        run.message = f"stopped at --steps {k} with gradient norm {run.gradient_norm:.3g} (not below tol {tol:g})"
        verdict = _classify_stop(window, k, dtype, maximize, start, names)
        if verdict is not None:
            run.status, detail = verdict
            run.message = f"{detail} after {k} steps (gradient norm {run.gradient_norm:.3g})"


def _classify_stop(window, k: int, dtype: str, maximize: bool, start: dict[str, float], names):
    """Look at the last ``WINDOW`` evaluations of a run that hit --steps.

    oscillating: in some coordinate every step in the window reverses the previous one, the last
    step is at least half as long as the first (not dying out), and longer than rounding noise.
    unbounded: f fell at every step of the window, no slower at the end than at the start, the
    gradient did not shrink, and the point is far from where it started and still moving away.
    """
    import numpy as np

    if k + 1 < WINDOW:
        return None
    order = [(k + 1 + i) % WINDOW for i in range(WINDOW)]  # oldest first; row k % WINDOW is the newest
    w = window[order]
    n = len(names)
    if not np.all(np.isfinite(w)):
        return None
    points, values, gnorms = w[:, :n], w[:, n], w[:, n + 1]
    eps = MACHINE_EPSILON[dtype]
    deltas = np.diff(points, axis=0)
    for i, name in enumerate(names):
        d = deltas[:, i]
        noise = 1e3 * eps * max(1.0, float(np.max(np.abs(points[:, i]))))
        if np.all(d[:-1] * d[1:] < 0) and abs(d[-1]) >= 0.5 * abs(d[0]) and abs(d[-1]) > noise:
            return "oscillating", (f"oscillating in {name}: every step reverses the last one "
                                   f"(amplitude {abs(d[-1]):.3g}, not shrinking)")
    f = -values if maximize else values  # the minimised quantity
    drops = -np.diff(f)
    norms = np.linalg.norm(points, axis=1)
    start_norm = math.sqrt(sum(v * v for v in start.values()))
    if (np.all(drops > 0) and drops[-1] >= drops[0] and gnorms[-1] >= gnorms[0]
            and np.all(np.diff(norms) > 0) and norms[-1] > 2 * max(1.0, start_norm)):
        direction = "above" if maximize else "below"
        return "unbounded", (f"unbounded {direction}, by the look of it: f keeps changing by at least "
                             f"{drops[-1]:.3g} a step while the point runs away")
    return None


# ---------------------------------------------------------------------------------------------
# Curvature: the Hessian by nested tapes (for learning-rate advice and the kind of the end point)
# ---------------------------------------------------------------------------------------------
def hessian_at(tree, names: list[str], point: dict[str, float]):
    """(gradient, Hessian) of ``tree`` at ``point`` in float64, by nested GradientTapes as the guide does."""
    from gradcli.evaluate import compile_expression
    from gradcli.tape import load_tensorflow, tf_backend

    tf = load_tensorflow()
    fn = compile_expression(tree, tf_backend("float64"))
    x = tf.Variable([point[v] for v in names], dtype=tf.float64)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            z = tf.convert_to_tensor(fn({v: x[i] for i, v in enumerate(names)}), dtype=tf.float64)
        g = inner.gradient(z, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    h = outer.jacobian(g, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return [float(v) for v in g.numpy()], [[float(v) for v in row] for row in h.numpy()]


def stability_limit(optimizer: str, lam_max: float, momentum: float) -> float | None:
    """The largest learning rate for which the optimizer is stable on a quadratic with top curvature λmax.

    Plain descent: 2/λmax. Heavy-ball momentum μ: 2(1+μ)/λmax. Nesterov (Keras' form): 2(1+μ)/((1+2μ)λmax).
    Adaptive optimizers rescale each step, so no such bound applies to them.
    """
    if lam_max is None or lam_max <= 0:
        return None
    if optimizer in ("manual", "sgd"):
        return 2.0 / lam_max
    if optimizer == "momentum":
        return 2.0 * (1 + momentum) / lam_max
    if optimizer == "nesterov":
        return 2.0 * (1 + momentum) / ((1 + 2 * momentum) * lam_max)
    return None


def _advise(run: DescentRun, tree, names, at: dict[str, float], where: str, momentum: float,
            maximize: bool = False) -> None:
    """Suggest a learning rate from the Hessian at ``at``: half the stability limit, where one is defined.

    The limit is that of the minimised function: -f's Hessian (-H) when maximising.
    """
    from gradcli.analysis import analyse_hessian

    limit = None
    lam = None
    try:
        g, h = hessian_at(tree, names, at)
        if maximize:
            g, h = [-v for v in g], [[-v for v in row] for row in h]
        if all(math.isfinite(v) for row in h for v in row):
            analysis = analyse_hessian(h, g)
            lam = max(analysis.eigenvalues) if analysis.eigenvalues else None
            limit = stability_limit(run.optimizer, lam, momentum)
    except Exception:  # advice is optional; a Hessian TF cannot compute leaves the generic advice
        limit = None
    if limit is not None:
        run.suggested_learning_rate = float(f"{limit / 2:.3g}")
        bound = "2/λmax" if run.optimizer in ("manual", "sgd") else "its stability limit"
        hessian = "the Hessian of -f" if maximize else "the Hessian"
        run.message += (f"; {hessian} at the {where} has λmax = {lam:.4g}, so {bound} = {limit:.4g}: "
                        f"try --lr {run.suggested_learning_rate:g} (half of it)")
    else:
        run.suggested_learning_rate = float(f"{run.learning_rate / 10:.3g}")
        reason = ("this optimizer rescales its steps, so 2/λmax does not bound it" if lam is not None and lam > 0
                  else "the Hessian there gives no bound (no positive curvature)")
        run.message += f"; try a smaller learning rate, e.g. --lr {run.suggested_learning_rate:g} ({reason})"


def _classify_end(run: DescentRun, tree, names, dtype: str) -> None:
    from gradcli.analysis import analyse_hessian

    try:
        g, h = hessian_at(tree, names, run.final)
    except Exception:
        return
    if not all(math.isfinite(v) for row in h for v in row + g):
        return
    scale = max(1.0, abs(run.value or 0.0))
    gtol = max(1e3 * MACHINE_EPSILON[dtype], math.sqrt(MACHINE_EPSILON[dtype])) * scale
    run.end_kind = analyse_hessian(h, g, dtype=dtype, gradient_tolerance=gtol).critical_point


# ---------------------------------------------------------------------------------------------
# Stationary points by SymPy
# ---------------------------------------------------------------------------------------------
MAX_STATIONARY = 50


def solve_stationary_points(tree, names: list[str]) -> tuple[list[StationaryPoint], list[str]]:
    """Real solutions of grad f = 0 that SymPy finds, each with its kind; returns (points, notes).

    Unbounded in time: run it through :func:`start_stationary_points` (module-level, so that a
    pre-started worker process can be handed it).
    """
    import sympy as sp

    from gradcli.analysis import analyse_hessian

    syms = symbolic.symbols_for(names)
    f = symbolic.to_sympy(tree, syms)
    xs = [syms[v] for v in names]
    grads = [sp.diff(f, s) for s in xs]
    notes: list[str] = []
    try:
        solutions = sp.solve(grads, xs, dict=True)
    except (NotImplementedError, ValueError, TypeError) as exc:
        return [], [f"SymPy cannot solve grad f = 0 ({type(exc).__name__})"]
    found = []
    families = 0
    for sol in solutions[:MAX_STATIONARY]:
        if any(s not in sol for s in xs) or any(sol[s].free_symbols for s in xs):
            families += 1  # a curve or surface of stationary points: no single nearest point to offer
            continue
        point = {v: symbolic.value_at(sol[syms[v]], {}) for v in names}
        if any(x is None for x in point.values()):
            continue  # complex or undefined
        subs = {s: sol[s] for s in xs}
        hess = [[symbolic.value_at(sp.diff(gi, s), subs) for s in xs] for gi in grads]
        kind = None
        if all(x is not None for row in hess for x in row):
            kind = analyse_hessian(hess, [0.0] * len(xs)).critical_point
        found.append(StationaryPoint(point, _exact_value(f, subs), kind))
    if families:
        notes.append(f"SymPy found {families} continuous set(s) of stationary points; they are not listed")
    if len(solutions) > MAX_STATIONARY:
        notes.append(f"only the first {MAX_STATIONARY} of SymPy's {len(solutions)} solutions are used")
    return found, notes


class _StationarySearch:
    """SymPy's search for stationary points, started before the runs and collected after them.

    Started before TensorFlow is imported, it runs in a forked process on the other core (SymPy's
    big-integer work holds the GIL, so a thread could neither run alongside the descent nor be
    stopped), and that process is killed at the deadline even while the runs are still going.
    """

    def __init__(self, tree, names: list[str], time_limit: float):
        import threading

        self.pending = symbolic.start_bounded(solve_stationary_points, time_limit, tree, list(names), parallel=True)
        self.timer = None
        if getattr(self.pending, "process", None) is not None:
            self.timer = threading.Timer(time_limit, self.stop)
            self.timer.daemon = True
            self.timer.start()

    def stop(self) -> None:
        process = getattr(self.pending, "process", None)
        if process is not None and process.is_alive():
            process.kill()

    def result(self) -> tuple[list[StationaryPoint], list[str]]:
        """(points, notes), or :class:`symbolic.SymbolicTimeout` once the time limit has passed."""
        try:
            return self.pending.result()
        finally:
            if self.timer is not None:
                self.timer.cancel()
            self.stop()


def start_stationary_points(tree, names: list[str], time_limit: float) -> _StationarySearch:
    return _StationarySearch(tree, names, time_limit)


def stationary_points(tree, names: list[str], time_limit: float) -> tuple[list[StationaryPoint], list[str]]:
    """Real solutions of grad f = 0 that SymPy finds within ``time_limit`` s, each with its kind.

    Returns (points, notes). Raises :class:`symbolic.SymbolicTimeout` when SymPy takes too long.
    """
    return start_stationary_points(tree, names, time_limit).result()


def _exact_value(f, subs) -> float | None:
    """f at a solution SymPy gave exactly: substituting first gives exact zeros (f(3, -1) = 0, not
    6.6e-229 from evaluating (3 - 3)**2 numerically); numerical evaluation is the fallback."""
    exact = f.xreplace(subs)
    if exact.is_number:
        return symbolic.value_at(exact, {})
    return symbolic.value_at(f, subs)


def _nearest(points: list[StationaryPoint], end: dict[str, float]) -> StationaryPoint | None:
    if not points or any(v is None or not math.isfinite(v) for v in end.values()):
        return None
    best = min(points, key=lambda p: sum((p.point[k] - end[k]) ** 2 for k in end))
    distance = math.sqrt(sum((best.point[k] - end[k]) ** 2 for k in end))
    return StationaryPoint(best.point, best.value, best.kind, distance)


# ---------------------------------------------------------------------------------------------
# The command's core
# ---------------------------------------------------------------------------------------------
@dataclass
class DescentPlan:
    """A checked request: what ``descend`` will run (or print as a program with --show-code)."""

    expression: Expression
    names: list[str]
    start: dict[str, float]
    defaulted: list[str]
    optimizers: list[str]
    lr: float
    steps: int
    tol: float
    momentum: float
    momentum_given: bool
    every: int | None
    dtype: str
    maximize: bool


def plan_descent(expression: str, *, start: list[str] | str | None = None, optimizers: str | None = "manual",
                 lr: float = DEFAULT_LEARNING_RATE, steps: int = DEFAULT_STEPS, tol: float | None = None,
                 maximize: bool = False, dtype: str = "float64", momentum: float | None = None,
                 every: int | None = None) -> DescentPlan:
    """Check every option (usage errors, exit 2) before anything is computed."""
    dtype = check_dtype(dtype)
    names_opt = parse_optimizers(optimizers)
    momentum_given = momentum is not None
    lr, steps, tol, every, momentum = check_options(lr=lr, steps=steps, tol=tol, every=every, momentum=momentum,
                                                    dtype=dtype)
    expr = parse(expression)
    if not expr.variables:
        raise UsageError(f"{expr.text} has no variables: there is nothing to descend on")
    point, defaulted = start_point(expr, start, dtype)
    return DescentPlan(expr, list(point), point, defaulted, names_opt, lr, steps, tol, momentum, momentum_given,
                       every, dtype, maximize)


def compute_descent(expression: str, *, start: list[str] | str | None = None, optimizers: str | None = "manual",
                    lr: float = DEFAULT_LEARNING_RATE, steps: int = DEFAULT_STEPS, tol: float | None = None,
                    maximize: bool = False, dtype: str = "float64", momentum: float | None = None,
                    every: int | None = None, record_every: int | None = None,
                    stationary_time_limit: float = DEFAULT_STATIONARY_TIME_LIMIT, jit: bool | None = None,
                    progress_factory: Callable[[str, int], Callable[[int, int], None] | None] | None = None,
                    ) -> DescentReport:
    """Everything ``gradcli descend`` shows, as a :class:`DescentReport`.

    ``every``: --every as given (the JSON's history); ``record_every``: how often to record the
    trajectory for a plot or CSV when --every is not given. ``progress_factory(optimizer, steps)``
    returns a ``progress(done, total)`` callback or None.
    """
    plan = plan_descent(expression, start=start, optimizers=optimizers, lr=lr, steps=steps, tol=tol,
                        maximize=maximize, dtype=dtype, momentum=momentum, every=every)
    if record_every is not None and record_every < 1:
        raise UsageError(f"record interval must be at least 1, not {record_every!r}")
    return run_plan(plan, record_every=record_every, stationary_time_limit=stationary_time_limit, jit=jit,
                    progress_factory=progress_factory)


def run_plan(plan: DescentPlan, *, record_every: int | None = None,
             stationary_time_limit: float = DEFAULT_STATIONARY_TIME_LIMIT, jit: bool | None = None,
             progress_factory: Callable[[str, int], Callable[[int, int], None] | None] | None = None,
             ) -> DescentReport:
    expr, names, point, maximize = plan.expression, plan.names, plan.start, plan.maximize
    report = DescentReport(expression=expr.text, variables=names, start=point, dtype=plan.dtype, maximize=maximize,
                           learning_rate=plan.lr, max_steps=plan.steps, tol=plan.tol, momentum=plan.momentum,
                           every=plan.every, runs=[])
    if plan.defaulted:
        report.notes.append(f"starting at {', '.join(f'{v}=0' for v in plan.defaulted)} (not given in --from)")
    if plan.momentum_given and not any(o in ("momentum", "nesterov") for o in plan.optimizers):
        report.notes.append("--momentum only applies to the momentum and nesterov optimizers")
    if "adamw" in plan.optimizers:
        report.notes.append("adamw applies Keras' default weight decay (0.004), which moves its minimum slightly")

    stationary_time_limit = check_stationary_time_limit(stationary_time_limit)
    # SymPy first: before TensorFlow is imported it can work in a process of its own (killed at its
    # deadline) while the runs go on here.
    search = start_stationary_points(expr.tree, names, stationary_time_limit) if stationary_time_limit > 0 else None
    try:
        _race(plan, report, record_every=record_every, jit=jit, progress_factory=progress_factory)
    except BaseException:
        if search is not None:
            search.stop()
        raise

    if search is not None:
        try:
            found, notes = search.result()
            report.stationary_points = found
            report.notes.extend(notes)
            for run in report.runs:
                run.nearest_stationary = _nearest(found, run.final)
        except symbolic.SymbolicTimeout:
            report.notes.append(f"SymPy did not solve grad f = 0 within {stationary_time_limit:g} s "
                                "(--stationary-timeout); no stationary point shown")
        except Exception as exc:  # SymPy failing on an odd expression must not sink the descent results
            report.notes.append(f"SymPy could not solve grad f = 0 ({type(exc).__name__})")
    return report


def _race(plan: DescentPlan, report: DescentReport, *, record_every, jit, progress_factory) -> None:
    """Every optimizer's run, then advice, the kind of each end point, warnings."""
    expr, names, point, maximize = plan.expression, plan.names, plan.start, plan.maximize
    # Import first, so that each run's time is its own tracing, compiling and stepping.
    from gradcli.tape import load_tensorflow

    load_tensorflow()
    if any(o != "manual" for o in plan.optimizers):
        import keras  # noqa: F401  (TensorFlow is already imported, quietly)

    step_every = plan.every or record_every
    for name in plan.optimizers:
        progress = progress_factory(name, plan.steps) if progress_factory else None
        run = run_descent(expr.tree, names, point, optimizer=name, lr=plan.lr, momentum=plan.momentum,
                          dtype=plan.dtype, tol=plan.tol, maximize=maximize, max_steps=plan.steps, every=step_every,
                          jit=jit, progress=progress)
        report.runs.append(run)

    for run in report.runs:
        if run.status == "diverged" and run.steps > 0:
            _advise(run, expr.tree, names, point, "start", plan.momentum, maximize)
        elif run.status == "oscillating":
            _advise(run, expr.tree, names, run.final, "end point", plan.momentum, maximize)
        elif run.status == "converged":
            _classify_end(run, expr.tree, names, plan.dtype)
            wrong = {"maximum", "saddle"} if not maximize else {"minimum", "saddle"}
            if run.end_kind in wrong:
                report.warnings.append(
                    f"{run.optimizer}: stopped where the gradient vanishes, but the Hessian says it is a "
                    f"{run.end_kind}, not a {'maximum' if maximize else 'minimum'} (start elsewhere: --from)")
        if run.status in ("diverged", "unbounded"):
            report.failed = True
            report.warnings.append(f"{run.optimizer}: {run.message}")
        elif run.status == "oscillating" or (run.status == "max_steps" and plan.tol > 0):
            # (with --tol 0 every step was asked for: reaching --steps is the plan, not a problem)
            report.warnings.append(f"{run.optimizer}: {run.message}")


# ---------------------------------------------------------------------------------------------
# --show-code: the same descent as a short TensorFlow program in the guide's style
# ---------------------------------------------------------------------------------------------
# Names the descent program defines beyond gradcli.tape.PROGRAM_NAMES.
_DESCEND_PROGRAM_NAMES = ("learning_rate", "max_steps", "tol", "descend", "np", "numpy", "keras")


def show_code_descend(plan: DescentPlan) -> str:
    """One runnable program per optimizer (concatenated, they still run as one script).

    Built from the plan alone: nothing is run. User variables whose names the program uses itself
    (f, step, tape, z, optimizer, print, ...) are renamed in the code, never in the printed labels.
    """
    from gradcli.expr import is_constant
    from gradcli.tape import code_names, renamed_comment, tf_code

    names = code_names(plan.names, taken=_DESCEND_PROGRAM_NAMES)
    code = [names[v] for v in plan.names]
    body = tf_code(plan.expression.tree, names)
    if is_constant(plan.expression.tree):  # pragma: no cover - plans always have variables
        body = f"tf.constant({body}, dtype=DTYPE)"
    params = ", ".join(code)
    var_list = f"[{params}]"
    programs = []
    for name in plan.optimizers:
        hyper = {} if name == "manual" else _program_hyperparameters(name, plan)
        exact = plan.dtype == "float64" and any(k in _CAST_HYPERPARAMETERS for k in hyper)
        lines = [
            f"# Generated by gradcli: `gradcli descend` with optimizer {name}, as the TensorFlow guide writes it,",
            "# with the loop compiled by tf.function (autograph turns the while into a tf.while_loop).",
            *renamed_comment(names),
            "import math",
            "",
        ]
        if exact:
            lines.append("import numpy as np")
        lines.append("import tensorflow as tf")
        if name != "manual":
            lines.append("import keras")
        lines += ["", f"DTYPE = tf.{plan.dtype}", f"learning_rate = {plan.lr!r}", f"max_steps = {plan.steps}",
                  f"tol = {plan.tol!r}  # stop when the gradient norm falls below this"]
        for v in plan.names:
            lines.append(f"{names[v]} = tf.Variable({plan.start[v]!r}, dtype=DTYPE)")
        lines += ["", "", f"def f({params}):", f"    return {body}", ""]
        if name != "manual":
            cls = _KERAS_CLASSES[name]
            args = ["learning_rate=learning_rate"]
            for k, value in hyper.items():
                args.append(f"{k}=np.float64({value!r})" if exact and k in _CAST_HYPERPARAMETERS else f"{k}={value!r}")
            if name == "nesterov":
                args.append("nesterov=True")
            lines.append(f"keras.config.set_floatx('{plan.dtype}')  # Keras keeps the learning rate in floatx: "
                         "match DTYPE")
            if exact:
                lines.append("# np.float64: Keras casts these through float32 when given as Python floats")
            lines += [
                f"optimizer = keras.optimizers.{cls}({', '.join(args)})",
                f"optimizer.build({var_list})  # create its slots now, not inside the compiled loop",
                "",
            ]
        objective = f"-f({params})  # maximise f: descend on -f" if plan.maximize else f"f({params})"
        lines += [
            "",
            "@tf.function",
            "def descend():",
            "    step = tf.constant(0, dtype=tf.int64)",
            "    while step < max_steps:",
            "        with tf.GradientTape() as tape:",
            f"            z = {objective}",
            f"        grads = tape.gradient(z, {var_list}, unconnected_gradients=tf.UnconnectedGradients.ZERO)",
            "        if tf.linalg.global_norm(grads) < tol:",
            "            break",
        ]
        if name == "manual":
            for k, c in enumerate(code):
                lines.append(f"        {c}.assign_sub(learning_rate * grads[{k}])")
        else:
            lines.append(f"        optimizer.apply_gradients(zip(grads, {var_list}))")
        lines += [
            "        step += 1",
            "    return step",
            "",
            "",
            "steps = descend()",
            "print('steps:', int(steps), " + ", ".join(f"{repr(v + ' =')}, {names[v]}.numpy()" for v in plan.names)
            + f", 'f =', f({params}).numpy())",
        ]
        programs.append("\n".join(lines) + "\n")
    return "\n\n".join(programs)


def _program_hyperparameters(name: str, plan: DescentPlan) -> dict[str, float]:
    """The hyper-parameters a program spells out: those gradcli hands over as float64, and the momentum."""
    hyper = optimizer_hyperparameters(name, plan.momentum)
    keep = set(_CAST_HYPERPARAMETERS) if plan.dtype == "float64" else {"momentum"}
    if name not in ("momentum", "nesterov"):
        keep.discard("momentum")  # SGD's and RMSprop's default 0.0: nothing to say
    return {k: v for k, v in hyper.items() if k in keep}
