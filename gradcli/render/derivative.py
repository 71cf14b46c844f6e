"""Rendering of :class:`gradcli.compute.derivative.DerivativeReport`: a row per order."""

from __future__ import annotations

from gradcli.compute.derivative import DerivativeReport
from gradcli.render.common import error, number, stdout_console, to_json
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


def derivative_json(report: DerivativeReport) -> str:
    return to_json(report.to_dict())


def derivative_table(report: DerivativeReport) -> None:
    console = stdout_console()
    point = ", ".join(f"{k} = {number(v)}" for k, v in report.point.items())
    print_line(console, f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {report.dtype}")
    methods = [m for m in ("symbolic", "tape", "fd", "complex") if m in report.methods]
    columns = [Column("order", style="bold")]
    if report.formulas:
        columns.append(Column("formula", "left", role=FORMULA))
    columns += method_columns(methods, _LABEL)
    if "fd" in methods:
        columns.append(Column("fd step (points)"))
    table = FittedTable(columns, title=f"derivatives of {report.expression} by {report.variable}   "
                                       f"(value {number(report.value)})")
    for r in report.derivatives:
        row = [str(r.order)]
        if report.formulas:
            row.append(r.formula or "")
        for m in methods:
            cell = number(getattr(r, m))
            if m == "tape" and r.structural:
                cell += " *"
            row.append(cell)
            if m != "symbolic" and "symbolic" in methods:
                row.append(error(r.error.get(m)))
            if m in ("fd", "complex"):
                row.append(estimate(getattr(r, f"{m}_error_estimate")))
        if "fd" in methods:
            row.append(f"{r.fd_step:.3g} ({r.fd_points})" if r.fd_step is not None else "-")
        table.add_row(*row)
    print_table(console, table)
    if any(r.structural for r in report.derivatives) and "tape" in methods:
        print_line(console, "* structural zero: the tape returned None (the derivative below does not depend on "
                            f"{report.variable}); shown as 0", markup=False)
