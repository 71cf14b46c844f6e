"""``grad --show-code`` for the fd column: the guide's ``approximate_derivative`` (and ``approximate_gradient``)
with the scheme and the step gradcli's fd takes, on NumPy scalars of the dtype.

f is written with the NumPy operations gradcli's fd evaluates (``gradcli.expression.evaluate.numpy_backend``),
left to right as gradcli adds and multiplies, so that the program prints fd's digits (the guide's
7.999999999999119), not another rounding of them.
"""

from __future__ import annotations

from gradcli.expression import Add, Call, Mul, Neg, Node, Pow, Var, is_constant
from gradcli.expression.evaluate import PYTHON_FLOAT64, evaluate
from gradcli.expression.tree import RuleCall
from gradcli.programs.common import code_names, infix_source, renamed_comment

# NumPy source for each function, as numpy_backend computes it ({0}, {1}: the arguments' sources).
_NP_CODE = {
    "sin": "np.sin({0})", "cos": "np.cos({0})", "tan": "np.tan({0})", "asin": "np.arcsin({0})",
    "acos": "np.arccos({0})", "atan": "np.arctan({0})", "sinh": "np.sinh({0})", "cosh": "np.cosh({0})",
    "tanh": "np.tanh({0})", "asinh": "np.arcsinh({0})", "acosh": "np.arccosh({0})", "atanh": "np.arctanh({0})",
    "exp": "np.exp({0})", "log2": "np.log2({0})", "log10": "np.log10({0})", "sqrt": "np.sqrt({0})",
    "abs": "np.abs({0})", "atan2": "np.arctan2({0}, {1})", "log1p": "np.log1p({0})", "expm1": "np.expm1({0})",
    "<": "np.less({0}, {1})", "<=": "np.less_equal({0}, {1})", ">": "np.greater({0}, {1})",
    ">=": "np.greater_equal({0}, {1})", "==": "np.equal({0}, {1})", "!=": "np.not_equal({0}, {1})",
    "and": "np.logical_and({0}, {1})", "or": "np.logical_or({0}, {1})", "not": "np.logical_not({0})",
    "sec": "(1 / np.cos({0}))", "csc": "(1 / np.sin({0}))", "cot": "(1 / np.tan({0}))",
    "erf": "DTYPE(math.erf({0}))",  # NumPy has no erf: Python's, in float64, then the dtype (as gradcli)
    "sigmoid": "np.exp(-np.logaddexp(DTYPE(0), -({0})))", "relu": "np.maximum({0}, DTYPE(0))",
    "softplus": "np.logaddexp(DTYPE(0), {0})", "clip": "np.maximum(np.minimum({0}, {2}), {1})",
    "where": "np.where({0}, {1}, {2})[()]", "stop_gradient": "{0}",
}
# Several arguments folded left to right: min(a, b, c) = minimum(minimum(a, b), c).
_NP_FOLDED = {"min": "np.minimum", "max": "np.maximum", "logsumexp": "np.logaddexp"}

# Names the fd program defines itself; a user variable called one of them is renamed there.
FD_PROGRAM_NAMES = ("np", "math", "DTYPE", "eps", "approximate_derivative", "approximate_gradient", "dg")


class NoProgram(ValueError):
    """The expression uses something the program cannot write on its own (a rule from an expression file)."""


def np_code(tree: Node, names: dict[str, str], dtype: str) -> str:
    """NumPy source computing ``tree`` on scalars of DTYPE; constant sub-expressions are their float64 value
    in the dtype, as gradcli folds them."""

    def constant(node: Node) -> tuple[str, bool]:
        value = evaluate(node, {}, PYTHON_FLOAT64)
        if dtype == "float32":
            return f"DTYPE({value!r})", True
        return repr(value), value >= 0 and repr(value) not in ("inf", "nan")

    def own(node: Node, code, operand) -> tuple[str, bool] | None:
        if isinstance(node, RuleCall):
            raise NoProgram(f"{node.func}() is a rule from the expression file")
        if is_constant(node):
            return constant(node)
        if isinstance(node, Pow):
            return f"{operand(node.base)} ** {operand(node.exponent)}", False
        if isinstance(node, Call):
            args = [code(a)[0] for a in node.args]
            if node.func == "log":
                return (f"np.log({args[0]})" if len(args) == 1 else f"(np.log({args[0]}) / np.log({args[1]}))"), True
            if node.func in _NP_FOLDED:
                text = args[0]
                for a in args[1:]:
                    text = f"{_NP_FOLDED[node.func]}({text}, {a})"
                return text, True
            if node.func not in _NP_CODE:
                raise NoProgram(f"{node.func}() has no NumPy form here")
            return _NP_CODE[node.func].format(*args), True
        if not isinstance(node, (Var, Neg, Add, Mul)):
            raise NoProgram(f"no NumPy form for {type(node).__name__}")
        return None

    return infix_source(tree, names, own, bare_power_after_minus=False)


def _formula(scheme: str) -> list[str]:
    """approximate_derivative for ``scheme``, written as gradcli's fd combines the values (methods.fd)."""
    head = "def approximate_derivative(f, x, eps=1e-3):"
    if scheme == "central":
        return [head, "    return (f(x + eps) - f(x - eps)) / (2. * eps)"]
    if scheme == "forward":
        return [head, "    return (f(x + eps) - f(x)) / eps"]
    if scheme == "backward":
        return [head, "    return (f(x) - f(x - eps)) / eps"]
    return [head,  # richardson
            "    # central differences at eps and eps/2, combined to cancel the eps**2 term (error O(eps**4))",
            "    d1 = (f(x + eps) - f(x - eps)) / (2. * eps)",
            "    d2 = (f(x + eps / 2) - f(x - eps / 2)) / (2. * (eps / 2))",
            "    return d2 + (d2 - d1) / 3"]


def show_code_fd(trees: list[Node], texts: list[str], values: dict[str, float], wrt: list[str], dtype: str,
                 scheme: str, steps: list[dict[str, float]], eps: float | None,
                 one_sided: list[list[str]] | None = None) -> str:
    """The fd column as the guide's program. ``steps[i]``: the step fd takes for each variable of expression
    i (what its JSON reports); ``one_sided[i]``: the variables where fd used one-sided stencils instead."""
    names = code_names(list(values), taken=FD_PROGRAM_NAMES)
    lam = next(n for n in ("x", "t", "u", "s", "x_") if n not in names.values())
    params = ", ".join(names[v] for v in values)
    how = f"--eps {eps!r}" if eps is not None else "its default step (from the dtype and the scheme, times max(1, |x|))"
    lines = ["# Generated by gradcli: the fd column of `gradcli grad`, the guide's approximate_derivative",
             f"# ({scheme} differences) with {how}.",
             *renamed_comment(names), "import math", "", "import numpy as np", "",
             f"DTYPE = np.{dtype}  # gradcli evaluates f in --dtype",
             "np.seterr(all='ignore')  # IEEE inf and nan, as gradcli computes them, without warnings"]
    functions = []
    for i, (tree, text) in enumerate(zip(trees, texts)):
        name = ("f" if len(wrt) == 1 else "g") + ("" if len(trees) == 1 else str(i + 1))
        functions.append(name)
        lines += ["", "", f"def {name}({params}):", f"    return {np_code(tree, names, dtype)}  # {text}"]
    lines += ["", "", *_formula(scheme)]
    point = {v: f"DTYPE({x!r})" for v, x in values.items()}
    if len(wrt) > 1:
        lines += ["", "", f"def approximate_gradient(g, {params}, {', '.join(f'eps_{names[v]}' for v in wrt)}):"]
        for v in wrt:
            args = ", ".join(lam if u == v else names[u] for u in values)
            lines.append(f"    dg_{names[v]} = approximate_derivative(lambda {lam}: g({args}), {names[v]}, "
                         f"eps_{names[v]})")
        lines.append(f"    return {', '.join(f'dg_{names[v]}' for v in wrt)}")
    lines.append("")
    lines.append("")
    for i, (name, text) in enumerate(zip(functions, texts)):
        h = {v: f"DTYPE({steps[i][v]!r})" for v in wrt}
        sided = (one_sided or [[]] * len(trees))[i]
        if sided:
            lines.append(f"# gradcli's fd found a kink or an edge in {', '.join(sided)} and reports a one-sided "
                         f"derivative there, which this formula does not compute")
        if len(wrt) == 1:
            v = wrt[0]
            f = name if len(values) == 1 else \
                f"lambda {lam}: {name}({', '.join(lam if u == v else point[u] for u in values)})"
            lines.append(f"print(approximate_derivative({f}, {point[v]}, {h[v]}))  # d({text})/d{v}")
        else:
            call = f"approximate_gradient({name}, {', '.join(point[v] for v in values)}, " \
                   f"{', '.join(h[v] for v in wrt)})"
            # tuple of floats: the guide's (8.999999999993236, 41.999999999994486); float32 keeps its digits
            show = "tuple(float(d) for d in {0})" if dtype == "float64" else "'(' + ', '.join(map(str, {0})) + ')'"
            lines.append(f"print({show.format(call)})  # gradient of {text} by {', '.join(wrt)}")
    return "\n".join(lines) + "\n"
