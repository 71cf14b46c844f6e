"""``trace``'s exact side: each node's value, adjoint and tangent in SymPy at the typed point, by the same sweeps
as the tape's (a :class:`gradcli.methods.worker.BoundedJob` work function: module level, picklable).

A partial that is zero whatever its inputs' values (where's by its untaken branch) passes nothing on: the
untaken branch's own partials may be infinite there (``log(x)`` at 0), and the exact derivative of the whole
expression is the sum of the paths that reach it, as SymPy's derivative of the ``Piecewise`` says.
"""

from __future__ import annotations


from gradcli.compute.trace_nodes import INPUT_SLOT, TraceNode

# The digits the chain rule's sums and products are carried in (the partials have SymPy's 30).
ACCUMULATE_DIGITS = 40


def node_specs(nodes: list[TraceNode]) -> list[tuple]:
    return [(n.kind, n.op, n.local, list(n.inputs), n.seed) for n in nodes]


def exact_sweeps(specs: list[tuple], point_exact: dict, variables: list[str], direction: dict[str, float] | None):
    """(values, adjoints, tangents): each node's exact value, adjoint and tangent at the typed point (None where
    undefined; tangents all None without a direction)."""
    import mpmath

    with mpmath.workdps(ACCUMULATE_DIGITS):
        return _sweeps(specs, point_exact, direction)


def _sweeps(specs, point_exact, direction):
    import mpmath
    import sympy as sp

    from gradcli.methods import symbolic

    symbols = symbolic.symbols_for(list(point_exact))
    subs = symbolic.exact_point(point_exact, symbols)
    # Each node's value is its whole sub-expression at the typed point (exact). The chain rule runs on
    # numbers: each op's partials at its inputs' values (30 digits), multiplied and summed in mpmath at more
    # digits. Adjoints kept as SymPy products of nested partials grew with the depth: twenty nested tanh took
    # SymPy 23 s to evaluate, sixty more than 10 s with the partials evaluated as nested expressions.
    exprs: list = []
    numbers: list = []  # each node's value as an mpmath number, None where undefined
    part: list[list] = []
    # A partial that is zero whatever its inputs' values (where's by its untaken branch, stop_gradient's):
    # its term is zero even where the other factor is infinite or undefined. A partial that is zero because
    # of a value (2*x at x = 0) is a number like any other, and 0 × undefined is undefined.
    dead: list[list[bool]] = []
    for kind, op, local, inputs, _ in specs:
        if kind == "input":
            exprs.append(symbols[op])
            numbers.append(_number(symbols[op], subs))
            part.append([])
            dead.append([])
            continue
        slots = {f"{INPUT_SLOT}{j}": sp.Symbol(f"{INPUT_SLOT}{j}", real=True) for j in range(len(inputs))}
        f = symbolic.to_sympy(local, {**symbols, **slots})
        exprs.append(f.xreplace({slots[f"{INPUT_SLOT}{j}"]: exprs[i] for j, i in enumerate(inputs)}))
        numbers.append(_number(exprs[-1], subs))
        # an undefined input as its sub-expression: a partial that does not depend on it is still defined
        at = {slots[f"{INPUT_SLOT}{j}"]: exprs[i] if numbers[i] is None else _sympy_number(numbers[i])
              for j, i in enumerate(inputs)}
        local_partials = [symbolic.diff(f, slots[f"{INPUT_SLOT}{j}"]) for j in range(len(inputs))]
        dead.append([_is_zero(d.xreplace(subs)) for d in local_partials])
        part.append([mpmath.mpf(0) if z else _number(d.xreplace(at), subs) for d, z in zip(local_partials, dead[-1])])
    n = len(specs)
    adjoints: list = [mpmath.mpf(int(seed)) for *_, seed in specs]
    reached = [seed != 0 for *_, seed in specs]  # whether a live path from a target reaches the node
    for k in range(n - 1, -1, -1):
        if not reached[k]:
            continue
        for j, i in enumerate(specs[k][3]):
            if not dead[k][j]:
                adjoints[i] = _add(adjoints[i], adjoints[k], part[k][j])
                reached[i] = True
    tangents: list = [None] * n
    if direction is not None:
        moves = [False] * n  # whether the node moves along the direction at all (a variable with v_i = 0 does not)
        for k, (kind, op, _, inputs, _) in enumerate(specs):
            if kind == "input":
                tangents[k] = mpmath.mpf(direction[op])  # a float64: exact in binary
                moves[k] = direction[op] != 0
                continue
            total = mpmath.mpf(0)
            for j, i in enumerate(inputs):
                if moves[i] and not dead[k][j]:
                    total = _add(total, tangents[i], part[k][j])
                    moves[k] = True
            tangents[k] = total
    adj = [_float(a) for a in adjoints]
    tan = [_float(t) for t in tangents] if direction is not None else [None] * n
    return [_float(v) for v in numbers], adj, tan


def _is_zero(expr) -> bool:
    """Whether ``expr`` (a partial with the variables at the point and its inputs still symbols) is 0."""
    try:
        return bool(expr.is_zero) and expr.is_number
    except Exception:  # SymPy cannot decide: not structurally zero
        return False


def _number(expr, subs):
    """``expr`` at the point as an mpmath number (None where undefined), from SymPy's 30 digits; a value below
    float64's range is kept where it is stable under more digits (exp(-800)), else 0 (a residue)."""
    import mpmath
    import sympy as sp

    from gradcli.methods import symbolic

    v = symbolic.value_at(expr, subs)  # None where undefined (a pole, outside the domain): twice, to see it
    if v is None:
        return None
    n = sp.re(expr.evalf(symbolic.EVAL_DIGITS, subs=subs))
    if not isinstance(n, sp.Float):
        return mpmath.mpf(v)
    if v == 0.0 and n != 0:
        more = sp.re(expr.evalf(3 * symbolic.EVAL_DIGITS // 2, subs=subs))
        if not isinstance(more, sp.Float) or abs(more - n) > 1e-12 * abs(more):
            return mpmath.mpf(0)
    return mpmath.mpf(n)


def _sympy_number(x):
    """An mpmath value as a SymPy number for a partial's argument: exactly 0 stays 0 (a pole stays a pole)."""
    import sympy as sp

    return sp.Integer(0) if x == 0 else sp.Float(x, ACCUMULATE_DIGITS)


def _add(total, factor, partial):
    """total + factor × partial; None is undefined."""
    if total is None or factor is None or partial is None:
        return None
    return total + factor * partial


def _float(x) -> float | None:
    return None if x is None else float(x)  # beyond float64: +-inf, as value_at gives an overflow
