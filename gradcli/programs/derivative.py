"""``derivative --show-code``: the tape column as a runnable TensorFlow program."""

from __future__ import annotations

from gradcli.expression import Node
from gradcli.programs.common import code_names, program_preamble, target_code
from gradcli.programs.rules import rule_definitions, rule_names


# Names the derivative program defines itself; a user variable called one of them is renamed there.
_DERIVATIVE_CODE_NAMES = ("contextlib", "math", "tf", "DTYPE", "ORDER", "stack", "tapes", "tape", "d",
                          "derivatives", "k")


def program_derivative(core, at: list[str] | str) -> str:
    """``derivative --show-code``: the request checked as the computation checks it (the batch core at the
    --at point, ``core`` a :class:`gradcli.compute.batch.derivative.DerivativeBatch`), nothing computed."""
    from gradcli.compute.batch.points import point_chunks
    from gradcli.expression.points import parse_point

    (chunk,) = point_chunks(core, points=None, grid=None, at=at, batch_size=1)
    core.check(chunk)
    return show_code_derivative(core.expr.tree, core.expr.text, parse_point(at).values, core.variable, core.order,
                                core.dtype)


def show_code_derivative(tree: Node, text: str, values: dict[str, float], variable: str, order: int,
                         dtype: str) -> str:
    """A runnable program reproducing the tape column: one GradientTape per order, nested."""
    names = code_names(list(values), taken=[*_DERIVATIVE_CODE_NAMES, *rule_names([tree])])
    body = target_code(tree, names)
    lines = program_preamble("the tape column of `gradcli derivative`, one GradientTape per order.",
                             values, [variable], dtype, names, unwatched="held fixed",
                             imports=("contextlib", "math"), settings=(f"ORDER = {order}",))
    lines += rule_definitions([tree])
    lines += [
        "",
        "with contextlib.ExitStack() as stack:",
        "    # tapes[0] is the outermost: it records everything the inner tapes compute.",
        "    tapes = [stack.enter_context(tf.GradientTape()) for _ in range(ORDER)]",
        f"    d = {body}  # {text}",
        "    derivatives = []",
        "    for tape in reversed(tapes):  # innermost first; a non-persistent tape stops recording here",
        f"        d = None if d is None else tape.gradient(d, {names[variable]})",
        "        derivatives.append(d)",
        "",
        f"# derivatives of order 1..{order} by {variable}",
        "for k, d in enumerate(derivatives, start=1):",
        "    # None: the derivative below did not depend on the variable (gradcli shows 0, structural)",
        "    print(k, None if d is None else float(d))",
    ]
    return "\n".join(lines) + "\n"
