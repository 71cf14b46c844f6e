"""TensorFlow ``GradientTape``: the automatic-differentiation column.

TensorFlow is imported only here, and only when a tape is needed: it takes seconds to load.
:func:`load_tensorflow` silences its start-up log lines (they go to file descriptor 2 from C++,
before ``TF_CPP_MIN_LOG_LEVEL`` is even read by some of them), so they never reach the user.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import sys
import warnings

from gradcli.evaluate import Backend
from gradcli.expr import Add, Call, Mul, Neg, Node, Pow, Var, is_constant
from gradcli.functions import tf_code_templates, tf_functions

_tf = None


@contextlib.contextmanager
def _stderr_silenced():
    """Point file descriptor 2 at /dev/null (C++ logging ignores sys.stderr)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def load_tensorflow():
    """Import TensorFlow once, quietly, and return the module."""
    global _tf
    if _tf is not None:
        return _tf
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ.setdefault("ABSL_MIN_LOG_LEVEL", "3")
    with _stderr_silenced(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")
        try:
            import absl.logging

            absl.logging.set_verbosity(absl.logging.ERROR)
        except ImportError:  # pragma: no cover - absl comes with TensorFlow
            pass
        # The first op initialises the runtime, which may log too: do it while silenced.
        tf.constant(0.0) + 1.0
    _tf = tf
    return tf


_TF_BACKENDS: dict[str, Backend] = {}


def tf_backend(dtype: str) -> Backend:
    """TensorFlow ops in ``dtype``; constants are float tensors (an int32 constant has no gradient)."""
    if dtype in _TF_BACKENDS:
        return _TF_BACKENDS[dtype]
    tf = load_tensorflow()
    tf_dtype = tf.as_dtype(dtype)

    def const(v: float):
        return tf.constant(v, dtype=tf_dtype)

    def int_pow(x, n: int):
        # x*x*...*x: exact derivatives of every order (tf.pow's gradient n*x**(n-1) is NaN at x = 0
        # once the exponent reaches -1, e.g. the third derivative of x**2).
        if n == 0:
            return tf.ones_like(x)
        out = x
        for _ in range(n - 1):
            out = out * x
        return out

    backend = Backend(
        name=f"tensorflow-{dtype}",
        const=const,
        pow=tf.pow,
        div=tf.math.divide,
        int_pow=int_pow,
        functions=tf_functions(tf, const),
    )
    _TF_BACKENDS[dtype] = backend
    return backend


def tape_gradient(trees: list[Node], values: dict[str, float], wrt: list[str], *, dtype: str = "float64"):
    """Gradients of each tree with one persistent tape, as the TF guide does: a batch of one point for
    :func:`gradcli.methods.tape.tape_gradients`.

    The variables in ``wrt`` are ``tf.Variable``s; the others are ``tf.constant``s the tape does not
    watch. Returns ``(per_tree, unconnected, summed, values)``: ``per_tree[i][name]`` is a float,
    ``unconnected[i]`` the names the tape reported as not connected (``None``; reported here as 0),
    ``summed`` is ``tape.gradient([z1, z2, ...], xs)`` (TF sums several targets), and ``values`` the
    function values.
    """
    from gradcli.methods.tape import tape_gradients

    result = tape_gradients(trees, _one_point(values), wrt, dtype=dtype)
    per_tree = [{name: float(g) for name, g in zip(wrt, grads[0])} for grads in result.gradients]
    summed = {name: float(g) for name, g in zip(wrt, result.summed[0])}
    return per_tree, result.unconnected, summed, [float(v[0]) for v in result.values]


def _one_point(values: dict[str, float]) -> dict:
    """A point as a batch of one: name -> float64 array of shape [1]."""
    import numpy as np

    return {name: np.array([v], dtype=np.float64) for name, v in values.items()}


# ---------------------------------------------------------------------------------------------
# --show-code: the same computation as a short TensorFlow program in the guide's style
# ---------------------------------------------------------------------------------------------
_TF_FUNCTION_CODE = tf_code_templates()


# Names the generated programs use themselves (and Python's builtins): a user variable called one of
# these is renamed in the program (``z`` becomes ``z_``), so that ``dz/dz`` is not the target's own.
PROGRAM_NAMES = frozenset(dir(builtins)) | {
    "tf", "math", "DTYPE", "tape", "outer", "inner", "grads", "grad", "row", "rows", "hessian", "jacobian",
    "optimizer", "step", "steps", "lr", "loss", "f", "g", "h", "k", "n", "value", "values", "variables",
    "var", "xs", "x_vec", "dz_dx", "history", "tapes", "order", "derivative", "derivatives", "keras",
}
_TARGET_NAME = re.compile(r"z\d*\Z")


def code_names(variables, *, taken=()) -> dict[str, str]:
    """A Python identifier for each user variable that clashes with nothing the program defines."""
    reserved = PROGRAM_NAMES | set(taken)
    chosen: dict[str, str] = {}
    used = set(variables)
    for name in variables:
        new = name
        if new in reserved or _TARGET_NAME.match(new):
            new = name + "_"
            while new in used or new in reserved:
                new += "_"
        used.add(new)
        chosen[name] = new
    return chosen


def renamed_comment(names: dict[str, str]) -> list[str]:
    """Comment lines for the renamed variables, if any."""
    moved = [f"{k} -> {v}" for k, v in names.items() if k != v]
    return [f"# renamed, to keep clear of the program's own names: {', '.join(moved)}"] if moved else []


def tf_code(tree: Node, names: dict[str, str] | None = None) -> str:
    """Python source computing ``tree`` with TensorFlow ops on variables named like gradcli's
    (or as ``names`` maps them: see :func:`code_names`).

    Constant sub-expressions are written as their float64 value, so every TF op gets a tensor.
    """
    from gradcli.evaluate import PYTHON_FLOAT64, evaluate

    names = names or {}

    def code(node: Node) -> tuple[str, bool]:
        """Return (source, atomic): atomic text never needs parentheses as an operand."""
        if is_constant(node):
            value = evaluate(node, {}, PYTHON_FLOAT64)
            return repr(value), value >= 0
        if isinstance(node, Var):
            return names.get(node.name, node.name), True
        if isinstance(node, Neg):
            return f"-{operand(node.operand, allow_pow=True)}", False
        if isinstance(node, Add):
            parts = []
            for k, (sign, term) in enumerate(node.terms):
                text, _ = code(term)
                if k > 0 and isinstance(term, (Add, Neg)):
                    text = f"({text})"
                parts.append(text if k == 0 else (" + " if sign > 0 else " - ") + text)
            return "".join(parts), False
        if isinstance(node, Mul):
            parts = []
            for k, (divide, factor) in enumerate(node.factors):
                text = operand(factor, allow_pow=True)
                parts.append(text if k == 0 else (" / " if divide else " * ") + text)
            return "".join(parts), False
        if isinstance(node, Pow):
            base = operand(node.base)
            if isinstance(node.base, Var) and is_constant(node.exponent):
                n = evaluate(node.exponent, {}, PYTHON_FLOAT64)
                if n == 0.0:  # as gradcli's tape: a constant, unconnected (tf.pow gives NaN at x = 0)
                    return f"tf.ones_like({base})", True
                if n in (2.0, 3.0, 4.0):
                    # x * x, as gradcli's tape computes small powers: tf.pow's gradient n * x**(n-1)
                    # turns into 0 * x**-1 = NaN at x = 0 in the higher derivatives.
                    return "(" + " * ".join([base] * int(n)) + ")", True
            return f"{base} ** {operand(node.exponent)}", False
        if isinstance(node, Call):
            if node.func == "log" and len(node.args) == 2:
                x, b = node.args
                return f"tf.math.log({tensor(x)}) / tf.math.log({tensor(b)})", False
            if node.func == "atan2":
                y, x = node.args
                return f"tf.math.atan2({tensor(y)}, {tensor(x)})", True
            text = _TF_FUNCTION_CODE[node.func].format(*(code(a)[0] for a in node.args))
            return text, "/" not in text
        raise TypeError(node)

    def operand(node: Node, allow_pow: bool = False) -> str:
        text, atomic = code(node)
        return text if atomic or (allow_pow and isinstance(node, Pow)) else f"({text})"

    def tensor(node: Node) -> str:
        # A function of constants only needs a tensor argument of the right dtype.
        text = code(node)[0]
        return f"tf.constant({text}, dtype=DTYPE)" if is_constant(node) else text

    return code(tree)[0]


def target_code(tree: Node, names: dict[str, str]) -> str:
    """``tf_code`` for a tape target: a constant expression still has to be a tensor."""
    body = tf_code(tree, names)
    return f"tf.constant({body}, dtype=DTYPE)" if is_constant(tree) else body


def program_preamble(title: str, values: dict[str, float], watched: list[str], dtype: str,
                     names: dict[str, str], *, unwatched: str, imports: tuple[str, ...] = ("math",),
                     settings: tuple[str, ...] = ()) -> list[str]:
    """The opening lines every generated program shares: imports, DTYPE, the variables.

    ``watched`` become ``tf.Variable``s; the others ``tf.constant``s with the comment ``unwatched``.
    """
    lines = [f"# Generated by gradcli: {title}", *(f"import {m}" for m in imports), "",
             "import tensorflow as tf", "", f"DTYPE = tf.{dtype}", *settings, *renamed_comment(names)]
    for name, v in values.items():
        if name in watched:
            lines.append(f"{names[name]} = tf.Variable({v!r}, dtype=DTYPE)")
        else:
            lines.append(f"{names[name]} = tf.constant({v!r}, dtype=DTYPE)  # {unwatched}")
    return lines


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
