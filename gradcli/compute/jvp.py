"""``jvp``'s numerics: J·v, the Jacobian of one or more expressions times a direction v, four ways, a chunk of
points at a time (the batch core is :mod:`gradcli.compute.batch.jvp`).

- exact (SymPy): the formula sum_i v_i df/dx_i, differentiated once (:func:`jvp_formulas`) and evaluated at
  every point as grad's exact column is (float64 where a rounding bound vouches for it, else 30 digits);
- ``tf.autodiff.ForwardAccumulator`` (forward mode: one pass, no Jacobian): :func:`tape_jvps`;
- fd along v: the derivative at t = 0 of the one-variable function t -> f(x + t s v), by grad's central
  differences with their error estimate and adapted steps, on :func:`line_tree`, divided by s. The scale s, a
  power of two per point, makes the step along v as long as grad's fd would take next to the variables v
  moves (|x| large, or v short or long): :func:`fd_scales`;
- the complex step along v: Im f(x + i h s v) / (h s) on the same tree, s scaling v to about unit length
  (:func:`complex_scales`), so that along a coordinate it is grad's complex step.

TensorFlow, NumPy and SymPy are imported inside the functions only.
"""

from __future__ import annotations

from fractions import Fraction

from gradcli.compute.request import check_dtype, parse_expressions
from gradcli.errors import UsageError
from gradcli.expression import Add, Mul, Node, Num, Var
from gradcli.expression.points import check_covers, check_point_fits, parse_point
from gradcli.expression.tree import substitute

# Past this many variables the tape evaluates the expression on one tensor of them all (see tape_jvps).
VECTORISE_ABOVE = 100
# The key of the J·v formula among a tree's symbolic formulas (gradcli.methods.symbolic.Formulas).
JV = ("J·v",)


def parse_direction(along, variables: list[str], *, unknown_why: str, dtype: str = "float64",
                    option: str = "--along") -> dict[str, float]:
    """The direction ``--along``: {name: float64} over ``variables`` (not named: 0). A name outside them is a
    usage error saying why (``unknown_why``), as is a value the dtype cannot hold."""
    if not along:
        raise UsageError(f"{option} is required: the direction v, e.g. {option} x1=1,x2=0")
    direction = parse_point(along, option=option)
    unknown = [k for k in direction.names if k not in variables]
    if unknown:
        raise UsageError(f"{option} names {', '.join(unknown)}, {unknown_why}")
    check_point_fits(direction, dtype, option=option)
    return {k: float(direction.values.get(k, 0.0)) for k in variables}


def plan_jvp(expressions, *, at, along, dtype: str = "float64"):
    """What ``jvp --show-code`` needs: (expressions, the point, the direction over the point's variables, dtype)."""
    exprs = parse_expressions(expressions)
    point = parse_point(at)
    check_covers(point, [v for e in exprs for v in e.variables])
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    direction = parse_direction(along, list(point.names), unknown_why="which --at does not give a value",
                                dtype=dtype)
    return exprs, point, direction, dtype


# ---------------------------------------------------------------------------------------------
# the line through x along v
# ---------------------------------------------------------------------------------------------
def free_name(base: str, taken) -> str:
    name = base
    while name in taken:
        name += "_"
    return name


def line_tree(tree: Node, direction: dict[str, float], t: str, s: str) -> Node:
    """``tree`` with each x_i (v_i != 0) replaced by ``x_i + s*v_i*t``: at t = 0 it is f(x) exactly, and its
    derivative by t there is s J·v (s: a power of two, per point, so s*v_i is exact)."""
    moved = {}
    for name, v in direction.items():
        if v != 0:
            step = Mul(((False, Var(s)), (False, Num(Fraction(v), repr(v))), (False, Var(t))))
            moved[name] = Add(((1, Var(name)), (1, step)))
    return substitute(tree, moved)


def _powers_of_two(ratio):
    import numpy as np

    with np.errstate(divide="ignore"):
        return np.exp2(np.round(np.log2(ratio)))


def fd_scales(points: dict, direction: dict[str, float]):
    """[P]: s per point for fd, 2^round(log2(max(1, |x_i| over the moved i) / max |v|)): a step h in t is a step
    as long as grad's at the largest coordinate v moves."""
    import numpy as np

    size = len(next(iter(points.values()))) if points else 1
    big = max((abs(v) for v in direction.values()), default=0.0)
    if big == 0:
        return np.ones(size)
    scale = np.ones(size)
    for k, v in direction.items():
        if v != 0:
            scale = np.maximum(scale, np.abs(np.asarray(points[k], dtype=np.float64)))
    return _powers_of_two(scale / big)


def complex_scales(size: int, direction: dict[str, float]):
    """[P]: s for the complex step, 2^round(log2(1 / max |v|)): v about unit length (its imaginary parts need
    no more than that, and a longer v only inflates the estimate of cancellation inside f)."""
    import numpy as np

    big = max((abs(v) for v in direction.values()), default=0.0)
    return np.full(size, 1.0 if big == 0 else float(_powers_of_two(1.0 / big)))


# ---------------------------------------------------------------------------------------------
# exact (BoundedJob work functions: module level, picklable)
# ---------------------------------------------------------------------------------------------
def jvp_formulas(trees: list[Node], names: list[str], direction: dict[str, float], *, cancel=None):
    """Per tree, its J·v formula (under :data:`JV`): sum_i v_i df/dx_i, term by term of a sum, each term by the
    variables it holds (a sum over 1,000 variables is 1,000 small derivatives, not 1,000 of the whole sum)."""
    import sympy

    from gradcli.methods import symbolic

    symbols = symbolic.symbols_for(names)
    moved = {symbols[k]: sympy.Rational(Fraction(v)) for k, v in direction.items() if v != 0}
    out = []
    for tree in trees:
        f = symbolic.to_sympy(tree, symbols)
        terms = f.args if f.is_Add else (f,)
        parts = []
        for term in terms:
            if cancel is not None:
                cancel.check()
            parts += [moved[s] * symbolic.diff(term, s) for s in term.free_symbols if s in moved]
        out.append(formulas_of({JV: sympy.Add(sympy.Integer(0), *parts)}))  # a SymPy number where nothing moves
    return out


def formulas_of(exprs: dict):
    """A :class:`gradcli.methods.symbolic.Formulas` of SymPy expressions by key."""
    from gradcli.methods import symbolic

    out = symbolic.Formulas()
    for key, expr in exprs.items():
        out.texts[key] = symbolic.formula_text(expr)
        try:
            out.trees[key] = symbolic.from_sympy(expr)
        except Exception as exc:  # noqa: BLE001 - SymPy's form has no tree (Piecewise...): noted, left out
            out.untranslatable[key] = str(exc) or type(exc).__name__
    return out


def jvp_formulas_at(trees: list[Node], names: list[str], direction: dict[str, float], points: list[dict],
                    wanted: bool, *, cancel=None):
    """At one point (and its float32 rounding): the J·v formulas (``wanted``; else none) and the exact values."""
    from gradcli.methods.symbolic import Formulas
    from gradcli.methods.symbolic_values import formulas_at

    formulas = jvp_formulas(trees, names, direction, cancel=cancel) if wanted else [Formulas() for _ in trees]
    return formulas_at(formulas, trees, points, cancel=cancel)


# ---------------------------------------------------------------------------------------------
# TensorFlow
# ---------------------------------------------------------------------------------------------
def tape_jvps(trees: list[Node], points: dict, variables: list[str], direction: dict[str, float], dtype: str):
    """[T, P]: J·v of each tree at every point by one ``tf.autodiff.ForwardAccumulator`` over tf.Variables of
    shape [P] (past VECTORISE_ABOVE variables: one [P, n] tensor, the alike terms of a sum as one op)."""
    import numpy as np

    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()
    tf_dtype = tf.as_dtype(dtype)
    size = len(next(iter(points.values()))) if points else 1
    zero = tf.UnconnectedGradients.ZERO
    if len(variables) > VECTORISE_ABOVE:
        from gradcli.methods.tape_vectorise import vectorised_function

        X = np.stack([np.asarray(points[k], dtype=np.float64) for k in variables], axis=1).astype(dtype)
        V = tf.Variable(X, dtype=tf_dtype)
        tangent = np.broadcast_to(np.array([direction[k] for k in variables], dtype=dtype), X.shape).copy()
        with tf.autodiff.ForwardAccumulator(primals=V, tangents=tf.constant(tangent, dtype=tf_dtype)) as acc:
            zs = [tf.convert_to_tensor(vectorised_function(t, variables, dtype)(V), dtype=tf_dtype) for t in trees]
    else:
        from gradcli.expression.evaluate import compile_expression
        from gradcli.methods.tf_runtime import tf_backend

        sources = [tf.Variable(np.asarray(points[k], dtype=np.float64).astype(dtype), dtype=tf_dtype, name=k)
                   for k in variables]
        tangents = [tf.constant(np.full(size, direction[k], dtype=dtype), dtype=tf_dtype) for k in variables]
        env = dict(zip(variables, sources))
        with tf.autodiff.ForwardAccumulator(primals=sources, tangents=tangents) as acc:
            zs = [tf.convert_to_tensor(compile_expression(t, tf_backend(dtype))(env), dtype=tf_dtype) for t in trees]
    out = np.empty((len(trees), size))
    for i, z in enumerate(zs):
        out[i] = np.broadcast_to(np.asarray(acc.jvp(z, unconnected_gradients=zero).numpy(), dtype=np.float64),
                                 (size,))
    return out
