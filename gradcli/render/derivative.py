"""Rendering of :class:`gradcli.compute.derivative.DerivativeReport`: a row per order."""

from __future__ import annotations

from gradcli.compute.derivative import DerivativeReport
from gradcli.render.common import error, number, stdout_console, to_csv, to_json

_LABEL = {"symbolic": "exact (SymPy)", "tape": "tape (nested)", "fd": "fd (stencil)", "complex": "complex step"}


def derivative_json(report: DerivativeReport) -> str:
    return to_json(report.to_dict())


def derivative_csv(report: DerivativeReport) -> str:
    header = ["order", "formula", "symbolic", "tape", "tape_error", "fd", "fd_error", "fd_step", "fd_points",
              "structural_zero"]
    rows = [[r.order, r.formula, r.symbolic, r.tape if "tape" in report.methods else None, r.error.get("tape"),
             r.fd if "fd" in report.methods else None, r.error.get("fd"), r.fd_step, r.fd_points,
             "yes" if r.structural else ""] for r in report.derivatives]
    if "complex" in report.methods:  # the complex step's columns are there only when it ran
        header += ["complex", "complex_error", "complex_error_estimate"]
        rows = [row + [r.complex, r.error.get("complex"), r.complex_error_estimate]
                for row, r in zip(rows, report.derivatives)]
    return to_csv(header, rows)


def derivative_table(report: DerivativeReport) -> None:
    from rich.table import Table

    console = stdout_console()
    point = ", ".join(f"{k} = {number(v)}" for k, v in report.point.items())
    console.print(f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {report.dtype}")
    methods = [m for m in ("symbolic", "tape", "fd", "complex") if m in report.methods]
    table = Table(title=f"derivatives of {report.expression} by {report.variable}   (value {number(report.value)})",
                  title_justify="left")
    table.add_column("order", justify="right", style="bold")
    if report.formulas:
        table.add_column("formula", overflow="fold")
    for m in methods:
        table.add_column(_LABEL[m], justify="right")
        if m != "symbolic" and "symbolic" in methods:
            table.add_column(f"{m} error", justify="right")
    if "fd" in methods:
        table.add_column("fd step (points)", justify="right")
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
        if "fd" in methods:
            row.append(f"{r.fd_step:.3g} ({r.fd_points})" if r.fd_step is not None else "-")
        table.add_row(*row)
    console.print(table)
    if any(r.structural for r in report.derivatives) and "tape" in methods:
        console.print("* structural zero: the tape returned None (the derivative below does not depend on "
                      f"{report.variable}); shown as 0")
