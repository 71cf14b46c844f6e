"""``hessian --show-code``: the tape column as a runnable TensorFlow program."""

from __future__ import annotations

from gradcli.expression import Node
from gradcli.programs.common import code_names, program_preamble, target_code
from gradcli.programs.rules import rule_definitions, rule_names


# Names the Hessian program defines itself; a user variable called one of them is renamed there.
_HESSIAN_CODE_NAMES = ("math", "tf", "DTYPE", "outer", "inner", "z", "grads", "grad_vector", "rows", "row",
                       "g", "h", "hessian", "jacobian")


def show_code_hessian(tree: Node, text: str, values: dict[str, float], wrt: list[str], dtype: str) -> str:
    """A runnable program reproducing the tape column: the guide's nested tapes, then the same by jacobian."""
    names = code_names(list(values), taken=[*_HESSIAN_CODE_NAMES, *rule_names([tree])])
    sources = ", ".join(names[v] for v in wrt)
    body = target_code(tree, names)
    lines = program_preamble("the tape column of `gradcli hessian`, nested GradientTapes as in the TF guide.",
                             values, wrt, dtype, names, unwatched="not watched: held fixed")
    lines += rule_definitions([tree])
    lines += [
        "",
        "with tf.GradientTape(persistent=True) as outer:",
        "    with tf.GradientTape() as inner:",
        f"        z = {body}  # {text}",
        f"    grads = inner.gradient(z, [{sources}], unconnected_gradients=tf.UnconnectedGradients.ZERO)",
        "    grad_vector = tf.stack(grads)  # inside the outer tape, so that it records the stacking too",
        "",
        f"# Rows and columns: {', '.join(wrt)}",
        "# The guide's loop: one row per gradient entry; None where the entry does not depend on a variable.",
        f"rows = [outer.gradient(g, [{sources}]) for g in grads]",
        "print(rows)",
        "# gradcli reports None as 0, marked as a structural zero:",
        "hessian = [[0.0 if h is None else float(h) for h in row] for row in rows]",
        "print(hessian)",
        "",
        "# Vectorised, one call for all rows (the same matrix gradcli computes for many variables):",
        f"jacobian = outer.jacobian(grad_vector, [{sources}], unconnected_gradients=tf.UnconnectedGradients.ZERO)",
        "print(tf.stack(jacobian, axis=1).numpy().tolist())",
        "del outer  # a persistent tape holds its resources until deleted",
    ]
    return "\n".join(lines) + "\n"


def program_hessian(expression: str, *, at: list[str] | str, wrt: str | None = None, methods: str | None = None,
                    eps: float | None = None, dtype: str = "float64", formulas: bool = False) -> str:
    """``hessian --show-code``: the request checked as the computation checks it (the batch core at the --at
    point), then the tape's program; nothing is computed."""
    from gradcli.compute.batch.hessian import HessianBatch
    from gradcli.compute.batch.points import point_chunks

    core = HessianBatch(expression, wrt=wrt, methods=methods, eps=eps, dtype=dtype, formulas=formulas)
    (chunk,) = point_chunks(core, points=None, grid=None, at=at, batch_size=1)
    core.check(chunk)
    return show_code_hessian(core.expr.tree, core.expr.text, core.at_point.values, core.wrt, core.dtype)
