"""``hvp``'s methods and exact formulas: the Hessian times a direction, H·v, without the Hessian (the batch core
is :mod:`gradcli.compute.batch.hvp`, the tape's numerics :mod:`gradcli.compute.hvp_batch`).

- forward-over-reverse: ``ForwardAccumulator`` around a ``GradientTape``: the tangent of the gradient;
- reverse-over-reverse: the guide's nested tapes, the outer one differentiating g·v;
- reverse-over-forward: a ``GradientTape`` around a ``ForwardAccumulator``: the gradient of J·v;
- fd of the tape gradient: (g(x + h v) - g(x - h v)) / (2h), with an estimate from the same at 2h (truncation)
  and the gradient's rounding over h;
- symbolic (SymPy): the gradient of sum_j v_j df/dx_j, term by term of a sum (each term differentiated only by
  the variables it holds, and once per form of term: a chained sum over 1,000 variables costs a few
  derivatives, not a million), evaluated at every point as grad's exact column is.

The three compositions are tapes: ``-m tape`` names them all.
"""

from __future__ import annotations

from fractions import Fraction

from gradcli.compute.jvp import formulas_of, parse_direction
from gradcli.methods.symbolic_values import formulas_at
from gradcli.compute.request import check_dtype, parse_methods
from gradcli.errors import UsageError
from gradcli.expression import Add, Node, parse
from gradcli.expression.points import check_covers, check_point_fits, parse_point

TAPE_METHODS = ("forward-over-reverse", "reverse-over-reverse", "reverse-over-forward")
FD_METHOD = "fd-of-gradient"
HVP_METHODS = (*TAPE_METHODS, FD_METHOD, "symbolic")
SHORT = {"for": "forward-over-reverse", "ror": "reverse-over-reverse", "rof": "reverse-over-forward",
         "fd": FD_METHOD}
# Older names, still taken on input: the exact column was called "exact".
DEPRECATED = {"exact": "symbolic"}


def parse_hvp_methods(text: str | None) -> list[str]:
    """``--method``: any of the long names, their short ones (for, ror, rof, fd), ``tape`` (the three
    compositions), ``symbolic`` (``exact``, its older name); none or ``all``: every method."""
    if text is None or text.strip().lower() == "all":
        return list(HVP_METHODS)
    names = []
    for part in text.split(","):
        name = part.strip().lower()
        if not name:
            continue
        name = DEPRECATED.get(name, SHORT.get(name, name))
        names += list(TAPE_METHODS) if name == "tape" else [name]
    if not names:
        raise UsageError(f"--method is empty: name one or more of {', '.join(HVP_METHODS)} (or tape)")
    return parse_methods(",".join(names), allowed=HVP_METHODS)


def plan_hvp(expression: str, *, at, along, dtype: str = "float64"):
    """What ``hvp --show-code`` needs: (expression, the point, its variables in the expression, the direction,
    dtype)."""
    expr = parse(expression)
    point = parse_point(at)
    check_covers(point, list(expr.variables))
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    direction = parse_direction(along, list(point.names), unknown_why="which --at does not give a value",
                                dtype=dtype)
    variables = [v for v in point.names if v in expr.variables]
    return expr, point, variables, direction, dtype


# ---------------------------------------------------------------------------------------------
# exact (BoundedJob work functions: module level, picklable)
# ---------------------------------------------------------------------------------------------
def hvp_formulas(tree: Node, names: list[str], variables: list[str], direction: dict[str, float], *, cancel=None):
    """[the tree's Formulas]: the H·v entry for each of ``variables`` under the key (variable,).

    Terms of one form (``100*(x2 - x1**2)**2`` and ``100*(x3 - x2**2)**2``) are differentiated once: each term is
    written over slot symbols (its variables in order of appearance, and their directions), its derivatives are
    taken for the first term of that form, and each term of the form gets them with its own symbols put back."""
    import sympy as sp

    from gradcli.expression import Var, walk
    from gradcli.methods import symbolic

    symbols = symbolic.symbols_for(names)
    v = {symbols[k]: sp.Rational(Fraction(x)) for k, x in direction.items() if k in symbols}
    terms = tree.terms if isinstance(tree, Add) else ((1, tree),)
    pieces: dict = {symbols[k]: [] for k in variables}
    forms: dict = {}
    for sign, term in terms:
        if cancel is not None:
            cancel.check()
        f = symbolic.to_sympy(term, symbols)
        f = f if sign > 0 else -f
        held = [symbols[n.name] for n in walk(term) if isinstance(n, Var) and symbols.get(n.name) in pieces]
        held = list(dict.fromkeys(held))
        slots = [sp.Symbol(f"p{k}", real=True) for k in range(len(held))]
        tangents = [sp.Symbol(f"q{k}", real=True) for k in range(len(held))]
        form = f.xreplace(dict(zip(held, slots)))
        if form not in forms:
            dv = sp.Add(*[q * symbolic.diff(form, p) for p, q in zip(slots, tangents)])
            forms[form] = [symbolic.diff(dv, p) for p in slots]
        back = {**dict(zip(slots, held)), **{q: v.get(s, sp.Integer(0)) for q, s in zip(tangents, held)}}
        for s, d in zip(held, forms[form]):
            pieces[s].append(d.xreplace(back))
    return [formulas_of({(k,): sp.Add(sp.Integer(0), *pieces[symbols[k]]) for k in variables})]


def hvp_formulas_at(tree: Node, names: list[str], variables: list[str], direction: dict[str, float],
                    points: list[dict], wanted: bool, *, cancel=None):
    """At one point (and its float32 rounding): the H·v formulas (``wanted``; else none) and the exact values."""
    from gradcli.methods.symbolic import Formulas

    formulas = hvp_formulas(tree, names, variables, direction, cancel=cancel) if wanted else [Formulas()]
    return formulas_at(formulas, [tree], points, cancel=cancel)
