"""Rendering of :class:`gradcli.compute.hessian.HessianReport`: the matrices side by side, then the analysis."""

from __future__ import annotations

from gradcli.compute.hessian import HessianReport
from gradcli.render.common import error, number, stdout_console, to_csv, to_json

_LABEL = {"symbolic": "exact (SymPy)", "tape": "tape (TF)", "fd": "fd"}
# Larger matrices are not drawn: n columns of 17-digit numbers do not fit a terminal.
TABLE_MAX = 6


def hessian_json(report: HessianReport) -> str:
    return to_json(report.to_dict())


def hessian_csv(report: HessianReport) -> str:
    header = ["row", "column", "formula", "symbolic", "tape", "tape_error", "fd", "fd_error", "structural_zero"]
    structural = set(report.structural_zeros)
    rows = []
    names = report.variables
    for i, vi in enumerate(names):
        for j, vj in enumerate(names):
            cells = {m: report.hessian[m][i][j] if m in report.hessian else None for m in ("symbolic", "tape", "fd")}
            exact = cells["symbolic"]

            def err(m):
                x = cells[m]
                return None if x is None or exact is None else abs(x - exact)
            rows.append([vi, vj, report.formulas[i][j] if report.formulas else None, exact,
                         cells["tape"], err("tape"), cells["fd"], err("fd"),
                         "yes" if (vi, vj) in structural else ""])
    return to_csv(header, rows)


def hessian_table(report: HessianReport) -> None:
    from rich.columns import Columns
    from rich.table import Table

    console = stdout_console()
    point = ", ".join(f"{k} = {number(v)}" for k, v in report.point.items())
    console.print(f"[bold]hessian of[/bold] {report.expression}   [bold]value[/bold] {number(report.value)}")
    console.print(f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {report.dtype}")
    if report.tape_mode:
        console.print(f"[bold]tape[/bold]   {report.tape_mode}")
    if report.fd_steps:
        steps = ", ".join(f"h({k}) = {v:.3g}" for k, v in report.fd_steps.items())
        console.print(f"[bold]fd[/bold]     central second differences, {steps}")
    names = report.variables
    n = len(names)
    structural = set(report.structural_zeros)
    if n <= TABLE_MAX:
        tables = []
        for m, matrix in report.hessian.items():
            table = Table(title=_LABEL[m], title_justify="left")
            table.add_column("", style="bold")
            for v in names:
                table.add_column(v, justify="right")
            for i, vi in enumerate(names):
                cells = []
                for j, vj in enumerate(names):
                    cell = number(matrix[i][j])
                    if m == "tape" and (vi, vj) in structural:
                        cell += " *"
                    cells.append(cell)
                table.add_row(vi, *cells)
            tables.append(table)
        console.print(Columns(tables, padding=(0, 2)))
        if structural and "tape" in report.hessian:
            console.print("* structural zero: the tape returned None (the gradient entry does not depend "
                          "on that variable); shown as 0")
    else:
        console.print(f"({n} x {n}: the matrices are in --format json or csv)")
    if "symbolic" in report.hessian and report.formulas:
        formulas = Table(title="exact second derivatives", title_justify="left")
        formulas.add_column("entry", style="bold")
        formulas.add_column("formula", overflow="fold")
        for i in range(n):
            for j in range(i, n):
                formulas.add_row(f"d2/d{names[i]}d{names[j]}", report.formulas[i][j])
        console.print(formulas)

    summary = Table(title="each method", title_justify="left")
    summary.add_column("method", style="bold")
    summary.add_column("max |H - exact|", justify="right")
    summary.add_column("max |H - H^T|", justify="right")
    for m in report.hessian:
        summary.add_row(_LABEL[m], "-" if m == "symbolic" else error(report.error.get(m)),
                        error(report.symmetry.get(m)))
    console.print(summary)

    a = report.analysis
    if a is None:
        console.print("[bold]analysis[/bold]  none: no finite Hessian")
        return
    console.print(f"[bold]analysis[/bold] (of the {report.analysis_source} matrix)")
    eig = ", ".join(number(x) for x in a.eigenvalues)
    console.print(f"  eigenvalues         {eig}")
    console.print(f"  definiteness        {a.definiteness}")
    console.print(f"  critical point      {a.critical_point or 'no (the gradient is not zero here)'}")
    console.print(f"  condition number    {'infinite (an eigenvalue is zero)' if a.condition_number is None else number(a.condition_number)}")
    lr = a.max_stable_learning_rate
    console.print(f"  max stable lr       {'none (no positive curvature)' if lr is None else number(lr)}"
                  + ("   (2/lambda_max: plain gradient descent diverges above it near here)" if lr else ""))
