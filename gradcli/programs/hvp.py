"""``hvp --show-code``: H·v three ways with TensorFlow's two modes (forward-over-reverse, reverse-over-reverse,
reverse-over-forward) and by central differences of the tape's gradient, as one runnable program."""

from __future__ import annotations

from gradcli.compute.hvp import plan_hvp
from gradcli.programs.common import code_names, program_preamble, target_code

_OWN = ("acc", "v", "z", "xs", "zero", "hvp", "gv", "jvp", "gradient", "shifted", "plus", "minus", "d", "x", "t",
        "tape", "outer", "inner", "grads")


def program_hvp(expression: str, *, at, along, dtype: str = "float64") -> str:
    expr, point, variables, direction, dtype = plan_hvp(expression, at=at, along=along, dtype=dtype)
    names = code_names(list(point.values), taken=_OWN)
    body = target_code(expr.tree, names)
    xs = ", ".join(names[k] for k in variables)
    lines = program_preamble(f"H·v of `gradcli hvp`: {expr.text}, three compositions of the two modes and fd.",
                             dict(point.values), variables, dtype, names, unwatched="not in the expression")
    lines += [f"xs = [{xs}]",
              f"v = [{', '.join(f'tf.constant({direction[k]!r}, dtype=DTYPE)' for k in variables)}]  # the direction",
              "zero = tf.UnconnectedGradients.ZERO", "",
              "# forward-over-reverse: the tangent (along v) of the tape's gradient",
              "with tf.autodiff.ForwardAccumulator(primals=xs, tangents=v) as acc:",
              "    with tf.GradientTape() as tape:",
              f"        z = {body}  # {expr.text}",
              "    grads = tape.gradient(z, xs, unconnected_gradients=zero)",
              "hvp = acc.jvp(grads, unconnected_gradients=zero)",
              "print('forward-over-reverse', [float(d.numpy()) for d in hvp])", "",
              "# reverse-over-reverse: the outer tape differentiates g·v",
              "with tf.GradientTape() as outer:",
              "    with tf.GradientTape() as inner:",
              f"        z = {body}",
              "    grads = inner.gradient(z, xs, unconnected_gradients=zero)",
              "    gv = tf.add_n([g * d for g, d in zip(grads, v)])",
              "hvp = outer.gradient(gv, xs, unconnected_gradients=zero)",
              "print('reverse-over-reverse', [float(d.numpy()) for d in hvp])", "",
              "# reverse-over-forward: the tape differentiates J·v",
              "with tf.GradientTape() as tape:",
              "    with tf.autodiff.ForwardAccumulator(primals=xs, tangents=v) as acc:",
              f"        z = {body}",
              "    jvp = acc.jvp(z, unconnected_gradients=zero)",
              "hvp = tape.gradient(jvp, xs, unconnected_gradients=zero)",
              "print('reverse-over-forward', [float(d.numpy()) for d in hvp])", "", "",
              "# fd of the tape gradient: (g(x + h v) - g(x - h v)) / 2h",
              f"def gradient(t, {', '.join(f'{names[k]}={names[k]}' for k in variables)}):",
              "    shifted = [tf.Variable(x + t * d) for x, d in zip(xs, v)]",
              f"    {xs}{',' if len(variables) == 1 else ''} = shifted",
              "    with tf.GradientTape() as tape:",
              f"        z = {body}",
              "    return tape.gradient(z, shifted, unconnected_gradients=zero)", "", ""]
    lines.append("h = 2.0 ** -16 * max(1.0, *[abs(float(x.numpy())) for x in xs])")
    lines += ["plus, minus = gradient(h), gradient(-h)",
              "print('fd of the gradient', [float(((p - m) / (2 * h)).numpy()) for p, m in zip(plus, minus)])"]
    return "\n".join(lines) + "\n"
