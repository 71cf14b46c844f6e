"""``hvp``'s views of its records: the one-point tables (of the document, gradcli.render.detail), and the rows
of the many-point CSV and table (gradcli.render.batch's writers)."""

from __future__ import annotations

from gradcli.render.common import error, number, stdout_console
from gradcli.render.jvp import WHOLE, field_cells, leading, point_lines
from gradcli.render.layout import SECONDARY, Column, FittedTable, estimate, print_line, print_table

LABELS = {"forward-over-reverse": "forward-over-reverse", "reverse-over-reverse": "reverse-over-reverse",
          "reverse-over-forward": "reverse-over-forward", "fd-of-gradient": "fd of tape gradient",
          "symbolic": "exact (SymPy)"}
HOW = {"forward-over-reverse": "ForwardAccumulator around GradientTape: the tangent of the gradient",
       "reverse-over-reverse": "nested GradientTapes: the gradient of g·v",
       "reverse-over-forward": "GradientTape around ForwardAccumulator: the gradient of J·v",
       "fd-of-gradient": "(g(x + h v) - g(x - h v)) / 2h, g the tape's gradient",
       "symbolic": "SymPy: the gradient of sum_j v_j df/dx_j, at 30 digits"}
# The short names of --method, for the many-points table's narrow columns
TERSE = {"forward-over-reverse": "for", "reverse-over-reverse": "ror", "reverse-over-forward": "rof",
         "fd-of-gradient": "fd", "symbolic": "symbolic"}
# Past WHOLE entries the table shows the first SHOWN (JSON has them all).
SHOWN = 10


def hvp_detail(doc: dict) -> None:
    """The one-point tables: each method's time and largest error, then H·v entry by entry."""
    console = stdout_console()
    entries = doc["wrt"]
    n = len(entries)
    point_lines(console, doc)
    if doc.get("fd_step") is not None:
        print_line(console, f"[bold]fd[/bold]     central differences of the tape gradient along v, h = "
                            f"{doc['fd_step']:.3g}")
    methods = [m for m in doc["methods"] if m in doc["hvp"]]
    summary = FittedTable([Column("method", "left", "bold"), Column("seconds"), Column("max error"),
                           Column("how", "left", role="formula")],
                          title=f"H·v of {doc['expression']}   (value {number(doc['value'])})")
    for m in methods:
        err = "-" if m == "symbolic" else error(doc["max_error"].get(m))
        summary.add_row(LABELS[m], f"{doc['seconds'][m]:.3f}", err, HOW[m])
    print_table(console, summary)
    columns = [Column("variable", "left", "bold")]
    for m in methods:
        columns.append(Column(LABELS[m]))
        if m == "fd-of-gradient":
            columns.append(Column("fd ± estimate", role=SECONDARY, under=LABELS[m]))
    rows = range(n) if n <= WHOLE else range(SHOWN)
    table = FittedTable(columns, title="H·v, entry by entry" if n <= WHOLE else
                        f"H·v, its first {SHOWN} of {n} entries (-f json has them all)")
    estimates = doc.get("fd_error_estimate")
    for i in rows:
        row = [entries[i]]
        for m in methods:
            row.append(number(doc["hvp"][m][i]))
            if m == "fd-of-gradient":
                row.append(estimate(estimates[i] if estimates else None))
        table.add_row(*row)
    print_table(console, table)




def hvp_csv_rows(header: dict, record: dict) -> list[list[tuple]]:
    methods = header["methods"]
    row = leading(record) + [("value", record["value"])]
    for i, v in enumerate(header["wrt"]):
        row += [(f"{m}_hv_{v}", _entry(record["hvp"].get(m), i)) for m in methods]
        if "fd-of-gradient" in methods:
            row.append((f"fd-of-gradient_error_estimate_{v}", _entry(record.get("fd_error_estimate"), i)))
    row += [(f"{m}_max_error", record["max_error"].get(m)) for m in methods
            if m != "symbolic" and "symbolic" in methods]
    return [row + [("status", record["status"]), ("warnings", "; ".join(record["warnings"]))]]


def _entry(values, i):
    return values[i] if values is not None and i < len(values) else None


def hvp_table_row(header: dict, record: dict) -> list[tuple[str, str]]:
    methods = header["methods"]
    best = "symbolic" if "symbolic" in methods else methods[0]
    hv = record["hvp"].get(best) or []
    shown = ", ".join(number(x) for x in hv[:4]) + (", ..." if len(hv) > 4 else "")
    row = field_cells(record) + [(k, number(v)) for k, v in list(record["point"].items())[:6]]
    row += [("value", number(record["value"])), (f"H·v ({TERSE[best]})", f"[{shown}]")]
    row += [(f"{TERSE[m]} error", error(record["max_error"].get(m))) for m in methods
            if m != "symbolic" and "symbolic" in methods]
    return row + [("status", record["status"])]


def hvp_title(header: dict) -> str:
    along = ", ".join(f"{k} = {number(v)}" for k, v in list(header["along"].items())[:WHOLE])
    return f"H·v of {header['expression']} along v: {along}, at each point"
