"""``trace`` as a batch core: the --at point as a batch of one through :func:`gradcli.compute.batch.engine.
run_batch`, as every point command runs (its one-point document the run's header and the point's record,
gradcli.render.detail). A trace is three tables of every node per point, so it takes one point only."""

from __future__ import annotations

from gradcli.compute.batch import engine
from gradcli.compute.request import check_dtype
from gradcli.compute.trace import parsed_expressions, finish_trace, start_trace
from gradcli.errors import UsageError

# The record's keys in the trace's report (gradcli.compute.trace.TraceReport.to_dict), after the point.
RECORD_KEYS = ("nodes", "outputs", "where_it_went_wrong", "checks_failed")


class TraceCore:
    """The trace at the --at point; ``report`` (a TraceReport) once computed, for the table and dot views."""

    command = "trace"

    def __init__(self, expressions, *, along=None, dtype: str = "float64", symbolic_time_limit: float = 10.0):
        self.exprs = parsed_expressions(expressions)
        self.trees = [e.tree for e in self.exprs]
        self.variables = list(dict.fromkeys(v for e in self.exprs for v in e.variables))
        self.dtype = check_dtype(dtype)
        self.along = along
        self.time_limit = symbolic_time_limit
        self.methods: list[str] = []  # no methods to choose: every sweep, each checked three ways
        self.notes: list[str] = []
        self.largest_error: dict[str, float] = {}
        self.at_point = False
        self.report = None
        self._job = None

    def chunk_size(self, requested: int) -> int:
        return requested

    def at_one_point(self, point) -> None:
        self.at_point = point

    def check(self, chunk) -> None:
        if self.at_point is False:
            raise UsageError("trace shows one point's computation, node by node: give --at (at many points, "
                             "jvp, hvp and grad take --points/--grid)")

    def start(self) -> None:
        self.report, self._job = start_trace(self.exprs, at=self.at_point, dtype=self.dtype, along=self.along,
                                             symbolic_time_limit=self.time_limit)

    def header(self) -> dict:
        return {"command": "trace", "expressions": list(self.report.expressions), "dtype": self.dtype,
                "along": self.report.along}

    def compute(self, chunk) -> engine.RecordBatch:
        finish_trace(self.report, self._job)
        self._job = None
        whole = self.report.to_dict()
        record = {"point": whole["point"], **{k: whole[k] for k in RECORD_KEYS}}
        self.notes += whole["notes"]
        return engine.RecordBatch.of([engine.close_record(record, whole["warnings"], False)])

    def closing_notes(self) -> list[str]:
        return []

    @property
    def failed(self) -> bool:
        """A sweep that disagrees with TensorFlow's own: exit 1."""
        return self.report is not None and self.report.failed
