"""The symbolic column at many points: SymPy's formula evaluated fast in float64 where that is provably
close, and at 30 digits (:func:`gradcli.methods.symbolic.value_at`, as at one point) where it is not.

The float64 value of a derivative formula can be arbitrarily wrong: ``exp(x)/x - (exp(x) - 1)/x**2`` at
x = 1e-20 cancels to 1e20 (the derivative is 0.5), ``2/(x**2 + y**2) - ...`` at 1e-150 overflows. Since the
symbolic column is what every other method is judged by, such a value would blame the right method.

So each point carries a running error bound (Wilkinson, as :mod:`gradcli.methods.fd_bound` does for fd,
with the same per-function rules), here for the distance to the *exact* value at the point's float64
coordinates: literals that float64 rounds (1/3, pi) carry their rounding, and an operation whose result
underflows (where the bound's model of relative rounding no longer holds) marks the point. A point whose
float64 value is not finite, underflowed, or whose bound is above :data:`TRUSTED` of it, is evaluated
exactly. :data:`TRUSTED` weighs two costs. The bound is a worst case (every rounding one way): on smooth
formulas over a grid it was at least 4x, typically 30x, the measured error, so a kept value is within about
2e-13 of the exact one, relatively, at worst and 3e-14 typically, the order of the tape's tolerance (1e3 eps
of its scale, which is at least the exact value). A tighter threshold sends far more points to SymPy for
little: 2^-44 flags 0.5-1.6% of a grid on such formulas, against 0.03-0.1% at 2^-40 (measured by
bench/symbolic_exact.py).

Whether a point gets its exact evaluation is the point's own rule: its float64 value is not vouched for (above),
and the evaluation ends within :data:`EXACT_POINT_SECONDS` (one that runs longer is cut and its value left in
float64). Nothing is shared between points: no count or time budget per run, which would give a point
different digits depending on what else its run held (on an engine, its partition: gradcli.dask). Exact
evaluations cost ~1 ms each, so a run's exact work is ~1 ms per point that needs it (0.03-0.1% of a smooth
grid's points); :class:`ExactValues` counts the values it had to leave in float64 for the batch's note.
"""

from __future__ import annotations

import ctypes
import threading
from fractions import Fraction
from typing import Any, Hashable, Mapping

from gradcli.dtypes import MACHINE_EPSILON
from gradcli.expression.evaluate import compile_expression, number_to_float
from gradcli.expression.tree import CONSTANTS, Add, Call, Const, Mul, Neg, Node, Num, Pow, Var
from gradcli.methods.exact_evaluation import EXACT_POINT_SECONDS, TRUSTED
from gradcli.methods.fd_bound import FIRST_ORDER_SAFETY, FUNCTION_ULPS, rounding_sensitivity, bound_times
from gradcli.methods import symbolic

_U = 0.5 * MACHINE_EPSILON["float64"]
# Functions whose value is exactly 0 at some argument other than 0 (log(1), acos(1)) or away from 0
# (sign's, heaviside's and dirac_delta's are exact): a zero result there is no underflow.
_EXACT_ZEROS = frozenset({"log", "log2", "log10", "acos", "acosh", "sign", "heaviside", "dirac_delta"})
# Functions that are exact wherever the sign of their argument is certain.
_SIGN_ONLY = frozenset({"sign", "heaviside", "dirac_delta"})
# Truth values (where's condition): S is 0 where rounding cannot change the answer, inf where it could.
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_LOGIC = frozenset({"and", "or", "not"})
# Functions returning one of their arguments, 1-Lipschitz in each: the largest of the arguments' bounds.
_SELECTING = frozenset({"min", "max", "clip"})


def bounded(tree: Node, env: Mapping[str, Any]):
    """(value, bound, underflow) of ``tree`` at ``env``'s float64 arrays: the float64 value, exactly as
    :func:`gradcli.methods.symbolic.evaluate` computes it; ``bound`` >= |value - exact value at the same
    points| to first order (inf where no rule applies or it is not finite); ``underflow``: where an
    operation's result fell below float64's normal range, which the bound does not cover."""
    import numpy as np

    with np.errstate(all="ignore"):
        value, s, under = _walk(tree, env, symbolic.formula_backend().functions, rounding_sensitivity(np), np)
        bound = FIRST_ORDER_SAFETY * _U * s
        bound = np.where(np.isfinite(bound), bound, np.inf)
    return value, bound, under


def untrusted(value, bound, underflow):
    """Where the float64 value cannot stand for the exact one (see the module's docstring)."""
    import numpy as np

    with np.errstate(invalid="ignore", over="ignore"):
        return ~np.isfinite(value) | np.asarray(underflow, dtype=bool) | ~(bound <= TRUSTED * np.abs(value))


def _walk(tree: Node, env, functions, sensitivity, np):
    """(value, S, underflow): S in units of u as in fd_bound, here for the distance to the exact value."""
    tiny = np.finfo(np.float64).tiny
    if isinstance(tree, Num):
        v = np.float64(number_to_float(tree.value))
        rounded = Fraction(float(v)) != tree.value if np.isfinite(v) else True
        return v, (abs(float(v)) if rounded else 0.0), bool(rounded and abs(float(v)) < tiny)
    if isinstance(tree, Const):
        v = np.float64(CONSTANTS[tree.name])
        return v, abs(float(v)), False  # pi and e are rounded
    if isinstance(tree, Var):
        return env[tree.name], 0.0, False  # the point itself is exact
    if isinstance(tree, Neg):
        v, s, under = _walk(tree.operand, env, functions, sensitivity, np)
        return -v, s, under
    if isinstance(tree, Add):
        acc, s, under = _walk(tree.terms[0][1], env, functions, sensitivity, np)
        for sign, term in tree.terms[1:]:  # left to right, as the evaluator adds; a subnormal sum is exact
            v, sv, uv = _walk(term, env, functions, sensitivity, np)
            acc = acc + v if sign > 0 else acc - v
            s, under = np.abs(acc) + s + sv, under | uv
        return acc, s, under
    if isinstance(tree, Mul):
        acc, s, under = _walk(tree.factors[0][1], env, functions, sensitivity, np)
        for divide, factor in tree.factors[1:]:
            v, sv, uv = _walk(factor, env, functions, sensitivity, np)
            if divide:
                r = np.divide(acc, v)
                s = s / np.abs(v) + np.abs(r) * sv / np.abs(v) + np.abs(r)
                lost = (np.abs(r) < tiny) & (acc != 0)
            else:
                r = acc * v
                s = np.abs(r) + bound_times(np.abs(v), s, np, finite=True) + bound_times(np.abs(acc), sv, np, finite=True)
                lost = (np.abs(r) < tiny) & (acc != 0) & (v != 0)
            acc, under = r, under | uv | lost
        return acc, s, under
    if isinstance(tree, Pow):
        b, sb, ub = _walk(tree.base, env, functions, sensitivity, np)
        e, se, ue = _walk(tree.exponent, env, functions, sensitivity, np)
        r = np.power(b, e)
        own = FUNCTION_ULPS * np.abs(r)
        under = ub | ue | ((np.abs(r) < tiny) & (b != 0))
        if np.isscalar(se) and se == 0.0 and np.ndim(e) == 0 and np.isfinite(e) and float(e) == int(e) and e >= 1:
            n = int(e)  # a constant integer power: d r / d b = n b^(n-1), finite everywhere
            slope = 2.0 * np.abs(b) if n == 2 else (1.0 if n == 1 else n * np.abs(b) ** (n - 1))
            return r, own + bound_times(slope, sb, np, finite=True), under
        s = own + bound_times(np.abs(e * r / b), sb, np)
        if not (np.isscalar(se) and se == 0.0):
            s = s + bound_times(np.abs(r * np.log(np.abs(b))), se, np)
        return r, s, under
    if isinstance(tree, Call) and (type(tree) is not Call or tree.func not in functions):
        # a call this walk has no rule for (a kind of call added to the language later): its value as the
        # evaluator computes it, and no bound, so that the point is evaluated exactly
        r = compile_expression(tree, symbolic.formula_backend(), fold_constants=False)(env)
        return r, np.full(np.shape(r), np.inf), False
    if isinstance(tree, Call) and (tree.func in _COMPARISONS | _LOGIC | _SELECTING or tree.func == "where"):
        return _choosing(tree, env, functions, sensitivity, np)
    if isinstance(tree, Call):
        fn = functions[tree.func]
        if len(tree.args) != 1:
            walked = [_walk(a, env, functions, sensitivity, np) for a in tree.args]
            r = fn(*(w[0] for w in walked))
            under = False
            for w in walked:
                under = under | w[2]
            return r, np.full(np.shape(r), np.inf), under
        a, sa, under = _walk(tree.args[0], env, functions, sensitivity, np)
        r = fn(a)
        if tree.func in _SIGN_ONLY:
            certain = (sa == 0.0) | (FIRST_ORDER_SAFETY * _U * sa < np.abs(a))
            return r, np.where(certain, 0.0, np.inf), under
        rule = sensitivity.get(tree.func)
        lost = (np.abs(r) < tiny) & ((r != 0) | ((a != 0) & (tree.func not in _EXACT_ZEROS)))
        if rule is None:
            return r, np.full(np.shape(r), np.inf), under | lost
        return r, FUNCTION_ULPS * np.abs(r) + bound_times(rule(a, r), sa, np), under | lost
    raise TypeError(f"unknown node {tree!r}")


def _choosing(tree: Call, env, functions, sensitivity, np):
    """Comparisons, logic, where, min/max/clip: (value, S, underflow) as :func:`_walk`'s."""
    walked = [_walk(a, env, functions, sensitivity, np) for a in tree.args]
    values = [w[0] for w in walked]
    under = False
    for w in walked:
        under = under | w[2]
    r = functions[tree.func](*values)
    if tree.func in _COMPARISONS:  # certain where the operands are further apart than their bounds together
        (left, sl, _), (right, sr, _) = walked
        s = sl + sr
        certain = (s == 0.0) | (FIRST_ORDER_SAFETY * _U * s < np.abs(left - right))
        return r, np.where(certain, 0.0, np.inf), under
    s = walked[0][1]
    if tree.func == "where":  # the chosen branch's bound, where the choice is certain
        cond, a, b = walked
        return r, np.where(cond[1] == 0.0, np.where(values[0], a[1], b[1]), np.inf), under
    for w in walked[1:]:  # logic: certain where every part is; selecting: the largest bound
        s = np.maximum(s, w[1])
    return r, s, under


def exact_value(expr, symbols: dict, point: Mapping[str, float]) -> float | None:
    """``expr`` (SymPy, over ``symbols``) at the point's float64 coordinates taken exactly (the values every
    method starts from), at 30 digits; None where undefined or not real."""
    import sympy

    subs = {symbols[n]: sympy.Rational(*float(point[n]).as_integer_ratio())
            for n in point if symbols[n] in expr.free_symbols}
    return symbolic.value_at(expr, subs)


def differentiate_at(trees: list[Node], names: list[str], wanted: list, points: list[dict[str, float]], *,
                     cancel=None):
    """SymPy's derivatives (:func:`gradcli.methods.symbolic.differentiate`), and each tree's and each
    formula's exact value at ``points`` (one point, and its float32 rounding): {((i, key), coordinates):
    value}. A :class:`gradcli.methods.worker.BoundedJob` work function, so that a value SymPy cannot finish
    (exp(-x**x**x**x) at 10) is bounded by the symbolic time limit like the derivatives."""
    return formulas_at(symbolic.differentiate(trees, names, wanted, cancel=cancel), trees, points, cancel=cancel)


def formulas_at(formulas: list, trees: list[Node], points: list[dict[str, float]], *, cancel=None):
    """(``formulas``, the exact value of each tree and each of its formulas at ``points``: {((i, key),
    coordinates): value}), for formulas from SymPy's derivatives or made otherwise (jvp's J·v)."""
    known = {}
    for point in points:
        symbols = symbolic.symbols_for(sorted(point))
        coordinates = tuple(sorted(point.items()))
        for i, tree in enumerate(trees):
            for key, t in [("value", tree), *formulas[i].trees.items()]:
                if cancel is not None:
                    cancel.check()
                try:
                    known[((i, key), coordinates)] = exact_value(symbolic.to_sympy(t, symbols), symbols, point)
                except Exception:  # no exact value here: the column keeps float64, with the batch's note
                    pass
    return formulas, known


class _PointTimeout(BaseException):
    """Raised in the evaluating thread when one point's exact evaluation runs past its bound (a BaseException,
    so that SymPy's own ``except Exception`` clauses do not swallow it)."""


def _raise_in(ident: int, exc) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None if exc is None else ctypes.py_object(exc))


def bounded_exact_value(expr, symbols: dict, point: Mapping[str, float], seconds: float):
    """:func:`exact_value` within ``seconds`` of this point's own: its value, or raise :class:`_PointTimeout`."""
    return within_seconds(lambda: exact_value(expr, symbols, point), seconds)


def bounded_value_at(expr, subs: dict, seconds: float) -> float | None:
    """:func:`gradcli.methods.symbolic.value_at` at exact ``subs`` (the point as typed) within ``seconds``; None
    where undefined, or where it ran past them."""
    try:
        return within_seconds(lambda: symbolic.value_at(expr, subs), seconds)
    except _PointTimeout:
        return None


def within_seconds(compute, seconds: float):
    """``compute()`` within ``seconds``, or raise :class:`_PointTimeout`. A timer interrupts the evaluation at
    its next bytecode (a long C call, one big-integer product, ends first); the exception cannot outlive the
    evaluation (it is sent and cleared under one lock)."""
    ident = threading.get_ident()
    lock = threading.Lock()
    done = [False]

    def expire():
        with lock:
            if not done[0]:
                _raise_in(ident, _PointTimeout)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        return compute()
    finally:
        with lock:
            done[0] = True
            _raise_in(ident, None)  # one sent but not yet raised
        timer.cancel()


class ExactValues:
    """One batch run's exact evaluations: the formulas as SymPy expressions (rebuilt once from their trees),
    each point's evaluation bounded by ``seconds`` (:data:`EXACT_POINT_SECONDS`), and the counts for the
    batch's note. Nothing here is shared between points but the counts. ``known``:
    values evaluated ahead in a bounded job (:func:`differentiate_at`, one point); with it, nothing else is
    evaluated here (a value that was not finished in time stays float64, noted)."""

    def __init__(self, seconds: float | None = None, known: dict | None = None):
        self.seconds = EXACT_POINT_SECONDS if seconds is None else seconds
        self.known = known
        self.exact = 0  # values evaluated at 30 digits
        self.left = 0  # values that needed it and were left in float64 (past a point's bound, or SymPy failed)
        self.failed = 0  # of those, where SymPy's evaluation raised
        self.first_left: dict[str, float] | None = None
        self._exprs: dict[Hashable, Any] = {}

    def column(self, key: Hashable, tree: Node, points: Mapping[str, Any], size: int, skip=None):
        """``tree`` at every point, float64 [size]: exact where the float64 value is not to be trusted
        (NaN where undefined or not real, as :func:`gradcli.methods.symbolic.value_at` says). ``skip``
        [size] bool: points whose value does not matter (the function itself is undefined there)."""
        import numpy as np

        env = {k: np.asarray(v, dtype=np.float64) for k, v in points.items()}
        value, bound, under = bounded(tree, env)
        out = np.broadcast_to(np.asarray(value, dtype=np.float64), (size,)).copy()
        need = np.broadcast_to(untrusted(value, bound, under), (size,))
        if skip is not None:  # derivatives of an undefined value are no numbers either
            skip = np.broadcast_to(np.asarray(skip, dtype=bool), (size,))
            out[need & skip] = np.nan
            need = need & ~skip
        rows = np.flatnonzero(need)
        if rows.size:
            self._exact(key, tree, env, size, rows, out)
        return out

    def _exact(self, key, tree, env, size, rows, out) -> None:
        """Evaluate ``rows`` exactly into ``out``, each within its own bound (one past it, or a failure, keeps
        its float64 value and is counted)."""
        import numpy as np

        names = sorted(env)
        cache_key = (key, tuple(names))
        if cache_key not in self._exprs:
            symbols = symbolic.symbols_for(names)
            try:
                self._exprs[cache_key] = (symbolic.to_sympy(tree, symbols), symbols)
            except Exception:  # no SymPy form for this formula: every such value is counted, noted
                self._exprs[cache_key] = None
        if self._exprs[cache_key] is None:
            self.failed += rows.size
            self._left_at(env, size, int(rows[0]))
            self.left += rows.size - 1
            return
        expr, symbols = self._exprs[cache_key]
        used = [n for n in names if symbols[n] in expr.free_symbols]
        for k in rows.tolist():
            point = {n: float(np.broadcast_to(env[n], (size,))[k]) for n in names}
            try:
                if self.known is not None:
                    v = self.known[(key, tuple(sorted(point.items())))]
                else:
                    v = bounded_exact_value(expr, symbols, {n: point[n] for n in used}, self.seconds)
            except _PointTimeout:  # past the point's own bound: counted, noted
                self._left_at(env, size, k)
                continue
            except Exception:  # SymPy's own failure (or no value in time) at one point: counted, noted
                self.failed += 1
                self._left_at(env, size, k)
                continue
            out[k] = np.nan if v is None else v
            self.exact += 1

    def _left_at(self, env, size, k: int) -> None:
        import numpy as np

        if self.left == 0:
            self.first_left = {n: float(np.broadcast_to(c, (size,))[k]) for n, c in env.items()}
        self.left += 1

    def note(self) -> str | None:
        """The batch's one note on the values left in float64, or None when every value is as exact."""
        if not self.left:
            return None
        where = ", ".join(f"{k}={v!r}" for k, v in (self.first_left or {}).items())
        why = [f"past {self.seconds:g} s at a point"] if self.left > self.failed else []
        if self.failed:
            why.append(f"SymPy's evaluation failed at {self.failed}" if self.known is None else
                       f"SymPy did not finish it within --symbolic-timeout at {self.failed}")
        return (f"symbolic: {self.left} value{'s' if self.left != 1 else ''} could not be made exact "
                f"({'; '.join(why)}) and are float64 evaluations of the formula, whose rounding bound does not "
                f"vouch for them (the first at {where}); where another method disagrees there, the symbolic "
                "value may be the wrong one")
