"""The sources of ``--points``, and the grouping of validated rows into :class:`PointChunk` s.

:class:`FileSource`: a regular file, validated whole by the constructor (so ``total`` is known and a bad
row is an error before anything is computed), read again by every ``chunks()``. :class:`StreamSource`:
stdin or a pipe, read once and validated as it is read (the good rows before a bad line come out first).
"""

from __future__ import annotations

from typing import Callable, Iterator

from gradcli.expression.sources.csv_reader import CsvReader
from gradcli.expression.sources.jsonl_reader import JsonlReader
from gradcli.expression.sources.lines import Lines, sniff
from gradcli.expression.sources.messages import Where
from gradcli.expression.sources.shapes import Needs, PointChunk, PointSource, Row
from gradcli.errors import UsageError
from gradcli.limits import POINTS_CHUNK_MAX_BYTES

_CSV_SUFFIXES = (".csv",)
_JSONL_SUFFIXES = (".jsonl", ".ndjson")


class _EmptyReader:
    """An input with no non-blank line and no format by extension: no points."""

    format = "jsonl"

    @property
    def field_names(self) -> list[str]:
        return []

    def rows(self) -> Iterator[Row]:
        return iter(())


def _reader(fmt: str | None, lines: Lines, where: Where, needs: Needs, *, by_extension: bool,
            columns: tuple[str, ...] | None = None):
    """``columns``: every pass-through key of a JSON Lines file, from the validating pass."""
    if fmt is None:
        return _EmptyReader()
    if fmt == "csv":
        return CsvReader(lines, where, needs, require_header=by_extension)
    return JsonlReader(lines, where, needs, columns=columns)


def chunked_rows(rows: Iterator[Row], needs: Needs, chunk_size: int, source: Lines | None = None,
             max_bytes: int = POINTS_CHUNK_MAX_BYTES) -> Iterator[PointChunk]:
    """Group rows into chunks of at most ``chunk_size`` rows and (when ``source`` counts what was read)
    about ``max_bytes`` of input text, whichever comes first: the pass-through fields of wide rows are
    held a chunk at a time. The rows read before an error come out first, then the error."""
    import numpy as np

    columns: list[list[float]] = [[] for _ in needs.from_input]
    fields: list[dict[str, object]] = []
    lines: list[int | None] = []

    def build() -> PointChunk:
        n = len(lines)
        given = dict(zip(needs.from_input, columns))
        values = {}
        for v in needs.names:
            if v in needs.fixed:
                values[v] = np.full(n, needs.fixed[v], dtype=np.float64)
            else:
                values[v] = np.array(given[v], dtype=np.float64)
        return PointChunk(values, fields, lines)

    error: UsageError | None = None
    start = source.consumed if source is not None else 0
    try:
        for line, row_values, row_fields in rows:
            for column, value in zip(columns, row_values):
                column.append(value)
            fields.append(row_fields)
            lines.append(line)
            if len(lines) >= chunk_size or (source is not None and source.consumed - start >= max_bytes):
                chunk = build()
                columns = [[] for _ in needs.from_input]
                fields, lines = [], []
                start = source.consumed if source is not None else 0
                yield chunk
    except UsageError as exc:
        error = exc
    if lines:
        yield build()
    if error is not None:
        raise error


def format_by_extension(path: str) -> str | None:
    lower = path.lower()
    if lower.endswith(_CSV_SUFFIXES):
        return "csv"
    if lower.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    return None


class FileSource(PointSource):
    """A regular file: validated whole by the constructor, read again by every ``chunks()``."""

    def __init__(self, path: str, where: Where, needs: Needs, chunk_size: int, f, *, max_line_length: int):
        self.label = where.label
        self.variable_names = list(needs.names)
        self._path = path
        self._where = where
        self._needs = needs
        self._chunk_size = chunk_size
        self._max_line_length = max_line_length
        by_extension = format_by_extension(path)
        lines = Lines.from_binary(f, where, max_length=max_line_length)
        self._format = by_extension or sniff(lines)
        self._by_extension = by_extension is not None
        reader = _reader(self._format, lines, where, needs, by_extension=self._by_extension)
        count = 0
        for _ in reader.rows():
            count += 1
        self.total = count
        self.field_names = reader.field_names
        self.format = reader.format

    def chunks(self) -> Iterator[PointChunk]:
        try:
            f = open(self._path, "rb")
        except OSError as exc:
            raise self._where.at(None, os_reason(exc)) from None
        with f:
            lines = Lines.from_binary(f, self._where, max_length=self._max_line_length)
            # JSON Lines: every record's fields know the keys of the whole file (their union), so that a
            # CSV has a column for a key that first appears after the first record.
            reader = _reader(self._format, lines, self._where, self._needs, by_extension=self._by_extension,
                             columns=tuple(self.field_names) if self._format == "jsonl" else None)
            yield from chunked_rows(reader.rows(), self._needs, self._chunk_size, lines)


class StreamSource(PointSource):
    """Stdin or a pipe: read once, validated as it is read. The header (CSV) or the first record
    (JSON Lines) is read by the constructor, to know the format and the columns."""

    def __init__(self, lines: Lines, where: Where, needs: Needs, chunk_size: int, *,
                 by_extension: str | None = None, close: Callable[[], None] | None = None):
        self.label = where.label
        self.variable_names = list(needs.names)
        self.total = None
        self._needs = needs
        self._chunk_size = chunk_size
        self._close = close
        self._used = False
        self._lines = lines
        fmt = by_extension or sniff(lines)
        self._reader = _reader(fmt, lines, where, needs, by_extension=by_extension is not None)
        self.format = self._reader.format

    @property
    def field_names(self) -> list[str]:
        return self._reader.field_names

    def chunks(self) -> Iterator[PointChunk]:
        if self._used:
            raise RuntimeError(f"{self.label} can be read only once")
        self._used = True
        try:
            yield from chunked_rows(self._reader.rows(), self._needs, self._chunk_size, self._lines)
        finally:
            if self._close is not None:
                self._close()


def os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, not a file"
    if isinstance(exc, PermissionError):
        return "cannot be read: permission denied"
    return f"cannot be read: {exc.strerror or exc}"
