"""Running a Request: its rules in force, its core and chunks, the batch engine writing to a sink; the Run.

A :class:`Run` is what the engine tells at the end (header, summary, warnings, notes, failed) and, where the
sink collected them (:class:`Collect`) or the request is one point, the records. From them it gives the
command's ``-f json`` document (:meth:`Run.document`, :meth:`Run.document_text`, byte for byte the CLI's) and
its ``-f jsonl`` records (:meth:`Run.record_lines`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field


@dataclass
class Run:
    """One computed request.

    ``warnings``: what the CLI says on stderr as ``gradcli: warning: ...`` (one point: the point's own; many:
    the first few, each with its point, then how many points had any); ``notes`` likewise; ``summary`` and
    ``summary_text``: many points' counts (the text is the CLI's ``gradcli: summary:`` line); ``failed``:
    the CLI's exit 1 (something undefined; with ``strict``, any warning too)."""

    command: str
    one_point: bool
    header: dict
    summary: dict
    summary_text: str
    warnings: list[str]
    notes: list[str]
    failed: bool
    with_warnings: int = 0
    collected: Collect | None = field(default=None, repr=False)

    @property
    def records(self) -> list[dict] | None:
        """Every record as a dict (None where the sink kept none): many points' are parsed from their lines
        on each call; :meth:`record_lines` gives them one at a time."""
        return None if self.collected is None else self.collected.records

    def _collected(self) -> Collect:
        if self.collected is None:
            raise ValueError("this run's records were not collected (run it with gradcli.library.run.Collect)")
        return self.collected

    @property
    def record(self) -> dict:
        """The one point's record (what ``-f jsonl`` writes at the --at point)."""
        if not self.one_point:
            raise ValueError("a run of many points has a record per point: see records")
        (record,) = self._collected().records
        return record

    def record_lines(self) -> Iterator[str]:
        """The ``-f jsonl`` lines (compact strict JSON, as the CLI writes them), one at a time."""
        return self._collected().lines()

    def document(self) -> dict:
        """The ``-f json`` document (the records as the CLI's JSON carries them)."""
        return json.loads(self.document_text())

    def document_text(self) -> str:
        """What ``gradcli COMMAND ... -f json`` prints on stdout, byte for byte."""
        if self.one_point:
            return json_text(one_point_document(self.command, self.header, self.record, self.notes)) + "\n"
        return batch_document_text(self.header, self.record_lines(), {"summary": self.summary}, self.warnings,
                                   self.notes)


def json_text(document: dict) -> str:
    """Strict JSON, indented as every gradcli document (non-finite numbers fail loudly)."""
    return json.dumps(document, indent=2, allow_nan=False)


def point_document(header: dict, record: dict, notes: list[str]) -> dict:
    """The one-point ``-f json`` document of grad, hessian and derivative: run-level keys, the point's record,
    the notes (gradcli.render.detail writes it for the CLI)."""
    return {**header, **record, "notes": list(notes)}


def one_point_document(command: str, header: dict, record: dict, notes: list[str]) -> dict:
    """``command``'s one-point document (eval's has its own keys, in its own order, without notes)."""
    if command == "eval":
        from gradcli.compute.batch.value import one_point_document as eval_document

        return eval_document(header, record)
    return point_document(header, record, notes)


def batch_document_text(header: dict, lines: Iterable[str], summary_part: dict, warnings: list[str],
                        notes: list[str], list_key: str = "points") -> str:
    """Many points' ``-f json`` document as gradcli.render.batch.JsonSink writes it: the header's keys, the
    records (a compact line each) under ``list_key``, then the summary's keys, warnings and notes."""
    head = json_text(header)
    parts = [head[:-2] + f',\n  "{list_key}": [']
    parts += [("\n    " if i == 0 else ",\n    ") + line for i, line in enumerate(lines)]
    tail = json_text({**summary_part, "warnings": warnings, "notes": notes})
    parts.append(("\n  ]," if len(parts) > 1 else "],") + "\n" + tail[2:] + "\n")
    return "".join(parts)


class Collect:
    """The sink that keeps what the engine writes: the header and every record. ``compact``: as their compact
    JSON lines, a block of text per chunk (many points: a record as a dict takes ~10x its line, and a million
    of them did not fit in memory where the CLI streams them), else as dicts (one point, read at once)."""

    def __init__(self, compact: bool = False):
        self.header: dict = {}
        self.compact = compact
        self._records: list[dict] = []
        self._blocks: list[str] = []  # compact: each chunk's lines, joined by newlines (no line holds one)

    def start(self, header: dict) -> None:
        self.header = header

    def write(self, batch) -> None:
        if not self.compact:
            self._records += batch if isinstance(batch, list) else batch.records()
            return
        from gradcli.compute.batch.engine import json_line

        lines = [json_line(r) for r in batch] if isinstance(batch, list) else batch.lines()
        if lines:
            self._blocks.append("\n".join(lines))

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        pass

    @property
    def takes_lines(self) -> bool:
        """Whether an engine may send the records as their lines (compact: what is kept)."""
        return self.compact

    @property
    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.lines()] if self.compact else self._records

    def lines(self) -> Iterator[str]:
        """The records' compact JSON lines, in order."""
        if not self.compact:
            from gradcli.compute.batch.engine import json_line

            return (json_line(r) for r in self._records)
        return (line for block in self._blocks for line in block.split("\n"))


class _Recorder:
    """A sink in front of the caller's: what run_batch tells at the start and the end, and (``keep``) the
    records, passed on."""

    def __init__(self, sink, keep: bool):
        self.sink = sink
        self.keep = keep
        self.header: dict = {}
        self.kept = Collect()
        self.end = None

    def start(self, header: dict) -> None:
        self.header = header
        self.sink.start(header)

    def write(self, batch) -> None:
        if self.keep:
            self.kept.write(batch)
        self.sink.write(batch)

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        self.end = (summary, summary_text, list(warnings), list(notes))
        self.sink.finish(summary, summary_text, warnings, notes)


@contextlib.contextmanager
def _rules(request, rules):
    """The request's --rule s in force for the run (``rules``: already defined by the caller, e.g. the CLI for
    its whole process: their notes only)."""
    if rules is not None:
        yield rules
        return
    from gradcli.expression.rules import rules_in_force

    with rules_in_force(request.rule, time_limit=request.symbolic_timeout) as checked:
        yield checked


def run_request(request, sink=None, *, rules=None, track=None) -> Run:
    """Compute ``request`` (a gradcli.library.requests Request), writing to ``sink`` (default: a
    :class:`Collect`; a function of no arguments: called for the sink once the points are checked, the CLI's
    order of refusals); returns its :class:`Run`.

    The request's rules are checked first and are in force for the call only (in this thread's context:
    gradcli.expression.tree); ``rules``: a :class:`gradcli.expression.rules.Checked` the caller has already
    put in force (the CLI defines them for its one run), whose notes the run adds. ``track``: called with the
    chunks (gradcli.compute.batch.points.PointChunks: ``total``, ``seconds``), returns what to iterate instead
    (the CLI's progress bar); closed at the end if it can be."""
    from gradcli.compute.batch.engine import run_batch

    with _rules(request, rules) as checked:
        core = request.make_core()
        core.notes += checked.notes
        chunks = request.chunks(core)
        recorder = _recorder_for(request, sink)
        with _engine(request) as client:
            if client is not None:  # the Dask engine: the chunks computed by the cluster, written here
                from gradcli.dask_engine import Distributed

                core = Distributed(client, request, core, lines=getattr(recorder.sink, "takes_lines", False))
                chunks = core.chunks(chunks)
            tracked = chunks if track is None else track(chunks)
            try:
                summary = run_batch(core, tracked, recorder)
            finally:
                if tracked is not chunks and hasattr(tracked, "close"):
                    tracked.close()  # a progress bar is gone before an error's line
    return _run_of(request, recorder, summary, strict=getattr(request, "strict", False))


def run_reduction(request, *, rules=None):
    """grad's request with ``reduce``: its rows' gradients added up as they are computed (nothing kept per
    row); the :class:`gradcli.compute.reduce.ReductionReport`."""
    from gradcli.compute.reduce import GradientReduction, ReductionReport
    from gradcli.expression.points import parse_point

    sink = GradientReduction(request.reduce)
    run_request(request, sink, rules=rules)
    parameters = dict(parse_point(request.at).values) if request.at else {}
    report = ReductionReport(sink.document(parameters))
    return report


def _engine(request):
    """The Dask client of a request on ``engine="dask"`` with many points (None: this process computes)."""
    if not getattr(request, "distributed", False):
        return contextlib.nullcontext()
    from gradcli.dask_engine import cluster_for

    return cluster_for(request)


def _recorder_for(request, sink) -> _Recorder:
    sink = Collect(compact=not request.one_point) if sink is None else sink() if callable(sink) else sink
    return _Recorder(sink, keep=request.one_point and not isinstance(sink, Collect))


def _run_of(request, recorder: _Recorder, summary, *, strict: bool) -> Run:
    summary_dict, summary_text, warnings, notes = recorder.end
    sink = recorder.sink
    collected = sink if isinstance(sink, Collect) else (recorder.kept if recorder.keep else None)
    if request.one_point and collected is not None and collected.records:
        warnings = list(collected.records[0]["warnings"])  # the point's own (the CLI's stderr at one point)
    failed = summary.failed or (strict and summary.with_warnings > 0)
    return Run(request.command, request.one_point, recorder.header, summary_dict, summary_text, warnings, notes,
               failed, summary.with_warnings, collected)


def descent_plan(request):
    """descend's checked plan (gradcli.compute.descend.DescentPlan) for ``request``: every option refused
    before anything is computed (with the rules in force: the expression may call one)."""
    from gradcli.compute.descend import plan_descent
    from gradcli.compute.descend.options import refuse_for_many_starts

    r = request
    if not r.one_point:
        refuse_for_many_starts(start=r.start, every=r.every)
    return plan_descent(r.expression, start=r.start if r.one_point else None, optimizers=r.optimizer, lr=r.lr,
                        steps=r.steps, tol=r.tol, maximize=r.maximize, dtype=r.dtype, momentum=r.momentum,
                        every=r.every if r.one_point else None)


def run_descent(request, sink=None, *, rules=None, plan=None, every=None, progress_factory=None) -> Run:
    """descend's request (gradcli.library.requests.DescendRequest) through the descent core: one start (a
    batch of one) or many; ``sink`` and ``rules`` as for :func:`run_request`. ``plan``: the request's
    :func:`descent_plan`, made already; ``every``: keep every k-th step of one start (default: the request's
    --every; the CLI's --plot keeps some without it); ``progress_factory``: the CLI's progress bars."""
    from gradcli.compute.descend.core import run_starts
    from gradcli.compute.descend.options import check_stationary_time_limit

    r = request
    with _rules(r, rules) as checked:
        plan = descent_plan(r) if plan is None else plan
        time_limit = check_stationary_time_limit(r.stationary_timeout)
        if r.one_point:
            from gradcli.compute.descend import start_chunk

            recorder = _recorder_for(r, sink)
            summary = run_starts(plan, [start_chunk(plan)], recorder, every=r.every if every is None else every,
                                 one_start=True, notes=checked.notes, stationary_time_limit=time_limit,
                                 progress_factory=progress_factory)
        else:
            if isinstance(r.points, str) or r.points is None:
                from gradcli.compute.batch.points import start_chunks

                chunks = start_chunks(points=r.points, grid=r.grid, names=plan.names, batch_size=r.batch_size,
                                      dtype=plan.dtype)
            else:
                if r.grid is not None:
                    from gradcli.errors import UsageError

                    raise UsageError("give --points or --grid, not both")
                chunks = r.points.source(variables=plan.names, chunk_size=r.batch_size, fixed_option=None,
                                         dtype=plan.dtype).chunks()
            recorder = _recorder_for(r, sink)
            summary = run_starts(plan, chunks, recorder, stationary_time_limit=time_limit, notes=checked.notes)
    return _run_of(r, recorder, summary, strict=r.strict)


def run_check(request, *, rules=None):
    """check's request (gradcli.library.requests.CheckRequest): its report
    (gradcli.compute.check.CheckReport: ``to_dict()`` is the ``-f json`` document, ``failed`` the exit 1)."""
    from gradcli.compute.check import check_derivatives

    r = request
    with _rules(r, rules) as checked:
        report = check_derivatives(r.expression, expect=r.expect, order=r.order, at=r.at, points=r.points,
                                   grid=r.grid, box=r.box, samples=r.samples, seed=r.seed,
                                   symbolic_time_limit=r.symbolic_timeout, rtol=r.rtol, atol=r.atol, dtype=r.dtype)
        report.notes += checked.notes
    report.failed = report.failed or (r.strict and bool(report.warnings))  # --strict: a warning fails it too
    return report
