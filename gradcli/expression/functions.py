"""The function table: every function the expression language knows, with each backend's implementation.

One :class:`Function` per name holds everything gradcli does with that function: the argument counts
the parser accepts, and how each backend computes it. The backends are derived from :data:`TABLE`:

- ``python``: plain Python float64 with IEEE results (inf/nan, never an exception), for
  :data:`gradcli.expression.evaluate.PYTHON_FLOAT64` (constant folding, the float64 finite differences);
- ``numpy``: :func:`gradcli.expression.evaluate.numpy_backend` (float32/float64, scalars or arrays);
- ``complex``: the complex-step backend (:mod:`gradcli.methods.complex_step`): ``None`` where the NumPy
  implementation is already right on complex arguments, else a factory like ``numpy``'s;
- ``tf``: :func:`gradcli.methods.tf_runtime.tf_backend` (the ``GradientTape`` column);
- ``tf_code``: the source template ``--show-code`` writes (:func:`gradcli.programs.common.tf_code`);
- ``sympy``: :func:`gradcli.methods.symbolic.to_sympy` (the exact column);
- ``sympy_class``: the SymPy class a call becomes, to translate SymPy's derivatives back into gradcli
  trees (:mod:`gradcli.methods.symbolic`); ``None`` where SymPy rewrites the call into other
  operations (``sqrt(x)`` is a ``Pow``, ``log2(x)`` is ``log(x)/log(2)``).

This module imports only the standard library: the parser imports it on the ``gradcli --help`` path.
NumPy, TensorFlow and SymPy implementations are therefore written as an attribute name of the module
(``"sin"``, ``"math.erf"``) or as a small factory that receives the module (and, for NumPy, the
scalar type; for TensorFlow, the ``const`` that makes a tensor of the backend's dtype) and returns the
callable. The derived tables are built by the ``*_functions`` helpers at the bottom, which the backends
call with the module they have already imported.

Adding a function is one entry in :data:`TABLE` (``tests/test_functions.py`` checks every backend
against the Python implementation at the entry's ``points``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# An implementation in a lazily imported module: an attribute path, or a factory returning the callable.
Lazy = str | Callable[..., Callable[..., Any]]

_INF = math.inf
_NAN = math.nan
# ln(2) and ln(10) as float64 (== math.log(2), math.log(10)): TensorFlow's log2/log10 divide by them.
_LN2 = 0.6931471805599453
_LN10 = 2.302585092994046


@dataclass(frozen=True)
class Function:
    name: str
    arities: tuple[int, ...]
    python: Callable[..., float]
    numpy: Lazy  # attribute of numpy, or factory(np, scalar_type) -> callable
    tf: Lazy  # attribute of tensorflow, or factory(tf, const) -> callable
    tf_code: str  # "--show-code" source: str.format template over the argument sources
    sympy: Lazy  # attribute of sympy called with the arguments, or callable(sp, *args) -> expression
    sympy_class: str | None  # type(expr).__name__ of the SymPy call; None where SymPy rewrites it
    # Points inside the domain (one tuple of arguments each) where the parity test compares backends (and
    # SymPy's form, evaluated in plain float64, does not cancel: softplus at -30 and log1p at 1e-10 are
    # checked against the oracle in tests/test_model_functions.py).
    points: tuple[tuple[float, ...], ...] = ((-1.3,), (0.4,), (2.2,))
    # Complex step: None where ``numpy`` is analytic on complex arguments as it is, else factory(np, t).
    complex: Lazy | None = None
    # The operator an entry stands for ("<", "and", ...): such entries are written as operators inside
    # where's condition, never called by name, and give or take truth values instead of numbers.
    operator: str | None = None
    # "number" (numbers in, a number out), "condition" (where: a truth value first), "comparison"
    # (numbers in, a truth value out) or "logic" (truth values in and out).
    kind: str = "number"


@dataclass(frozen=True)
class Alias:
    """Another name for a function: the parser reads ``name(...)`` as ``target(...)``."""

    name: str
    target: str
    arities: tuple[int, ...]


# ---------------------------------------------------------------------------------------------
# Plain Python floats with IEEE semantics (math raises where IEEE gives inf or nan)
# ---------------------------------------------------------------------------------------------
def py_div(a: float, b: float) -> float:
    """``a / b`` with IEEE results: x/0 is +-inf, 0/0 is nan."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return _NAN
        return math.copysign(_INF, a) * math.copysign(1.0, b)


def py_unary(fn: Callable[[float], float], *, on_overflow=None, on_domain=None) -> Callable[[float], float]:
    """``fn`` returning inf on overflow and nan outside its domain (or what the handlers say)."""
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
    z = py_unary(math.exp)(x)
    return z / (1.0 + z)


_py_ln = py_unary(math.log, on_domain=_log_domain)


def _py_log(x: float, base: float | None = None) -> float:
    lx = _py_ln(x)
    if base is None:
        return lx
    return py_div(lx, _py_ln(base))


_py_sin = py_unary(math.sin)
_py_cos = py_unary(math.cos)
_py_tan = py_unary(math.tan)
_py_erf = py_unary(math.erf)


# ---------------------------------------------------------------------------------------------
# Implementations that are more than one library call
# ---------------------------------------------------------------------------------------------
def _np_log(np, t):
    def log(x, base=None):
        return np.log(x) if base is None else np.log(x) / np.log(base)
    return log


def _np_erf(np, t):
    # NumPy has no erf: Python's, element by element, in float64, then cast to the backend's dtype.
    erf_scalar = np.vectorize(_py_erf, otypes=[np.float64])

    def erf(x):
        return t(erf_scalar(x)) if np.ndim(x) == 0 else erf_scalar(x).astype(t)
    return erf


def _np_sigmoid(np, t):
    # exp(-log(1 + exp(-x))): no overflow and no cancellation for large |x|
    return lambda x: np.exp(-np.logaddexp(t(0), -x))


def _tf_log(tf, const):
    def log(x, base=None):
        return tf.math.log(x) if base is None else tf.math.log(x) / tf.math.log(base)
    return log


def _tf_log_over(constant: float):
    """TensorFlow ``log(x) / constant`` (log2, log10), the constant made once per backend."""
    def make(tf, const):
        c = const(constant)
        return lambda x: tf.math.log(x) / c
    return make


# ---------------------------------------------------------------------------------------------
# Complex step (f(x + ih) with h ~ 1e-200): where NumPy's complex function is not the analytic
# continuation the complex step needs, or has no complex version. Each returns a factory(np, t), t the
# complex scalar type. Where the function has no derivative at the point (a kink, a branch point, a
# branch cut), the imaginary part is NaN: the complex-step column then says "not analytic".
# ---------------------------------------------------------------------------------------------
def _cx_nan_imag(np, t, z, where, *args):
    """``z`` with a NaN imaginary part where ``where`` holds and an argument is perturbed (a non-zero
    imaginary part): abs(x - 1) * y at x = 1 still has a derivative by y."""
    perturbed = False
    for a in args:  # a constant argument is a scalar: combine by broadcasting
        perturbed = perturbed | (np.imag(a) != 0)
    return np.where(where & perturbed, np.real(z) + t(complex(0.0, _NAN)), z)


def _cx_branch_points(numpy_name: str, *edges: float):
    """NumPy's complex ``numpy_name``, undifferentiable where Re z is one of ``edges`` (sqrt at 0, asin at 1)."""
    def make(np, t):
        fn = getattr(np, numpy_name)

        def f(z):
            re = np.real(z)
            at_edge = False
            for e in edges:
                at_edge = at_edge | (re == e)
            return _cx_nan_imag(np, t, fn(z), at_edge, z)
        return f
    return make


def _cx_abs(np, t):
    # |z| is not analytic; -z and z are, on either side of the kink.
    def f(z):
        re = np.real(z)
        return _cx_nan_imag(np, t, np.where(re < 0, -z, z), re == 0, z)
    return f


def _cx_atan2(np, t):
    # atan2(y, x) continued analytically from each half plane; undifferentiable by y on the cut (x < 0,
    # y = 0) and by either at the origin.
    pi, half_pi = t(math.pi), t(math.pi / 2)

    def f(y, x):
        yr, xr = np.real(y), np.real(x)
        with np.errstate(all="ignore"):
            right = np.arctan(y / x)
            left = right + np.where(yr >= 0, pi, -pi)
            vertical = np.where(yr > 0, half_pi, -half_pi) - np.arctan(x / y)
        out = np.where(xr > 0, right, np.where(xr < 0, left, vertical))
        # on the cut only a change of y jumps (by 2 pi); at the origin any change does
        return _cx_nan_imag(np, t, _cx_nan_imag(np, t, out, (yr == 0) & (xr < 0), y), (yr == 0) & (xr == 0), y, x)
    return f


def _cx_first_order(value: Lazy, derivative: Callable):
    """f(a + ib) = f(a) + i b f'(a) + O(b^2): for functions NumPy has no complex version of. With the
    complex step's b (~1e-200 times a derivative) the O(b^2) term is far below the dtype's rounding."""
    def make(np, t):
        real = type(t(0).real)
        v = value(np, real)
        d = derivative(np)

        def f(z):
            a, b = np.real(z), np.imag(z)
            return np.asarray(v(a)).astype(t) + (b * d(a)).astype(t) * t(1j)
        return f
    return make


def _d_erf(np):
    return lambda a: 2.0 / math.sqrt(math.pi) * np.exp(-a * a)


def _d_sigmoid(np):
    # s(a) (1 - s(a)) = s(a) s(-a): no cancellation in 1 - s for large a
    return lambda a: np.exp(-np.logaddexp(0, -a)) * np.exp(-np.logaddexp(0, a))


def _sp_log(sp, x, b=None):
    return sp.log(x) if b is None else sp.log(x, b)



# ---------------------------------------------------------------------------------------------
# The model functions (relu, softplus, min, max, clip, logsumexp, where, stop_gradient) and the
# comparisons and logic that where's condition is written with
# ---------------------------------------------------------------------------------------------
# Functions of any number of arguments take 2 to this many (the node limit bounds the work anyway).
MAX_VARIADIC = 64
_MANY = tuple(range(2, MAX_VARIADIC + 1))


def _isnan(x: float) -> bool:
    return x != x


def _py_relu(x: float) -> float:
    return x if x > 0 or _isnan(x) else 0.0


def _py_softplus(x: float) -> float:
    # max(x, 0) + log1p(exp(-|x|)): exp never overflows, and no 1 + tiny is rounded away
    if _isnan(x):
        return x
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def _py_log1p(x: float) -> float:
    if x == -1:
        return -_INF
    return py_unary(math.log1p)(x)


def _py_min(*args: float) -> float:
    return _NAN if any(_isnan(a) for a in args) else min(args)


def _py_max(*args: float) -> float:
    return _NAN if any(_isnan(a) for a in args) else max(args)


def _py_clip(x: float, lo: float, hi: float) -> float:
    # max(min(x, hi), lo), as TensorFlow's tape computes it (lo wins when lo > hi)
    return _py_max(_py_min(x, hi), lo)


def _py_logsumexp(*args: float) -> float:
    m = _py_max(*args)
    if _isnan(m) or math.isinf(m):  # NaN, +inf, or every argument -inf
        return m
    return m + math.log(math.fsum(math.exp(a - m) for a in args))


def _py_where(c, a: float, b: float) -> float:
    return a if c else b


class _Folded(str):
    """A ``--show-code`` template of two arguments that ``format`` folds over any number:
    ``tf.maximum(tf.maximum(a, b), c)``, as the tape computes it."""

    def format(self, *args, **kwargs):  # noqa: A003 - str.format's own name
        out = args[0]
        for a in args[1:]:
            out = str.format(self, out, a)
        return out


class _Stacked(str):
    """A ``--show-code`` template over a list of the arguments: ``{0}, {1}`` becomes every argument."""

    def format(self, *args, **kwargs):  # noqa: A003
        return self.replace("{0}, {1}", ", ".join(args))


def _fold(binary):
    def call(*args):
        out = args[0]
        for a in args[1:]:
            out = binary(out, a)
        return out
    return call


def _np_fold(name: str):
    return lambda np, t: _fold(getattr(np, name))


def _np_relu(np, t):
    zero = t(0)
    return lambda x: np.maximum(x, zero)


def _np_softplus(np, t):
    zero = t(0)
    return lambda x: np.logaddexp(zero, x)


def _np_clip(np, t):
    return lambda x, lo, hi: np.maximum(np.minimum(x, hi), lo)


def _np_where(np, t):
    return lambda c, a, b: np.where(c, a, b)[()]  # [()]: a scalar stays a NumPy scalar


def _np_identity(np, t):
    return lambda x: x


def _tf_fold(name: str):
    return lambda tf, const: _fold(getattr(tf.math, name))


def _tf_clip(tf, const):
    return lambda x, lo, hi: tf.maximum(tf.minimum(x, hi), lo)


def _tf_logsumexp(tf, const):
    def logsumexp(*args):
        # A batch mixes [P] arguments with scalar constants: one shape first, then TensorFlow's reduction
        # (which keeps the max out of the gradient, so the weights are exactly the softmax).
        shape = tf.shape(args[0])
        for a in args[1:]:
            shape = tf.broadcast_dynamic_shape(shape, tf.shape(a))
        return tf.reduce_logsumexp(tf.stack([tf.broadcast_to(a, shape) for a in args]), axis=0)
    return logsumexp


# SymPy forms. Where a function has a kink or a tie, its SymPy form is a Piecewise whose tie branch is the
# average of the two sides, written so that its value is exact (a + (b - a)/2 is a at a == b): its derivative
# there is the average of the one-sided derivatives, as abs's sign(0) = 0 is. That convention is linear, so a
# smooth combination of kinks has its true derivative at the tie (min(x, 1) + max(x, 1) at 1: 1/2 + 1/2 = 1);
# at a real kink the exact column states it (relu at 0: 1/2), not TensorFlow's (0), and fd reports the two
# one-sided values.
def _sp_relu(sp, x):
    return sp.Piecewise((x, x > 0), (0, x < 0), (x / 2, True))


def _sp_extreme(sp, args, a_wins):
    # the argument that wins strictly; at a tie of two, their average; at a tie of more, the first of them
    n = len(args)
    branches = [(a, sp.And(*[a_wins(a, b) for j, b in enumerate(args) if j != i])) for i, a in enumerate(args)]
    for i in range(n):
        for j in range(i + 1, n):
            others = [a_wins(args[i], c) for k, c in enumerate(args) if k not in (i, j)]
            branches.append((args[i] + (args[j] - args[i]) / 2, sp.And(sp.Eq(args[i], args[j]), *others)))
    for i, a in enumerate(args[:-1]):
        branches.append((a, sp.And(*[~a_wins(b, a) for b in args[i + 1:]])))
    branches.append((args[-1], True))
    return sp.Piecewise(*branches)


def _sp_max(sp, *args):
    return _sp_extreme(sp, args, lambda a, b: a > b)


def _sp_min(sp, *args):
    return _sp_extreme(sp, args, lambda a, b: a < b)


def _sp_clip(sp, x, lo, hi):
    return sp.Piecewise((lo, (x < lo) | (hi < lo)), (hi, x > hi), (x, (x > lo) & (x < hi)),
                        (x + (lo - x) / 2, sp.Eq(x, lo)), (x + (hi - x) / 2, True))


def _sp_logsumexp(sp, *args):
    return sp.log(sp.Add(*[sp.exp(a) for a in args]))


def _sp_where(sp, c, a, b):
    return sp.Piecewise((a, c), (b, True))


_STOP_GRADIENT_CLASS = None


def sympy_stop_gradient(sp):
    """SymPy's ``stop_gradient``: its argument's value, derivative 0 (the tape's ``tf.stop_gradient``),
    kept as a call so that the formula reads ``stop_gradient(x)``."""
    global _STOP_GRADIENT_CLASS
    if _STOP_GRADIENT_CLASS is None:
        class stop_gradient(sp.Function):  # noqa: N801 - SymPy prints a call by its class name
            nargs = 1

            @classmethod
            def eval(cls, arg):
                if arg.is_number:
                    return arg

            def fdiff(self, argindex=1):
                return sp.S.Zero

            def _eval_evalf(self, prec):
                return self.args[0]._eval_evalf(prec)

            def _eval_is_real(self):
                return self.args[0].is_real

        _STOP_GRADIENT_CLASS = stop_gradient
    return _STOP_GRADIENT_CLASS


# Complex step: the kinks and ties of the new functions are where a perturbed argument decides.
def _cx_relu(np, t):
    def f(z):
        re = np.real(z)
        return _cx_nan_imag(np, t, np.where(re > 0, z, 0 * z), re == 0, z)
    return f


def _cx_extreme(pick):
    def make(np, t):
        def f(*zs):
            out = zs[0]
            for z in zs[1:]:
                ro, rz = np.real(out), np.real(z)
                tie = ro == rz
                out = _cx_nan_imag(np, t, np.where(pick(ro, rz), out, z), tie, out, z)
            return out
        return f
    return make


def _cx_clip(np, t):
    lower, upper = _cx_extreme(lambda a, b: a >= b)(np, t), _cx_extreme(lambda a, b: a <= b)(np, t)
    return lambda z, lo, hi: lower(upper(z, hi), lo)


def _cx_logsumexp(np, t):
    def f(*zs):
        m = np.real(zs[0])
        for z in zs[1:]:
            m = np.maximum(m, np.real(z))
        m = np.where(np.isfinite(m), m, 0.0)
        return m + np.log(sum(np.exp(z - m) for z in zs))
    return f


def _cx_compare(name: str):
    return lambda np, t: (lambda a, b: getattr(np, name)(np.real(a), np.real(b)))


def _cx_softplus_value(np, t):
    return lambda x: np.logaddexp(t(0), x)


def _d_softplus(np):
    return lambda a: np.exp(-np.logaddexp(0, -a))


_OPS = {"<": ("less", "Lt", "StrictLessThan"), "<=": ("less_equal", "Le", "LessThan"),
        ">": ("greater", "Gt", "StrictGreaterThan"), ">=": ("greater_equal", "Ge", "GreaterThan"),
        "==": ("equal", "Eq", "Equality"), "!=": ("not_equal", "Ne", "Unequality")}
_PY_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
               ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _comparison(op: str) -> "Function":
    np_name, sp_name, sp_class = _OPS[op]
    return Function(op, (2,), _PY_COMPARE[op], np_name, f"math.{np_name}", f"tf.math.{np_name}({{0}}, {{1}})",
                    sp_name, sp_class, ((1.0, 2.0), (2.0, 2.0), (3.0, -1.0)), complex=_cx_compare(np_name),
                    operator=op, kind="comparison")


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------
_UNIT = ((-0.7,), (0.3,), (0.9,))  # inside (-1, 1): asin, acos, atanh
# Columns: name, arities, python, numpy, tf, tf_code, sympy, sympy_class[, points]
TABLE: tuple[Function, ...] = (
    Function("sin", (1,), _py_sin, "sin", "sin", "tf.sin({0})", "sin", "sin"),
    Function("cos", (1,), _py_cos, "cos", "cos", "tf.cos({0})", "cos", "cos"),
    Function("tan", (1,), _py_tan, "tan", "tan", "tf.tan({0})", "tan", "tan"),
    Function("sec", (1,), lambda x: py_div(1.0, _py_cos(x)), lambda np, t: lambda x: 1 / np.cos(x),
             lambda tf, const: lambda x: 1 / tf.cos(x), "1 / tf.cos({0})", "sec", "sec"),
    Function("csc", (1,), lambda x: py_div(1.0, _py_sin(x)), lambda np, t: lambda x: 1 / np.sin(x),
             lambda tf, const: lambda x: 1 / tf.sin(x), "1 / tf.sin({0})", "csc", "csc"),
    Function("cot", (1,), lambda x: py_div(1.0, _py_tan(x)), lambda np, t: lambda x: 1 / np.tan(x),
             lambda tf, const: lambda x: 1 / tf.tan(x), "1 / tf.tan({0})", "cot", "cot"),
    Function("asin", (1,), py_unary(math.asin), "arcsin", "asin", "tf.asin({0})", "asin", "asin", _UNIT,
             complex=_cx_branch_points("arcsin", -1.0, 1.0)),
    Function("acos", (1,), py_unary(math.acos), "arccos", "acos", "tf.acos({0})", "acos", "acos", _UNIT,
             complex=_cx_branch_points("arccos", -1.0, 1.0)),
    Function("atan", (1,), py_unary(math.atan), "arctan", "atan", "tf.atan({0})", "atan", "atan"),
    Function("sinh", (1,), py_unary(math.sinh, on_overflow=lambda x: math.copysign(_INF, x)), "sinh", "sinh",
             "tf.sinh({0})", "sinh", "sinh"),
    Function("cosh", (1,), py_unary(math.cosh), "cosh", "cosh", "tf.cosh({0})", "cosh", "cosh"),
    Function("tanh", (1,), py_unary(math.tanh), "tanh", "tanh", "tf.tanh({0})", "tanh", "tanh"),
    Function("asinh", (1,), py_unary(math.asinh), "arcsinh", "asinh", "tf.asinh({0})", "asinh", "asinh"),
    Function("acosh", (1,), py_unary(math.acosh), "arccosh", "acosh", "tf.acosh({0})", "acosh", "acosh",
             ((1.2,), (2.5,), (40.0,)), complex=_cx_branch_points("arccosh", 1.0)),
    Function("atanh", (1,), py_unary(math.atanh, on_domain=_atanh_domain), "arctanh", "atanh", "tf.atanh({0})",
             "atanh", "atanh", _UNIT),
    Function("exp", (1,), py_unary(math.exp), "exp", "exp", "tf.exp({0})", "exp", "exp"),
    Function("log", (1, 2), _py_log, _np_log, _tf_log, "tf.math.log({0})", _sp_log, "log",
             ((0.4,), (2.2,), (37.0,), (0.4, 3.0), (100.0, 7.5))),
    Function("log2", (1,), py_unary(math.log2, on_domain=_log_domain), "log2", _tf_log_over(_LN2),
             "tf.math.log({0}) / math.log(2)", lambda sp, x: sp.log(x, 2), None, ((0.4,), (3.0,), (1000.0,))),
    Function("log10", (1,), py_unary(math.log10, on_domain=_log_domain), "log10", _tf_log_over(_LN10),
             "tf.math.log({0}) / math.log(10)", lambda sp, x: sp.log(x, 10), None, ((0.4,), (3.0,), (1000.0,))),
    Function("sqrt", (1,), py_unary(math.sqrt), "sqrt", "sqrt", "tf.sqrt({0})", "sqrt", None,
             ((0.4,), (2.0,), (1e6 + 1,)), complex=_cx_branch_points("sqrt", 0.0)),
    Function("abs", (1,), abs, "abs", "abs", "tf.abs({0})", "Abs", "Abs", complex=_cx_abs),
    Function("atan2", (2,), math.atan2, "arctan2", "math.atan2", "tf.math.atan2({0}, {1})", "atan2", "atan2",
             ((1.0, 2.0), (-0.5, 0.25), (3.0, -1.5), (-2.0, -7.0)), complex=_cx_atan2),
    Function("erf", (1,), _py_erf, _np_erf, "math.erf", "tf.math.erf({0})", "erf", "erf",
             complex=_cx_first_order(_np_erf, _d_erf)),
    Function("sigmoid", (1,), _py_sigmoid, _np_sigmoid, "math.sigmoid", "tf.math.sigmoid({0})",
             lambda sp, x: 1 / (1 + sp.exp(-x)), None, ((-3.5,), (-0.2,), (0.4,), (6.0,)),
             complex=_cx_first_order(_np_sigmoid, _d_sigmoid)),
    Function("relu", (1,), _py_relu, _np_relu, "nn.relu", "tf.nn.relu({0})", _sp_relu, None,
             ((-1.3,), (0.4,), (2.2,)), complex=_cx_relu),
    Function("softplus", (1,), _py_softplus, _np_softplus, "math.softplus", "tf.math.softplus({0})",
             lambda sp, x: sp.log(1 + sp.exp(x)), None, ((-0.2,), (0.4,), (1.5,), (6.0,)),
             complex=_cx_first_order(_cx_softplus_value, _d_softplus)),
    Function("log1p", (1,), _py_log1p, "log1p", "math.log1p", "tf.math.log1p({0})", lambda sp, x: sp.log(1 + x),
             None, ((-0.7,), (0.25,), (3.5,)), complex=_cx_branch_points("log1p", -1.0)),
    Function("expm1", (1,), py_unary(math.expm1), "expm1", "math.expm1", "tf.math.expm1({0})",
             lambda sp, x: sp.exp(x) - 1, None, ((-2.0,), (0.3,), (0.7,))),
    Function("min", _MANY, _py_min, _np_fold("minimum"), _tf_fold("minimum"), _Folded("tf.minimum({0}, {1})"),
             _sp_min, None, ((1.0, 2.0), (-0.5, -3.0), (0.25, 4.0, -1.0)), complex=_cx_extreme(lambda a, b: a <= b)),
    Function("max", _MANY, _py_max, _np_fold("maximum"), _tf_fold("maximum"), _Folded("tf.maximum({0}, {1})"),
             _sp_max, None, ((1.0, 2.0), (-0.5, -3.0), (0.25, 4.0, -1.0)), complex=_cx_extreme(lambda a, b: a >= b)),
    Function("clip", (3,), _py_clip, _np_clip, _tf_clip, "tf.maximum(tf.minimum({0}, {2}), {1})", _sp_clip, None,
             ((-2.0, -1.0, 1.0), (0.5, -1.0, 1.0), (3.0, -1.0, 1.0), (0.5, 2.0, 1.0)), complex=_cx_clip),
    Function("logsumexp", _MANY, _py_logsumexp, _np_fold("logaddexp"), _tf_logsumexp,
             _Stacked("tf.reduce_logsumexp(tf.stack([{0}, {1}]), axis=0)"), _sp_logsumexp, None,
             ((1.0, 2.0), (-7.0, -8.5), (3.0, 2.0, -3.0)), complex=_cx_logsumexp),
    Function("where", (3,), _py_where, _np_where, "where", "tf.where({0}, {1}, {2})", _sp_where, "Piecewise",
             ((True, 1.5, -2.0), (False, 1.5, -2.0)), kind="condition"),
    Function("stop_gradient", (1,), lambda x: x, _np_identity, "stop_gradient", "tf.stop_gradient({0})",
             lambda sp, x: sympy_stop_gradient(sp)(x), "stop_gradient"),
    *(_comparison(op) for op in _OPS),
    Function("and", (2,), lambda a, b: bool(a) and bool(b), "logical_and", "math.logical_and",
             "tf.math.logical_and({0}, {1})", "And", "And", ((True, True), (True, False)), operator="and", kind="logic"),
    Function("or", (2,), lambda a, b: bool(a) or bool(b), "logical_or", "math.logical_or",
             "tf.math.logical_or({0}, {1})", "Or", "Or", ((False, False), (True, False)), operator="or", kind="logic"),
    Function("not", (1,), lambda a: not a, "logical_not", "math.logical_not", "tf.math.logical_not({0})", "Not",
             "Not", ((True,), (False,)), operator="not", kind="logic"),
)

ALIASES: tuple[Alias, ...] = (
    Alias("ln", "log", (1,)),
)

BY_NAME: dict[str, Function] = {f.name: f for f in TABLE}

# name -> allowed argument counts, aliases included (each right after its target): what the parser reads
# as a call (the operators of where's condition are in the table but not called by name).
ARITIES: dict[str, tuple[int, ...]] = {}
for _f in TABLE:
    if _f.operator is not None:
        continue
    ARITIES[_f.name] = _f.arities
    ARITIES.update((a.name, a.arities) for a in ALIASES if a.target == _f.name)
del _f

# alias -> the function the parser puts in the tree
CANONICAL: dict[str, str] = {a.name: a.target for a in ALIASES}

# The entries that give a truth value (comparisons, logic): never folded into a number, never a target.
BOOLEAN: frozenset[str] = frozenset(f.name for f in TABLE if f.kind in ("comparison", "logic"))
# Operator text -> entry name, for the parser of where's condition.
OPERATORS: dict[str, str] = {f.operator: f.name for f in TABLE if f.operator is not None}


# ---------------------------------------------------------------------------------------------
# What the commands say about these functions
# ---------------------------------------------------------------------------------------------
def value_only(tree) -> bool:
    """Whether ``tree`` calls stop_gradient: its derivative (tape, SymPy) is not the derivative of its value,
    which is what fd and the complex step differentiate, so they are not compared with the others."""
    from gradcli.expression.tree import has_call

    return has_call(tree, "stop_gradient")


def value_only_note(text: str) -> str:
    return (f"{text} calls stop_gradient: tape and symbolic treat its argument as a constant (derivative 0), "
            f"while fd (and the complex step) differentiate the value, in which stop_gradient(e) is e; they "
            f"differ by design, so they are not compared")


def where_nan_note(tree, text: str, variable: str) -> str | None:
    """Why the tape's derivative of an expression with where is not finite where the exact one is: TensorFlow
    differentiates both branches and multiplies the one not taken by 0, and 0 * inf is NaN."""
    from gradcli.expression.tree import has_call

    if not has_call(tree, "where"):
        return None
    return (f"the tape's d({text})/d{variable} is not finite although the exact one is: on the tape, where "
            f"differentiates both branches (TensorFlow's tf.where) and multiplies the branch not taken by 0, "
            f"which is NaN where that branch's own derivative is infinite or NaN; make the branch not taken safe "
            f"as well (the double where): where(x > 0, log(x), 0) becomes "
            f"where(x > 0, log(where(x > 0, x, 1)), 0)")


# ---------------------------------------------------------------------------------------------
# The derived tables (each backend passes the module it has imported)
# ---------------------------------------------------------------------------------------------
def _attribute(module, path: str):
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def python_functions() -> dict[str, Callable[..., float]]:
    """name -> Python float64 implementation."""
    return {f.name: f.python for f in TABLE}


def numpy_functions(np, t) -> dict[str, Callable[..., Any]]:
    """name -> NumPy implementation; ``t`` is the scalar type (``np.float32``/``np.float64``)."""
    return {f.name: _attribute(np, f.numpy) if isinstance(f.numpy, str) else f.numpy(np, t) for f in TABLE}


def complex_functions(np, t) -> dict[str, Callable[..., Any]]:
    """name -> complex-step implementation; ``t`` is the complex scalar type (``np.complex64``/``complex128``)."""
    numpy = numpy_functions(np, t)
    return {f.name: numpy[f.name] if f.complex is None else f.complex(np, t) for f in TABLE}


def tf_functions(tf, const: Callable[[float], Any]) -> dict[str, Callable[..., Any]]:
    """name -> TensorFlow implementation; ``const`` makes a tensor of the backend's dtype."""
    return {f.name: _attribute(tf, f.tf) if isinstance(f.tf, str) else f.tf(tf, const) for f in TABLE}


def tf_code_templates() -> dict[str, str]:
    """name -> ``--show-code`` source template (``str.format`` over the arguments' sources)."""
    return {f.name: f.tf_code for f in TABLE}


def _sympy_call(attribute: str) -> Callable[..., Any]:
    return lambda sp, *args: getattr(sp, attribute)(*args)


def sympy_functions() -> dict[str, Callable[..., Any]]:
    """name -> ``build(sp, *args)`` making the SymPy expression (``sp`` is the sympy module)."""
    return {f.name: _sympy_call(f.sympy) if isinstance(f.sympy, str) else f.sympy for f in TABLE}


def sympy_class_names() -> dict[str, str]:
    """SymPy class name -> gradcli name, for the functions a SymPy expression keeps as a call."""
    return {f.sympy_class: f.name for f in TABLE if f.sympy_class is not None}


__all__ = [
    "ALIASES",
    "ARITIES",
    "BOOLEAN",
    "MAX_VARIADIC",
    "OPERATORS",
    "BY_NAME",
    "CANONICAL",
    "TABLE",
    "Alias",
    "Function",
    "complex_functions",
    "numpy_functions",
    "py_div",
    "py_unary",
    "python_functions",
    "sympy_class_names",
    "sympy_functions",
    "tf_code_templates",
    "tf_functions",
    "value_only",
    "value_only_note",
    "where_nan_note",
]
