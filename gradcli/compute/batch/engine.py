"""One loop for every command over many points: read a chunk, compute each method once for the whole
chunk, judge every point, hand the records to the writer, repeat.

Memory is bounded by the chunk size, not by the number of points: records are written as each chunk
finishes (a reader of ``--format jsonl`` sees the first records before the last rows are read).
SymPy differentiates once, before the first chunk, as a :class:`gradcli.methods.worker.BoundedJob`; every chunk
then evaluates the exact formulas in float64, and at 30 digits where float64 cannot be vouched for
(see :mod:`gradcli.methods.symbolic_values`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol

from gradcli.errors import UsageError
from gradcli.results import FIRST_ORDER_METHODS, METHODS, point_text
from gradcli.results import clean as json_safe
from gradcli.compute.batch.exact_columns import ExactColumns
from gradcli.methods.worker import BoundedJob, SymbolicTimeout

# Warnings printed on stderr one by one before the rest are only counted (they are in the records).
WARNINGS_SHOWN = 5


class Sink(Protocol):
    """Where records go (gradcli.render.batch has one per output format)."""

    def start(self, header: dict) -> None: ...

    def write(self, batch: RecordBatch) -> None: ...

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None: ...


class Computation(Protocol):
    """A command's batch core (gradcli.compute.batch.grad, .hessian, .derivative)."""

    command: str
    methods: list[str]
    variables: list[str]
    notes: list[str]

    def start(self) -> None: ...

    def header(self) -> dict: ...

    def check(self, chunk) -> None: ...

    def compute(self, chunk) -> RecordBatch: ...

    def closing_notes(self) -> list[str]: ...


@dataclass
class Summary:
    """What stderr says after a batch: counts, and the largest error per method."""

    points: int = 0
    with_warnings: int = 0
    undefined: int = 0
    largest_error: dict[str, float] = field(default_factory=dict)
    shown: list[str] = field(default_factory=list)

    def add(self, batch: RecordBatch) -> None:
        self.points += batch.size
        for point, warnings, undefined in batch.issues:
            self.with_warnings += 1
            self.undefined += undefined
            for w in warnings:
                if len(self.shown) < WARNINGS_SHOWN:
                    self.shown.append(f"{w} (at {point_text(point)})")

    @property
    def failed(self) -> bool:
        return self.undefined > 0

    def closing_warnings(self) -> list[str]:
        """The warnings stderr shows at the end: the first few, then how many points had any."""
        warnings = list(self.shown)
        if self.with_warnings > len(self.shown):
            warnings.append(f"warnings at {self.with_warnings} points in all (the first {len(self.shown)} "
                            "above): each record lists its own")
        return warnings

    def to_dict(self) -> dict:
        return json_safe({"points": self.points, "with_warnings": self.with_warnings,
                          "undefined": self.undefined, "largest_error": self.largest_error})

    def text(self) -> str:
        errors = ", ".join(f"{m} {e:.2g}" for m, e in sorted(self.largest_error.items(),
                                                               key=lambda kv: FIRST_ORDER_METHODS.index(kv[0])))
        text = (f"{self.points} point{'s' if self.points != 1 else ''} done, {self.with_warnings} with warnings, "
                f"{self.undefined} undefined")
        if errors:
            text += f"; largest error against symbolic: {errors}"
        return text


class RecordBatch:
    """One chunk's records. ``records()`` gives them as dicts (the JSON contract); ``lines()`` as compact
    JSON text, one per record, which a core may produce without the dicts (a million points spend most of
    their time building dicts otherwise); ``issues`` lists (point, warnings, undefined) for the points that
    have something to say, for the summary."""

    def __init__(self, size: int, issues: list, build_records, build_lines=None):
        self.size = size
        self.issues = issues
        self._build_records = build_records
        self._build_lines = build_lines
        self._records: list[dict] | None = None

    @classmethod
    def of(cls, records: list[dict]) -> RecordBatch:
        issues = [(r["point"], r["warnings"], r["status"] == "undefined") for r in records if r["warnings"]]
        return cls(len(records), issues, lambda: records)

    def records(self) -> list[dict]:
        if self._records is None:
            self._records = self._build_records()
        return self._records

    def lines(self) -> list[str]:
        if self._build_lines is not None:
            return self._build_lines()
        return [json_line(r) for r in self.records()]


def json_line(record: dict) -> str:
    """One record as compact strict JSON (orjson: shortest round-trip floats, like repr; NaN as null)."""
    import orjson

    try:
        return orjson.dumps(record).decode()
    except orjson.JSONEncodeError:  # e.g. a pass-through integer beyond 64 bits: the standard encoder
        import json

        return json.dumps(record, separators=(",", ":"), allow_nan=False)


def run_batch(computation: Computation, chunks: Iterable, sink: Sink, summary: Summary | None = None) -> Summary:
    """Compute every chunk and write its records; returns the summary (``failed``: exit 1).

    ``summary``: a command's own (a Summary subclass; descend counts statuses and basins). A computation
    whose ``header_after_first_chunk`` is true has its header written after its first chunk (descend: SymPy's
    search, which the header reports, runs alongside that chunk)."""
    summary = Summary() if summary is None else summary
    chunks = iter(chunks)
    first = next(chunks, None)
    if first is not None:  # a refusal before any output: one point and many are refused alike
        computation.check(first)
    computation.start()
    late = getattr(computation, "header_after_first_chunk", False)
    if not late:
        sink.start(computation.header())
    for chunk in itertools.chain([first] if first is not None else [], chunks):
        computation.check(chunk)
        batch = computation.compute(chunk)
        if late:
            sink.start(computation.header())
            late = False
        summary.add(batch)
        sink.write(batch)
    if late:  # no chunk: the header still says what it can (descend: SymPy's stationary points)
        sink.start(computation.header())
    summary.largest_error = dict(computation.largest_error)
    notes = computation.notes + computation.closing_notes()
    sink.finish(summary.to_dict(), summary.text(), summary.closing_warnings(), notes)
    return summary


class BatchCore(ExactColumns):
    """What the three batch cores share: the checked options, SymPy's one differentiation in the
    background (started before the first chunk, collected for the header), and the header's common keys.

    A subclass sets ``command``, ``trees``, ``variables`` and implements :meth:`wanted` (the derivatives
    SymPy should take, as (tree index, variables in turn)), :meth:`describe` and :meth:`compute`.
    """

    command = ""
    allowed_methods = METHODS  # grad and derivative also take the complex step (FIRST_ORDER_METHODS)

    def __init__(self, *, methods: str | None, dtype: str, eps: float | None, symbolic_time_limit: float,
                 formulas: bool = False):
        from gradcli.compute.request import check_dtype, check_eps, parse_methods

        self.methods = parse_methods(methods, allowed=self.allowed_methods)
        self.dtype = check_dtype(dtype)
        self.eps = check_eps(eps)
        if formulas and "symbolic" not in self.methods:
            raise UsageError("--formulas needs the symbolic method (add symbolic to --method)")
        self.formulas = formulas
        self.time_limit = symbolic_time_limit
        self.notes: list[str] = []
        self.trees: list = []
        self.variables: list[str] = []
        self._job = None
        self._formulas: list | None = None
        self.largest_error: dict[str, float] = {}  # per method, over every point so far (the summary's)
        self.adapted: dict[int, int] = {}  # fd_error.SHRUNK / ONE_SIDED: points whose fd steps adapted to a domain
        self.at_point = False  # the --at point alone (at_one_point), else False
        self._known: dict | None = None  # at one point: exact values from SymPy's bounded job

    def wanted(self) -> list[tuple[int, tuple[str, ...]]]:
        raise NotImplementedError

    def describe(self) -> dict:
        """The command's own header keys (expressions, wrt, fd scheme...)."""
        raise NotImplementedError

    def fd_steps_along(self) -> tuple[list[str], int]:
        """The variables fd steps along, and the power of the step its differences divide by."""
        raise NotImplementedError

    def check(self, chunk) -> None:
        """Refuse the points where a fixed ``--eps`` vanishes (x + h == x), with the message and exit code
        of the same request at one point."""
        if "fd" in self.methods and self.eps is not None:
            from gradcli.methods.fd_engine import check_step

            names, power = self.fd_steps_along()
            check_step(self.eps, chunk.values, names, self.dtype, power=power)

    def at_one_point(self, point) -> None:
        """Told before computing when the only point is the --at one (a batch of one): a core may then take
        its variables from the point as typed, and say in its notes what a batch would only count. Its exact
        values are then evaluated in SymPy's bounded job (:func:`gradcli.methods.symbolic_values.differentiate_at`)."""
        self.at_point = point

    def chunk_size(self, requested: int) -> int:
        """Points per chunk for a requested --batch-size (a core whose memory grows faster may take fewer)."""
        return requested

    def start(self) -> None:
        if self.at_point is not False:  # one point: its exact values too, within SymPy's time limit
            from gradcli.methods.symbolic_values import differentiate_at

            self._job = start_symbolic(differentiate_at, self.time_limit, self.trees, list(self.variables),
                                       self.wanted() if "symbolic" in self.methods else [], self.exact_points())
        elif "symbolic" in self.methods:
            from gradcli.methods.symbolic import differentiate

            self._job = start_symbolic(differentiate, self.time_limit, self.trees, list(self.variables),
                                       self.wanted())

    def header(self) -> dict:
        if self._job is not None:
            if self.at_point is not False:
                had_symbolic = "symbolic" in self.methods
                result = collect_symbolic(self._job, self.notes, self.methods, quiet=not had_symbolic)
                self._formulas, self._known = (None, {}) if result is None else result
                if not had_symbolic:
                    self._formulas = None
            else:
                self._formulas = collect_symbolic(self._job, self.notes, self.methods)
            self._job = None
            for f in self._formulas or []:
                for key, why in f.untranslatable.items():
                    self.notes.append(f"symbolic values for d/d{','.join(key)} left out: {why}")
        doc = {"command": self.command, **self.describe(), "variables": self.variables, "dtype": self.dtype,
               "methods": self.methods}
        if self._formulas is not None:
            from gradcli.methods.symbolic import EVALUATION

            doc["symbolic_values"] = EVALUATION
        return doc

    def count_adapted(self, how) -> None:
        """Count the points (rows of ``how``, fd's [P] or [P, ...] adaptation codes) whose stencil left the
        domain: a batch says so once, in its notes, not per point."""
        import numpy as np

        from gradcli.methods.fd_error import ONE_SIDED, SHRUNK

        how = np.asarray(how).reshape(len(how), -1)
        sided = (how == ONE_SIDED).any(axis=1)
        shrunk = (how == SHRUNK).any(axis=1) & ~sided
        for code, rows in ((SHRUNK, shrunk), (ONE_SIDED, sided)):
            self.adapted[code] = self.adapted.get(code, 0) + int(rows.sum())

    def closing_notes(self) -> list[str]:
        """Notes known only once every chunk is computed: the points whose fd stencil adapted to a domain."""
        from gradcli.methods.fd_error import ONE_SIDED, SHRUNK
        from gradcli.methods.fd_notes import EDGE_CAVEAT

        where = ("fd_step and fd_sides in the json/jsonl records" if self.command == "hessian"
                 else "fd_step in each record")
        notes = []
        if self.adapted.get(SHRUNK):
            notes.append(f"fd: at {_points(self.adapted[SHRUNK])} the default step's stencil leaves the domain or "
                         f"crosses a pole; smaller steps (the smallest estimate of a sequence) are used: see {where}")
        if self.adapted.get(ONE_SIDED):
            notes.append(f"fd: at {_points(self.adapted[ONE_SIDED])} no two-sided stencil stays in the domain; "
                         f"one-sided differences are used: see {where}{EDGE_CAVEAT}")
        return notes

    def fd_header(self, scheme: str, step_rule: str) -> dict | None:
        if "fd" not in self.methods:
            return None
        return {"scheme": scheme, "step": "as given" if self.eps is not None else step_rule}


def _points(count: int) -> str:
    return f"{count} point" if count == 1 else f"{count} points"


def undefined_value(warnings: list[str], text: str, value: float) -> bool:
    """Say so (True) when a value is not a finite real number; its derivatives are then no numbers either."""
    if math.isfinite(value):
        return False
    why = "is infinite" if math.isinf(value) else "is undefined (not a real number)"
    warnings.append(f"{text} {why}; its derivatives there mean nothing")
    return True


# ---------------------------------------------------------------------------------------------
# helpers the commands' batch cores share
# ---------------------------------------------------------------------------------------------
def point_dicts(chunk, variables: list[str], indices: list[int] | None = None) -> list[dict[str, float]]:
    """The chunk's points (or those at ``indices``, in that order) as dicts."""
    columns = [(chunk.values[v] if indices is None else chunk.values[v][indices]).tolist() for v in variables]
    count = len(chunk) if indices is None else len(indices)
    return [dict(zip(variables, row)) for row in zip(*columns)] if variables else [{} for _ in range(count)]


def base_record(chunk, i: int, point: dict[str, float]) -> dict[str, Any]:
    """A record's opening keys: the point, its source line, its pass-through fields."""
    record: dict[str, Any] = {"point": point}
    if chunk.lines[i] is not None:
        record["line"] = chunk.lines[i]
    if chunk.fields and chunk.fields[i]:
        record["fields"] = chunk.fields[i]
    return record


def close_record(record: dict, warnings: list[str], undefined: bool) -> dict:
    """A record's closing keys: ``status`` (ok, warning, undefined) and that point's ``warnings``."""
    record["status"] = "undefined" if undefined else "warning" if warnings else "ok"
    record["warnings"] = warnings
    return record


def note_error(core, method: str, err: float | None) -> None:
    """Keep the largest error seen per method (NaN and None: not compared)."""
    if err is not None and math.isfinite(err):
        core.largest_error[method] = max(err, core.largest_error.get(method, 0.0))


def start_symbolic(fn, time_limit: float, *args) -> BoundedJob:
    """SymPy's one differentiation for the whole batch, started before the first chunk."""
    return BoundedJob(fn, args, time_limit, parallel=True, cancellable=True)


def collect_symbolic(job: BoundedJob, notes: list[str], methods: list[str], *, quiet: bool = False):
    """The job's result, or None with a note (the symbolic column is then left out; ``quiet``: no column
    was asked for, only exact values of the function)."""
    try:
        return job.result()
    except SymbolicTimeout as exc:
        if quiet:
            return None
        notes.append(f"symbolic column left out: {exc} (raise --symbolic-timeout to wait longer)")
        if "symbolic" in methods:
            methods.remove("symbolic")
        return None


def finite(x) -> bool:
    return x is not None and math.isfinite(x)
