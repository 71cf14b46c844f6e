"""``hessian`` at one point: the table of its document (gradcli.render.detail), the matrices side by side,
each method's error and asymmetry, then what the matrix says there (the analysis)."""

from __future__ import annotations

from rich.markup import escape

from gradcli.render.common import error, number, stdout_console
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


def fd_scheme(doc: dict) -> str:
    """'central second differences', or which variables' differences are one-sided (a domain edge)."""
    sided = [f"{name} {side}" for name, side in doc.get("fd_sides", {}).items() if side != "central"]
    if not sided:
        return doc["fd"]["scheme"]
    return f"second differences, one-sided in {', '.join(sided)} (accuracy 2)"


def hessian_detail(doc: dict) -> None:
    """Print the one-point table of a ``hessian`` document."""
    console = stdout_console()
    point = ", ".join(f"{k} = {number(v)}" for k, v in doc["point"].items())
    print_line(console, f"[bold]hessian of[/bold] {escape(doc['expression'])}   [bold]value[/bold] "
                        f"{number(doc['value'])}")
    print_line(console, f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {doc['dtype']}")
    if doc.get("tape"):
        print_line(console, f"[bold]tape[/bold]   {escape(doc['tape']['mode'])}")
    if doc.get("fd_step"):
        steps = ", ".join(f"h({k}) = {v:.3g}" if v is not None else f"h({k}) = -"
                          for k, v in doc["fd_step"].items())
        print_line(console, f"[bold]fd[/bold]     {fd_scheme(doc)}, {steps}")
    names = doc["wrt"]
    n = len(names)
    hessians = doc["hessian"]
    structural = {tuple(p) for p in doc.get("structural_zeros", [])}
    if n <= TABLE_MAX:
        print_side_by_side(console, [_matrix_table(names, m, matrix, structural) for m, matrix in hessians.items()])
        if structural and "tape" in hessians:
            print_line(console, "* structural zero: the tape returned None (the gradient entry does not depend "
                                "on that variable); shown as 0", markup=False)
    else:
        print_line(console, f"({n} x {n}: the matrices are in --format json or csv)", markup=False)
    if "symbolic" in hessians and doc.get("formulas"):
        formulas = FittedTable([Column("entry", "left", "bold"), Column("formula", "left", role=FORMULA)],
                               title="exact second derivatives")
        for i in range(n):
            for j in range(i, n):
                formulas.add_row(f"d2/d{names[i]}d{names[j]}", doc["formulas"][i][j] or "")
        print_table(console, formulas)
    if doc.get("fd_error_estimate") is not None:  # fd's own error estimate per entry: the largest here, all in JSON
        worst = max((x for row in doc["fd_error_estimate"] for x in row if x is not None), default=None)
        print_line(console, f"[bold]fd ±[/bold]   each entry's own error estimate, largest {error(worst)} "
                            "(per entry in --format json)")
    summary = FittedTable([Column("method", "left", "bold"), Column("max |H - exact|"), Column("max |H - H^T|")],
                          title="each method")
    for m in hessians:
        summary.add_row(_LABEL[m], "-" if m == "symbolic" else error(doc["error"].get(m)),
                        error(doc["symmetry"].get(m)))
    print_table(console, summary)
    _print_analysis(console, doc)


def _matrix_table(names: list[str], method: str, matrix, structural: set) -> FittedTable:
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


def _print_analysis(console, doc: dict) -> None:
    if doc.get("eigenvalues") is None:
        print_line(console, "[bold]analysis[/bold]  none: no finite Hessian")
        return
    print_line(console, f"[bold]analysis[/bold] (of the {doc['analysis_source']} matrix)")
    eig = ", ".join(number(x) for x in doc["eigenvalues"])
    condition = doc.get("condition_number")
    condition = "infinite (an eigenvalue is zero)" if condition is None else number(condition)
    lr = doc.get("max_stable_learning_rate")
    lines = [("eigenvalues", eig), ("definiteness", doc["definiteness"]),
             ("critical point", doc.get("critical_point") or "no (the gradient is not zero here)"),
             ("condition number", condition),
             ("max stable lr", ("none (no positive curvature)" if lr is None else number(lr))
              + ("   (2/lambda_max: plain gradient descent diverges above it near here)" if lr else ""))]
    for name, text in lines:
        print_line(console, f"  {name:<18}  {text}", indent=4, markup=False)
