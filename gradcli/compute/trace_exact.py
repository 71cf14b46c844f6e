"""``trace``'s exact side: each node's value, adjoint and tangent in SymPy at the typed point, by the same sweeps
as the tape's (a :class:`gradcli.methods.worker.BoundedJob` work function: module level, picklable).

An adjoint that is exactly zero at the point (where's untaken branch) passes nothing on: its users' partials
may be infinite there (``log(x)`` at 0), and the exact derivative of the whole expression is the sum of the
paths that reach it, as SymPy's derivative of the ``Piecewise`` says.
"""

from __future__ import annotations

from fractions import Fraction

from gradcli.compute.trace_nodes import _INPUT, TraceNode


def node_specs(nodes: list[TraceNode]) -> list[tuple]:
    return [(n.kind, n.op, n.local, list(n.inputs), n.seed) for n in nodes]


def exact_sweeps(specs: list[tuple], point_exact: dict, variables: list[str], direction: dict[str, float] | None):
    """(values, adjoints, tangents): each node's exact value, adjoint and tangent at the typed point (None where
    undefined; tangents all None without a direction)."""
    import sympy as sp

    from gradcli.methods import symbolic

    symbols = symbolic.symbols_for(list(point_exact))
    subs = symbolic.exact_point(point_exact, symbols)
    exprs: list = []
    partials: list[list] = []
    for kind, op, local, inputs, _ in specs:
        if kind == "input":
            exprs.append(symbols[op])
            partials.append([])
            continue
        slots = {f"{_INPUT}{j}": sp.Symbol(f"{_INPUT}{j}", real=True) for j in range(len(inputs))}
        f = symbolic.to_sympy(local, {**symbols, **slots})
        at = {slots[f"{_INPUT}{j}"]: exprs[i] for j, i in enumerate(inputs)}
        exprs.append(f.xreplace(at))
        partials.append([symbolic.diff(f, slots[f"{_INPUT}{j}"]).xreplace(at) for j in range(len(inputs))])
    zero = sp.Integer(0)
    # Which partials are exactly zero at the point: a term with a zero factor is zero, whatever the other.
    dead = [[symbolic.value_at(d, subs) == 0.0 for d in ds] for ds in partials]
    adjoints = [sp.Integer(int(seed)) for *_, seed in specs]
    adj: list = [None] * len(specs)
    for k in range(len(specs) - 1, -1, -1):
        adj[k] = symbolic.value_at(adjoints[k], subs)
        if adj[k] == 0.0:
            adjoints[k] = zero
            continue
        for j, i in enumerate(specs[k][3]):
            if not dead[k][j]:
                adjoints[i] = adjoints[i] + adjoints[k] * partials[k][j]
    tan: list = [None] * len(specs)
    if direction is not None:
        tangents: list = []
        for k, (kind, op, _, inputs, _) in enumerate(specs):
            if kind == "input":
                tangents.append(sp.Rational(Fraction(direction[op])))
            else:
                tangents.append(sp.Add(*[partials[k][j] * tangents[i] for j, i in enumerate(inputs)
                                         if not dead[k][j] and tan[i] != 0.0]))
            tan[k] = symbolic.value_at(tangents[k], subs)
            if tan[k] == 0.0:
                tangents[k] = zero
    values = [symbolic.value_at(e, subs) for e in exprs]
    return values, adj, tan
