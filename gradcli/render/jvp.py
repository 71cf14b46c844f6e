"""``jvp``'s views of its records: the one-point table (of the document, gradcli.render.detail), and the rows of
the many-point CSV and table (gradcli.render.batch's writers)."""

from __future__ import annotations

from gradcli.errors import printable
from gradcli.render.common import error, number, stdout_console
from gradcli.render.layout import Column, FittedTable, estimate, method_columns, print_line, print_table

LABELS = {"symbolic": "exact (SymPy)", "tape": "ForwardAccumulator", "fd": "fd along v", "complex": "complex step"}
# Up to this many coordinates the point and v are shown whole.
WHOLE = 20
# Longer expressions are cut in the table (the layout would show its row as a record, a page long).
EXPRESSION_SHOWN = 60


def _elided(text: str) -> str:
    return text if len(text) <= EXPRESSION_SHOWN else f"{text[:EXPRESSION_SHOWN]}... ({len(text):,} characters)"


def point_lines(console, doc: dict) -> None:
    """The point, the dtype and v (jvp's and hvp's tables open alike)."""
    more = f", ... ({len(doc['point'])} variables)" if len(doc["point"]) > WHOLE else ""
    point = ", ".join(f"{k} = {number(v)}" for k, v in list(doc["point"].items())[:WHOLE])
    along = ", ".join(f"{k} = {number(v)}" for k, v in list(doc["along"].items())[:WHOLE])
    print_line(console, f"[bold]point[/bold]  {point}{more}    [bold]dtype[/bold]  {doc['dtype']}")
    print_line(console, f"[bold]along[/bold]  v: {along}{more}")


def jvp_detail(doc: dict) -> None:
    """The one-point table: a row per expression, each method's J·v, its error and fd's and the complex
    step's own estimates."""
    console = stdout_console()
    point_lines(console, doc)
    if doc.get("fd_step") is not None:
        print_line(console, f"[bold]fd[/bold]     central differences of t -> f(x + t v), step along v "
                            f"{doc['fd_step']:.3g}")
    if doc.get("complex_step") is not None:
        print_line(console, f"[bold]complex[/bold] step Im f(x + i h v)/h, h = {doc['complex_step']:.2g}")
    methods = doc["methods"]
    table = FittedTable([Column("expression", "left", "bold"), Column("value")] + method_columns(methods, LABELS),
                        title="J·v: the derivative along v")
    for r in doc["results"]:
        row = [_elided(r["expression"]), number(r["value"])]
        for m in methods:
            row.append(number(r["jvp"].get(m)))
            if m != "symbolic" and "symbolic" in methods:
                row.append(error(r["error"].get(m)))
            if m in ("fd", "complex"):
                row.append(estimate(r["error_estimate"].get(m)))
        table.add_row(*row)
    print_table(console, table)




def leading(record: dict) -> list[tuple]:
    """The input's pass-through columns first (as read), then the coordinates."""
    fields = record.get("fields") or {}
    return [*fields.items(), *((k, v) for k, v in record["point"].items() if k not in fields)]


def field_cells(record: dict) -> list[tuple[str, str]]:
    """A --points file's pass-through columns as table cells, escaped (its text goes to a terminal), as
    gradcli.render.batch's rows have them."""
    return [(printable(str(k)), printable(str(v))) for k, v in record.get("fields", {}).items()]


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
    methods = header["methods"]
    best = next(m for m in ("symbolic", "tape", "complex", "fd") if m in methods)
    r = record["results"][0]
    row = field_cells(record) + [(k, number(v)) for k, v in record["point"].items()]
    row += [("value", number(r["value"])), (f"J·v ({best})", number(r["jvp"].get(best)))]
    row += [(f"{m} error", error(r["error"].get(m))) for m in methods if m != "symbolic" and "symbolic" in methods]
    return row + [("status", record["status"])]


def jvp_title(header: dict) -> str:
    more = f" (first of {len(header['expressions'])} expressions)" if len(header["expressions"]) > 1 else ""
    along = ", ".join(f"{k} = {number(v)}" for k, v in header["along"].items())
    return f"J·v of {header['expressions'][0]}{more} along v: {along}, at each point"
