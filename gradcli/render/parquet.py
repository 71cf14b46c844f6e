"""``-f parquet --output FILE``: the CSV's columns, typed, written with pyarrow a chunk at a time (a row
group per chunk: memory bounded by the chunk, as the CSV's).

The columns and their order are exactly ``-f csv``'s (the same row functions and checks: a pass-through
column named like a computed one is refused). Types follow the values: numbers float64 (an undefined value
is a null, never the text ``nan``), counts int64, warnings and status strings; a pass-through column keeps
the type its first chunk gives it. The writer writes into the file the command hands it (the temporary
file of gradcli.output_files, renamed once the run is complete).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from gradcli.errors import UsageError
from gradcli.render.sinks import CsvSink, print_batch_diagnostics


class _NoHeader:
    """The CSV sink's header writer, idle: Parquet keeps its column names in its schema."""

    def writerow(self, row) -> None:
        pass


class ParquetSink(CsvSink):
    def __init__(self, rows: Callable[[dict, dict], list[list[tuple[str, Any]]]], file):
        super().__init__(rows, out=file)
        self.writer = _NoHeader()
        self.file = file
        self.parquet = None
        self.schema = None

    def write(self, batch) -> None:
        rows = list(self.checked_rows(batch))
        if rows:
            self._write_rows(rows)

    def _write_rows(self, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = {c: [_value(r.get(c)) for r in rows] for c in self.columns}
        if self.schema is None:
            self.schema = pa.schema([(c, _type_of(pa, c, values)) for c, values in columns.items()])
            self.parquet = pq.ParquetWriter(self.file, self.schema)
        arrays = []
        for field in self.schema:
            values = columns[field.name]
            if field.type == pa.string():
                values = [_text(v) for v in values]
            try:
                arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                raise UsageError(f"-f parquet: column {field.name!r} holds {field.type} in the first rows and "
                                 "another kind of value later: make the input column one type (or use -f csv)"
                                 ) from None
        self.parquet.write_table(pa.Table.from_arrays(arrays, schema=self.schema))

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        if self.parquet is None:  # no point at all: the columns known still make a file with no row
            import pyarrow as pa
            import pyarrow.parquet as pq

            self.schema = pa.schema([(c, pa.float64()) for c in self.columns or []])
            self.parquet = pq.ParquetWriter(self.file, self.schema)
        self.parquet.close()
        print_batch_diagnostics(summary_text, warnings, notes)


def _value(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _type_of(pa, column: str, values: list):
    """A column's type from its first chunk: numbers float64 (int64 when all are integers), booleans, and
    text for the rest (a pass-through column of mixed kinds: each value as -f csv writes it)."""
    kinds = {type(v) for v in values if v is not None}
    if kinds and kinds <= {bool}:
        return pa.bool_()
    if kinds and kinds <= {int}:
        return pa.int64()
    if kinds <= {int, float}:
        return pa.float64()
    return pa.string()


def _text(v: Any) -> str | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (dict, list)):
        import json

        return json.dumps(v, separators=(",", ":"), allow_nan=False)
    return str(v)
