"""One way to evaluate an expression tree numerically, whatever the number type.

A :class:`Backend` says how to make a constant and which operation implements each operator and
function; :func:`compile_expression` turns a tree into a Python closure for one backend, once, so
that finite differences (many evaluations) and ``tf.function`` tracing do not re-walk the tree.
No ``lambdify``: it runs ``exec`` on generated source, and gradcli never executes text.

Backends:
- ``PYTHON_FLOAT64``: plain Python floats with IEEE results (inf/nan, never an exception). Used by
  the float64 finite-difference path so that it needs neither NumPy nor TensorFlow imported.
- :func:`numpy_backend` (float32/float64, scalars or arrays): the float32 path and vectorised stencils.
- ``gradcli.methods.tf_runtime.tf_backend``: TensorFlow ops, for ``GradientTape`` (a custom rule's call
  through ``tf.custom_gradient``: ``Backend.rule_call``).

Each backend's functions come from the one function table, :mod:`gradcli.expression.functions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from gradcli.expression.tree import (CONSTANTS, Add, Call, Const, Mul, Neg, Node, Num, Pow, RuleCall, Var, is_boolean,
                                     is_constant)
from gradcli.expression.functions import numpy_functions, py_div, python_functions

Compiled = Callable[[dict], Any]


@dataclass
class Backend:
    name: str
    const: Callable[[float], Any]
    pow: Callable[[Any, Any], Any]
    div: Callable[[Any, Any], Any]
    functions: dict[str, Callable[..., Any]]
    # x**n for a constant integer n in [0, MAX_INT_POWER], when the backend has a better way than pow
    # (TensorFlow: by multiplication, whose derivatives have no 0 * x**-1 = NaN at x = 0).
    int_pow: Callable[[Any, int], Any] | None = None
    # A custom rule's call, where the backend differentiates through it by the rule's own derivatives
    # (TensorFlow's tape): rule_call(params, body, derivatives, args) -> Compiled, each of body and the
    # derivatives (one per parameter) compiled over the parameters, args over the caller's variables.
    # Without it a rule's call is its body's value.
    rule_call: Callable[[tuple, Compiled, list, list], Compiled] | None = None


MAX_INT_POWER = 16


def compile_expression(tree: Node, backend: Backend, *, fold_constants: bool = True) -> Compiled:
    """Return ``f(env) -> value`` computing ``tree`` with ``backend``; ``env`` maps variable names to values.

    Constant sub-trees are folded to one float64 value first (as Python folds literals before TF sees
    them), so every backend gets the same correctly rounded constants.
    """
    # (a truth value is never folded: it stays the backend's boolean, which where's condition needs)
    if fold_constants and not isinstance(tree, (Num, Const)) and not is_boolean(tree) and is_constant(tree):
        value = backend.const(_fold(tree))
        return lambda env: value

    def sub(node: Node) -> Compiled:
        return compile_expression(node, backend, fold_constants=fold_constants)

    if isinstance(tree, Num):
        value = backend.const(number_to_float(tree.value))
        return lambda env: value
    if isinstance(tree, Const):
        value = backend.const(CONSTANTS[tree.name])
        return lambda env: value
    if isinstance(tree, Var):
        name = tree.name
        return lambda env: env[name]
    if isinstance(tree, Neg):
        inner = sub(tree.operand)
        return lambda env: -inner(env)
    if isinstance(tree, Add):
        first = sub(tree.terms[0][1])
        rest = [(sign, sub(t)) for sign, t in tree.terms[1:]]

        def add(env):
            # Left to right, as Python evaluates a + b - c: FD results match a hand-written f(x).
            acc = first(env)
            for sign, g in rest:
                acc = acc + g(env) if sign > 0 else acc - g(env)
            return acc
        return add
    if isinstance(tree, Mul):
        first = sub(tree.factors[0][1])
        rest = [(divide, sub(f)) for divide, f in tree.factors[1:]]
        div = backend.div

        def mul(env):
            acc = first(env)
            for divide, g in rest:
                acc = div(acc, g(env)) if divide else acc * g(env)
            return acc
        return mul
    if isinstance(tree, Pow):
        base = sub(tree.base)
        if backend.int_pow is not None and is_constant(tree.exponent):
            n = _fold(tree.exponent)
            if n == int(n) and 0 <= n <= MAX_INT_POWER:
                int_pow, k = backend.int_pow, int(n)
                return lambda env: int_pow(base(env), k)
        exponent = sub(tree.exponent)
        pw = backend.pow
        return lambda env: pw(base(env), exponent(env))
    if isinstance(tree, RuleCall):
        return _rule_call(tree, backend, [sub(a) for a in tree.args], fold_constants)
    if isinstance(tree, Call):
        fn = backend.functions[tree.func]
        args = [sub(a) for a in tree.args]
        if len(args) == 1:
            a0 = args[0]
            return lambda env: fn(a0(env))
        return lambda env: fn(*(a(env) for a in args))
    raise TypeError(f"unknown node {tree!r}")


def _rule_call(tree: RuleCall, backend: Backend, args: list[Compiled], fold_constants: bool) -> Compiled:
    """A custom rule: its body's value on every backend; where the backend has a ``rule_call`` (the tape),
    with the rule's own derivatives, whose formulas the tape differentiates in turn for higher orders."""
    rule = tree.rule
    body = compile_expression(rule.body, backend, fold_constants=fold_constants)
    params = rule.params
    if backend.rule_call is None:
        return lambda env: body(dict(zip(params, (a(env) for a in args))))
    derivatives = [compile_expression(d, backend, fold_constants=fold_constants) for d in rule.derivatives]
    return backend.rule_call(params, body, derivatives, args)


def evaluate(tree: Node, env: dict, backend: Backend):
    """Evaluate once, operation by operation (use :func:`compile_expression` for repeated calls)."""
    return compile_expression(tree, backend, fold_constants=False)(env)


def number_to_float(value) -> float:
    """The float64 nearest an exact number (an int or Fraction): +-inf past float64's range, as IEEE
    rounding gives, where Python's float() raises (a derivative's coefficient can be 10**300 digits)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _fold(tree: Node) -> float:
    return evaluate(tree, {}, PYTHON_FLOAT64)


# ---------------------------------------------------------------------------------------------
# Plain Python floats with IEEE semantics (division and the functions: gradcli.expression.functions)
# ---------------------------------------------------------------------------------------------
_INF = math.inf
_NAN = math.nan


def _py_pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except OverflowError:
        # |a|**b too large: the sign is negative only for a negative base and an odd integer power.
        negative = a < 0 and b == int(b) and int(b) % 2 == 1
        return -_INF if negative else _INF
    except ValueError:
        if a == 0:  # 0 ** negative
            return _INF
        return _NAN  # negative base, non-integer exponent: not real


PYTHON_FLOAT64 = Backend(
    name="python-float64",
    const=float,
    pow=_py_pow,
    div=py_div,
    functions=python_functions(),
)


# ---------------------------------------------------------------------------------------------
# NumPy (imported only when a float32 or vectorised evaluation needs it)
# ---------------------------------------------------------------------------------------------
_NUMPY_BACKENDS: dict[str, Backend] = {}


def numpy_backend(dtype: str) -> Backend:
    """A backend computing in NumPy ``dtype`` ("float32" or "float64"), on scalars or arrays."""
    if dtype in _NUMPY_BACKENDS:
        return _NUMPY_BACKENDS[dtype]
    import numpy as np

    t = np.dtype(dtype).type
    backend = Backend(
        name=f"numpy-{dtype}",
        const=t,
        pow=np.power,
        div=np.divide,
        functions=numpy_functions(np, t),
    )
    _NUMPY_BACKENDS[dtype] = backend
    return backend


__all__ = ["Backend", "PYTHON_FLOAT64", "compile_expression", "evaluate", "number_to_float", "numpy_backend"]
