"""``jvp --show-code``: J·v by ``tf.autodiff.ForwardAccumulator``, then the central difference along v with the
step gradcli's fd takes, as a runnable TensorFlow program."""

from __future__ import annotations

from gradcli.compute.jvp import plan_jvp
from gradcli.programs.common import code_names, program_preamble, target_code

_OWN = ("acc", "v", "z", "f_along", "jvp", "t")


def program_jvp(expressions, *, at, along, dtype: str = "float64") -> str:
    exprs, point, direction, dtype = plan_jvp(expressions, at=at, along=along, dtype=dtype)
    names = code_names(list(point.values), taken=_OWN)
    used = list(point.names)
    lines = program_preamble("J·v of `gradcli jvp`: forward mode (ForwardAccumulator), then fd along v.",
                             dict(point.values), used, dtype, names, unwatched="")
    primals = ", ".join(names[k] for k in used)
    lines.append(f"v = [{', '.join(f'tf.constant({direction[k]!r}, dtype=DTYPE)' for k in used)}]  # the direction")
    lines.append("")
    lines.append("# Forward mode: the tangents ride along with the values; one pass gives J·v, no Jacobian.")
    lines.append(f"with tf.autodiff.ForwardAccumulator(primals=[{primals}], tangents=v) as acc:")
    zs = []
    for k, e in enumerate(exprs):
        z = "z" if len(exprs) == 1 else f"z{k + 1}"
        zs.append(z)
        lines.append(f"    {z} = {target_code(e.tree, names)}  # {e.text}")
    for z in zs:
        lines.append(f"print('J·v of {z} =', acc.jvp({z}, unconnected_gradients=tf.UnconnectedGradients.ZERO)"
                     f".numpy())")
    lines += ["", "", "# The same by central differences of t -> f(x + t v) at t = 0.",
              f"def f_along(t, {', '.join(f'{names[k]}={names[k]}' for k in used)}):", f"    {', '.join(names[k] for k in used)}{',' if len(used) == 1 else ''} = "
              f"[x + t * d for x, d in zip([{primals}], v)]"]
    lines.append(f"    return [{', '.join(target_code(e.tree, names) for e in exprs)}]")
    lines += ["", "", "h = 1e-5 * max(1.0, *[abs(float(x.numpy())) for x in "
              f"[{primals}]]) / max(abs(float(d.numpy())) for d in v)" if any(direction.values()) else "h = 1e-5"]
    lines.append("for plus, minus in zip(f_along(h), f_along(-h)):")
    lines.append("    print('fd along v =', ((plus - minus) / (2 * h)).numpy())")
    return "\n".join(lines) + "\n"
