"""Rendering of :class:`gradcli.compute.trace.TraceReport`: tables, JSON, Graphviz dot."""

from __future__ import annotations

import math

from gradcli.compute.trace import node_error
from gradcli.render.common import error, number, stdout_console, to_json
from gradcli.render.layout import FORMULA, SECONDARY, Column, FittedTable, print_line, print_table


def value(x: float | None, dtype: str = "float64") -> str:
    """A float with the digits its dtype needs; 'inf', '-inf' and 'nan' as they are (a trace shows them)."""
    from gradcli.results import shortest

    if x is None:
        return "undefined"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(shortest(x, dtype))


def _err(x: float | None) -> str:
    if x is not None and math.isinf(x):
        return "inf"
    return error(x)


def trace_json(report) -> str:
    return to_json(report.to_dict())


def _header(console, report) -> None:
    point = ", ".join(f"{k} = {number(v)}" for k, v in report.point.items())
    print_line(console, f"[bold]point[/bold]  {point}    [bold]dtype[/bold]  {report.dtype}")
    if report.along is not None:
        along = ", ".join(f"{k} = {number(v)}" for k, v in report.along.items())
        print_line(console, f"[bold]along[/bold]  {along}")
    for k, text in enumerate(report.expressions):
        name = f"z{k + 1}" if len(report.expressions) > 1 else "z"
        print_line(console, f"[bold]{name}[/bold]{' ' * (7 - len(name))}{text}  = {report.nodes_of_output(k)}",
                   markup=True)


def trace_table(report) -> None:
    console = stdout_console()
    dtype = report.dtype
    nodes = report.nodes
    exact = report.exact_available
    _header(console, report)

    columns = [Column("node", "left", "bold"), Column("operation", "left"), Column("value")]
    if exact:
        columns += [Column("exact (SymPy)"), Column("error", role=SECONDARY, under="value")]
    columns.append(Column("expression", "left", role=FORMULA))
    table = FittedTable(columns, title="forward: each node's value, as the tape records it")
    for n in nodes:
        row = [n.name, "input" if n.kind == "input" else n.text, value(n.value, dtype)]
        if exact:
            row += [value(n.exact), _err(node_error(n.value, n.exact))]
        row.append(n.expression)
        table.add_row(*row)
    print_table(console, table)

    targets = "z" if len(report.expressions) == 1 else " + ".join(f"z{k + 1}" for k in range(len(report.expressions)))
    columns = [Column("node", "left", "bold"), Column("adjoint"), Column("sum over its users", "left"),
               Column("tape.gradient")]
    if exact:
        columns += [Column("exact (SymPy)"), Column("error", role=SECONDARY, under="adjoint")]
    columns.append(Column("adjoint × d user/d node", "left", role=FORMULA))
    table = FittedTable(columns, title=f"reverse: each node's adjoint d({targets})/d node, users before inputs")
    for n in reversed(nodes):
        sums = [f"{value(t, dtype)} ({nodes[u].name})" for u, _, _, t in n.adjoint_terms]
        each = [f"{nodes[u].name}: {value(a, dtype)} × {value(p, dtype)}" for u, a, p, _ in n.adjoint_terms]
        if n.seed:
            sums.insert(0, f"{value(n.seed)} (seed)")
        row = [n.name, value(n.adjoint, dtype), " + ".join(sums) or "0 (no recorded user)",
               value(n.tf_adjoint, dtype) if n.recorded else "not recorded"]
        if exact:
            row += [value(n.exact_adjoint), _err(node_error(n.adjoint, n.exact_adjoint))]
        row.append("; ".join(each) if each else "seed" if n.seed else "")
        table.add_row(*row)
    print_table(console, table)

    if report.along is not None:
        columns = [Column("node", "left", "bold"), Column("tangent"), Column("sum over its inputs", "left"),
                   Column("ForwardAccumulator")]
        if exact:
            columns += [Column("exact (SymPy)"), Column("error", role=SECONDARY, under="tangent")]
        columns.append(Column("d node/d input × tangent", "left", role=FORMULA))
        table = FittedTable(columns, title="forward along the direction: each node's tangent, inputs before users")
        for n in nodes:
            sums = [value(j, dtype) for _, _, _, j in n.tangent_terms]
            each = [f"{nodes[i].name}: {value(p, dtype)} × {value(t, dtype)}" for i, p, t, _ in n.tangent_terms]
            row = [n.name, value(n.tangent, dtype), " + ".join(sums) if sums else "(the direction)",
                   value(n.tf_tangent, dtype)]
            if exact:
                row += [value(n.exact_tangent), _err(node_error(n.tangent, n.exact_tangent))]
            row.append("; ".join(each) if each else "")
            table.add_row(*row)
        print_table(console, table)

    if report.origins:
        print_line(console, "[bold]where it went wrong[/bold]")
        for o in report.origins:
            print_line(console, f"  {o.sweep}: {o.message}", indent=4, markup=False)


# ---------------------------------------------------------------------------------------------
# Graphviz
# ---------------------------------------------------------------------------------------------
def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _node_id(name: str) -> str:
    """A node's Graphviz id, apart from the targets' (a variable named z would be the output z's node)."""
    return _quote(f"node {name}")


def trace_dot(report) -> str:
    """The computation graph as Graphviz text: each node with its value and adjoint (and tangent), an edge
    from each input to its user labelled with the local derivative; a node that went wrong is red. What the
    tape's backward pass does not reach (below a stop_gradient: tape.gradient's None) is grey and dashed, a
    node's adjoint marked "not recorded", an edge into a stop_gradient labelled "not recorded"."""
    dtype = report.dtype
    wrong = {o.node for o in report.origins}
    lines = ["digraph trace {", "  rankdir=BT;", "  node [shape=box, fontname=\"monospace\"];"]
    for n in report.nodes:
        label = [n.name if n.kind == "input" else f"{n.name} = {n.text}", f"value {value(n.value, dtype)}",
                 f"adjoint {value(n.adjoint, dtype)}" + ("" if n.recorded else " (not recorded: tape.gradient None)")]
        if report.along is not None:
            label.append(f"tangent {value(n.tangent, dtype)}")
        if report.exact_available:
            label.append(f"exact value {value(n.exact)}, adjoint {value(n.exact_adjoint)}")
        style = ", color=red, fontcolor=red" if n.name in wrong else ""
        if not n.recorded:
            style += ", style=dashed" + ("" if n.name in wrong else ", color=grey50, fontcolor=grey50")
        shape = ", shape=ellipse" if n.kind == "input" else ""
        lines.append(f"  {_node_id(n.name)} [label={_quote(chr(10).join(label))}{shape}{style}];")
    for n in report.nodes:
        for i, partial, connected in zip(n.inputs, n.partials, n.connected):
            source = report.nodes[i].name
            text = f"d{n.name}/d{source} = {value(partial, dtype)}" if connected else "not recorded"
            recorded = connected and n.recorded and report.nodes[i].recorded
            style = "" if recorded else ", style=dashed, color=grey50, fontcolor=grey50"
            lines.append(f"  {_node_id(source)} -> {_node_id(n.name)} [label={_quote(text)}{style}];")
    for k, text in enumerate(report.expressions):
        out = f"z{k + 1}" if len(report.expressions) > 1 else "z"
        lines.append(f"  {_quote('output ' + out)} [label={_quote(out + ' = ' + text)}, shape=plaintext];")
        lines.append(f"  {_node_id(report.nodes_of_output(k))} -> {_quote('output ' + out)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
