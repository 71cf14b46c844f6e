"""``grad --reduce``'s views: a row per variable and method (the summed or mean gradient, its error against
symbolic or fd's own estimate, the per-example variance), the largest per-example norm; the JSON document."""

from __future__ import annotations

from gradcli.errors import printable
from gradcli.render.common import stdout_console, to_json
from gradcli.render.layout import Column, FittedTable, print_line, print_table
from gradcli.render.numbers import error, number


def write_reduction(doc: dict, output: str) -> None:
    if output == "json":
        print(to_json(doc))
        return
    console = stdout_console()
    parameters = ", ".join(f"{printable(k)}={v!r}" for k, v in doc["parameters"].items())
    print_line(console, f"[bold]{doc['reduce']}[/bold] of the gradient of {printable(doc['expression'])} over "
                        f"{doc['rows']:,} rows" + (f", at {parameters}" if parameters else "") +
                        " (exact sums)")
    estimate = doc.get("fd_error_estimate") or {}
    columns = [Column("variable", "left", "bold"), Column("method", "left"), Column(doc["reduce"])]
    columns += [Column("error")] if doc["error"] else []
    columns += [Column("fd ± estimate")] if estimate else []
    table = FittedTable(columns + [Column("variance")])
    for v in doc["wrt"]:
        for m in doc["methods"]:
            cells = [printable(v), m, _n(doc["gradient"][m][v])]
            if doc["error"]:
                cells.append(error((doc["error"].get(m) or {}).get(v)) if m in doc["error"] else "")
            if estimate:
                cells.append(f"± {error(estimate[v])}" if m == "fd" and estimate.get(v) is not None else "")
            table.add_row(*cells, _n(doc["variance"][m][v]))
    print_table(console, table)
    norms = ", ".join(f"{m} {_n(doc['largest_norm'][m])}" for m in doc["methods"])
    print_line(console, f"[bold]largest per-example norm[/bold]  {norms}")


def _n(x) -> str:
    return "undefined" if x is None else number(x)
