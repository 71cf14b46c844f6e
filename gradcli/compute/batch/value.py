"""``eval`` at one point or many: the value alone, point by point, in the dtype.

Every point is computed the way ``eval --at`` always computed its one point: Python's floats for float64,
NumPy scalars for float32. NumPy's vectorised float64 transcendentals can differ from Python's ``math`` in
the last digit, and its float32 array loops from its scalar ones, so evaluating a chunk as arrays would
make a value depend on the way its point came in; point by point it cannot (the price: a few microseconds
a point, in Python).

A record is the per-point part of the one-point ``-f json`` document: ``point`` (then ``line`` and
``fields`` from a ``--points`` file), ``value`` (null where undefined) and ``warnings``. Every warning of
eval is an undefined value, so a record needs no ``status``: ``value`` null is it.
"""

from __future__ import annotations

import math

from gradcli.compute.batch import engine
from gradcli.compute.request import check_dtype
from gradcli.expression import parse
from gradcli.expression.evaluate import PYTHON_FLOAT64, compile_expression, numpy_backend
from gradcli.results import point_text, shortest, value_warning

DOCUMENT_KEYS = ("command", "expression", "point", "dtype", "value", "warnings")  # the one-point -f json


class ValueBatch:
    """The batch core of ``eval`` (the protocol of :func:`gradcli.compute.batch.engine.run_batch`)."""

    command = "eval"

    def __init__(self, expression: str, *, dtype: str = "float64"):
        self.expr = parse(expression)
        self.dtype = check_dtype(dtype)
        self.variables: list[str] = list(self.expr.variables)
        self.notes: list[str] = []
        self.largest_error: dict[str, float] = {}  # eval compares no methods: the summary has no errors
        if self.dtype == "float64":
            self._compiled = compile_expression(self.expr.tree, PYTHON_FLOAT64)
            self._scalar = float
        else:
            import numpy as np

            self._compiled = compile_expression(self.expr.tree, numpy_backend(self.dtype))
            self._scalar = np.dtype(self.dtype).type

    def at_one_point(self, point) -> None:
        """The --at point alone: its variables in the order typed (those the expression lacks too, with a note)."""
        from gradcli.expression.points import unused_variables_note

        self.variables = list(point.values) + [v for v in self.variables if v not in point.values]
        if note := unused_variables_note(point, self.expr.variables, derivatives=False):
            self.notes.append(note)

    def chunk_size(self, requested: int) -> int:
        return requested

    def check(self, chunk) -> None:
        """Nothing to refuse per chunk: the sources already check that each point fits the dtype."""

    def start(self) -> None:
        """Nothing runs in the background (no SymPy)."""

    def header(self) -> dict:
        return {"command": self.command, "expression": self.expr.text, "variables": self.variables,
                "dtype": self.dtype}

    def closing_notes(self) -> list[str]:
        return []

    def value_at(self, point: dict[str, float]) -> tuple[float | None, str | None, str | None]:
        """(value, warning, why) at one point: the value with the dtype's digits, or None with the warning
        (which names the point, as eval's always has) and ``why`` (the same without the point, for the summary,
        which adds the point itself)."""
        if self.dtype == "float64":
            value = float(self._compiled(point))
        else:
            import numpy as np

            t = self._scalar
            with np.errstate(all="ignore"):  # inf and NaN are reported below
                value = float(self._compiled({k: t(v) for k, v in point.items()}))
        if math.isfinite(value):
            return shortest(value, self.dtype), None, None
        warning = value_warning(self.expr.text, value, point).split(";")[0]  # (its derivatives: not eval's)
        return None, warning, warning.removesuffix(f" at {point_text(point)}")

    def compute(self, chunk) -> engine.RecordBatch:
        records, issues = [], []
        for i, point in enumerate(_point_dicts(chunk, self.variables)):
            value, warning, why = self.value_at(point)
            record = engine.base_record(chunk, i, point)
            record["value"] = value
            record["warnings"] = [warning] if warning else []
            if warning:
                issues.append((point, [why], True))
            records.append(record)
        return engine.RecordBatch(len(records), issues, lambda: records)


def value_chunks(core: ValueBatch, *, at, points: str | None, grid: str | None, batch_size: int):
    """The chunks ``core`` computes: ``--points``/``--grid`` as every batch command reads them (``at`` fixes
    the other variables), or the ``--at`` point as a batch of one, checked as eval always checked it (a
    constant needs no point)."""
    if points is not None or grid is not None:
        from gradcli.compute.batch.points import point_chunks

        return point_chunks(core, points=points, grid=grid, at=at, batch_size=batch_size)
    from gradcli.expression.points import check_covers, check_point_fits, parse_point

    point = parse_point(at, required=bool(core.expr.variables))
    check_covers(point, core.expr.variables)
    check_point_fits(point, core.dtype)
    core.at_one_point(point)
    return [OnePointChunk({v: [point.values[v]] for v in core.variables})]


class OnePointChunk:
    """The --at point as a chunk of one, its columns plain lists: float64 at one point imports no NumPy (a
    script calling eval once a value pays for no more than it did before eval took many points)."""

    def __init__(self, values: dict[str, list[float]]):
        self.values = values
        self.lines = [None]
        self.fields = [{}]

    def __len__(self) -> int:
        return 1


def _point_dicts(chunk, variables: list[str]) -> list[dict[str, float]]:
    """Each point of ``chunk`` as {variable: Python float} (a source's columns are NumPy arrays)."""
    if isinstance(chunk, OnePointChunk):
        return [{v: chunk.values[v][0] for v in variables}]
    return engine.point_dicts(chunk, variables)


def one_point_document(header: dict, record: dict) -> dict:
    """The one-point ``-f json`` document: the run's keys and the point's record, in eval's order."""
    merged = {**header, **record}
    return {k: merged[k] for k in DOCUMENT_KEYS}
