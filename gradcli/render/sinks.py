"""The writers of many points' records: ``jsonl`` (a record a line, flushed per chunk), ``csv`` (one header),
``json`` (one document with a ``points`` list, written as it goes) and ``table`` (a compact row per point up
to :data:`TABLE_LIMIT`), each given a command's rows (gradcli.render.batch). The summary, warnings and notes
go to stderr.

JSON and CSV never hold more than one chunk in memory; the table keeps at most TABLE_LIMIT rows.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable
from typing import Any

from gradcli.errors import UsageError, printable
from gradcli.streams import csv_headers
from gradcli.render.common import print_diagnostic, print_diagnostics

TABLE_LIMIT = 40


def print_batch_diagnostics(summary_text: str, warnings: list[str], notes: list[str]) -> None:
    """Warnings, notes, then the one-line summary, on stderr."""
    print_diagnostics(warnings, notes)
    print_diagnostic(f"gradcli: summary: {printable(summary_text)}", "summary")


def _dumps(obj: Any, **kw) -> str:
    return json.dumps(obj, allow_nan=False, **kw)


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (dict, list)):
        return _dumps(v)
    return v


def _records(batch) -> list[dict]:
    """A chunk's records as dicts: a gradcli.compute.batch.engine.RecordBatch, or a plain list (descend)."""
    return batch if isinstance(batch, list) else batch.records()


def _lines(batch) -> list[str]:
    """A chunk's records as compact JSON lines (a RecordBatch may write them without building dicts)."""
    from gradcli.compute.batch.engine import json_line

    return [json_line(r) for r in batch] if isinstance(batch, list) else batch.lines()


class JsonlSink:
    """A line per record, flushed per chunk (a reader sees the first records before the last are computed)."""

    takes_lines = True  # writes RecordBatch.lines() (an engine may send those instead of the records)

    def __init__(self, out=None):
        self.out = out or sys.stdout

    def start(self, header: dict) -> None:
        self.header = header

    def lines(self, batch) -> list[str]:
        return _lines(batch)

    def write(self, batch) -> None:
        self.out.write("".join(line + "\n" for line in self.lines(batch)))
        self.out.flush()

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        print_batch_diagnostics(summary_text, warnings, notes)


class JsonSink:
    """One strict JSON document: the header's keys, the records under ``list_key`` (streamed), then the
    summary's keys (``summary`` and whatever ``split_summary`` takes out of it, e.g. descend's basins),
    warnings and notes."""

    takes_lines = True

    def __init__(self, out=None, *, list_key: str = "points", split_summary=None):
        self.out = out or sys.stdout
        self.first = True
        self.list_key = list_key
        self.split_summary = split_summary or (lambda summary: {"summary": summary})

    def start(self, header: dict) -> None:
        body = _dumps(header, indent=2)
        # the header without its closing brace, then the list
        self.out.write(body[:-2] + f',\n  "{self.list_key}": [')
        self.out.flush()

    def write(self, batch) -> None:
        parts = []
        for line in _lines(batch):
            parts.append(("\n    " if self.first else ",\n    ") + line)
            self.first = False
        self.out.write("".join(parts))
        self.out.flush()

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        tail = {**self.split_summary(summary), "warnings": warnings, "notes": notes}
        body = _dumps(tail, indent=2)
        self.out.write(("\n  ]," if not self.first else "],") + "\n" + body[2:] + "\n")
        self.out.flush()
        print_batch_diagnostics(summary_text, warnings, notes)


class CsvSink:
    """One header, then a row per point (``grad`` with several expressions: a row per expression).

    The header is the pass-through columns (every key of a JSON Lines file, see
    :class:`gradcli.expression.sources.jsonl_reader.Fields`; else the first record's), then the computed
    ones. A pass-through column named like a computed one is refused (exit 2): one of the two would be
    lost, and a header with one name twice is read back wrong. From a stream the keys of later records
    cannot be known when the header is written, so a record with a key the header lacks is refused too,
    after the rows before it (as a bad line of a stream is)."""

    def __init__(self, rows: Callable[[dict, dict], list[list[tuple[str, Any]]]], out=None):
        self.rows = rows
        self.out = out or sys.stdout
        self.columns: list[str] | None = None
        self.passing: set[str] = set()
        self.writer = csv.writer(self.out, lineterminator="\n")

    def start(self, header: dict) -> None:
        self.header = header

    def write(self, batch) -> None:
        try:
            for values in self.checked_rows(batch):
                self.writer.writerow([_cell(values.get(c)) for c in self.columns])
        finally:
            self.out.flush()  # the rows before a refused record are kept, as from a bad line of a stream

    def checked_rows(self, batch):
        """The chunk's rows as {column: value}, the columns fixed by the first (a record with a key the
        header lacks, or an input column named like a computed one, refused)."""
        for record in _records(batch):
            fields = record.get("fields") or {}
            for row in self.rows(self.header, record):
                if self.columns is None:
                    self._start_columns(row, fields)
                elif not self.passing.issuperset(fields):
                    self._refuse_new_key(record, fields)
                yield dict(row)

    def _start_columns(self, row: list[tuple[str, Any]], fields: dict) -> None:
        """Every row function puts the record's fields first, in their order, then the computed columns."""
        passing = list(getattr(fields, "columns", None) or fields)
        passing += [k for k in fields if k not in passing]
        computed = [k for k, _ in row[len(fields):]]
        clash = next((k for k in passing if k in computed), None)
        if clash is not None:
            raise UsageError(f"--points: the input column {_quoted(clash)} clashes with the CSV's computed column "
                             "of that name: rename it in the input (or use -f jsonl, which keeps input columns "
                             "under \"fields\")")
        self.passing = set(passing)
        self.columns = passing + computed
        if csv_headers.needed(self.columns):
            self.writer.writerow(self.columns)

    def _refuse_new_key(self, record: dict, fields: dict) -> None:
        key = next(k for k in fields if k not in self.passing)
        where = f", line {record['line']}" if record.get("line") is not None else ""
        raise UsageError(f"--points{where}: the key {_quoted(key)} is not in the first record, and a CSV "
                         "written as the input is read has the first record's columns: put every key in the "
                         "first record (null where a record has none), read the input from a file, or use -f jsonl")

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        print_batch_diagnostics(summary_text, warnings, notes)


def _quoted(name: str) -> str:
    shown = name if len(name) <= 40 else name[:40] + "..."
    return repr(printable(shown))


def records_of(batch) -> list[dict]:
    """A chunk's records as dicts (for a command's own writers)."""
    return _records(batch)


class TableSink:
    """A compact table of the first TABLE_LIMIT points, then a note on where the rest is.

    ``columns(names)``: the table's columns for the rows' cell names (default: right-aligned, status left)."""

    def __init__(self, row: Callable[[dict, dict], list[tuple[str, str]]], title: Callable[[dict], str],
                 columns: Callable[[list[str]], list] | None = None):
        self.row = row
        self.title = title
        self.columns = columns
        self.kept: list[list[tuple[str, str]]] = []
        self.count = 0

    def start(self, header: dict) -> None:
        self.header = header

    def write(self, batch) -> None:
        for r in _records(batch):
            self.count += 1
            if len(self.kept) < TABLE_LIMIT:
                self.kept.append(self.row(self.header, r))

    def table(self):
        """The kept rows as a FittedTable."""
        from gradcli.render.layout import Column, FittedTable

        names = [name for name, _ in self.kept[0]] if self.kept else []
        columns = self.columns(names) if self.columns is not None else \
            [Column(name, "left" if name == "status" else "right") for name in names]
        table = FittedTable(columns, title=self.title(self.header))
        for row in self.kept:
            table.add_row(*[v for _, v in row])
        return table

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        from gradcli.render.common import stdout_console
        from gradcli.render.layout import print_table

        print_table(stdout_console(), self.table())
        if self.count > len(self.kept):
            notes = [f"the table shows the first {len(self.kept)} of {self.count} points: "
                     "use --format jsonl or csv for every point"] + notes
        print_batch_diagnostics(summary_text, warnings, notes)


# ---------------------------------------------------------------------------------------------
# per command: CSV rows and table rows
# ---------------------------------------------------------------------------------------------
