"""The three ways ``hessian`` takes the matrix at one point (a batch of one for tape and fd): nested
``GradientTape``s, central (or, at a domain edge, one-sided) second differences, and SymPy's exact matrix
in a bounded worker. :mod:`gradcli.compute.hessian` re-exports them and combines them into the report."""

from __future__ import annotations

from dataclasses import dataclass

from gradcli.expression import Node
from gradcli.expression.points import Point
from gradcli.methods import symbolic
from gradcli.methods.worker import BoundedJob, CancelFlag

Matrix = list[list[float | None]]


# ---------------------------------------------------------------------------------------------
# tape
# ---------------------------------------------------------------------------------------------
@dataclass
class TapeHessian:
    value: float
    gradient: list[float]
    matrix: list[list[float]]
    structural: list[tuple[int, int]]  # (row, column) entries the tape reported as unconnected
    mode: str  # "rows" | "stacked" | "jacobian" (see gradcli.methods.tape)


def tape_hessian(tree: Node, values: dict[str, float], wrt: list[str], *, dtype: str = "float64",
                 mode: str | None = None) -> TapeHessian:
    """The Hessian of ``tree`` by nested tapes: a batch of one point for
    :func:`gradcli.methods.tape.tape_hessians`. ``mode``: "rows" (the guide), "stacked", "jacobian" or None
    (by size: rows up to ROWS_MAX variables, else stacked)."""
    import numpy as np

    from gradcli.methods.tape import tape_hessians

    t = tape_hessians(tree, {k: np.array([v], dtype=np.float64) for k, v in values.items()}, wrt, dtype=dtype,
                      mode=mode)
    return TapeHessian(float(t.values[0]), t.gradients[0].tolist(), t.matrices[0].tolist(), t.structural, t.mode)


# ---------------------------------------------------------------------------------------------
# finite differences
# ---------------------------------------------------------------------------------------------
@dataclass
class FdHessian:
    value: float
    gradient: list[float]  # central first differences from the same stencil (step eps^(1/4): rough)
    matrix: list[list[float]]
    steps: list[float]
    estimates: list[list[float]] | None = None
    how: int = 0  # fd_error.SHRUNK: the default steps' stencil left the domain or crossed a pole (smaller
    # steps); fd_error.ONE_SIDED: no two-sided stencil stays in the domain
    sides: list[int] | None = None  # per variable: 1 forward, -1 backward, 0 central
    unresolved: bool = False  # one-sided, and no step resolved the entries: a warning


def fd_hessian(tree: Node, values: dict[str, float], wrt: list[str], *, dtype: str = "float64",
               eps: float | None = None) -> FdHessian:
    """Central second differences at one point: :func:`gradcli.methods.fd_hessian.fd_hessians` on a batch of one."""
    from gradcli.methods.fd_engine import one_point
    from gradcli.methods.fd_hessian import fd_hessians

    r = fd_hessians(tree, one_point(values), wrt, dtype=dtype, eps=eps)
    return FdHessian(float(r.values[0]), r.gradients[0].tolist(), r.matrices[0].tolist(), r.steps[0].tolist(),
                     r.estimates[0].tolist(), int(r.how[0]), r.sides[0].tolist(), bool(r.unresolved[0]))


# ---------------------------------------------------------------------------------------------
# symbolic
# ---------------------------------------------------------------------------------------------
@dataclass
class SymbolicHessian:
    value: float | None
    gradient: list[float | None]
    matrix: Matrix
    formulas: list[list[str]]
    shift: list[list[float]] | None = None  # each entry's move from the typed point to the dtype's


def symbolic_hessian_work(tree: Node, point_exact: dict[str, Node], names: list[str], wrt: list[str],
                          formulas: bool, rounded: dict[str, float] | None = None,
                          cancel: CancelFlag | None = None) -> SymbolicHessian:
    """The exact Hessian (upper triangle, mirrored: SymPy's mixed partials commute for these functions), and
    with ``rounded`` (the dtype's point) how far each entry moves from the typed point to it.

    A :class:`gradcli.methods.worker.BoundedJob` work function (module-level, picklable arguments).
    """
    syms = symbolic.symbols_for(names)
    subs = symbolic.exact_point(point_exact, syms)
    moved = symbolic.rounded_point(subs, rounded, syms)
    f = symbolic.to_sympy(tree, syms)
    value = symbolic.value_at(f, subs)
    first = []
    for v in wrt:
        cancel.check()
        first.append(symbolic.diff(f, syms[v]))
    gradient = [symbolic.value_at(d, subs) for d in first]
    n = len(wrt)
    matrix: Matrix = [[None] * n for _ in range(n)]
    texts = [[""] * n for _ in range(n)]
    shift = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            cancel.check()
            d = symbolic.diff(first[i], syms[wrt[j]])
            matrix[i][j] = matrix[j][i] = symbolic.value_at(d, subs)
            shift[i][j] = shift[j][i] = symbolic.point_shift(d, subs, moved, matrix[i][j])
            if formulas:
                texts[i][j] = texts[j][i] = symbolic.formula_text(d)
    return SymbolicHessian(value, gradient, matrix, texts, shift if moved is not None else None)


def start_symbolic_hessian(tree: Node, point: Point, wrt: list[str], *, time_limit: float,
                           formulas: bool = True, parallel: bool = True, dtype: str | None = None) -> BoundedJob:
    """Start :func:`symbolic_hessian_work` as a :class:`gradcli.methods.worker.BoundedJob` (with ``dtype``,
    also each entry's shift between the typed point and the dtype's)."""
    from gradcli.compute.point_rounding import dtype_point

    rounded = None if dtype is None else dtype_point(point, dtype)
    return BoundedJob(symbolic_hessian_work, (tree, dict(point.exact), list(point.names), list(wrt), formulas,
                                              rounded), time_limit, parallel=parallel, cancellable=True)


def symbolic_hessian(tree: Node, point: Point, wrt: list[str], *, time_limit: float,
                     formulas: bool = True) -> SymbolicHessian:
    """The exact Hessian; raises :class:`SymbolicTimeout` past ``time_limit``."""
    return start_symbolic_hessian(tree, point, wrt, time_limit=time_limit, formulas=formulas).result()
