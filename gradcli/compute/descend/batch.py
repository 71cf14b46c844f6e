"""``descend --points/--grid``: many starts, every one of them in one compiled loop per optimizer.

The parts:

- :mod:`gradcli.compute.descend.batch_loop`: one optimizer's compiled loop over a batch of starts (a row
  per start, the single-start loop's graph with a batch dimension);
- :mod:`gradcli.compute.descend.batch_records`: a record per start and optimizer, judged as one run is;
- :mod:`gradcli.compute.descend.end_basins`: the converged end points grouped into basins, when SymPy
  gave no stationary points;
- :mod:`gradcli.compute.descend.batch_summary`: the counts (statuses, basins) per optimizer;
- here: :class:`DescentBatch` (the plan, SymPy's answer, the runners) and :func:`run_starts`.

Memory is bounded by the batch size (``--batch-size``), not by the number of starts: a record per start
is handed to the writer as each batch finishes.

SymPy's stationary points are searched for once per command, by a :class:`gradcli.methods.worker.BoundedJob`
started before the first batch and collected when the header is written (why it runs the way it does,
and how ``--stationary-timeout`` is kept: see that class). Each start that ended within
``STATIONARY_TOLERANCE`` x max(1, |p|) of a stationary point p is said to have reached it. When SymPy gives
none (it timed out, found none, failed or was skipped), the basins come from the end points instead.

Exit status: as for one start, a start that diverged or went unbounded (including one where f or its
gradient is not finite at the start point) is a failure, so the command exits 1 if ANY start
diverged or went unbounded, after writing every record; otherwise 0.

No typer or rich here; TensorFlow and NumPy are imported when the first batch runs.
"""

from __future__ import annotations

from typing import Iterable, Protocol

from gradcli.compute.descend.batch_loop import BatchRows, BatchRunner
from gradcli.compute.descend.batch_records import StartRecords
from gradcli.compute.descend.batch_summary import Summary
from gradcli.compute.descend.end_basins import EndPointBasins
from gradcli.compute.descend.loop import JIT_MIN_STEPS, _RetryWithoutXLA
from gradcli.compute.descend.options import DescentPlan, check_stationary_time_limit, plan_notes
from gradcli.compute.descend.results import StationaryPoint
from gradcli.compute.descend.stationary import STATIONARY_TOLERANCE, start_stationary_points
from gradcli.expression.evaluate import compile_expression
from gradcli.results import clean

DEFAULT_BATCH_SIZE = 1024


class Sink(Protocol):
    """Where the records go (gradcli.render.descend_batch has one per output format)."""

    def start(self, header: dict) -> None: ...

    def write(self, records: list[dict]) -> None: ...

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None: ...


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
        self.basins: EndPointBasins | None = None  # when SymPy gave no stationary points
        self._search = None
        self._records: StartRecords | None = None
        self._runners: dict[str, BatchRunner] = {}
        self._f = None

    # ---- SymPy's search (a BoundedJob): started first, collected when the header is written ----
    def start(self) -> None:
        if self.time_limit > 0:
            self._search = start_stationary_points(self.expression.tree, self.variables, self.time_limit)

    def stop(self) -> None:
        if self._search is not None:
            self._search.stop()

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

    def all_notes(self) -> list[str]:
        """The notes so far, and the basins' (how they were grouped; whether grouping stopped)."""
        return self.notes + (self.basins.notes() if self.basins is not None else [])

    # ---- one batch ----------------------------------------------------------------------------------
    def run(self, chunk) -> dict[str, BatchRows]:
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

    def _run_one(self, name: str, size: int, starts, f0, rows: int) -> BatchRows:
        plan = self.plan
        for attempt in (self.jit, False):
            runner = self._runners.get(name)
            if runner is None or runner.size != size or runner.jit != attempt:
                runner = BatchRunner(self.expression.tree, self.variables, size, optimizer=name, lr=plan.rate(name),
                                     momentum=plan.momentum, dtype=plan.dtype, tol=plan.tol,
                                     maximize=plan.maximize, max_steps=plan.steps, jit=attempt)
                self._runners[name] = runner
            try:
                return runner.run(starts, f0, rows)
            except _RetryWithoutXLA:
                self.jit = False
                continue
        raise AssertionError("unreachable")  # pragma: no cover

    def records(self, chunk, results: dict[str, BatchRows]) -> list[dict]:
        """A record per start and optimizer, start by start (each start's optimizers together)."""
        return self._collect().for_chunk(chunk, results)


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
            if not started:  # written after the first batch: SymPy's job has had that long to answer
                sink.start(batch.header())
                started = True
            records = batch.records(chunk, results)
            summary.add(records)
            sink.write(records)
        if not started:  # no starts: the header still says what SymPy found (collected before the stop below)
            sink.start(batch.header())
    finally:
        batch.stop()
    notes = batch.all_notes()
    if not summary.starts:
        notes.append("no starts were read")
    end_basins = batch.basins.basins if batch.basins is not None else None
    sink.finish(summary.to_dict(batch.stationary, end_basins), summary.text(), summary.warnings(batch.plan.tol),
                notes)
    return summary
