"""``hvp``: the Hessian times a direction, H·v, without the Hessian: three compositions of TensorFlow's two modes,
fd of the tape's gradient, and the exact value, side by side with each one's time and error.

- forward-over-reverse: ``ForwardAccumulator`` around a ``GradientTape``: the tangent of the gradient;
- reverse-over-reverse: the guide's nested tapes, the outer one differentiating g·v;
- reverse-over-forward: a ``GradientTape`` around a ``ForwardAccumulator``: the gradient of J·v;
- fd of the tape gradient: (g(x + h v) - g(x - h v)) / (2h), with an estimate from the same at 2h (truncation)
  and the gradient's rounding over h;
- exact (SymPy): the gradient of sum_j v_j df/dx_j, term by term of a sum (each term differentiated only by
  the variables it holds, and once per form of term: a chained sum over 1,000 variables costs a few
  derivatives, not a million), each entry at 30 digits.

The expression is evaluated on one tensor of all its variables with the alike terms of a sum vectorised
(:func:`gradcli.methods.tape_vectorise.vectorised_function`), as the tape's stacked Hessian does: the chained
Rosenbrock function over 1,000 variables is a few dozen ops, not 12,000.

TensorFlow, NumPy and SymPy are imported inside the functions only.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from gradcli.compute.request import check_dtype, parse_methods
from gradcli.errors import UsageError
from gradcli.expression import Add, Expression, Node, parse
from gradcli.expression.points import Point, check_covers, check_point_fits, parse_point

HVP_METHODS = ("forward-over-reverse", "reverse-over-reverse", "reverse-over-forward", "fd-of-gradient", "exact")
TAPE_METHODS = HVP_METHODS[:3]
SHORT = {"for": "forward-over-reverse", "ror": "reverse-over-reverse", "rof": "reverse-over-forward",
         "fd": "fd-of-gradient", "symbolic": "exact"}


@dataclass
class HvpReport:
    expression: str
    point: dict[str, float]
    along: dict[str, float]
    dtype: str
    variables: list[str]
    methods: list[str]
    value: float | None = None
    hvp: dict[str, list[float]] = field(default_factory=dict)  # method -> H·v, one entry per variable
    seconds: dict[str, float] = field(default_factory=dict)
    error: dict[str, float | None] = field(default_factory=dict)  # method -> max |H·v - exact| over the entries
    fd_estimate: list[float] | None = None
    fd_step: float | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False

    def to_dict(self) -> dict:
        from gradcli.results import clean

        return clean({"command": "hvp", "expression": self.expression, "point": self.point, "along": self.along,
                      "dtype": self.dtype, "variables": self.variables, "value": self.value,
                      "methods": self.methods, "hvp": self.hvp, "seconds": self.seconds, "max_error": self.error,
                      "fd_error_estimate": self.fd_estimate, "fd_step": self.fd_step,
                      "warnings": self.warnings, "notes": self.notes})


def parse_hvp_methods(text: str | None) -> list[str]:
    if text is None or text.strip().lower() == "all":
        return list(HVP_METHODS)
    names = [SHORT.get(p.strip().lower(), p.strip().lower()) for p in text.split(",") if p.strip()]
    if not names:
        raise UsageError(f"--method is empty: name one or more of {', '.join(HVP_METHODS)}")
    return parse_methods(",".join(names), allowed=HVP_METHODS)


def plan_hvp(expression: str | Expression, *, at, along, dtype: str = "float64", methods=None):
    from gradcli.compute.jvp import parse_along

    expr = expression if isinstance(expression, Expression) else parse(expression)
    point = at if isinstance(at, Point) else parse_point(at)
    check_covers(point, list(expr.variables))
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    direction, direction_exact = parse_along(along, point)
    chosen = parse_hvp_methods(methods)
    variables = [v for v in point.names if v in expr.variables]
    return expr, point, variables, direction, direction_exact, dtype, chosen


# ---------------------------------------------------------------------------------------------
# exact (a BoundedJob work function: module level, picklable)
# ---------------------------------------------------------------------------------------------
def exact_hvp(tree: Node, point_exact: dict, variables: list[str], direction_exact: dict):
    """(value, [H·v entry per variable]) at the typed point and direction (see :func:`exact_hvp_many`)."""
    return exact_hvp_many(tree, [point_exact], variables, direction_exact)[0]


def exact_hvp_many(tree: Node, points_exact: list[dict], variables: list[str], direction_exact: dict):
    """Per point, (value, [H·v entry per variable]) at the typed point and direction, term by term of a
    top-level sum; differentiated once, evaluated at each point (every point has the same variables).

    Terms of one form (``100*(x2 - x1**2)**2`` and ``100*(x3 - x2**2)**2``) are differentiated once: each term is
    written over slot symbols (its variables in order of appearance, and their directions), its derivatives are
    taken for the first term of that form, and each term of the form gets them with its own symbols put back."""
    import sympy as sp

    from gradcli.expression import Var, walk
    from gradcli.methods import symbolic

    symbols = symbolic.symbols_for(list(points_exact[0]))
    v = {symbols[k]: symbolic.to_sympy(t, {}) for k, t in direction_exact.items()}
    terms = tree.terms if isinstance(tree, Add) else ((1, tree),)
    pieces: dict = {symbols[k]: [] for k in variables}
    whole = []
    forms: dict = {}
    for sign, term in terms:
        f = symbolic.to_sympy(term, symbols)
        f = f if sign > 0 else -f
        whole.append(f)
        held = [symbols[n.name] for n in walk(term) if isinstance(n, Var) and symbols.get(n.name) in pieces]
        held = list(dict.fromkeys(held))
        slots = [sp.Symbol(f"p{k}", real=True) for k in range(len(held))]
        tangents = [sp.Symbol(f"q{k}", real=True) for k in range(len(held))]
        form = f.xreplace(dict(zip(held, slots)))
        if form not in forms:
            dv = sp.Add(*[q * symbolic.diff(form, p) for p, q in zip(slots, tangents)])
            forms[form] = [symbolic.diff(dv, p) for p in slots]
        back = {**dict(zip(slots, held)), **{q: v[s] for q, s in zip(tangents, held)}}
        for s, d in zip(held, forms[form]):
            pieces[s].append(d.xreplace(back))
    whole_sum = sp.Add(*whole)
    entries = [sp.Add(*pieces[symbols[k]]) for k in variables]
    out = []
    for point_exact in points_exact:
        subs = symbolic.exact_point(point_exact, symbols)
        out.append((symbolic.value_at(whole_sum, subs), [symbolic.value_at(e, subs) for e in entries]))
    return out


# ---------------------------------------------------------------------------------------------
# TensorFlow
# ---------------------------------------------------------------------------------------------
def compute_hvp(expression: str | Expression, *, at, along, dtype: str = "float64", methods=None,
                symbolic_time_limit: float = 10.0) -> HvpReport:
    from gradcli.methods.worker import BoundedJob, SymbolicTimeout

    expr, point, variables, direction, direction_exact, dtype, chosen = plan_hvp(
        expression, at=at, along=along, dtype=dtype, methods=methods)
    if not variables:
        raise UsageError(f"{expr.text} has no variable: its Hessian is empty")
    job = None
    if "exact" in chosen:  # before anything imports TensorFlow (a forked worker)
        job = BoundedJob(exact_hvp, (expr.tree, {k: point.exact[k] for k in point.names}, variables,
                                     {k: direction_exact[k] for k in variables}), symbolic_time_limit, parallel=True)
    report = numeric_hvp(expr.text, expr.tree, point.values, variables, direction, dtype, chosen)
    exact = None
    if job is not None:
        try:
            exact = job.result()
        except SymbolicTimeout as exc:
            report.notes.append(f"exact column left out: {exc} (raise --symbolic-timeout to wait longer)")
            report.methods = [m for m in report.methods if m != "exact"]
        else:
            report.seconds["exact"] = time.monotonic() - (job.deadline - job.seconds)  # since the job began
    judge_hvp(report, exact, point.text())
    return report


def numeric_hvp(text: str, tree: Node, values: dict[str, float], variables: list[str], direction: dict[str, float],
                dtype: str, chosen: list[str], f=None) -> HvpReport:
    """The report at one point with every column but the exact one (``f``: the vectorised function of
    ``tree``, when the caller has it)."""
    from gradcli.compute.hvp_batch import numeric_hvps
    from gradcli.methods.tape_vectorise import vectorised_function

    # a chunk of one point: the numbers a record of --points/--grid holds for it, bit for bit
    f = f or vectorised_function(tree, variables, dtype)
    return numeric_hvps(text, tree, [values], variables, direction, dtype, chosen, f)[0]


def judge_hvp(report: HvpReport, exact, point_text: str) -> None:
    """The exact column (``exact``: (value, entries), or None where it was left out) and each method's largest
    error; an undefined entry is warned and fails the report."""
    import numpy as np

    if exact is not None:
        value, entries = exact
        report.hvp["exact"] = entries
        if value is not None and math.isfinite(value):
            report.value = value
    report.hvp = {m: report.hvp[m] for m in report.methods if m in report.hvp}
    exact = report.hvp.get("exact")
    if exact is None:
        return
    variables = report.variables
    if any(e is None or not math.isfinite(e) for e in exact):
        bad = [k for k, e in zip(variables, exact) if e is None or not math.isfinite(e)]
        report.warnings.append(f"H·v of {report.expression} is undefined at {point_text} in its entries for "
                               f"{', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}")
        report.failed = True
    ref = np.array([np.nan if e is None else e for e in exact], dtype=np.float64)
    for m, hv in report.hvp.items():
        if m != "exact":
            with np.errstate(all="ignore"):
                diff = np.abs(np.asarray(hv) - ref)
            diff[~np.isfinite(np.asarray(hv)) & np.isfinite(ref)] = np.inf
            finite = np.isfinite(ref)
            report.error[m] = float(np.max(diff[finite])) if finite.any() else None
