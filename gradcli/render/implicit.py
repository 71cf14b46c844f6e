"""``implicit``'s views of its report: the table (a row per derivative, the methods side by side with their
errors, fd's estimate), and the JSON document."""

from __future__ import annotations

from gradcli.errors import printable
from gradcli.render.common import stdout_console, to_json
from gradcli.render.layout import Column, FittedTable, estimate, method_columns, print_line, print_table
from gradcli.render.numbers import error, number

LABELS = {"symbolic": "symbolic", "tape": "tape", "fd": "fd"}


def write(doc: dict, output: str) -> None:
    if output == "json":
        print(to_json(doc))
        return
    implicit_table(doc)


def subject(row: dict, dependent: str) -> str:
    k, x = row["order"], row["variable"]
    return f"d{dependent}/d{x}" if k == 1 else f"d{k}{dependent}/d{x}{k}"


def implicit_table(doc: dict) -> None:
    console = stdout_console()
    methods = doc["methods"]
    point = ", ".join(f"{printable(n)}={v!r}" for n, v in doc["point"].items())
    print_line(console, f"[bold]curve[/bold]  {printable(doc['equation'])}  at {point}  (|F - G| = "
                        f"{doc['residual']:.3g}; F_{printable(doc['dependent'])} = {number(doc['F_y'])})")
    table = FittedTable([Column("derivative", "left", "bold"), *method_columns(methods, LABELS)])
    for row in doc["derivatives"]:
        cells = [subject(row, doc["dependent"])]
        for m in methods:
            cells.append(_value(row[m]))
            if m != "symbolic" and "symbolic" in methods:
                err = row["errors"].get(m)
                cells.append("-" if err is None else error(err))
            if m == "fd":
                cells.append(estimate(row["fd_estimate"]))
        table.add_row(*cells)
    print_table(console, table)
    formulas = [(subject(r, doc["dependent"]), r["formula"]) for r in doc["derivatives"] if r["formula"]]
    for name, formula in formulas:
        print_line(console, f"{name} = {printable(formula)}", markup=False)


def _value(v) -> str:
    return "-" if v is None else number(v)
