"""Rendering of :class:`gradcli.compute.jvp.JvpReport` (tables and JSON)."""

from __future__ import annotations

from gradcli.render.common import error, number, stdout_console, to_json
from gradcli.render.layout import Column, FittedTable, estimate, method_columns, print_line, print_table

LABELS = {"symbolic": "exact (SymPy)", "tape": "ForwardAccumulator", "fd": "fd along v", "complex": "complex step"}


def jvp_json(report) -> str:
    return to_json(report.to_dict())


def jvp_table(report) -> None:
    console = stdout_console()
    point = ", ".join(f"{k} = {number(v)}" for k, v in report.point.items())
    along = ", ".join(f"{k} = {number(v)}" for k, v in report.along.items())
    print_line(console, f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {report.dtype}")
    print_line(console, f"[bold]along[/bold]  v: {along}")
    if report.fd_step is not None:
        print_line(console, f"[bold]fd[/bold]     central differences of t -> f(x + t v), step along v "
                            f"{report.fd_step:.3g}")
    if report.complex_step is not None:
        print_line(console, f"[bold]complex[/bold] step Im f(x + i h v)/h, h = {report.complex_step:.2g}")
    methods = report.methods
    table = FittedTable([Column("expression", "left", "bold"), Column("value")] + method_columns(methods, LABELS),
                        title="J·v: the derivative along v")
    for r in report.rows:
        row = [r.expression, number(r.value)]
        for m in methods:
            row.append(number(r.jvp.get(m)))
            if m != "symbolic" and "symbolic" in methods:
                row.append(error(r.error.get(m)))
            if m in ("fd", "complex"):
                row.append(estimate(r.estimate.get(m)))
        table.add_row(*row)
    print_table(console, table)
