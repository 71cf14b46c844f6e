"""``grad`` at one point: the table of its document (gradcli.render.detail), a row per variable and a column
per method, with each method's error against the exact value and fd's and the complex step's estimates."""

from __future__ import annotations

from gradcli.render.common import error, number, stdout_console
from gradcli.render.layout import (
    FORMULA,
    Column,
    FittedTable,
    estimate,
    method_columns,
    print_line,
    print_table,
)

_LABEL = {"symbolic": "exact (SymPy)", "tape": "tape (TF)", "fd": "fd", "complex": "complex step"}


def grad_detail(doc: dict) -> None:
    """Print the one-point table of a ``grad`` document."""
    console = stdout_console()
    point = ", ".join(f"{k} = {number(v)}" for k, v in doc["point"].items())
    print_line(console, f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {doc['dtype']}")
    if doc.get("fd"):
        steps = ", ".join(f"h({k}) = {v:.3g}" if v is not None else f"h({k}) = -"
                          for k, v in doc.get("fd_step", {}).items())
        print_line(console, f"[bold]fd[/bold]     {doc['fd']['scheme']} differences, {steps}")
    if doc.get("complex"):
        print_line(console, f"[bold]complex[/bold] step Im f(x + ih)/h, h = {doc['complex']['step']:.2g}")
    methods = [m for m in _LABEL if m in doc["methods"]]
    unwatched = doc.get("tape_sources", {}).get("unwatched", [])
    formulas = doc.get("formulas") or [{} for _ in doc["results"]]
    for r, formula in zip(doc["results"], formulas):
        print_table(console, _gradient_table(doc["wrt"], r, formula, methods, unwatched))
    if doc.get("sum"):
        table = FittedTable([Column("variable", "left", "bold")] + [Column(_LABEL[m]) for m in methods],
                            title="sum of all expressions (what tape.gradient([z1, z2, ...], x) returns)")
        for v in doc["wrt"]:
            table.add_row(v, *[_tape_cell(doc["sum"].get(m, {}).get(v), m, v, unwatched, []) for m in methods])
        print_table(console, table)


def _tape_cell(x: float | None, method: str, variable: str, unwatched: list[str], unconnected: list[str]) -> str:
    if method == "tape" and variable in unwatched:
        return "None (not watched)"  # what tape.gradient returns for a tf.constant
    cell = number(x)
    if method == "tape" and variable in unconnected:
        cell += " (unconnected)"
    return cell


def _gradient_table(wrt: list[str], r: dict, formula: dict, methods: list[str],
                    unwatched: list[str]) -> FittedTable:
    """One expression's gradient: a row per variable, a column per method (errors against the exact one)."""
    columns = [Column("variable", "left", "bold")]
    if "symbolic" in methods:
        columns.append(Column("formula", "left", role=FORMULA))
    columns += method_columns(methods, _LABEL)
    table = FittedTable(columns, title=f"gradient of {r['expression']}   (value {number(r['value'])})")
    for v in wrt:
        row = [v]
        if "symbolic" in methods:
            row.append(formula.get(v) or "")
        for m in methods:
            row.append(_tape_cell(r["gradient"].get(m, {}).get(v), m, v, unwatched, r["unconnected"]))
            if m != "symbolic" and "symbolic" in methods:
                row.append(error(r["error"].get(m, {}).get(v)))
            if m in ("fd", "complex"):
                row.append(estimate(r.get(f"{m}_error_estimate", {}).get(v)))
        table.add_row(*row)
    return table
