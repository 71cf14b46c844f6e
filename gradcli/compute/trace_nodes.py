"""The tape's nodes for ``trace``: one node per operation of gradcli's own tree (a flat sum, a flat product, a
power, a function call), the inputs first (one node per variable, shared by every use), then the operations,
children before parents. A constant sub-tree is no node: it is written into its parent's operation as the
number the tape is given (the tape does not record constants)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gradcli.errors import UsageError
from gradcli.expression import Add, Call, Mul, Neg, Node, Pow, Var, is_constant, to_text
from gradcli.expression.tree import children, is_boolean, map_children

# Names no parsed variable can have (identifiers never hold a NUL): the inputs of one node's operation.
INPUT_SLOT = "\0in"
# The most nodes a trace shows: one row each, and SymPy's exact adjoints grow with the paths.
MAX_TRACE_NODES = 400


@dataclass
class TraceNode:
    name: str  # "x1" for an input, "v3" for an operation
    kind: str  # "input" or "op"
    op: str  # the variable's name for an input; "add", "mul", "pow", "neg" or the function's name
    text: str  # "v1 * v2", "x1 + 5": the operation on its inputs' names
    expression: str  # the node's sub-expression, as gradcli prints it
    inputs: list[int] = field(default_factory=list)  # one per input edge (a node may use one input twice)
    local: Node | None = None  # the operation, its inputs as INPUT_SLOT<k> variables (op nodes)
    tree: Node | None = None  # the sub-expression
    outputs: list[int] = field(default_factory=list)  # the expressions this node is the value of
    value: float | None = None
    exact: float | None = None
    adjoint: float | None = None
    # (user node, that node's adjoint, d user / d this input, the VJP through the op), one per edge
    adjoint_terms: list[tuple[int, float, float, float]] = field(default_factory=list)
    # d this node / d each input, one per input edge, and whether the tape's backward pass crosses that edge
    # (not through a stop_gradient), from the op alone (an op node)
    partials: list[float] = field(default_factory=list)
    connected: list[bool] = field(default_factory=list)
    seed: float = 0.0  # 1 for each expression this node is the value of
    tf_adjoint: float | None = None
    recorded: bool = True  # whether tape.gradient(targets, this node) is a number (False: None, not recorded)
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
            names = {id(c): Var(f"{INPUT_SLOT}{k}") for k, c in enumerate(edges)}
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
    return [c for c in children(node) if not is_constant(c) and not is_boolean(c)]


def _replace_edges(node: Node, names: dict[int, Node]) -> Node:
    def sub(c: Node) -> Node:
        return names.get(id(c), c)

    return map_children(node, sub)
