"""SymPy's implicit derivatives (``sympy.idiff`` on F - G) and F's partials, at the point as typed, at 30
digits. A :class:`gradcli.methods.worker.BoundedJob` work function: module level, picklable arguments."""

from __future__ import annotations

from gradcli.expression.tree import Node


def implicit_exact(tree: Node, dependent: str, independents: list[str], order: int,
                   point: dict[str, Node]) -> dict:
    """{"residual", "F_y", "F_x": {x: value}, "derivatives": {x: [(formula text, value), ...order]}}: values
    as floats (None where undefined). ``point``: each variable's typed value as a constant tree."""
    import sympy as sp

    from gradcli.methods.symbolic import formula_text, symbols_for, to_sympy, value_at

    names = list(point)
    symbols = symbols_for(names)
    f = to_sympy(tree, symbols)
    subs = {symbols[n]: to_sympy(point[n], {}) for n in names}
    y = symbols[dependent]
    out = {"residual": value_at(f, subs), "F_y": value_at(sp.diff(f, y), subs),
           "F_x": {x: value_at(sp.diff(f, symbols[x]), subs) for x in independents}, "derivatives": {}}
    for x in independents:
        rows = []
        for k in range(1, order + 1):
            d = sp.idiff(f, y, symbols[x], k)
            rows.append((formula_text(d), value_at(d, subs)))
        out["derivatives"][x] = rows
    return out
