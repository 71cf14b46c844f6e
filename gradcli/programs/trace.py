"""``trace --show-code``: the trace as a TensorFlow program: every node a named tensor inside one persistent
``GradientTape`` (and a ``ForwardAccumulator`` with ``--along``), then ``tape.gradient(z, [every node])`` and
``acc.jvp(node)``: the adjoints and tangents gradcli's trace checks its sweeps against. A node no recorded path
joins to a target (below a ``stop_gradient``) gets ``None`` from ``tape.gradient``: printed "not recorded", as
the trace's table shows it."""

from __future__ import annotations

from gradcli.compute.trace import plan_trace
from gradcli.compute.trace_nodes import INPUT_SLOT
from gradcli.expression import Var
from gradcli.expression.tree import substitute
from gradcli.programs.common import code_names, program_preamble, tf_code
from gradcli.programs.rules import rule_definitions, rule_names

_OWN = ("nodes", "adjoints", "tangents", "acc", "name", "node", "adjoint", "tangent", "targets", "z", "shown")


def program_trace(expressions: list[str], *, at, dtype: str = "float64", along=None) -> str:
    exprs, point, variables, dtype, direction, nodes = plan_trace(expressions, at=at, dtype=dtype, along=along)
    op_names = [n.name for n in nodes if n.kind == "op"]
    trees = [e.tree for e in exprs]
    names = code_names(list(point.values), taken=(*_OWN, *op_names, *rule_names(trees)))
    code = {n.name: names[n.op] if n.kind == "input" else n.name for n in nodes}
    values = {v: point.values[v] for v in point.names}
    lines = program_preamble(f"`gradcli trace` of {'; '.join(e.text for e in exprs)}: every node a tensor on the "
                             "tape.", values, variables, dtype, names, unwatched="not in the expression")
    # a --rule's function is one op on the tape, its gradient the rule's (the definitions end in blank lines)
    lines += rule_definitions(trees) or [""]
    indent = "    "
    lines.append("with tf.GradientTape(persistent=True) as tape:")
    if direction is not None:
        primals = ", ".join(names[v] for v in variables)
        tangents = ", ".join(f"tf.constant({direction[v]!r}, dtype=DTYPE)" for v in variables)
        lines.append(f"    with tf.autodiff.ForwardAccumulator(primals=[{primals}],")
        lines.append(f"                                        tangents=[{tangents}]) as acc:")
        indent = "        "
    for n in nodes:
        if n.kind == "input":
            continue
        local = substitute(n.local, {f"{INPUT_SLOT}{j}": Var(nodes[i].name) for j, i in enumerate(n.inputs)})
        body = tf_code(local, {**{v: names[v] for v in values}, **{o: o for o in op_names}})
        lines.append(f"{indent}{n.name} = tf.convert_to_tensor({body}, dtype=DTYPE)  # {n.expression}")
    roots = [nodes.index(next(n for n in nodes if k in n.outputs)) for k in range(len(exprs))]
    lines.append(f"{indent}targets = [{', '.join(f'tf.identity({code[nodes[r].name]})' for r in roots)}]"
                 f"  # {'; '.join(e.text for e in exprs)}")
    lines.append("")
    lines.append(f"nodes = {{{', '.join(f'{n.name!r}: {code[n.name]}' for n in nodes)}}}")
    lines.append("# Several targets: tape.gradient returns the adjoints of their sum.")
    lines.append("# None (not zero) where no recorded path joins a node to the targets: below a stop_gradient.")
    lines.append("adjoints = tape.gradient(targets, list(nodes.values()))")
    lines.append("del tape  # a persistent tape holds its resources until deleted")
    lines.append("")
    lines.append("")
    lines.append("def shown(t):")
    lines.append("    return 'not recorded' if t is None else str(t.numpy())")
    lines.append("")
    lines.append("")
    if direction is not None:
        lines.append("tangents = [acc.jvp(node, unconnected_gradients=tf.UnconnectedGradients.ZERO) "
                     "for node in nodes.values()]")
        lines.append("for (name, node), adjoint, tangent in zip(nodes.items(), adjoints, tangents):")
        lines.append("    print(name, 'value', shown(node), 'adjoint', shown(adjoint), 'tangent', shown(tangent))")
    else:
        lines.append("for (name, node), adjoint in zip(nodes.items(), adjoints):")
        lines.append("    print(name, 'value', shown(node), 'adjoint', shown(adjoint))")
    return "\n".join(lines) + "\n"
