"""``grad --show-code``: the tape column as the TensorFlow guide writes it."""

from __future__ import annotations

from gradcli.expression import Node
from gradcli.compute.grad import plan_gradient
from gradcli.programs.common import code_names, program_preamble, target_code


def show_code_grad(trees: list[Node], texts: list[str], values: dict[str, float], wrt: list[str],
                   dtype: str) -> str:
    """A runnable program reproducing ``gradcli grad``'s tape column."""
    names = code_names(list(values))
    lines = program_preamble("the tape column of `gradcli grad`, as the TensorFlow guide writes it.",
                             values, wrt, dtype, names, unwatched="not watched: no gradient")
    sources = ", ".join(names[v] for v in wrt)
    lines.append("")
    lines.append("with tf.GradientTape(persistent=True) as tape:")
    targets = []
    for i, (tree, text) in enumerate(zip(trees, texts)):
        z = "z" if len(trees) == 1 else f"z{i + 1}"
        targets.append(z)
        lines.append(f"    {z} = {target_code(tree, names)}  # {text}")
    lines.append("")
    for z in targets:
        lines.append(f"grads = tape.gradient({z}, [{sources}], "
                     "unconnected_gradients=tf.UnconnectedGradients.ZERO)")
        for k, name in enumerate(wrt):
            lines.append(f"print('d{z}/d{name} =', grads[{k}].numpy())")
    if len(targets) > 1:
        lines.append("# Several targets at once: the tape returns the gradient of their sum.")
        lines.append(f"grads = tape.gradient([{', '.join(targets)}], [{sources}], "
                     "unconnected_gradients=tf.UnconnectedGradients.ZERO)")
        for k, name in enumerate(wrt):
            lines.append(f"print('d(sum)/d{name} =', grads[{k}].numpy())")
    lines.append("del tape  # a persistent tape holds its resources until deleted")
    return "\n".join(lines) + "\n"


def program_grad(expressions: list[str], *, at: list[str] | str, wrt: str | None = None,
              dtype: str = "float64", methods: str | None = None, scheme: str = "central",
              eps: float | None = None) -> str:
    """``grad --show-code``: the TensorFlow program for the tape column (nothing is computed)."""
    exprs, point, variables, dtype = plan_gradient(expressions, at=at, wrt=wrt, dtype=dtype, methods=methods,
                                                   scheme=scheme, eps=eps)
    return show_code_grad([e.tree for e in exprs], [e.text for e in exprs], point.values, variables, dtype)
