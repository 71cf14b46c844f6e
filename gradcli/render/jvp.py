"""Rendering of :class:`gradcli.compute.jvp.JvpReport` (tables and JSON)."""

from __future__ import annotations

from gradcli.render.common import error, number, stdout_console, to_json
from gradcli.render.layout import Column, FittedTable, estimate, method_columns, print_line, print_table

LABELS = {"symbolic": "exact (SymPy)", "tape": "ForwardAccumulator", "fd": "fd along v", "complex": "complex step"}
TERSE = {"symbolic": "exact", "tape": "tape", "fd": "fd", "complex": "complex"}


def jvp_json(report) -> str:
    return to_json(report.to_dict())


# Longer expressions are cut in the table (the layout would show its row as a record, a page long).
EXPRESSION_SHOWN = 60


def _elided(text: str) -> str:
    return text if len(text) <= EXPRESSION_SHOWN else f"{text[:EXPRESSION_SHOWN]}... ({len(text):,} characters)"


def jvp_table(report) -> None:
    console = stdout_console()
    from gradcli.render.hvp import WHOLE

    more = f", ... ({len(report.point)} variables)" if len(report.point) > WHOLE else ""
    point = ", ".join(f"{k} = {number(v)}" for k, v in list(report.point.items())[:WHOLE])
    along = ", ".join(f"{k} = {number(v)}" for k, v in list(report.along.items())[:WHOLE])
    print_line(console, f"[bold]point[/bold]  {point}{more}    [bold]dtype[/bold]  {report.dtype}")
    print_line(console, f"[bold]along[/bold]  v: {along}{more}")
    if report.fd_step is not None:
        print_line(console, f"[bold]fd[/bold]     central differences of t -> f(x + t v), step along v "
                            f"{report.fd_step:.3g}")
    if report.complex_step is not None:
        print_line(console, f"[bold]complex[/bold] step Im f(x + i h v)/h, h = {report.complex_step:.2g}")
    methods = report.methods
    table = FittedTable([Column("expression", "left", "bold"), Column("value")] + method_columns(methods, LABELS),
                        title="J·v: the derivative along v")
    for r in report.rows:
        row = [_elided(r.expression), number(r.value)]
        for m in methods:
            row.append(number(r.jvp.get(m)))
            if m != "symbolic" and "symbolic" in methods:
                row.append(error(r.error.get(m)))
            if m in ("fd", "complex"):
                row.append(estimate(r.estimate.get(m)))
        table.add_row(*row)
    print_table(console, table)


# ---------------------------------------------------------------------------------------------
# Many points (gradcli.compute.along_points): the shared writers of grad's batches, jvp's rows
# ---------------------------------------------------------------------------------------------
def write_many(run, output: str, csv_rows, table_row, title) -> None:
    """``run`` (an along_points.ManyPoints) in ``output`` (table, json, jsonl, csv), by grad's batch writers."""
    from gradcli.render.batch import CsvSink, JsonlSink, JsonSink, TableSink, refuse_latex_for_many

    refuse_latex_for_many(many=output == "latex")
    sink = {"jsonl": JsonlSink, "json": JsonSink}.get(output)
    sink = sink() if sink else CsvSink(csv_rows) if output == "csv" else TableSink(table_row, title)
    sink.start(run.header)
    if run.records:
        sink.write(run.records)
    sink.finish(run.summary, run.summary_text, run.warnings, run.notes)


def leading(record: dict) -> list[tuple]:
    """The input's pass-through columns first (as read), then the coordinates."""
    fields = record.get("fields") or {}
    return [*fields.items(), *((k, v) for k, v in record["point"].items() if k not in fields)]


def jvp_csv_rows(header: dict, record: dict) -> list[list[tuple]]:
    methods = header["methods"]
    rows = []
    for r in record["results"]:
        row = leading(record)
        if len(header["expressions"]) > 1:
            row.append(("expression", r["expression"]))
        row.append(("value", r["value"]))
        row += [(f"{m}_jvp", r["jvp"].get(m)) for m in methods]
        row += [(f"{m}_error", r["error"].get(m)) for m in methods if m != "symbolic" and "symbolic" in methods]
        row += [(f"{m}_error_estimate", r["error_estimate"].get(m)) for m in ("fd", "complex") if m in methods]
        row += [("status", record["status"]), ("warnings", "; ".join(record["warnings"]))]
        rows.append(row)
    return rows


def jvp_table_row(header: dict, record: dict) -> list[tuple[str, str]]:
    from gradcli.render.batch import field_cells

    methods = header["methods"]
    best = next(m for m in ("symbolic", "tape", "complex", "fd") if m in methods)
    r = record["results"][0]
    row = field_cells(record) + [(k, number(v)) for k, v in record["point"].items()]
    row += [("value", number(r["value"])), (f"J·v ({TERSE[best]})", number(r["jvp"].get(best)))]
    row += [(f"{m} error", error(r["error"].get(m))) for m in methods if m != "symbolic" and "symbolic" in methods]
    return row + [("status", record["status"])]


def jvp_title(header: dict) -> str:
    more = f" (first of {len(header['expressions'])} expressions)" if len(header["expressions"]) > 1 else ""
    along = ", ".join(f"{k} = {number(v)}" for k, v in header["along"].items())
    return f"J·v of {header['expressions'][0]}{more} along v: {along}, at each point"
