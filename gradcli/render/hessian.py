"""Rendering of :class:`gradcli.compute.hessian.HessianReport`: the matrices side by side, then the analysis."""

from __future__ import annotations

from rich.markup import escape

from gradcli.compute.hessian import HessianReport
from gradcli.render.common import error, number, stdout_console, to_json
from gradcli.render.layout import (
    FORMULA,
    Column,
    FittedTable,
    print_line,
    print_side_by_side,
    print_table,
)

_LABEL = {"symbolic": "exact (SymPy)", "tape": "tape (TF)", "fd": "fd"}
# Larger matrices are not drawn: n columns of 17-digit numbers do not fit a terminal.
TABLE_MAX = 6


def hessian_json(report: HessianReport) -> str:
    return to_json(report.to_dict())


def hessian_table(report: HessianReport) -> None:
    console = stdout_console()
    point = ", ".join(f"{k} = {number(v)}" for k, v in report.point.items())
    print_line(console, f"[bold]hessian of[/bold] {escape(report.expression)}   [bold]value[/bold] {number(report.value)}")
    print_line(console, f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {report.dtype}")
    if report.tape_mode:
        print_line(console, f"[bold]tape[/bold]   {escape(report.tape_mode)}")
    if report.fd_steps:
        steps = ", ".join(f"h({k}) = {v:.3g}" for k, v in report.fd_steps.items())
        print_line(console, f"[bold]fd[/bold]     {report.fd_scheme}, {steps}")
    names = report.variables
    n = len(names)
    structural = set(report.structural_zeros)
    if n <= TABLE_MAX:
        print_side_by_side(console, [_matrix_table(report, m, matrix, structural) for m, matrix in report.hessian.items()])
        if structural and "tape" in report.hessian:
            print_line(console, "* structural zero: the tape returned None (the gradient entry does not depend "
                                "on that variable); shown as 0", markup=False)
    else:
        print_line(console, f"({n} x {n}: the matrices are in --format json or csv)", markup=False)
    if "symbolic" in report.hessian and report.formulas:
        formulas = FittedTable([Column("entry", "left", "bold"), Column("formula", "left", role=FORMULA)],
                               title="exact second derivatives")
        for i in range(n):
            for j in range(i, n):
                formulas.add_row(f"d2/d{names[i]}d{names[j]}", report.formulas[i][j])
        print_table(console, formulas)

    if report.fd_error_estimate is not None:  # fd's own error estimate per entry: the largest here, all in JSON
        worst = max((x for row in report.fd_error_estimate for x in row), default=None)
        print_line(console, f"[bold]fd ±[/bold]   each entry's own error estimate, largest {error(worst)} "
                            "(per entry in --format json)")
    summary = FittedTable([Column("method", "left", "bold"), Column("max |H - exact|"), Column("max |H - H^T|")],
                          title="each method")
    for m in report.hessian:
        summary.add_row(_LABEL[m], "-" if m == "symbolic" else error(report.error.get(m)),
                        error(report.symmetry.get(m)))
    print_table(console, summary)
    _print_analysis(console, report)


def _matrix_table(report: HessianReport, method: str, matrix, structural: set) -> FittedTable:
    names = report.variables
    table = FittedTable([Column("", "left", "bold")] + [Column(v) for v in names], title=_LABEL[method])
    for i, vi in enumerate(names):
        cells = []
        for j, vj in enumerate(names):
            cell = number(matrix[i][j])
            if method == "tape" and (vi, vj) in structural:
                cell += " *"
            cells.append(cell)
        table.add_row(vi, *cells)
    return table


def _print_analysis(console, report: HessianReport) -> None:
    a = report.analysis
    if a is None:
        print_line(console, "[bold]analysis[/bold]  none: no finite Hessian")
        return
    print_line(console, f"[bold]analysis[/bold] (of the {report.analysis_source} matrix)")
    eig = ", ".join(number(x) for x in a.eigenvalues)
    condition = "infinite (an eigenvalue is zero)" if a.condition_number is None else number(a.condition_number)
    lr = a.max_stable_learning_rate
    lines = [("eigenvalues", eig), ("definiteness", a.definiteness),
             ("critical point", a.critical_point or "no (the gradient is not zero here)"),
             ("condition number", condition),
             ("max stable lr", ("none (no positive curvature)" if lr is None else number(lr))
              + ("   (2/lambda_max: plain gradient descent diverges above it near here)" if lr else ""))]
    for name, text in lines:
        print_line(console, f"  {name:<18}  {text}", indent=4, markup=False)
