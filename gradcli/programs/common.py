"""What every generated program shares: TensorFlow source for an expression, names that keep clear of the
program's own, and the opening lines (imports, DTYPE, the variables)."""

from __future__ import annotations

import builtins
import re

from gradcli.expression.evaluate import PYTHON_FLOAT64, evaluate
from gradcli.expression import Add, Call, Mul, Neg, Node, Pow, Var, is_constant
from gradcli.expression.functions import tf_code_templates
from gradcli.expression.tree import Rule, RuleCall

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


def rule_function(rule: Rule) -> str:
    """The program's name for a --rule's tf.custom_gradient function (rule_ keeps it apart from variables)."""
    return f"rule_{rule.name}"


def renamed_comment(names: dict[str, str]) -> list[str]:
    """Comment lines for the renamed variables, if any."""
    moved = [f"{k} -> {v}" for k, v in names.items() if k != v]
    return [f"# renamed, to keep clear of the program's own names: {', '.join(moved)}"] if moved else []


def infix_source(tree: Node, names: dict[str, str], own, *, bare_power_after_minus: bool) -> str:
    """Python source for ``tree`` as every generated program writes it: variables (renamed by ``names``),
    negations, sums and products left to right, as gradcli evaluates them. ``own(node, code, operand)``
    writes what each program writes its own way (constants, powers, calls, a rule's call) as (source,
    atomic), or None for the shared kinds; ``code`` and ``operand`` write a child. Atomic text never needs
    parentheses as an operand; a power does not after ``-`` where ``bare_power_after_minus``."""

    def code(node: Node) -> tuple[str, bool]:
        written = own(node, code, operand)
        if written is not None:
            return written
        if isinstance(node, Var):
            return names.get(node.name, node.name), True
        if isinstance(node, Neg):
            return f"-{operand(node.operand, allow_pow=bare_power_after_minus)}", False
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
        raise TypeError(node)

    def operand(node: Node, allow_pow: bool = False) -> str:
        text, atomic = code(node)
        return text if atomic or (allow_pow and isinstance(node, Pow)) else f"({text})"

    return code(tree)[0]


def tf_code(tree: Node, names: dict[str, str] | None = None) -> str:
    """Python source computing ``tree`` with TensorFlow ops on variables named like gradcli's
    (or as ``names`` maps them: see :func:`code_names`).

    Constant sub-expressions are written as their float64 value, so every TF op gets a tensor.
    """

    def tensor(node: Node, code) -> str:
        # A function of constants only needs a tensor argument of the right dtype.
        text = code(node)[0]
        return f"tf.constant({text}, dtype=DTYPE)" if is_constant(node) else text

    def own(node: Node, code, operand) -> tuple[str, bool] | None:
        if is_constant(node):
            value = evaluate(node, {}, PYTHON_FLOAT64)
            return repr(value), value >= 0
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
        if isinstance(node, RuleCall):  # tensors, not tf.Variables, go in, as on gradcli's tape
            args = ", ".join(f"tf.convert_to_tensor({tensor(a, code)})" for a in node.args)
            return f"{rule_function(node.rule)}({args})", True
        if isinstance(node, Call):
            if node.func == "log" and len(node.args) == 2:
                x, b = node.args
                return f"tf.math.log({tensor(x, code)}) / tf.math.log({tensor(b, code)})", False
            if node.func == "atan2":
                y, x = node.args
                return f"tf.math.atan2({tensor(y, code)}, {tensor(x, code)})", True
            text = _TF_FUNCTION_CODE[node.func].format(*(code(a)[0] for a in node.args))
            return text, "/" not in text
        return None

    return infix_source(tree, names or {}, own, bare_power_after_minus=True)


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
