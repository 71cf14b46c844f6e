"""One way to evaluate an expression tree numerically, whatever the number type.

A :class:`Backend` says how to make a constant and which operation implements each operator and
function; :func:`compile_expression` turns a tree into a Python closure for one backend, once, so
that finite differences (many evaluations) and ``tf.function`` tracing do not re-walk the tree.
No ``lambdify``: it runs ``exec`` on generated source, and gradcli never executes text.

Backends:
- ``PYTHON_FLOAT64``: plain Python floats with IEEE results (inf/nan, never an exception). Used by
  the float64 finite-difference path so that it needs neither NumPy nor TensorFlow imported.
- :func:`numpy_backend` (float32/float64, scalars or arrays): the float32 path and vectorised stencils.
- ``gradcli.tape.tf_backend``: TensorFlow ops, for ``GradientTape``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from gradcli.expr import CONSTANTS, Add, Call, Const, Mul, Neg, Node, Num, Pow, Var, is_constant

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


MAX_INT_POWER = 16


def compile_expression(tree: Node, backend: Backend, *, fold_constants: bool = True) -> Compiled:
    """Return ``f(env) -> value`` computing ``tree`` with ``backend``; ``env`` maps variable names to values.

    Constant sub-trees are folded to one float64 value first (as Python folds literals before TF sees
    them), so every backend gets the same correctly rounded constants.
    """
    if fold_constants and not isinstance(tree, (Num, Const)) and is_constant(tree):
        value = backend.const(_fold(tree))
        return lambda env: value

    def sub(node: Node) -> Compiled:
        return compile_expression(node, backend, fold_constants=fold_constants)

    if isinstance(tree, Num):
        value = backend.const(float(tree.value))
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
    if isinstance(tree, Call):
        fn = backend.functions[tree.func]
        args = [sub(a) for a in tree.args]
        if len(args) == 1:
            a0 = args[0]
            return lambda env: fn(a0(env))
        return lambda env: fn(*(a(env) for a in args))
    raise TypeError(f"unknown node {tree!r}")


def evaluate(tree: Node, env: dict, backend: Backend):
    """Evaluate once, operation by operation (use :func:`compile_expression` for repeated calls)."""
    return compile_expression(tree, backend, fold_constants=False)(env)


def _fold(tree: Node) -> float:
    return evaluate(tree, {}, PYTHON_FLOAT64)


# ---------------------------------------------------------------------------------------------
# Plain Python floats with IEEE semantics
# ---------------------------------------------------------------------------------------------
_INF = math.inf
_NAN = math.nan


def _py_div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return _NAN
        return math.copysign(_INF, a) * math.copysign(1.0, b)


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


def _py_unary(fn: Callable[[float], float], *, on_overflow=None, on_domain=None) -> Callable[[float], float]:
    def f(x: float) -> float:
        try:
            return fn(x)
        except OverflowError:
            return on_overflow(x) if on_overflow else _INF
        except (ValueError, ZeroDivisionError):
            return on_domain(x) if on_domain else _NAN
    return f


def _log_domain(x: float) -> float:
    return -_INF if x == 0 else _NAN


def _atanh_domain(x: float) -> float:
    return math.copysign(_INF, x) if abs(x) == 1 else _NAN


def _py_sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = _py_unary(math.exp)(x)
    return z / (1.0 + z)


def _py_log(x: float, base: float | None = None) -> float:
    lx = _py_unary(math.log, on_domain=_log_domain)(x)
    if base is None:
        return lx
    return _py_div(lx, _py_unary(math.log, on_domain=_log_domain)(base))


_py_sin = _py_unary(math.sin)
_py_cos = _py_unary(math.cos)
_py_tan = _py_unary(math.tan)

PYTHON_FLOAT64 = Backend(
    name="python-float64",
    const=float,
    pow=_py_pow,
    div=_py_div,
    functions={
        "sin": _py_sin, "cos": _py_cos, "tan": _py_tan,
        "sec": lambda x: _py_div(1.0, _py_cos(x)),
        "csc": lambda x: _py_div(1.0, _py_sin(x)),
        "cot": lambda x: _py_div(1.0, _py_tan(x)),
        "asin": _py_unary(math.asin), "acos": _py_unary(math.acos), "atan": _py_unary(math.atan),
        "sinh": _py_unary(math.sinh, on_overflow=lambda x: math.copysign(_INF, x)),
        "cosh": _py_unary(math.cosh), "tanh": _py_unary(math.tanh),
        "asinh": _py_unary(math.asinh), "acosh": _py_unary(math.acosh),
        "atanh": _py_unary(math.atanh, on_domain=_atanh_domain),
        "exp": _py_unary(math.exp),
        "log": _py_log,
        "log2": _py_unary(math.log2, on_domain=_log_domain),
        "log10": _py_unary(math.log10, on_domain=_log_domain),
        "sqrt": _py_unary(math.sqrt),
        "abs": abs,
        "atan2": math.atan2,
        "erf": _py_unary(math.erf),
        "sigmoid": _py_sigmoid,
    },
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
    erf_scalar = np.vectorize(_py_unary(math.erf), otypes=[np.float64])

    def erf(x):
        return t(erf_scalar(x)) if np.ndim(x) == 0 else erf_scalar(x).astype(t)

    def log(x, base=None):
        return np.log(x) if base is None else np.log(x) / np.log(base)

    backend = Backend(
        name=f"numpy-{dtype}",
        const=t,
        pow=np.power,
        div=np.divide,
        functions={
            "sin": np.sin, "cos": np.cos, "tan": np.tan,
            "sec": lambda x: 1 / np.cos(x), "csc": lambda x: 1 / np.sin(x), "cot": lambda x: 1 / np.tan(x),
            "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
            "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
            "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
            "exp": np.exp, "log": log, "log2": np.log2, "log10": np.log10,
            "sqrt": np.sqrt, "abs": np.abs, "atan2": np.arctan2, "erf": erf,
            # exp(-log(1 + exp(-x))): no overflow and no cancellation for large |x|
            "sigmoid": lambda x: np.exp(-np.logaddexp(t(0), -x)),
        },
    )
    _NUMPY_BACKENDS[dtype] = backend
    return backend


__all__ = ["Backend", "PYTHON_FLOAT64", "compile_expression", "evaluate", "numpy_backend"]
