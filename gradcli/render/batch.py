"""Writers for many points: ``jsonl`` (a record a line, flushed per chunk), ``csv`` (one header), ``json``
(one document with a ``points`` list, written as it goes) and ``table`` (a compact row per point up
to :data:`TABLE_LIMIT`). The summary, warnings and notes go to stderr.

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
from gradcli.render.common import error as fmt_error
from gradcli.render.common import number as fmt_value
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
def _leading(record: dict) -> list[tuple[str, Any]]:
    """Pass-through columns first (as read), then the coordinates."""
    out = [(k, v) for k, v in record.get("fields", {}).items()]
    out += [(k, v) for k, v in record["point"].items() if k not in record.get("fields", {})]
    return out


def _status(record: dict) -> str:
    return record["status"]


def grad_csv_rows(header: dict, record: dict) -> list[list[tuple[str, Any]]]:
    rows = []
    methods = header["methods"]
    for r in record["results"]:
        row = _leading(record)
        if len(header["expressions"]) > 1:
            row.append(("expression", r["expression"]))
        row.append(("value", r["value"]))
        for v in header["wrt"]:
            row += [(f"{m}_d{v}", r["gradient"].get(m, {}).get(v)) for m in methods]
            row += [(f"{m}_error_d{v}", r["error"].get(m, {}).get(v)) for m in methods if m != "symbolic"
                    and "symbolic" in methods]
            if "fd" in methods:
                row.append((f"fd_error_estimate_d{v}", (r.get("fd_error_estimate") or {}).get(v)))
                row.append((f"fd_step_{v}", record.get("fd_step", {}).get(v)))
            if "complex" in methods:
                row.append((f"complex_error_estimate_d{v}", r.get("complex_error_estimate", {}).get(v)))
        row.append(("status", _status(record)))
        row.append(("warnings", "; ".join(record["warnings"])))
        rows.append(row)
    return rows


def field_cells(record: dict) -> list[tuple[str, str]]:
    """The pass-through columns of a --points file for the table: escaped (names and values are the file's
    text, and a table is written to a terminal; JSON and CSV carry them as they are, being data)."""
    return [(printable(str(k)), printable(str(v))) for k, v in record.get("fields", {}).items()]


def _best(methods: list[str]) -> str:
    return next(m for m in METHODS_BEST if m in methods) if methods else "fd"


METHODS_BEST = ("symbolic", "tape", "complex", "fd")  # the complex step has no truncation error


def grad_table_row(header: dict, record: dict) -> list[tuple[str, str]]:
    methods = header["methods"]
    best = _best(methods)
    r = record["results"][0]
    row = field_cells(record)
    row += [(k, fmt_value(v)) for k, v in record["point"].items()]
    row.append(("value", fmt_value(r["value"])))
    for v in header["wrt"]:
        row.append((f"d/d{v} ({best})", fmt_value(r["gradient"].get(best, {}).get(v))))
    for m in methods:
        if m != "symbolic" and "symbolic" in methods:
            errs = [e for e in r["error"].get(m, {}).values() if e is not None]
            row.append((f"{m} error", fmt_error(max(errs)) if errs else "-"))
    row.append(("status", _status(record)))
    return row


def grad_title(header: dict) -> str:
    more = f" (first of {len(header['expressions'])} expressions)" if len(header["expressions"]) > 1 else ""
    return f"gradient of {header['expressions'][0]}{more} at each point"


def hessian_csv_rows(header: dict, record: dict) -> list[list[tuple[str, Any]]]:
    methods, names = header["methods"], header["wrt"]
    row = _leading(record) + [("value", record["value"])]
    for i, a in enumerate(names):
        for j in range(i, len(names)):
            b = names[j]
            row += [(f"{m}_d{a}d{b}", (record["hessian"].get(m) or [[None] * len(names)] * len(names))[i][j])
                    for m in methods]
            if "fd" in methods:
                estimates = record.get("fd_error_estimate") or [[None] * len(names)] * len(names)
                row.append((f"fd_error_estimate_d{a}d{b}", estimates[i][j]))
    row += [(f"{m}_error", record["error"].get(m)) for m in methods if m != "symbolic" and "symbolic" in methods]
    row += [("definiteness", record.get("definiteness")), ("critical_point", record.get("critical_point"))]
    row += [("status", _status(record)), ("warnings", "; ".join(record["warnings"]))]
    return [row]


def hessian_table_row(header: dict, record: dict) -> list[tuple[str, str]]:
    methods = header["methods"]
    row = field_cells(record)
    row += [(k, fmt_value(v)) for k, v in record["point"].items()]
    row.append(("value", fmt_value(record["value"])))
    row.append(("eigenvalues", ", ".join(fmt_value(x) for x in record.get("eigenvalues") or []) or "-"))
    row.append(("kind", record.get("critical_point") or record.get("definiteness") or "-"))
    for m in methods:
        if m != "symbolic" and "symbolic" in methods:
            row.append((f"{m} error", fmt_error(record["error"].get(m))))
    row.append(("status", _status(record)))
    return row


def hessian_title(header: dict) -> str:
    return f"Hessian of {header['expression']} at each point"


def derivative_csv_rows(header: dict, record: dict) -> list[list[tuple[str, Any]]]:
    methods = header["methods"]
    row = _leading(record) + [("value", record["value"])]
    for k in range(header["order"]):
        row += [(f"{m}_d{k + 1}", _at(record["derivatives"].get(m), k)) for m in methods]
        row += [(f"{m}_error_d{k + 1}", _at(record["error"].get(m), k)) for m in methods
                if m != "symbolic" and "symbolic" in methods]
        if "fd" in methods:
            row.append((f"fd_error_estimate_d{k + 1}", _at(record.get("fd_error_estimate"), k)))
    if "complex" in methods:
        row.append(("complex_error_estimate_d1", _at(record.get("complex_error_estimate"), 0)))
    row += [("status", _status(record)), ("warnings", "; ".join(record["warnings"]))]
    return [row]


def _at(values, k):
    return values[k] if values is not None and k < len(values) else None


def derivative_table_row(header: dict, record: dict) -> list[tuple[str, str]]:
    methods = header["methods"]
    best = _best(methods)
    row = field_cells(record)
    row += [(k, fmt_value(v)) for k, v in record["point"].items()]
    row.append(("value", fmt_value(record["value"])))
    for k in range(header["order"]):
        row.append((f"order {k + 1} ({best})", fmt_value(_at(record["derivatives"].get(best), k))))
    for m in methods:
        if m != "symbolic" and "symbolic" in methods:
            errs = [e for e in record["error"].get(m, []) if e is not None]
            row.append((f"{m} error", fmt_error(max(errs)) if errs else "-"))
    row.append(("status", _status(record)))
    return row


def derivative_title(header: dict) -> str:
    return f"derivatives of {header['expression']} by {header['variable']} at each point"


def eval_csv_rows(header: dict, record: dict) -> list[list[tuple[str, Any]]]:
    return [_leading(record) + [("value", record["value"]), ("warnings", "; ".join(record["warnings"]))]]


def eval_table_row(header: dict, record: dict) -> list[tuple[str, str]]:
    row = field_cells(record)
    row += [(k, fmt_value(v)) for k, v in record["point"].items()]
    row.append(("value", fmt_value(record["value"])))
    row.append(("status", "undefined" if record["value"] is None else "ok"))  # eval's only warning
    return row


def eval_title(header: dict) -> str:
    return f"{header['expression']} at each point ({header['dtype']})"


_KINDS = {
    "grad": (grad_csv_rows, grad_table_row, grad_title),
    "hessian": (hessian_csv_rows, hessian_table_row, hessian_title),
    "derivative": (derivative_csv_rows, derivative_table_row, derivative_title),
    "eval": (eval_csv_rows, eval_table_row, eval_title),
}


def _kind(command: str):
    """(CSV rows, table row, title) of ``command``'s records."""
    if command == "jvp":
        from gradcli.render import jvp

        return jvp.jvp_csv_rows, jvp.jvp_table_row, jvp.jvp_title
    if command == "hvp":
        from gradcli.render import hvp

        return hvp.hvp_csv_rows, hvp.hvp_table_row, hvp.hvp_title
    return _KINDS[command]


def sink_for(command: str, output: str, *, one_point: bool = False, file=None):
    """The writer for ``command`` in format ``output`` (table, json, jsonl, csv, parquet); ``one_point``: the
    --at point alone, whose json and table are its document (gradcli.render.detail); ``file``: where parquet
    writes (a binary file). descend's many starts have their own rows and tables
    (gradcli.render.descend_batch)."""
    if command == "descend":
        from gradcli.render.descend_batch import descend_sink

        return descend_sink(output, variables=[])
    csv_rows, table_row, title = _kind(command)
    if output == "latex":
        refuse_latex_for_many(many=not one_point)
        from gradcli.render.detail import DetailSink

        return DetailSink(_latex_view(command))
    if one_point and output in ("json", "table"):
        from gradcli.render.detail import DetailSink

        return DetailSink(None if output == "json" else detail_view(command))
    if output == "jsonl":
        return JsonlSink()
    if output == "json":
        return JsonSink()
    if output == "csv":
        return CsvSink(csv_rows)
    if output == "parquet":
        from gradcli.render.parquet import ParquetSink

        return ParquetSink(csv_rows, file)
    return TableSink(table_row, title)


def refuse_latex_for_many(*, many: bool, point: str = "point", option: str = "--at") -> None:
    """-f latex writes one point's (descend: one start's) tables; many of them are a CSV's job."""
    if many:
        raise UsageError(f"-f latex writes one {point}'s tables: give {option} alone (for many {point}s: -f csv)")


def detail_view(command: str):
    """The one-point table of ``command``: a renderer of its document."""
    if command == "grad":
        from gradcli.render.grad import grad_detail

        return grad_detail
    if command == "derivative":
        from gradcli.render.derivative import derivative_detail

        return derivative_detail
    if command == "hessian":
        from gradcli.render.hessian import hessian_detail

        return hessian_detail
    if command == "jvp":
        from gradcli.render.jvp import jvp_detail

        return jvp_detail
    if command == "hvp":
        from gradcli.render.hvp import hvp_detail

        return hvp_detail
    raise ValueError(f"no one-point view for {command}")


def _latex_view(command: str):
    """The one-point ``-f latex`` writer of ``command``: prints the tabulars of its document."""
    from gradcli.render import latex

    views = {"jvp": latex.jvp_latex, "hvp": lambda doc: latex.hvp_latex({**doc, "variables": doc["wrt"]})}
    if command not in views:
        return latex.latex_view(command)
    return lambda doc: print(views[command](doc), end="")
