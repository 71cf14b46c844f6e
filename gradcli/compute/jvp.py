"""``jvp``: J·v, the Jacobian of one or more expressions times a direction v, four ways.

- exact (SymPy): sum_i v_i df/dx_i at the typed point and the typed direction, at 30 digits;
- ``tf.autodiff.ForwardAccumulator`` (forward mode: one pass, no Jacobian);
- fd along v: the derivative at t = 0 of the one-variable function t -> f(x + t s v), by grad's central
  differences with their error estimate and adapted steps (:func:`gradcli.methods.fd.fd_gradients` on the tree
  with each x_i replaced by x_i + t s v_i, by t), divided by s. The scale s, a power of two, makes the step along
  v as long as grad's fd would take next to the variables v moves (|x| large, or v short or long). (The k-th
  order stencils of fd_derivatives take wider steps, too wide for a first derivative at large |x| in float32.)
- the complex step along v: Im f(x + i h s v) / (h s), by :func:`gradcli.methods.complex_step.complex_gradients`
  on the same tree, with its estimate.

TensorFlow, NumPy and SymPy are imported inside the functions only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from gradcli.compute.request import check_dtype, parse_expressions, parse_methods
from gradcli.errors import UsageError
from gradcli.expression import Add, Mul, Node, Num, Var
from gradcli.expression.points import check_covers, check_point_fits, parse_point
from gradcli.expression.tree import substitute

JVP_METHODS = ("symbolic", "tape", "fd", "complex")
# Past this many variables the tape evaluates the expression on one tensor of them all (see tape_jvp).
VECTORISE_ABOVE = 100


@dataclass
class JvpRow:
    expression: str
    value: float | None
    jvp: dict[str, float | None] = field(default_factory=dict)  # method -> J·v
    error: dict[str, float | None] = field(default_factory=dict)  # method -> |J·v - exact|
    estimate: dict[str, float | None] = field(default_factory=dict)  # fd, complex: their own error estimates


@dataclass
class JvpReport:
    expressions: list[str]
    point: dict[str, float]
    along: dict[str, float]
    dtype: str
    methods: list[str]
    rows: list[JvpRow] = field(default_factory=list)
    fd_step: float | None = None  # the step along v, in x's units (|x(h) - x| / |v|)
    complex_step: float | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False

    def to_dict(self) -> dict:
        from gradcli.results import clean

        return clean({"command": "jvp", "expressions": self.expressions, "point": self.point, "along": self.along,
                      "dtype": self.dtype, "methods": self.methods, "fd_step": self.fd_step,
                      "complex_step": self.complex_step,
                      "results": [{"expression": r.expression, "value": r.value, "jvp": r.jvp, "error": r.error,
                                   "error_estimate": r.estimate} for r in self.rows],
                      "warnings": self.warnings, "notes": self.notes})


def parse_along(along, point, *, option: str = "--along"):
    """The direction: {name: float64} and {name: exact tree} over the point's variables (not named: 0)."""
    if not along:
        raise UsageError(f"{option} is required: the direction v, e.g. {option} x1=1,x2=0")
    direction = parse_point(along, option=option)
    unknown = [k for k in direction.names if k not in point.values]
    if unknown:
        raise UsageError(f"{option} names {', '.join(unknown)}, which --at does not give a value")
    zero = Num(Fraction(0), "0")
    return ({k: float(direction.values.get(k, 0.0)) for k in point.names},
            {k: direction.exact.get(k, zero) for k in point.names})


def plan_jvp(expressions, *, at, along, dtype: str = "float64", methods=None):
    exprs = parse_expressions(expressions)
    point = parse_point(at)
    check_covers(point, [v for e in exprs for v in e.variables])
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    values, exact = parse_along(along, point)
    check_point_fits(parse_point(along, option="--along"), dtype, option="--along")
    chosen = parse_methods(methods or ",".join(JVP_METHODS), allowed=JVP_METHODS)
    return exprs, point, values, exact, dtype, chosen


def line_tree(tree: Node, point: dict[str, float], direction: dict[str, float]) -> tuple[Node, str, float]:
    """``tree`` with each x_i (v_i != 0) replaced by ``x_i + t*(s*v_i)``: (that tree, t's name, s)."""
    names = set(point)
    t = "t"
    while t in names:
        t += "_"
    big = max((abs(v) for v in direction.values()), default=0.0)
    s = 1.0
    if big > 0:
        scale = max([1.0] + [abs(point[k]) for k, v in direction.items() if v != 0])  # the moved variables only
        s = 2.0 ** round(math.log2(scale / big))
    moved = {}
    for name, v in direction.items():
        if v != 0:
            step = Mul(((False, Num(Fraction(s * v), repr(s * v))), (False, Var(t))))
            moved[name] = Add(((1, Var(name)), (1, step)))
    return substitute(tree, moved), t, s


def exact_jvp(trees: list[Node], point_exact: dict, direction_exact: dict):
    """(value, J·v) per tree at the typed point and direction; a BoundedJob work function."""
    return exact_jvp_many(trees, [point_exact], direction_exact)[0]


def exact_jvp_many(trees: list[Node], points_exact: list[dict], direction_exact: dict):
    """Per point, (value, J·v) per tree: J·v is differentiated once and evaluated at each point (a BoundedJob
    work function). Every point has the same variables."""
    import sympy

    from gradcli.methods import symbolic

    symbols = symbolic.symbols_for(list(points_exact[0]))
    v = {k: symbolic.to_sympy(t, {}) for k, t in direction_exact.items()}
    moved = {symbols[k]: v[k] for k in symbols if v.get(k, 0) != 0}
    formulas = []
    for tree in trees:
        f = symbolic.to_sympy(tree, symbols)
        # term by term of a sum, each term by the variables it holds: a sum over 1,000 variables is 1,000
        # small derivatives, not 1,000 derivatives of the whole sum
        terms = f.args if f.is_Add else (f,)
        jv = sympy.Add(sympy.Integer(0),  # a SymPy number even where no variable moves
                       *[moved[s] * symbolic.diff(t, s) for t in terms for s in t.free_symbols if s in moved])
        formulas.append((f, jv))
    out = []
    for point_exact in points_exact:
        subs = symbolic.exact_point(point_exact, symbols)
        out.append([(symbolic.value_at(f, subs), symbolic.value_at(jv, subs)) for f, jv in formulas])
    return out


def tape_jvp(trees: list[Node], point: dict[str, float], direction: dict[str, float], dtype: str):
    """(value, J·v) per tree by ``tf.autodiff.ForwardAccumulator`` over the point's tf.Variables."""
    from gradcli.expression.evaluate import compile_expression
    from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

    tf = load_tensorflow()
    tf_dtype = tf.as_dtype(dtype)
    names = list(point)
    out = []
    if len(names) > VECTORISE_ABOVE:
        import numpy as np

        from gradcli.methods.tape_vectorise import vectorised_function

        # One tensor of all the variables, the alike terms of a sum as one op (as hvp's): 1,000 variables
        # eagerly, one op each, took 10 s. The same values, up to the order of a sum's additions.
        V = tf.Variable(np.array([point[k] for k in names], dtype=dtype), dtype=tf_dtype)
        with tf.autodiff.ForwardAccumulator(primals=V, tangents=tf.constant(
                np.array([direction[k] for k in names], dtype=dtype), dtype=tf_dtype)) as acc:
            zs = [tf.reduce_sum(tf.convert_to_tensor(vectorised_function(t, names, dtype)(V), dtype=tf_dtype))
                  for t in trees]
        return [(float(z.numpy()), float(acc.jvp(z, unconnected_gradients=tf.UnconnectedGradients.ZERO).numpy()))
                for z in zs]
    variables = [tf.Variable(point[k], dtype=tf_dtype, name=k) for k in names]
    tangents = [tf.constant(direction[k], dtype=tf_dtype) for k in names]
    env = dict(zip(names, variables))
    with tf.autodiff.ForwardAccumulator(primals=variables, tangents=tangents) as acc:
        zs = [tf.convert_to_tensor(compile_expression(t, tf_backend(dtype))(env), dtype=tf_dtype) for t in trees]
    for z in zs:
        out.append((float(z.numpy()), float(acc.jvp(z, unconnected_gradients=tf.UnconnectedGradients.ZERO).numpy())))
    return out


def compute_jvp(expressions, *, at, along, dtype: str = "float64", methods=None,
                symbolic_time_limit: float = 10.0) -> JvpReport:
    from gradcli.methods.worker import BoundedJob, SymbolicTimeout

    exprs, point, direction, direction_exact, dtype, chosen = plan_jvp(expressions, at=at, along=along, dtype=dtype,
                                                                       methods=methods)
    trees = [e.tree for e in exprs]
    job = None
    if "symbolic" in chosen:  # before anything imports TensorFlow (a forked worker)
        job = BoundedJob(exact_jvp, (trees, dict(point.exact), direction_exact), symbolic_time_limit, parallel=True)
    report = numeric_jvp([e.text for e in exprs], trees, point.values, direction, dtype, chosen)
    exact = None
    if job is not None:
        try:
            exact = job.result()
        except SymbolicTimeout as exc:
            report.notes.append(f"symbolic column left out: {exc} (raise --symbolic-timeout to wait longer)")
            report.methods = [m for m in report.methods if m != "symbolic"]
    judge_jvp(report, exact, point.text())
    return report


def numeric_jvp(texts: list[str], trees: list[Node], values: dict[str, float], direction: dict[str, float],
                dtype: str, chosen: list[str]) -> JvpReport:
    """The report at one point with every column but the exact one: the value, ForwardAccumulator's J·v, fd and
    the complex step along v."""
    from gradcli.expression.evaluate import PYTHON_FLOAT64, compile_expression

    report = JvpReport(list(texts), dict(values), direction, dtype, list(chosen))
    for text, tree in zip(texts, trees):
        report.rows.append(JvpRow(text, compile_expression(tree, PYTHON_FLOAT64)(values)))
    if "tape" in chosen:
        for r, (_, jv) in zip(report.rows, tape_jvp(trees, values, direction, dtype)):
            r.jvp["tape"] = jv
    if "fd" in chosen or "complex" in chosen:
        _along_line(report, trees, values, direction, dtype, chosen)
    return report


def judge_jvp(report: JvpReport, exact, point_text: str) -> None:
    """The exact column (``exact``: (value, J·v) per row, or None where it was left out) and each method's error;
    a J·v that is undefined is warned and fails the report."""
    if exact is not None:
        for r, (value, jv) in zip(report.rows, exact):
            r.jvp["symbolic"] = jv
            if value is not None and math.isfinite(value):
                r.value = value
    for r in report.rows:
        r.jvp = {m: r.jvp.get(m) for m in report.methods}
        ref = r.jvp.get("symbolic")
        if ref is None or not math.isfinite(ref):
            if "symbolic" in report.methods:
                report.warnings.append(f"J·v of {r.expression} is undefined at {point_text} along v")
                report.failed = True
            continue
        for m in report.methods:
            if m != "symbolic":
                x = r.jvp.get(m)
                r.error[m] = None if x is None else (abs(x - ref) if math.isfinite(x) else math.inf)


def _along_line(report: JvpReport, trees, point: dict[str, float], direction: dict[str, float], dtype: str,
                chosen: list[str]) -> None:
    import numpy as np

    from gradcli.methods.complex_step import complex_gradients
    from gradcli.methods.fd_engine import one_point
    from gradcli.methods.fd import fd_gradients

    for r, tree in zip(report.rows, trees):
        moved, t, s = line_tree(tree, point, direction)
        points = one_point({**point, t: 0.0})
        if "fd" in chosen:
            fd = fd_gradients(moved, points, [t], scheme="central", dtype=dtype)
            r.jvp["fd"] = float(fd.values[0, 0]) / s
            r.estimate["fd"] = float(fd.estimates[0, 0]) / s
            report.fd_step = float(fd.steps[0, 0]) * s
        if "complex" in chosen:
            cs = complex_gradients(moved, points, [t], dtype=dtype)
            value = float(cs.values[0, 0])
            r.jvp["complex"] = value / s if np.isfinite(value) else None
            r.estimate["complex"] = float(cs.estimates[0, 0]) / s if np.isfinite(value) else None
            report.complex_step = float(cs.steps[0, 0]) * s
            if bool(cs.not_analytic[0, 0]):
                report.notes.append(f"complex step: {r.expression} is not analytic along v at this point "
                                    f"(abs, comparisons, atan2 ...): no value")
            elif cs.unresolved is not None and cs.unresolved[0, 0]:
                report.notes.append(f"complex step on {r.expression}: {cs.unresolved[0, 0]}")
