"""``trace``: the computation as the tape records it, node by node.

The expression tree is cut into one node per operation of gradcli's own tree (a flat sum, a flat product, a
power, a function call): the inputs (one node per variable, shared by every use) and the operations, children
before parents. A constant sub-tree is no node: it is written into its parent's operation as the number the
tape is given (the tape does not record constants).

Three sweeps, each computed by TensorFlow one node at a time and each checked:

- forward: each node's value, from its inputs' values (the node's own op on tensors), inside one persistent
  ``GradientTape`` (and a ``ForwardAccumulator`` with ``--along``); checked against SymPy's exact value of
  the node's sub-expression at the typed point;
- reverse: each node's adjoint, the sum over the nodes that use it of (their adjoint through this op's
  vector-Jacobian product, TF's own gradient function of the op); checked against TF's
  ``tape.gradient(targets, intermediates)`` over the whole program, and against the exact adjoint (the same
  sweep in SymPy);
- forward along a direction: each node's tangent through the op's Jacobian-vector product; checked against
  ``ForwardAccumulator.jvp`` of every intermediate and against the exact directional derivative.

Where a value is not finite, or far from its exact value while that is finite, :func:`origins` names the first
node that went wrong in each sweep and why (an overflow, ``0 * inf`` in the chain rule, ...).

TensorFlow and SymPy are imported inside the functions only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from gradcli.dtypes import MACHINE_EPSILON
from gradcli.errors import UsageError
from gradcli.expression import Add, Call, Mul, Neg, Node, Pow, Var, is_constant, to_text
from gradcli.expression.points import Point, check_covers, check_point_fits, parse_point
from gradcli.expression.tree import RuleCall, children, is_boolean, map_children
from gradcli.compute.request import check_dtype, parse_expressions

# Names no parsed variable can have (identifiers never hold a NUL): the inputs of one node's operation.
_INPUT = "\0in"
# The most nodes a trace shows: one row each, and SymPy's exact adjoints grow with the paths.
MAX_TRACE_NODES = 400
# "Far from exact": a relative error above this power of the dtype's epsilon (float64 1.5e-8, float32 3.5e-4).
FAR_POWER = 0.5
LARGEST = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38}
SMALLEST_NORMAL = {"float64": 2.2250738585072014e-308, "float32": 1.1754943508222875e-38}


# ---------------------------------------------------------------------------------------------
# The nodes
# ---------------------------------------------------------------------------------------------
@dataclass
class TraceNode:
    name: str  # "x1" for an input, "v3" for an operation
    kind: str  # "input" or "op"
    op: str  # the variable's name for an input; "add", "mul", "pow", "neg" or the function's name
    text: str  # "v1 * v2", "x1 + 5": the operation on its inputs' names
    expression: str  # the node's sub-expression, as gradcli prints it
    inputs: list[int] = field(default_factory=list)  # one per input edge (a node may use one input twice)
    local: Node | None = None  # the operation, its inputs as _INPUT<k> variables (op nodes)
    tree: Node | None = None  # the sub-expression
    outputs: list[int] = field(default_factory=list)  # the expressions this node is the value of
    value: float | None = None
    exact: float | None = None
    adjoint: float | None = None
    # (user node, that node's adjoint, d user / d this input, the VJP through the op), one per edge
    adjoint_terms: list[tuple[int, float, float, float]] = field(default_factory=list)
    seed: float = 0.0  # 1 for each expression this node is the value of
    tf_adjoint: float | None = None
    exact_adjoint: float | None = None
    tangent: float | None = None
    tangent_terms: list[tuple[int, float, float, float]] = field(default_factory=list)  # (input, d/d input, its tangent, JVP)
    tf_tangent: float | None = None
    exact_tangent: float | None = None


def _op_name(node: Node) -> str:
    if isinstance(node, Add):
        return "add"
    if isinstance(node, Mul):
        return "mul"
    if isinstance(node, Pow):
        return "pow"
    if isinstance(node, Neg):
        return "neg"
    if isinstance(node, Call):
        return node.func
    raise TypeError(node)


def _prefix(variables) -> str:
    """The letter of the operation nodes' names: one that no variable's name could be mistaken for."""
    for letter in ("v", "w", "u", "t", "node"):
        if not any(v.startswith(letter) and v[len(letter):].isdigit() for v in variables):
            return letter
    return "node_"


def build_nodes(trees: list[Node], variables: list[str]) -> list[TraceNode]:
    """The tape's nodes for ``trees``: the inputs in ``variables`` order, then each tree's operations in the
    order the tape records them (children first, left to right)."""
    nodes: list[TraceNode] = []
    inputs: dict[str, int] = {}
    prefix = _prefix(variables)
    for name in variables:
        inputs[name] = len(nodes)
        nodes.append(TraceNode(name=name, kind="input", op=name, text=name, expression=name, tree=Var(name)))

    def visit(node: Node) -> int:
        # iterative post-order: deep trees stay clear of the recursion limit
        order: list[Node] = []
        stack = [(node, False)]
        while stack:
            n, done = stack.pop()
            if isinstance(n, Var):
                continue
            if done:
                order.append(n)
                continue
            stack.append((n, True))
            for child in reversed(_edges(n)):
                if not isinstance(child, Var):
                    stack.append((child, False))
        ids: dict[int, int] = {}  # id() of a tree node -> its trace node
        for n in order:
            edges = _edges(n)
            children = [inputs[c.name] if isinstance(c, Var) else ids[id(c)] for c in edges]
            names = {id(c): Var(f"{_INPUT}{k}") for k, c in enumerate(edges)}
            local = _replace_edges(n, names)
            shown = _replace_edges(n, {id(c): Var(nodes[i].name) for c, i in zip(edges, children)})
            ids[id(n)] = len(nodes)
            nodes.append(TraceNode(name=f"{prefix}{len(nodes) - len(variables) + 1}", kind="op", op=_op_name(n),
                                   text=to_text(shown), expression=to_text(n), inputs=children, local=local,
                                   tree=n))
        return inputs[node.name] if isinstance(node, Var) else ids[id(node)]

    for k, tree in enumerate(trees):
        if is_constant(tree):
            raise UsageError(f"{to_text(tree)} is a constant: the tape records nothing for it (trace needs a "
                             f"variable)")
        root = visit(tree)
        nodes[root].outputs.append(k)
        nodes[root].seed += 1.0
    if len(nodes) > MAX_TRACE_NODES:
        raise UsageError(f"trace shows at most {MAX_TRACE_NODES} nodes; this computation has {len(nodes)} "
                         f"(grad and hvp take large expressions)")
    return nodes


def _edges(node: Node) -> list[Node]:
    """The children the tape receives as tensors: the non-constant ones that are numbers (a where's condition
    is a truth value, kept inside its node's operation)."""
    if isinstance(node, RuleCall):
        raise UsageError("trace does not take --rule's functions")
    return [c for c in children(node) if not is_constant(c) and not is_boolean(c)]


def _replace_edges(node: Node, names: dict[int, Node]) -> Node:
    def sub(c: Node) -> Node:
        return names.get(id(c), c)

    return map_children(node, sub)


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------
@dataclass
class TraceReport:
    expressions: list[str]
    point: dict[str, float]
    dtype: str
    nodes: list[TraceNode]
    along: dict[str, float] | None = None
    exact_available: bool = True
    origins: list[dict] = field(default_factory=list)
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
                 "value": n.value, "exact": n.exact, "error": _error(n.value, n.exact),
                 "adjoint": n.adjoint, "seed": n.seed,
                 "adjoint_terms": [{"from": self.nodes[u].name, "adjoint_of_user": a, "partial": p, "term": t}
                                   for u, a, p, t in n.adjoint_terms],
                 "tf_adjoint": n.tf_adjoint, "exact_adjoint": n.exact_adjoint,
                 "adjoint_error": _error(n.adjoint, n.exact_adjoint)}
            if self.along is not None:
                d.update({"tangent": n.tangent,
                          "tangent_terms": [{"input": self.nodes[i].name, "partial": p, "tangent_of_input": t,
                                             "term": j} for i, p, t, j in n.tangent_terms],
                          "tf_tangent": n.tf_tangent, "exact_tangent": n.exact_tangent,
                          "tangent_error": _error(n.tangent, n.exact_tangent)})
            nodes.append(d)
        return clean({"command": "trace", "expressions": self.expressions, "point": self.point,
                      "dtype": self.dtype, "along": self.along, "nodes": nodes,
                      "outputs": [self.nodes_of_output(k) for k in range(len(self.expressions))],
                      "where_it_went_wrong": self.origins, "checks_failed": self.mismatches,
                      "warnings": self.warnings, "notes": self.notes})

    def nodes_of_output(self, k: int) -> str:
        return next(n.name for n in self.nodes if k in n.outputs)


def _error(value: float | None, exact: float | None) -> float | None:
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


def plan_trace(expressions: list[str], *, at, dtype: str, along=None):
    exprs = parse_expressions(expressions)
    point = parse_point(at)
    check_covers(point, [v for e in exprs for v in e.variables])
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    direction = parse_direction(along, point)
    used = list(dict.fromkeys(v for e in exprs for v in e.variables))
    variables = [v for v in point.names if v in used]
    nodes = build_nodes([e.tree for e in exprs], variables)
    return exprs, point, variables, dtype, direction, nodes


def compute_trace(expressions: list[str], *, at, dtype: str = "float64", along=None,
                  symbolic_time_limit: float = 10.0) -> TraceReport:
    from gradcli.methods.worker import BoundedJob, SymbolicTimeout

    exprs, point, variables, dtype, direction, nodes = plan_trace(expressions, at=at, dtype=dtype, along=along)
    # SymPy first, before anything imports TensorFlow (a forked worker; see gradcli.methods.worker)
    job = BoundedJob(exact_sweeps, (_node_specs(nodes), dict(point.exact), variables, direction), symbolic_time_limit,
                     parallel=True)
    report = TraceReport([e.text for e in exprs], dict(point.values), dtype, nodes, direction)
    tape_sweeps(nodes, point.values, dtype, direction)
    try:
        values, adjoints, tangents = job.result()
    except SymbolicTimeout as exc:
        report.exact_available = False
        report.notes.append(f"exact values left out: {exc} (raise --symbolic-timeout to wait longer)")
    else:
        for n, v, a, t in zip(nodes, values, adjoints, tangents):
            n.exact, n.exact_adjoint, n.exact_tangent = v, a, t
    _check_against_tf(report)
    report.origins = origins(report)
    for o in report.origins:
        report.warnings.append(o["message"])
    return report


# ---------------------------------------------------------------------------------------------
# TensorFlow: the sweeps node by node, and its own whole-program answers
# ---------------------------------------------------------------------------------------------
def _local_function(node: TraceNode, backend):
    from gradcli.expression.evaluate import compile_expression

    return compile_expression(node.local, backend)


def tape_sweeps(nodes: list[TraceNode], values: dict[str, float], dtype: str,
                direction: dict[str, float] | None) -> None:
    """Fill each node's value, adjoint (with its terms), TF's adjoint, and with ``direction`` its tangent
    (with its terms) and ForwardAccumulator's."""
    import contextlib

    import numpy as np

    from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

    tf = load_tensorflow()
    backend = tf_backend(dtype)
    tf_dtype = tf.as_dtype(dtype)
    fns = [None if n.kind == "input" else _local_function(n, backend) for n in nodes]
    sources = {n.op: tf.Variable(values[n.op], dtype=tf_dtype, name=n.op) for n in nodes if n.kind == "input"}
    names = [n.op for n in nodes if n.kind == "input"]

    def env_for(k: int, tensors) -> dict:
        env = {f"{_INPUT}{j}": tensors[i] for j, i in enumerate(nodes[k].inputs)}
        env.update(sources)  # a where's condition reads the variables themselves
        return env

    accumulator = contextlib.nullcontext()
    if direction is not None:
        accumulator = tf.autodiff.ForwardAccumulator(
            primals=[sources[v] for v in names], tangents=[tf.constant(direction[v], dtype=tf_dtype) for v in names])
    with tf.GradientTape(persistent=True) as tape:
        with accumulator as acc:
            tensors: list = []
            for k, n in enumerate(nodes):
                t = sources[n.op] if n.kind == "input" else fns[k](env_for(k, tensors))
                tensors.append(tf.convert_to_tensor(t, dtype=tf_dtype) if n.kind != "input" else t)
            targets = [tf.identity(tensors[k]) for k, n in enumerate(nodes) for _ in n.outputs]
            tf_tangents = None
            if direction is not None:
                tf_tangents = [acc.jvp(t, unconnected_gradients=tf.UnconnectedGradients.ZERO) for t in tensors]
    whole = tape.gradient(targets, tensors, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    del tape
    t_np = np.dtype(dtype).type
    for n, t, g in zip(nodes, tensors, whole):
        n.value = float(t.numpy())
        n.tf_adjoint = float(g.numpy())
    if tf_tangents is not None:
        for n, t in zip(nodes, tf_tangents):
            n.tf_tangent = float(t.numpy())

    # Each op on constants of its inputs' values: its own partials, VJPs and JVPs, one node at a time.
    local = {}
    for k, n in enumerate(nodes):
        if n.kind == "input":
            continue
        consts = [tf.constant(nodes[i].value, dtype=tf_dtype) for i in n.inputs]
        env = {f"{_INPUT}{j}": c for j, c in enumerate(consts)}
        env.update({v: tf.constant(values[v], dtype=tf_dtype) for v in names})
        with tf.GradientTape(persistent=True) as op_tape:
            op_tape.watch(consts)
            out = tf.convert_to_tensor(fns[k](env), dtype=tf_dtype)
        partials = op_tape.gradient(out, consts, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        local[k] = (op_tape, out, consts, [float(p.numpy()) for p in partials], env)

    # reverse: seeds, then each op's VJP with its adjoint, users before the inputs they use
    adjoint = [t_np(n.seed) for n in nodes]
    for k in range(len(nodes) - 1, -1, -1):
        n = nodes[k]
        n.adjoint = float(adjoint[k])
        if n.kind == "input":
            continue
        op_tape, out, consts, partials, _ = local[k]
        vjps = op_tape.gradient(out, consts, output_gradients=tf.constant(adjoint[k], dtype=tf_dtype),
                                unconnected_gradients=tf.UnconnectedGradients.ZERO)
        for j, (i, v) in enumerate(zip(n.inputs, vjps)):
            term = t_np(v.numpy())
            nodes[i].adjoint_terms.append((k, n.adjoint, partials[j], float(term)))
            with np.errstate(all="ignore"):
                adjoint[i] = t_np(adjoint[i] + term)
    for n in nodes:
        n.adjoint_terms.sort(key=lambda term: term[0])  # in the order the users were recorded

    if direction is None:
        return
    # forward along the direction: each op's JVP with its inputs' tangents
    tangent: list = []
    for k, n in enumerate(nodes):
        if n.kind == "input":
            tangent.append(t_np(direction[n.op]))
            n.tangent = float(tangent[-1])
            continue
        _, _, _, partials, env = local[k]
        consts = [env[f"{_INPUT}{j}"] for j in range(len(n.inputs))]
        if consts:
            with tf.autodiff.ForwardAccumulator(primals=consts,
                                                tangents=[tf.constant(tangent[i], dtype=tf_dtype)
                                                          for i in n.inputs]) as op_acc:
                out = tf.convert_to_tensor(fns[k](env), dtype=tf_dtype)
            jvp = op_acc.jvp(out, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            value = t_np(jvp.numpy())
        else:
            value = t_np(0.0)
        with np.errstate(all="ignore"):
            n.tangent_terms = [(i, partials[j], float(tangent[i]), float(t_np(partials[j]) * tangent[i]))
                               for j, i in enumerate(n.inputs)]
        tangent.append(value)
        n.tangent = float(value)


def _same(a: float | None, b: float | None, scale: float, dtype: str) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 16 * MACHINE_EPSILON[dtype] * max(scale, abs(a), abs(b)) + SMALLEST_NORMAL[dtype]


def _check_against_tf(report: TraceReport) -> None:
    """Every adjoint against TF's tape.gradient of the whole program, every tangent against ForwardAccumulator's."""
    for n in report.nodes:
        scale = sum(abs(t[3]) for t in n.adjoint_terms if math.isfinite(t[3])) + n.seed
        if not _same(n.adjoint, n.tf_adjoint, scale, report.dtype):
            report.mismatches.append(f"adjoint of {n.name}: the sweep gives {n.adjoint!r}, tape.gradient "
                                     f"{n.tf_adjoint!r}")
        if report.along is not None:
            scale = sum(abs(t[3]) for t in n.tangent_terms if math.isfinite(t[3]))
            if not _same(n.tangent, n.tf_tangent, scale, report.dtype):
                report.mismatches.append(f"tangent of {n.name}: the sweep gives {n.tangent!r}, "
                                         f"ForwardAccumulator {n.tf_tangent!r}")
    if report.mismatches:
        report.failed = True
        report.warnings.extend(f"check failed: {m}" for m in report.mismatches)


# ---------------------------------------------------------------------------------------------
# SymPy: exact values, adjoints and tangents (a BoundedJob work function: module level, picklable)
# ---------------------------------------------------------------------------------------------
def _node_specs(nodes: list[TraceNode]) -> list[tuple]:
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
    adjoints = [sp.Integer(int(seed)) for *_, seed in specs]
    for k in range(len(specs) - 1, -1, -1):
        for j, i in enumerate(specs[k][3]):
            adjoints[i] = adjoints[i] + adjoints[k] * partials[k][j]
    tangents: list = []
    if direction is not None:
        for k, (kind, op, _, inputs, _) in enumerate(specs):
            if kind == "input":
                tangents.append(sp.Rational(Fraction(direction[op])))
            else:
                tangents.append(sp.Add(*[partials[k][j] * tangents[i] for j, i in enumerate(inputs)]))
    values = [symbolic.value_at(e, subs) for e in exprs]
    adj = [symbolic.value_at(a, subs) for a in adjoints]
    tan = [symbolic.value_at(t, subs) for t in tangents] if direction is not None else [None] * len(specs)
    return values, adj, tan


# ---------------------------------------------------------------------------------------------
# Where a NaN or an inf came from
# ---------------------------------------------------------------------------------------------
def _bad(value: float | None, exact: float | None, dtype: str) -> bool:
    """Not finite, or far from the exact value, where that is finite."""
    if value is None or exact is None or not math.isfinite(exact):
        return False
    if not math.isfinite(value):
        return True
    far = MACHINE_EPSILON[dtype] ** FAR_POWER
    return abs(value - exact) > far * abs(exact) and abs(value - exact) > SMALLEST_NORMAL[dtype]


def _show(x: float | None, dtype: str = "float64") -> str:
    from gradcli.results import shortest

    if x is None:
        return "undefined"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    s = shortest(x, dtype)
    return f"{s:.6g}" if abs(s) >= 1e6 or (s != 0 and abs(s) < 1e-4) else repr(s)


def origins(report: TraceReport) -> list[dict]:
    """The first node of each sweep whose value went wrong (non-finite or far from an exact finite value), and
    why; an empty list when none did (or no exact values)."""
    if not report.exact_available:
        return []
    nodes, dtype = report.nodes, report.dtype
    found = []
    for n in nodes:  # forward: the first wrong value whose inputs are right
        if _bad(n.value, n.exact, dtype):
            found.append({"sweep": "forward", "node": n.name, "value": n.value, "exact": n.exact,
                          "why": _forward_why(n, nodes, dtype)})
            break
    for sweep, attr, exact_attr, terms_attr, order in (
            ("reverse", "adjoint", "exact_adjoint", "adjoint_terms", range(len(nodes) - 1, -1, -1)),
            ("along", "tangent", "exact_tangent", "tangent_terms", range(len(nodes)))):
        if sweep == "along" and report.along is None:
            continue
        first_bad = first_nonfinite = None
        for k in order:
            n = nodes[k]
            v, e = getattr(n, attr), getattr(n, exact_attr)
            if first_bad is None and _bad(v, e, dtype):
                first_bad = k
            if first_nonfinite is None and v is not None and not math.isfinite(v) and e is not None \
                    and math.isfinite(e):
                first_nonfinite = k
        for k in dict.fromkeys(x for x in (first_bad, first_nonfinite) if x is not None):
            n = nodes[k]
            found.append({"sweep": sweep, "node": n.name, "value": getattr(n, attr), "exact": getattr(n, exact_attr),
                          "why": _chain_why(n, nodes, dtype, sweep)})
    for o in found:
        what = {"forward": "value", "reverse": "adjoint", "along": "tangent"}[o["sweep"]]
        o["message"] = (f"{what} of {o['node']} is {_show(o['value'], dtype)} where the exact {what} is "
                        f"{_show(o['exact'])}: {o['why']}")
    return found


def _forward_why(n: TraceNode, nodes: list[TraceNode], dtype: str) -> str:
    ins = [nodes[i] for i in n.inputs]
    shown = ", ".join(f"{i.name} = {_show(i.value, dtype)}" for i in ins)
    head = f"{n.name} = {n.text}"
    if n.value is not None and math.isinf(n.value) and n.exact is not None and abs(n.exact) > LARGEST[dtype]:
        return f"{head} overflows {dtype} (largest finite {LARGEST[dtype]:.4g})" + (f" from {shown}" if shown else "")
    if n.value == 0 and n.exact and abs(n.exact) < SMALLEST_NORMAL[dtype]:
        return f"{head} underflows {dtype} to 0" + (f" from {shown}" if shown else "")
    if n.value is not None and math.isnan(n.value):
        return f"{head} is nan from {shown} (an undefined operation on them in {dtype})"
    if n.value is not None and math.isinf(n.value):
        return f"{head} is {_show(n.value)} from {shown} in {dtype}"
    return f"{head} loses its digits in {dtype} from {shown} (rounding or cancellation)"


def _chain_why(n: TraceNode, nodes: list[TraceNode], dtype: str, sweep: str) -> str:
    if sweep == "reverse":
        if not n.adjoint_terms:
            return f"it is the seed {_show(n.seed)}"
        parts = [f"{_show(adj, dtype)} × {_show(partial, dtype)} = {_show(term, dtype)} (the adjoint of "
                 f"{nodes[user].name} = {nodes[user].text}, exact {_show(nodes[user].exact_adjoint)}, times "
                 f"d{nodes[user].name}/d{n.name})" for user, adj, partial, term in n.adjoint_terms]
        seed = f" + the seed {_show(n.seed)}" if n.seed else ""
        return f"adjoint of {n.name} = " + " + ".join(parts) + seed
    if not n.tangent_terms:
        return f"it is the direction's {_show(n.tangent, dtype)}"
    parts = [f"{_show(p, dtype)} × {_show(t, dtype)} = {_show(j, dtype)} (d{n.name}/d{nodes[i].name} times the "
             f"tangent of {nodes[i].name})" for i, p, t, j in n.tangent_terms]
    return f"tangent of {n.name} = {n.text}: " + " + ".join(parts)
