"""The one function table (gradcli.expression.functions): every backend has exactly its names and agrees with the
Python float64 implementation inside each function's domain; the --show-code templates compute what
the tape computes; the table itself imports nothing heavy."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from gradcli.expression import functions
from gradcli.methods import symbolic
from gradcli.methods import tf_runtime
from gradcli.programs import common as programs
from gradcli.expression.evaluate import PYTHON_FLOAT64, numpy_backend
from gradcli.expression import FUNCTIONS, Call, Var, parse

NAMES = {f.name for f in functions.TABLE}
ALIASES = {a.name for a in functions.ALIASES}
# Entries taking or giving truth values (where, the comparisons and logic of its condition) are checked through
# expressions in tests/test_model_functions.py: a float point cannot stand for a truth value on every backend.
NUMBER_FUNCTIONS = tuple(f for f in functions.TABLE if f.kind == "number")
OPERATOR_NAMES = {f.name for f in functions.TABLE if f.operator is not None}
TABLE = pytest.mark.parametrize("fn", NUMBER_FUNCTIONS, ids=lambda f: f.name)
# Functions SymPy's derivatives use that the language does not have (formula_backend() adds them).
EVALUATION_ONLY = {"sign", "dirac_delta", "heaviside", "nan"}
VARIABLES = ("x", "y", "z")


def points(fn):
    """(arguments, Python float64 value) at each of the entry's points."""
    for args in fn.points:
        assert len(args) in fn.arities, f"{fn.name}: point {args} has the wrong number of arguments"
        value = fn.python(*args)
        assert math.isfinite(value), f"{fn.name}{args} = {value}: the points must lie inside the domain"
        yield args, value


def within_ulps(got, want, ulps: int, dtype) -> bool:
    return abs(float(got) - float(want)) <= ulps * float(np.spacing(dtype(abs(want))))


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------
def test_the_table_names_each_function_once_and_the_parser_reads_them_and_the_aliases():
    assert len(NAMES) == len(functions.TABLE)
    assert not ALIASES & NAMES
    assert set(FUNCTIONS) == (NAMES - OPERATOR_NAMES) | ALIASES
    for f in functions.TABLE:
        if f.operator is None:
            assert FUNCTIONS[f.name] == f.arities and f.arities
    for a in functions.ALIASES:
        assert a.target in NAMES and set(a.arities) <= set(FUNCTIONS[a.target])
        arg = ", ".join(["x"] * a.arities[0])
        assert parse(f"{a.name}({arg})").tree == parse(f"{a.target}({arg})").tree


def test_ln_is_log_of_one_argument():
    assert parse("ln(x)").tree == Call("log", (Var("x"),))
    with pytest.raises(Exception, match=r"ln\(\) takes 1 argument, got 2"):
        parse("ln(x, 2)")


def test_python_numpy_and_sympy_backends_have_exactly_the_table_names():
    assert set(PYTHON_FLOAT64.functions) == NAMES
    assert set(numpy_backend("float32").functions) == NAMES
    assert set(numpy_backend("float64").functions) == NAMES
    assert set(symbolic._SYMPY_FUNCTIONS) == NAMES
    assert set(programs._TF_FUNCTION_CODE) == NAMES


def test_reverse_sympy_map_has_the_table_names_that_sympy_keeps_as_calls_and_the_evaluation_only_ones():
    mapped = set(symbolic._FUNCTION_NAMES.values())
    assert mapped & NAMES == {f.name for f in functions.TABLE if f.sympy_class is not None}
    extras = mapped - NAMES
    assert extras <= EVALUATION_ONLY and not extras & set(FUNCTIONS)
    assert set(symbolic.formula_backend().functions) == NAMES | EVALUATION_ONLY


def test_tensorflow_backends_have_exactly_the_table_names():
    assert set(tf_runtime.tf_backend("float32").functions) == NAMES
    assert set(tf_runtime.tf_backend("float64").functions) == NAMES


# ---------------------------------------------------------------------------------------------
# Values: every backend against the Python float64 implementation
# ---------------------------------------------------------------------------------------------
@TABLE
def test_numpy_agrees_with_python(fn):
    f64, f32 = numpy_backend("float64").functions[fn.name], numpy_backend("float32").functions[fn.name]
    for args, want in points(fn):
        got = f64(*(np.float64(a) for a in args))
        assert isinstance(got, np.float64) and within_ulps(got, want, 8, np.float64), (args, got, want)
        args32 = tuple(np.float32(a) for a in args)
        got32 = f32(*args32)
        want32 = fn.python(*(float(a) for a in args32))  # the same float32 inputs, computed in float64
        assert isinstance(got32, np.float32) and within_ulps(got32, want32, 4, np.float32), (args, got32, want32)
    # On arrays: the same values as one point at a time (vectorised, dtype kept).
    for arity in sorted({len(args) for args in fn.points}):  # (min, max: 2 to 64 arguments, points at 2 and 3)
        pts = [args for args in fn.points if len(args) == arity]
        for dtype, backend in ((np.float64, f64), (np.float32, f32)):
            columns = [np.array(col, dtype=dtype) for col in zip(*pts)]
            out = backend(*columns)
            assert out.dtype == dtype
            singles = [backend(*(dtype(a) for a in args)) for args in pts]
            np.testing.assert_array_equal(out, np.array(singles, dtype=dtype))


@TABLE
def test_tensorflow_agrees_with_python(fn):
    tf = tf_runtime.load_tensorflow()
    for args, want in points(fn):
        got = tf_runtime.tf_backend("float64").functions[fn.name](*(tf.constant(a, tf.float64) for a in args))
        assert got.dtype == tf.float64 and float(got) == pytest.approx(want, rel=1e-12, abs=0), args
        args32 = [np.float32(a) for a in args]
        got32 = tf_runtime.tf_backend("float32").functions[fn.name](*(tf.constant(a, tf.float32) for a in args32))
        want32 = fn.python(*(float(a) for a in args32))
        assert got32.dtype == tf.float32 and within_ulps(got32.numpy(), want32, 8, np.float32), (args, got32, want32)


@TABLE
def test_sympy_agrees_with_python_and_translates_back(fn):
    import sympy as sp

    syms = symbolic.symbols_for(VARIABLES)
    for args, want in points(fn):
        expr = symbolic._SYMPY_FUNCTIONS[fn.name](sp, *(syms[v] for v in VARIABLES[:len(args)]))
        subs = {syms[v]: sp.Rational(*Fraction(a).as_integer_ratio()) for v, a in zip(VARIABLES, args)}
        got = symbolic.value_at(expr, subs)
        assert got == pytest.approx(want, rel=1e-14, abs=0), (args, expr)
        # The reverse map: a kept call is the class the table names (at the fewest arguments: SymPy
        # rewrites log(x, b) as log(x)/log(b)), and whatever SymPy made translates back.
        if fn.sympy_class is not None and len(args) == min(fn.arities):
            assert type(expr).__name__ == fn.sympy_class
        tree = symbolic.from_sympy(expr)
        env = {v: np.array([a]) for v, a in zip(VARIABLES, args)}
        back = symbolic.evaluate(tree, env, 1)[0]
        assert within_ulps(back, want, 8, np.float64), (args, tree, back, want)


def _run_tf_source(tf, source: str, args, dtype):
    namespace = {"tf": tf, "math": math, "DTYPE": dtype}
    namespace.update({v: tf.constant(a, dtype) for v, a in zip(VARIABLES, args)})
    return eval(source, namespace)  # test code: the template text comes from gradcli's own table


@TABLE
def test_show_code_template_computes_the_tape_value(fn):
    tf = tf_runtime.load_tensorflow()
    template = programs._TF_FUNCTION_CODE[fn.name]
    for dtype_name in ("float64", "float32"):
        dtype = tf.as_dtype(dtype_name)
        backend = tf_runtime.tf_backend(dtype_name).functions[fn.name]
        for args, _ in points(fn):
            expected = backend(*(tf.constant(a, dtype) for a in args)).numpy()
            # The template itself, at its own argument count ...
            if template.count("{") == len(args):
                got = _run_tf_source(tf, template.format(*VARIABLES[:len(args)]), args, dtype)
                assert got.dtype == dtype and got.numpy() == expected, (template, args)
            # ... and as --show-code writes the call (tf_code special-cases some argument counts).
            call = Call(fn.name, tuple(Var(v) for v in VARIABLES[:len(args)]))
            got = _run_tf_source(tf, programs.tf_code(call), args, dtype)
            assert got.dtype == dtype and got.numpy() == expected, (programs.tf_code(call), args)


def test_every_template_is_exercised_at_its_argument_count():
    for fn in NUMBER_FUNCTIONS:
        assert any(len(args) == programs._TF_FUNCTION_CODE[fn.name].count("{") for args in fn.points), fn.name


def test_python_backend_keeps_ieee_results_outside_the_domain():
    py = PYTHON_FLOAT64.functions
    assert py["log"](0.0) == -math.inf and math.isnan(py["log"](-1.0))
    assert py["log"](8.0, 1.0) == math.inf and math.isnan(py["log2"](-2.0))
    assert py["atanh"](-1.0) == -math.inf and math.isnan(py["acosh"](0.5))
    assert py["sinh"](-1000.0) == -math.inf and py["exp"](1000.0) == math.inf
    assert py["sec"](0.0) == 1.0 and py["sigmoid"](-1000.0) == 0.0


# ---------------------------------------------------------------------------------------------
# The table is on the --help path: it imports nothing heavy
# ---------------------------------------------------------------------------------------------
def test_importing_the_table_and_the_parser_loads_neither_numpy_tensorflow_nor_sympy():
    probe = ("import sys, gradcli.expression.functions, gradcli.expression; "
             "print(','.join(m for m in ('numpy', 'tensorflow', 'sympy') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
