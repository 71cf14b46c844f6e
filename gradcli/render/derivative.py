"""``derivative`` at one point: the table of its document (gradcli.render.detail), a row per order and a
column per method, with each method's error against the exact value, fd's and the complex step's estimates
and fd's step per order."""

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

_LABEL = {"symbolic": "exact (SymPy)", "tape": "tape (nested)", "fd": "fd (stencil)", "complex": "complex step"}


def _at(values: list | None, k: int):
    """Order k+1's entry of a per-order list (None where the list stops short: the tape past its time budget,
    the complex step above order 1)."""
    return values[k] if values is not None and k < len(values) else None


def derivative_detail(doc: dict) -> None:
    """Print the one-point table of a ``derivative`` document."""
    console = stdout_console()
    point = ", ".join(f"{k} = {number(v)}" for k, v in doc["point"].items())
    print_line(console, f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {doc['dtype']}")
    methods = [m for m in _LABEL if m in doc["methods"]]
    formulas = doc.get("formulas")
    columns = [Column("order", style="bold")]
    if formulas is not None:
        columns.append(Column("formula", "left", role=FORMULA))
    columns += method_columns(methods, _LABEL)
    if "fd" in methods:
        columns.append(Column("fd step (points)"))
    table = FittedTable(columns, title=f"derivatives of {doc['expression']} by {doc['variable']}   "
                                       f"(value {number(doc['value'])})")
    values, errors = doc["derivatives"], doc.get("error", {})
    structural = doc.get("structural_zero", [])
    for k in range(doc["order"]):
        row = [str(k + 1)]
        if formulas is not None:
            row.append(_at(formulas, k) or "")
        for m in methods:
            cell = number(_at(values.get(m), k))
            if m == "tape" and _at(structural, k):
                cell += " *"
            row.append(cell)
            if m != "symbolic" and "symbolic" in methods:
                row.append(error(_at(errors.get(m), k)))
            if m in ("fd", "complex"):
                row.append(estimate(_at(doc.get(f"{m}_error_estimate"), k)))
        if "fd" in methods:
            step = _at(doc.get("fd_step"), k)
            row.append(f"{step:.3g} ({_at(doc.get('fd_points'), k)})" if step is not None else "-")
        table.add_row(*row)
    print_table(console, table)
    if "tape" in methods and any(structural):
        print_line(console, "* structural zero: the tape returned None (the derivative below does not depend on "
                            f"{doc['variable']}); shown as 0", markup=False)
