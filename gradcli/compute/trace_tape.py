"""``trace``'s TensorFlow side: the sweeps one node at a time, and TensorFlow's own whole-program answers that
they are checked against.

- forward: each node's value, from its inputs' values (the node's own op on tensors), inside one persistent
  ``GradientTape`` (and a ``ForwardAccumulator`` with a direction);
- reverse: each node's adjoint, the sum over the nodes that use it of their adjoint through this op's
  vector-Jacobian product (TF's own gradient function of the op), against ``tape.gradient(targets,
  intermediates)`` over the whole program;
- along a direction: each node's tangent through the op's Jacobian-vector product, against
  ``ForwardAccumulator.jvp`` of every intermediate.

TensorFlow is imported inside the functions only.
"""

from __future__ import annotations

import math

from gradcli.compute.trace_nodes import INPUT_SLOT, TraceNode
from gradcli.dtypes import MACHINE_EPSILON, SMALLEST_NORMAL


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
        env = {f"{INPUT_SLOT}{j}": tensors[i] for j, i in enumerate(nodes[k].inputs)}
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
    # None where no recorded path joins the node to a target (below a stop_gradient, or its output): the
    # tape's "not recorded", which the sweep's own arithmetic cannot be checked against
    recorded = [g is not None for g in tape.gradient(targets, tensors)]
    del tape
    t_np = np.dtype(dtype).type
    for n, t, g, r in zip(nodes, tensors, whole, recorded):
        n.recorded = r
        n.value = float(t.numpy())
        n.tf_adjoint = float(g.numpy())
    if tf_tangents is not None:
        for n, t in zip(nodes, tf_tangents):
            n.tf_tangent = float(t.numpy())

    # Each op on constants of its inputs' values: its own partials, VJPs and JVPs, one node at a time.
    local = {}
    connected: dict[int, list[bool]] = {}
    for k, n in enumerate(nodes):
        if n.kind == "input":
            continue
        consts = [tf.constant(nodes[i].value, dtype=tf_dtype) for i in n.inputs]
        env = {f"{INPUT_SLOT}{j}": c for j, c in enumerate(consts)}
        env.update({v: tf.constant(values[v], dtype=tf_dtype) for v in names})
        with tf.GradientTape(persistent=True) as op_tape:
            op_tape.watch(consts)
            out = tf.convert_to_tensor(fns[k](env), dtype=tf_dtype)
        partials = op_tape.gradient(out, consts, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        local[k] = (op_tape, out, consts, [float(p.numpy()) for p in partials], env)
        # stop_gradient's input is no edge of the tape's backward pass (TF returns None for it)
        connected[k] = [g is not None for g in op_tape.gradient(out, consts)]
        n.partials, n.connected = local[k][3], connected[k]

    # reverse: seeds, then each op's VJP with its adjoint, users before the inputs they use
    # As the tape does, only a node that a connected path from a target reaches passes its adjoint on: below
    # a stop_gradient, 0 × inf would be nan where tape.gradient has nothing.
    adjoint = [t_np(n.seed) for n in nodes]
    reached = [n.seed != 0 for n in nodes]
    for k in range(len(nodes) - 1, -1, -1):
        n = nodes[k]
        n.adjoint = float(adjoint[k])
        if n.kind == "input" or not reached[k]:
            continue
        op_tape, out, consts, partials, _ = local[k]
        vjps = op_tape.gradient(out, consts, output_gradients=tf.constant(adjoint[k], dtype=tf_dtype),
                                unconnected_gradients=tf.UnconnectedGradients.ZERO)
        for j, (i, v) in enumerate(zip(n.inputs, vjps)):
            if not connected[k][j]:
                continue
            reached[i] = True
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
        consts = [env[f"{INPUT_SLOT}{j}"] for j in range(len(n.inputs))]
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


def check_against_tf(report) -> None:
    """Every adjoint against TF's tape.gradient of the whole program, every tangent against ForwardAccumulator's."""
    for n in report.nodes:
        scale = sum(abs(t[3]) for t in n.adjoint_terms if math.isfinite(t[3])) + n.seed
        if n.recorded and not _same(n.adjoint, n.tf_adjoint, scale, report.dtype):
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


def zero_adjoint_notes(nodes: list[TraceNode], dtype: str) -> list[str]:
    """Where an op's gradient function gives a finite term for an adjoint of 0 times an infinite partial (TF's
    sqrt, reciprocal of sqrt: they do not multiply), a note: a term shown as ``0.0 × inf`` that is 0, not nan."""
    from gradcli.compute.nan_origin import show

    notes = []
    for n in nodes:
        for user, adj, partial, term in n.adjoint_terms:
            if adj == 0 and not math.isfinite(partial) and math.isfinite(term):
                u = nodes[user]
                notes.append(f"the adjoint of {n.name} through {u.name} = {u.text} is {show(term, dtype)}, not "
                             f"0 × {show(partial)}: TensorFlow's gradient of {u.op} passes a zero adjoint on as zero")
    return notes
