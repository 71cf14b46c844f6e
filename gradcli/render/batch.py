"""Each command's rows for the many-point writers (gradcli.render.sinks): its CSV columns, its table row and
title, and the registry that picks a command's writer for a format (:func:`sink_for`), its one-point table
(:func:`detail_view`) and its LaTeX."""

from __future__ import annotations

from typing import Any

from gradcli.errors import UsageError, printable
from gradcli.render.common import error as fmt_error
from gradcli.render.common import number as fmt_value
from gradcli.render.sinks import CsvSink, JsonlSink, JsonSink, TableSink


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
