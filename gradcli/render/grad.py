"""Rendering of :class:`gradcli.results.GradientReport`."""

from __future__ import annotations

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
from gradcli.results import GradientReport

_LABEL = {"symbolic": "exact (SymPy)", "tape": "tape (TF)", "fd": "fd", "complex": "complex step"}


def grad_json(report: GradientReport) -> str:
    return to_json(report.to_dict())


def grad_table(report: GradientReport) -> None:
    console = stdout_console()
    point = ", ".join(f"{k} = {number(v)}" for k, v in report.point.items())
    print_line(console, f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {report.dtype}")
    if report.fd_scheme:
        steps = ", ".join(f"h({k}) = {v:.3g}" for k, v in report.fd_steps.items())
        print_line(console, f"[bold]fd[/bold]     {report.fd_scheme} differences, {steps}")
    if report.complex_step:
        print_line(console, f"[bold]complex[/bold] step Im f(x + ih)/h, h = {report.complex_step:.2g}")
    methods = [m for m in ("symbolic", "tape", "fd", "complex") if m in report.methods]
    for r in report.results:
        print_table(console, _gradient_table(report, r, methods))
    if report.sum:
        table = FittedTable([Column("variable", "left", "bold")] + [Column(_LABEL[m]) for m in methods],
                            title="sum of all expressions (what tape.gradient([z1, z2, ...], x) returns)")
        for v in report.wrt:
            table.add_row(v, *[number(report.sum.get(m, {}).get(v)) for m in methods])
        print_table(console, table)


def _gradient_table(report: GradientReport, r, methods: list[str]) -> FittedTable:
    """One expression's gradient: a row per variable, a column per method (errors against the exact one)."""
    columns = [Column("variable", "left", "bold")]
    if "symbolic" in methods:
        columns.append(Column("formula", "left", role=FORMULA))
    columns += method_columns(methods, _LABEL)
    table = FittedTable(columns, title=f"gradient of {r.expression}   (value {number(r.value)})")
    for v in report.wrt:
        row = [v]
        if "symbolic" in methods:
            row.append(r.formula.get(v, ""))
        for m in methods:
            cell = number(r.gradient.get(m, {}).get(v))
            if m == "tape" and v in report.unwatched:
                cell = "None (not watched)"  # what tape.gradient returns for a tf.constant
            elif m == "tape" and v in r.unconnected:
                cell += " (unconnected)"
            row.append(cell)
            if m != "symbolic" and "symbolic" in methods:
                row.append(error(r.error.get(m, {}).get(v)))
            if m in ("fd", "complex"):
                row.append(estimate(getattr(r, f"{m}_error_estimate").get(v)))
        table.add_row(*row)
    return table
