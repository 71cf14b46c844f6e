"""``trace``: the computation as the tape records it, node by node, each value checked.

The nodes (:mod:`gradcli.compute.trace_nodes`) are swept three ways by TensorFlow one node at a time
(:mod:`gradcli.compute.trace_tape`) and by SymPy at the typed point (:mod:`gradcli.compute.trace_exact`):

- forward: each node's value; checked against SymPy's exact value of the node's sub-expression;
- reverse: each node's adjoint, the sum over the nodes that use it; checked against TF's
  ``tape.gradient(targets, intermediates)`` over the whole program, and against the exact adjoint;
- forward along a direction: each node's tangent; checked against ``ForwardAccumulator.jvp`` of every
  intermediate and against the exact directional derivative.

Where a value is not finite, or far from its exact value while that is finite,
:func:`gradcli.compute.nan_origin.origins` names the first node that went wrong in each sweep and why.

TensorFlow and SymPy are imported inside the functions only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from gradcli.compute.request import check_dtype, parse_expressions
from gradcli.compute.trace_nodes import TraceNode, build_nodes
from gradcli.errors import UsageError
from gradcli.expression import Node
from gradcli.expression.points import Point, check_covers, check_point_fits, parse_point


@dataclass
class TraceReport:
    expressions: list[str]
    point: dict[str, float]
    dtype: str
    nodes: list[TraceNode]
    along: dict[str, float] | None = None
    exact_available: bool = True
    origins: list = field(default_factory=list)  # nan_origin.BadNode, forward sweep first
    mismatches: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False

    def to_dict(self) -> dict:
        from gradcli.results import clean

        nodes = []
        for n in self.nodes:
            d = {"name": n.name, "kind": n.kind, "op": n.op, "text": n.text, "expression": n.expression,
                 "inputs": [self.nodes[i].name for i in n.inputs], "outputs": n.outputs,
                 "value": n.value, "exact": n.exact, "error": node_error(n.value, n.exact),
                 "adjoint": n.adjoint, "seed": n.seed,
                 "adjoint_terms": [{"from": self.nodes[u].name, "adjoint_of_user": a, "partial": p, "term": t}
                                   for u, a, p, t in n.adjoint_terms],
                 "tf_adjoint": n.tf_adjoint if n.recorded else None, "recorded": n.recorded, "exact_adjoint": n.exact_adjoint,
                 "adjoint_error": node_error(n.adjoint, n.exact_adjoint)}
            if self.along is not None:
                d.update({"tangent": n.tangent,
                          "tangent_terms": [{"input": self.nodes[i].name, "partial": p, "tangent_of_input": t,
                                             "term": j} for i, p, t, j in n.tangent_terms],
                          "tf_tangent": n.tf_tangent, "exact_tangent": n.exact_tangent,
                          "tangent_error": node_error(n.tangent, n.exact_tangent)})
            nodes.append(d)
        return clean({"command": "trace", "expressions": self.expressions, "point": self.point,
                      "dtype": self.dtype, "along": self.along, "nodes": nodes,
                      "outputs": [self.nodes_of_output(k) for k in range(len(self.expressions))],
                      "where_it_went_wrong": [o.to_dict() for o in self.origins], "checks_failed": self.mismatches,
                      "warnings": self.warnings, "notes": self.notes})

    def nodes_of_output(self, k: int) -> str:
        return next(n.name for n in self.nodes if k in n.outputs)


def node_error(value: float | None, exact: float | None) -> float | None:
    """|value - exact| (inf where the value is not finite; None without a finite exact value)."""
    if value is None or exact is None or not math.isfinite(exact):
        return None
    return abs(value - exact) if math.isfinite(value) else math.inf


def parse_direction(along: list[str] | str | None, point: Point, *, required: bool = False) -> dict[str, float] | None:
    """``--along x1=1,x2=0`` -> {variable: float64} over the point's variables (a variable not named: 0)."""
    if along is None or along == []:
        if required:
            raise UsageError("--along is required: the direction v, e.g. --along x1=1,x2=0")
        return None
    direction = parse_point(along, option="--along")
    unknown = [k for k in direction.names if k not in point.values]
    if unknown:
        raise UsageError(f"--along names {', '.join(unknown)}, which --at does not give a value")
    return {k: float(direction.values.get(k, 0.0)) for k in point.names}


def as_point(at) -> Point:
    """``--at`` text, a parsed :class:`Point`, or {variable: float} (each float taken exactly)."""
    if isinstance(at, Point):
        return at
    if isinstance(at, Mapping):
        from gradcli.expression import Num

        values = {str(k): float(v) for k, v in at.items()}
        if not all(math.isfinite(v) for v in values.values()):
            raise UsageError("every value of the point must be a finite number")
        return Point(values, {k: Num(Fraction(v), repr(v)) for k, v in values.items()})
    return parse_point(at)


def parsed_expressions(expressions) -> list:
    """Texts, parsed Expressions or trees -> Expressions."""
    from gradcli.expression import Var
    from gradcli.expression.tree import Expression, to_text, walk

    out, texts = [], []
    for e in expressions:
        if isinstance(e, Node):
            names = list(dict.fromkeys(n.name for n in walk(e) if isinstance(n, Var)))
            e = Expression(e, to_text(e), tuple(names))
        if isinstance(e, str):
            texts.append(len(out))
        out.append(e)
    parsed = parse_expressions([out[k] for k in texts]) if texts else []
    for k, e in zip(texts, parsed):
        out[k] = e
    return out


def plan_trace(expressions, *, at, dtype: str, along=None):
    exprs = parsed_expressions(expressions)
    point = as_point(at)
    check_covers(point, [v for e in exprs for v in e.variables])
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    direction = parse_direction(along, point)
    used = list(dict.fromkeys(v for e in exprs for v in e.variables))
    variables = [v for v in point.names if v in used]
    nodes = build_nodes([e.tree for e in exprs], variables)
    return exprs, point, variables, dtype, direction, nodes


def compute_trace(expressions, *, at, dtype: str = "float64", along=None,
                  symbolic_time_limit: float = 10.0) -> TraceReport:
    """The trace of ``expressions`` (texts, parsed Expressions or trees) at ``at`` (see :func:`as_point`)."""
    report, job = start_trace(expressions, at=at, dtype=dtype, along=along, symbolic_time_limit=symbolic_time_limit)
    return finish_trace(report, job)


def start_trace(expressions, *, at, dtype: str = "float64", along=None, symbolic_time_limit: float = 10.0):
    """The report with its nodes, and SymPy's exact sweeps started in the background, before anything imports
    TensorFlow (a forked worker; see gradcli.methods.worker): (report, job) for :func:`finish_trace`."""
    from gradcli.compute.trace_exact import exact_sweeps, node_specs
    from gradcli.methods.worker import BoundedJob

    exprs, point, variables, dtype, direction, nodes = plan_trace(expressions, at=at, dtype=dtype, along=along)
    job = BoundedJob(exact_sweeps, (node_specs(nodes), dict(point.exact), variables, direction),
                     symbolic_time_limit, parallel=True)
    return TraceReport([e.text for e in exprs], dict(point.values), dtype, nodes, direction), job


def finish_trace(report: TraceReport, job) -> TraceReport:
    """TensorFlow's sweeps node by node, the exact ones from ``job``, every check, and where it went wrong."""
    from gradcli.compute.nan_origin import origins
    from gradcli.compute.trace_tape import check_against_tf, tape_sweeps, zero_adjoint_notes
    from gradcli.methods.worker import SymbolicTimeout

    nodes = report.nodes
    tape_sweeps(nodes, report.point, report.dtype, report.along)
    try:
        values, adjoints, tangents = job.result()
    except SymbolicTimeout as exc:
        report.exact_available = False
        report.notes.append(f"exact values left out: {exc} (raise --symbolic-timeout to wait longer)")
    else:
        for n, v, a, t in zip(nodes, values, adjoints, tangents):
            n.exact, n.exact_adjoint, n.exact_tangent = v, a, t
    check_against_tf(report)
    report.notes.extend(zero_adjoint_notes(nodes, report.dtype))
    report.origins = origins(report)
    report.warnings.extend(o.message for o in report.origins)
    return report
