"""``descend --points/--grid``: many starts, every one of them in one compiled loop per optimizer.

Each optimizer gets one compiled chunk function, traced once and reused for every batch of starts,
over one ``tf.Variable`` of shape [P] per variable (P starts): the single-start loop's graph with a
batch dimension. A step evaluates f at every row, takes the gradient of ``tf.reduce_sum(f(X))``
(row i of it is start i's gradient: the rows never mix) and applies the single-start stopping rules
(:func:`gradcli.compute.descend.loop.stop_status`) to every row. A row that stops keeps its status and its
point: the update still runs on all rows (the hand-written ``x.assign_sub(lr * dz_dx)`` or Keras'
``apply_gradients``, both elementwise) and the stopped rows are put back with a ``tf.where`` mask.
The loop ends when no row is running or when ``--steps`` is reached. Keeping the single-start
graph's shape (a variable per name, not one [P, n] variable) matters: TensorFlow's graph rewrites
sum a gradient's terms in an order of their choosing, and a different graph gets a different order.
So in float64 an elementwise expression (sums, products, powers) gives every start the same final
point and step count as a run from that start alone; with transcendental functions the vectorised
kernels may differ from the scalar ones in the last bit.

Bounded work per compiled call: a call runs at most ``CHUNK_WORK / P`` steps (between
``MIN_CHUNK_STEPS`` and ``MAX_CHUNK_STEPS``), so Ctrl-C is honoured between calls whatever ``--steps``
says. Memory is bounded by the batch size (``--batch-size``), not by the number of starts: a record
per start is handed to the writer as each batch finishes. No trajectory is recorded (``--every`` is
refused with many starts); each row keeps its last ``WINDOW`` evaluations for the post-mortem of a
start that used up its steps (oscillating, unbounded), as one run does.

SymPy's stationary points are searched for once per command (a worker started before TensorFlow is
imported, killed at ``--stationary-timeout``); each start that ended within
``STATIONARY_TOLERANCE`` x max(1, |p|) of a stationary point p is said to have reached it.

Exit status: as for one start, a start that diverged or went unbounded (including one where f or its
gradient is not finite at the start point) is a failure, so the command exits 1 if ANY start
diverged or went unbounded, after writing every record; otherwise 0.

No typer or rich here; TensorFlow and NumPy are imported when the first batch runs.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol

from gradcli.compute.descend.loop import JIT_MIN_STEPS, _RetryWithoutXLA, stop_status
from gradcli.compute.descend.optimizers import make_optimizer
from gradcli.compute.descend.options import DescentPlan, check_stationary_time_limit, plan_notes
from gradcli.compute.descend.results import STATUSES, DescentRun, StationaryPoint
from gradcli.compute.descend.rules import CONVERGED, PAUSED, RUNNING, STATUS_NAME, VALUE_BOUND, WINDOW
from gradcli.compute.descend.stationary import _nearest, start_stationary_points
from gradcli.compute.descend.verdicts import _explain_stop
from gradcli.expression.evaluate import compile_expression
from gradcli.results import clean, point_text, shortest

DEFAULT_BATCH_SIZE = 1024
# Start-steps one compiled call may run (P starts x steps): a bound on the time between two
# chances to honour Ctrl-C.
CHUNK_WORK = 2_000_000
MIN_CHUNK_STEPS = 100
MAX_CHUNK_STEPS = 10_000
# A start reached a stationary point p when it ended within this x max(1, |p|) of it.
STATIONARY_TOLERANCE = 1e-3
# Statuses that make the command exit 1, as for one start.
FAILED_STATUSES = ("diverged", "unbounded")


class Sink(Protocol):
    """Where the records go (gradcli.render.descend_batch has one per output format)."""

    def start(self, header: dict) -> None: ...

    def write(self, records: list[dict]) -> None: ...

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None: ...


@dataclass
class _Rows:
    """What one optimizer's batched loop leaves for each row (NumPy arrays, padding rows included)."""

    codes: Any      # [P] int: the loop's final status code
    steps: Any      # [P] int: updates made
    final: Any      # [P, n]: where each row stopped
    value: Any      # [P]: f there (not -f, with --maximize)
    gnorm: Any      # [P]
    window: Any     # [WINDOW, P, n + 2]: the last evaluations, row k % WINDOW the newest
    compiled: str


class _BatchRunner:
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

    def run(self, starts, f0, rows: int) -> _Rows:
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
        return _Rows(status, steps, self.point().numpy(), last_value, last_gnorm, self.window.numpy(),
                     "tf.function+XLA" if self.jit else "tf.function")


class DescentBatch:
    """Many starts for ``gradcli descend``: run batches, judge every start, count where they ended."""

    command = "descend"

    def __init__(self, plan: DescentPlan, *, stationary_time_limit: float = 2.0, jit: bool | None = None):
        self.plan = plan
        self.expression = plan.expression
        self.variables = list(plan.expression.variables)
        self.time_limit = check_stationary_time_limit(stationary_time_limit)
        self.jit = plan.steps > JIT_MIN_STEPS if jit is None else jit
        self.notes: list[str] = plan_notes(plan)
        self.stationary: list[StationaryPoint] | None = None
        self._search = None
        self._collected = False
        self._runners: dict[str, _BatchRunner] = {}
        self._f = None

    # ---- the SymPy search: started before TensorFlow is imported, collected after the first batch ----
    def start(self) -> None:
        if self.time_limit > 0:
            self._search = start_stationary_points(self.expression.tree, self.variables, self.time_limit)

    def stop(self) -> None:
        if self._search is not None:
            self._search.stop()

    def _collect(self) -> None:
        if self._collected:
            return
        self._collected = True
        if self._search is None:
            return
        from gradcli.methods.worker import SymbolicTimeout

        try:
            found, notes = self._search.result()
            self.stationary = found
            self.notes.extend(notes)
            if not found:
                self.notes.append("SymPy found no isolated real stationary point: every start is counted as "
                                  "ending elsewhere")
        except SymbolicTimeout:
            self.notes.append(f"SymPy did not solve grad f = 0 within {self.time_limit:g} s (--stationary-timeout); "
                              "no start is matched to a stationary point (raise --stationary-timeout)")
        except Exception as exc:  # SymPy failing on an odd expression must not sink the descent results
            self.notes.append(f"SymPy could not solve grad f = 0 ({type(exc).__name__})")
        finally:
            self._search = None

    def header(self) -> dict:
        """What every record shares (waits for SymPy's answer, at most until its deadline)."""
        self._collect()
        plan = self.plan
        return clean({
            "command": self.command, "expression": self.expression.text, "variables": self.variables,
            "dtype": plan.dtype, "maximize": plan.maximize, "optimizers": plan.optimizers,
            "learning_rate": plan.lr, "max_steps": plan.steps, "tol": plan.tol, "momentum": plan.momentum,
            "stationary_points": None if self.stationary is None else [s.to_dict() for s in self.stationary],
            "stationary_tolerance": STATIONARY_TOLERANCE,
        })

    # ---- one batch ----------------------------------------------------------------------------------
    def run(self, chunk) -> dict[str, _Rows]:
        """Every optimizer's batched loop over the starts of ``chunk`` (a gradcli.expression.sources.PointChunk)."""
        import numpy as np

        from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

        tf = load_tensorflow()
        if any(o != "manual" for o in self.plan.optimizers):
            import keras  # noqa: F401  (TensorFlow is already imported, quietly)
        plan = self.plan
        rows = len(chunk)
        size = self._size(rows)
        npdt = np.float64 if plan.dtype == "float64" else np.float32
        starts = np.empty((size, len(self.variables)), npdt)
        for i, v in enumerate(self.variables):
            starts[:rows, i] = chunk.values[v]
            starts[rows:, i] = starts[0, i]
        if self._f is None:
            self._f = compile_expression(self.expression.tree, tf_backend(plan.dtype))
        tdt = tf.as_dtype(plan.dtype)
        f_start = self._f({v: tf.constant(starts[:, i], tdt) for i, v in enumerate(self.variables)})
        f0 = np.broadcast_to(np.asarray(f_start, dtype=np.float64), (size,))
        f0 = -f0 if plan.maximize else f0.copy()
        out = {}
        for name in plan.optimizers:
            out[name] = self._run_one(name, size, starts, f0, rows)
        return out

    def _size(self, rows: int) -> int:
        """Rows of the compiled loop: the first batch's size, reused (padded) for smaller batches after it."""
        if self._runners:
            size = next(iter(self._runners.values())).size
            if rows <= size:
                return size
            self._runners.clear()
        return rows

    def _run_one(self, name: str, size: int, starts, f0, rows: int) -> _Rows:
        plan = self.plan
        for attempt in (self.jit, False):
            runner = self._runners.get(name)
            if runner is None or runner.size != size or runner.jit != attempt:
                runner = _BatchRunner(self.expression.tree, self.variables, size, optimizer=name, lr=plan.lr,
                                      momentum=plan.momentum, dtype=plan.dtype, tol=plan.tol,
                                      maximize=plan.maximize, max_steps=plan.steps, jit=attempt)
                self._runners[name] = runner
            try:
                return runner.run(starts, f0, rows)
            except _RetryWithoutXLA:
                self.jit = False
                continue
        raise AssertionError("unreachable")  # pragma: no cover

    def records(self, chunk, results: dict[str, _Rows]) -> list[dict]:
        """A record per start and optimizer, start by start (each start's optimizers together)."""
        self._collect()
        out = []
        columns = [chunk.values[v].tolist() for v in self.variables]
        for i, coords in enumerate(zip(*columns)):
            start = dict(zip(self.variables, coords))
            for name, rows in results.items():
                out.append(self._record(chunk, i, start, name, rows))
        return out

    def _record(self, chunk, i: int, start: dict[str, float], name: str, rows: _Rows) -> dict:
        plan, dtype = self.plan, self.plan.dtype
        code, k = int(rows.codes[i]), int(rows.steps[i])
        run = DescentRun(
            optimizer=name, learning_rate=plan.lr, status=STATUS_NAME[code], steps=k,
            final={v: shortest(float(rows.final[i, j]), dtype) for j, v in enumerate(self.variables)},
            value=shortest(float(rows.value[i]), dtype), gradient_norm=shortest(float(rows.gnorm[i]), dtype),
            message="", compiled=rows.compiled)
        _explain_stop(run, code, k, plan.tol, dtype, plan.maximize, rows.window[:, i, :], start, self.variables)
        record: dict[str, Any] = {"start": start}
        if chunk.lines[i] is not None:
            record["line"] = chunk.lines[i]
        if chunk.fields and chunk.fields[i]:
            record["fields"] = chunk.fields[i]
        reached = self._reached(run)
        record.update({
            "optimizer": name, "status": run.status, "steps": run.steps, "final": run.final, "value": run.value,
            "gradient_norm": run.gradient_norm,
            "stationary_point": None if reached is None else reached.to_dict(),
            "message": run.message.replace(": choose another --from", ""),
        })
        return clean(record)

    def _reached(self, run: DescentRun) -> StationaryPoint | None:
        """The stationary point the start ended at (within the tolerance), or None."""
        if not self.stationary or run.status in FAILED_STATUSES:
            return None
        near = _nearest(self.stationary, run.final)
        if near is None or near.distance is None:
            return None
        size = math.sqrt(sum(v * v for v in near.point.values()))
        return near if near.distance <= STATIONARY_TOLERANCE * max(1.0, size) else None


# ---------------------------------------------------------------------------------------------
# Counting: statuses and basins per optimizer
# ---------------------------------------------------------------------------------------------
def stationary_key(point: dict[str, float]) -> str:
    """A stationary point's coordinates as a key (every digit: two points never share one)."""
    return ", ".join(f"{k}={v!r}" for k, v in point.items())


def basin_key(record: dict) -> str:
    """Where a start ended, as a key: the stationary point's coordinates, ``elsewhere`` or ``diverged``."""
    if record["status"] in FAILED_STATUSES:
        return "diverged"
    s = record.get("stationary_point")
    if s is None:
        return "elsewhere"
    return stationary_key(s["point"])


@dataclass
class Summary:
    """Counts over every record: statuses and basins per optimizer, the first example of each trouble."""

    optimizers: list[str]
    max_steps_warns: bool = True  # reaching --steps is worth a warning (not with --tol 0)
    starts: int = 0
    statuses: dict[str, Counter] = field(default_factory=dict)
    basins: dict[str, Counter] = field(default_factory=dict)
    points: dict[str, dict] = field(default_factory=dict)  # basin key -> the stationary point
    failures: dict[str, Counter] = field(default_factory=dict)  # "at start" / "diverged" (on the way)
    examples: dict[tuple[str, str], str] = field(default_factory=dict)

    def __post_init__(self):
        for name in self.optimizers:
            self.statuses[name] = Counter()
            self.basins[name] = Counter()
            self.failures[name] = Counter()

    def add(self, records: list[dict]) -> None:
        for r in records:
            name = r["optimizer"]
            if name == self.optimizers[0]:
                self.starts += 1
            self.statuses[name][r["status"]] += 1
            key = basin_key(r)
            self.basins[name][key] += 1
            if r.get("stationary_point") is not None:
                self.points.setdefault(key, r["stationary_point"])
            kind = r["status"]
            if kind in FAILED_STATUSES:
                kind = "at start" if r["steps"] == 0 else "diverged"
                self.failures[name][kind] += 1
            if (name, kind) not in self.examples:
                self.examples[(name, kind)] = point_text(r["start"]) if kind == "at start" else \
                    f"from {point_text(r['start'])}: {r['message']}"

    @property
    def failed(self) -> bool:
        return any(c[s] for c in self.statuses.values() for s in FAILED_STATUSES)

    def basins_dict(self, stationary: list[StationaryPoint] | None) -> dict:
        """Per optimizer: how many starts ended at each stationary point, elsewhere, or diverged."""
        out = {}
        order = [stationary_key(s.point) for s in stationary or []]
        for name in self.optimizers:
            counts = self.basins[name]
            reached = sorted((k for k in counts if k not in ("elsewhere", "diverged")),
                             key=lambda k: (-counts[k], order.index(k) if k in order else len(order)))
            points = []
            for key in reached:
                s = dict(self.points[key])
                s.pop("distance", None)
                points.append({**s, "starts": counts[key]})
            out[name] = {"starts": sum(counts.values()), "stationary_points": points,
                         "elsewhere": counts["elsewhere"], "diverged": counts["diverged"]}
        return out

    def to_dict(self, stationary: list[StationaryPoint] | None) -> dict:
        return clean({"starts": self.starts,
                      "statuses": {n: {s: c[s] for s in STATUSES if c[s]} for n, c in self.statuses.items()},
                      "basins": self.basins_dict(stationary)})

    def text(self) -> str:
        text = f"{self.starts} start{'s' if self.starts != 1 else ''} done"
        for name in self.optimizers:
            counts = self.statuses[name]
            said = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) or "nothing run"
            reached = sum(v for k, v in self.basins[name].items() if k not in ("elsewhere", "diverged"))
            points = sum(1 for k, v in self.basins[name].items() if k not in ("elsewhere", "diverged") and v)
            text += f"; {name}: {said}"
            if points:
                text += f" ({reached} at {points} stationary point{'s' if points != 1 else ''})"
        return text

    def warnings(self, tol: float) -> list[str]:
        out = []
        for name in self.optimizers:
            counts = self.statuses[name]
            failures = self.failures[name]
            if failures["at start"]:
                out.append(f"{name}: f or its gradient is not finite at {failures['at start']} of {self.starts} "
                           f"start points (e.g. at {self.examples[(name, 'at start')]})")
            if failures["diverged"]:
                out.append(f"{name}: {failures['diverged']} of {self.starts} starts diverged or went unbounded "
                           f"on the way (e.g. {self.examples[(name, 'diverged')]}); a smaller --lr may help")
            if counts["oscillating"]:
                out.append(f"{name}: {counts['oscillating']} of {self.starts} starts ended oscillating "
                           f"(e.g. {self.examples[(name, 'oscillating')]})")
            if counts["max_steps"] and tol > 0:
                out.append(f"{name}: {counts['max_steps']} of {self.starts} starts stopped at --steps before the "
                           "gradient norm fell below --tol")
        return out


def run_starts(batch: DescentBatch, chunks: Iterable, sink: Sink) -> Summary:
    """Run every batch of starts and write its records as it finishes; returns the counts
    (``failed``: some start diverged or went unbounded, exit 1)."""
    summary = Summary(list(batch.plan.optimizers))
    batch.start()
    started = False
    try:
        for chunk in chunks:
            if not len(chunk):
                continue
            results = batch.run(chunk)
            if not started:  # SymPy has had the TensorFlow import and the first batch to work in
                sink.start(batch.header())
                started = True
            records = batch.records(chunk, results)
            summary.add(records)
            sink.write(records)
    finally:
        batch.stop()
    if not started:
        sink.start(batch.header())
    notes = list(batch.notes)
    if not summary.starts:
        notes.append("no starts were read")
    sink.finish(summary.to_dict(batch.stationary), summary.text(), summary.warnings(batch.plan.tol), notes)
    return summary
