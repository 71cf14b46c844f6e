"""``descend``'s core: every start (one ``--from``, or many from ``--points``/``--grid``) in one compiled loop
per optimizer (:mod:`gradcli.compute.descend.loop`), a record per start (:mod:`gradcli.compute.descend.records`).

A batch core for :func:`gradcli.compute.batch.engine.run_batch`: chunks of starts in, a record per start out,
written as each chunk finishes, so memory is bounded by the batch size (``--batch-size``), not the number of
starts. One start is a batch of one: the same loop, the same record.

SymPy's stationary points are searched for once per command, by a :class:`gradcli.methods.worker.BoundedJob`
started before the first chunk and collected after it (the header, which lists them, is written then), so
SymPy's search and the first runs overlap. A run that ended within ``STATIONARY_TOLERANCE`` x max(1, |p|) of
a stationary point p has reached it. When SymPy gives none (it timed out, found none, failed or was
skipped), the converged end points are grouped into basins instead (:mod:`gradcli.compute.descend.end_basins`).

TensorFlow's one-time start (its import, the loop's first tracing machinery, Keras' first optimizer) is made
before the first run and timed apart (``setup_seconds``), so that each optimizer's ``seconds`` are its own.

No typer or rich here; TensorFlow and NumPy are imported when the first chunk runs.
"""

from __future__ import annotations

import time
from typing import Callable

from gradcli.compute.batch.engine import RecordBatch
from gradcli.compute.descend.end_basins import EndPointBasins
from gradcli.compute.descend.loop import JIT_MIN_STEPS, BatchRows, RetryWithoutXLA, Runner
from gradcli.compute.descend.options import DescentPlan, check_stationary_time_limit, plan_notes
from gradcli.compute.descend.records import StartRecords
from gradcli.compute.descend.runner_pool import give_back, runner_kind, take_runner
from gradcli.compute.descend.results import FAILED_STATUSES, HistoryRow, StationaryPoint
from gradcli.compute.descend.stationary import STATIONARY_TOLERANCE, start_stationary_points
from gradcli.compute.descend.trajectory import Trajectory
from gradcli.expression.evaluate import compile_expression
from gradcli.expression.tree import inline_rules
from gradcli.limits import TRAJECTORY_MAX_ROWS
from gradcli.results import clean, shortest


class DescentCore:
    """Many starts (or one) for ``gradcli descend``: run each chunk, judge every start, say where they ended.

    ``every``: record the trajectory every so many steps (one start: --every, or a plot's spacing);
    ``progress_factory(optimizer, steps)``: a ``progress(done, total)`` callback or None, per optimizer.
    """

    command = "descend"
    header_after_first_chunk = True  # SymPy's search runs alongside the first chunk (the header lists it)

    def __init__(self, plan: DescentPlan, *, stationary_time_limit: float = 2.0, jit: bool | None = None,
                 every: int | None = None,
                 progress_factory: Callable[[str, int], Callable[[int, int], None] | None] | None = None):
        self.plan = plan
        self.expression = plan.expression
        self.variables = list(plan.names)
        self.dtype = plan.dtype
        self.methods: list[str] = []
        self.time_limit = check_stationary_time_limit(stationary_time_limit)
        self.jit = plan.steps > JIT_MIN_STEPS if jit is None else jit
        self.every = every
        self.progress_factory = progress_factory
        self.notes: list[str] = plan_notes(plan)
        self.largest_error: dict[str, float] = {}
        self.stationary: list[StationaryPoint] | None = None
        self.basins: EndPointBasins | None = None  # when SymPy gave no stationary points
        self.setup_seconds: float | None = None
        self.seconds: dict[str, float] = {}  # per optimizer, over every chunk
        self.trajectories: dict[str, list[HistoryRow]] = {}  # the first start's, with ``every``
        self.starts = 0
        self._search = None
        self._records: StartRecords | None = None
        self._runners: dict[str, tuple[tuple, Runner]] = {}  # optimizer: (its runner's kind, the runner)
        self._f = None

    # ---- the batch engine's protocol ------------------------------------------------------------
    def check(self, chunk) -> None:
        """Nothing to refuse per chunk: every option was checked in the plan."""

    def start(self) -> None:
        if self.time_limit > 0:  # a --rule's function is its body for SymPy (its formulas are checked equal)
            self._search = start_stationary_points(inline_rules(self.expression.tree), self.variables,
                                                   self.time_limit)

    def stop(self) -> None:
        if self._search is not None:
            self._search.stop()
            self._search = None
        self._give_back_runners()

    def _give_back_runners(self) -> None:
        for kind, runner in self._runners.values():
            give_back(kind, runner)
        self._runners.clear()

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
            "basins_from": "end points" if self.basins is not None else "stationary points",
        })

    def compute(self, chunk) -> RecordBatch:
        try:
            results = self.run(chunk)
            records = self._collect().for_chunk(chunk, results)
        except BaseException:
            self.stop()
            raise
        if self.every is not None and not self.trajectories:
            self.trajectories = self._trajectories(results, records[0])
        self.starts += len(records)
        issues = [(r["start"], r["warnings"], any(run["status"] in FAILED_STATUSES for run in r["runs"]))
                  for r in records if r["warnings"]]
        return RecordBatch(len(records), issues, lambda: records)

    def closing_notes(self) -> list[str]:
        """The basins' notes (how they were grouped; whether grouping stopped), and an empty input's."""
        self.stop()
        notes = self.basins.notes() if self.basins is not None else []
        if not self.starts:
            notes.append("no starts were read")
        return notes

    def run_level(self) -> dict:
        """What the run adds to the records once it is over: its times (``seconds``: each optimizer's
        compiled runs over every start; they vary from one call to the next)."""
        out = {"setup_seconds": self.setup_seconds or 0.0, "seconds": dict(self.seconds)}
        if self.trajectories:  # the first start's kept steps per optimizer (HistoryRow lists), when recorded
            out["trajectory"] = self.trajectories
        return out

    # ---- SymPy's search: started first, collected after the first chunk ----------------------------
    def _collect(self) -> StartRecords:
        """SymPy's answer (waiting at most until its deadline), and so how records say where starts ended."""
        if self._records is None:
            if self._search is not None:
                self._collect_search()
            if not self.stationary:
                self.basins = EndPointBasins(self.expression.tree, self.variables)
            self._records = StartRecords(self.plan, self.variables, self.stationary, self.basins)
        return self._records

    def _collect_search(self) -> None:
        from gradcli.methods.worker import SymbolicTimeout

        try:
            found, notes = self._search.result()
            self.stationary = found
            self.notes.extend(notes)
            if not found:
                self.notes.append("SymPy found no isolated real stationary point: the basins come from the "
                                  "end points")
        except SymbolicTimeout:
            self.notes.append(f"SymPy did not solve grad f = 0 within {self.time_limit:g} s (--stationary-timeout): "
                              "the basins come from the end points (raise --stationary-timeout for SymPy's "
                              "stationary points)")
        except Exception as exc:  # SymPy failing on an odd expression must not sink the descent results
            self.notes.append(f"SymPy could not solve grad f = 0 ({type(exc).__name__}): the basins come from "
                              "the end points")
        finally:
            self._search = None

    # ---- one chunk --------------------------------------------------------------------------------
    def run(self, chunk) -> dict[str, BatchRows]:
        """Every optimizer's compiled loop over the starts of ``chunk`` (a gradcli.expression.sources.PointChunk)."""
        import numpy as np

        from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

        if self.setup_seconds is None:
            self._set_up()
        tf = load_tensorflow()
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
            progress = self.progress_factory(name, plan.steps) if self.progress_factory else None
            t0 = time.perf_counter()
            out[name] = self._run_one(name, size, starts, f0, rows, progress)
            out[name].seconds = time.perf_counter() - t0
            self.seconds[name] = self.seconds.get(name, 0.0) + out[name].seconds
        return out

    def _set_up(self) -> None:
        """TensorFlow's one-time start, timed apart: its import, and a two-step run of each kind raced (the
        loop's tracing machinery, Keras' optimizers) on x*x (the first optimizer was billed ~2 s otherwise)."""
        from gradcli.expression import parse
        from gradcli.methods.tf_runtime import load_tensorflow

        started = time.perf_counter()
        load_tensorflow()
        warm = {"manual", *(["sgd"] if any(o != "manual" for o in self.plan.optimizers) else [])}
        import numpy as np

        tree = parse("x*x").tree
        for name in sorted(warm):
            options = dict(optimizer=name, lr=0.1, momentum=0.9, dtype=self.dtype, tol=0.0, maximize=False,
                           max_steps=2, jit=False)
            kind = runner_kind(tree, ["x"], 1, **options)
            runner = take_runner(kind, lambda: Runner(tree, ["x"], 1, **options))
            try:
                runner.run(np.ones((1, 1), runner.tdt.as_numpy_dtype), np.ones(1), 1)
            finally:
                give_back(kind, runner)
        if self.jit:  # XLA's own one-time start (~0.2 s), with a function too small to cost a compile
            warm_up_xla()
        self.setup_seconds = time.perf_counter() - started

    def _size(self, rows: int) -> int:
        """Rows of the compiled loop: the first batch's size, reused (padded) for smaller batches after it."""
        if self._runners:
            size = next(iter(self._runners.values()))[1].size
            if rows <= size:
                return size
            self._give_back_runners()
        return rows

    def _run_one(self, name: str, size: int, starts, f0, rows: int, progress) -> BatchRows:
        plan = self.plan
        for attempt in (self.jit, False):
            kind, runner = self._runners.get(name, (None, None))
            if runner is None or runner.size != size or runner.jit != attempt:
                if runner is not None:
                    give_back(kind, runner)
                options = dict(optimizer=name, lr=plan.rate(name), momentum=plan.momentum, dtype=plan.dtype,
                               tol=plan.tol, maximize=plan.maximize, max_steps=plan.steps, jit=attempt,
                               every=self.every)
                kind = runner_kind(self.expression.tree, self.variables, size, **options)
                runner = take_runner(kind, lambda: Runner(self.expression.tree, self.variables, size, **options))
                self._runners[name] = (kind, runner)
            try:
                return runner.run(starts, f0, rows, progress)
            except RetryWithoutXLA:
                self.jit = False
                continue
        raise AssertionError("unreachable")  # pragma: no cover

    def _trajectories(self, results: dict[str, BatchRows], record: dict) -> dict[str, list[HistoryRow]]:
        """The first start's trajectory per optimizer: every ``every``-th step while it ran, then its last
        (thinned evenly past TRAJECTORY_MAX_ROWS rows); a note when thinning spaced the rows wider."""
        out = {}
        for (name, rows), run in zip(results.items(), record["runs"]):
            trajectory = Trajectory(self.every)
            stop = run["steps"]
            for steps, values in rows.history:
                kept = [self._row(int(s), values[j, 0]) for j, s in enumerate(steps) if s <= stop]
                trajectory.add(kept, last=False)
            last = HistoryRow(stop, run["final"], run["value"], run["gradient_norm"])
            trajectory.add([last], last=True)
            out[name] = trajectory.rows
            if trajectory.stride > 1:
                self.notes.append(f"{name}: the trajectory keeps every {trajectory.spacing} steps, not every "
                                  f"{self.every} (at most {TRAJECTORY_MAX_ROWS:,} rows per run)")
        return out

    def _row(self, step: int, values) -> HistoryRow:
        n, dtype = len(self.variables), self.dtype
        return HistoryRow(step, {v: shortest(float(values[i]), dtype) for i, v in enumerate(self.variables)},
                          shortest(float(values[n]), dtype), shortest(float(values[n + 1]), dtype))


def warm_up_xla() -> None:
    """XLA's one-time start (its backend and compiler), paid once; a platform without XLA pays nothing."""
    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()
    try:
        tf.function(lambda v: v * 2.0 + 1.0, jit_compile=True)(tf.constant(1.0, tf.float64))
    except tf.errors.OpError:  # the run itself falls back to a plain graph
        pass


def run_starts(plan: DescentPlan, chunks, sink, *, stationary_time_limit: float, every: int | None = None,
               progress_factory=None, notes: list[str] | tuple = (), one_start: bool = False):
    """Every start of ``chunks`` through the batch engine into ``sink``; returns the summary (``failed``: a run
    diverged or went unbounded, exit 1). ``one_start``: ``chunks`` is [start_chunk(plan)], a batch of one,
    whose notes say which variables --from left at 0."""
    from gradcli.compute.batch.engine import run_batch
    from gradcli.compute.descend.summary import StartsSummary

    core = DescentCore(plan, stationary_time_limit=stationary_time_limit, every=every,
                       progress_factory=progress_factory)
    core.notes[:0] = list(notes)
    if one_start and plan.defaulted:
        core.notes.insert(0, f"starting at {', '.join(f'{v}=0' for v in plan.defaulted)} (not given in --from)")
    return run_batch(core, chunks, sink, StartsSummary(optimizers=list(plan.optimizers), core=core))
