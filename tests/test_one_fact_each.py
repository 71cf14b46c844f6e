"""Facts stated once and read elsewhere: the dtype tables (written out so that --help needs no NumPy) are
NumPy's, the fd schemes' tables are their stencils', and every tolerance has the underflow floor."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from gradcli.dtypes import DTYPES, LARGEST, MACHINE_EPSILON, SMALLEST_NORMAL


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_dtype_tables_are_numpys(dtype):
    info = np.finfo(dtype)
    assert MACHINE_EPSILON[dtype] == float(info.eps)
    assert LARGEST[dtype] == float(info.max)
    assert SMALLEST_NORMAL[dtype] == float(info.tiny)


def test_each_scheme_is_its_stencil():
    from gradcli.methods import fd
    from gradcli.methods.fd_schemes import SCHEME_ORDER, STEP_POWER
    from gradcli.methods.fd_stencils import named_stencil

    # the textbook formulas, weights exact: f' = sum w f(x + m h) / h
    textbook = {"central": {1: Fraction(1, 2), -1: Fraction(-1, 2)}, "forward": {1: 1, 0: -1},
                "backward": {0: 1, -1: -1},
                "richardson": {Fraction(1, 2): Fraction(4, 3), Fraction(-1, 2): Fraction(-4, 3),
                               1: Fraction(-1, 6), -1: Fraction(1, 6)}}
    for scheme, weights in textbook.items():
        stencil = named_stencil(scheme, 1)
        got = {m: w for m, w in zip(stencil.offsets, stencil.weights) if w != 0}
        assert got == weights, scheme
        assert fd._WEIGHTS[scheme] == {float(m): float(abs(w)) for m, w in weights.items()}
        assert fd._WEIGHT_SUM[scheme] == float(sum(abs(w) for w in weights.values()))
        assert SCHEME_ORDER[scheme] == stencil.accuracy
        assert STEP_POWER[scheme] == stencil.step_power == 1 / (1 + stencil.accuracy)
        # the formula at h, 2h and 4h reads only the offsets it evaluates
        assert {s * float(m) for s in (1, 2, 4) for m in weights} <= set(fd._OFFSETS[scheme])


def test_the_guides_digits():
    """The formulas are evaluated as written ((f(x+h) - f(x-h)) / (2h)), not as a weighted sum."""
    from gradcli.methods.fd import _combine

    def f(x):
        return 3 * x ** 2 + 2 * x - 1

    assert _combine("central", lambda m: f(1.0 + m * 1e-3), 1e-3) == 7.999999999999119


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_complex_step_value_has_the_underflow_floor(dtype):
    """One complex-step value is judged like the batch's (judge.tolerance): a subnormal difference from an
    exact 0 is the dtype's resolution, not a disagreement."""
    from gradcli.compute.complex_column import judge_complex_value
    from gradcli.compute.judge import tolerance

    tiny = float(np.finfo(dtype).smallest_subnormal)
    err, tol = judge_complex_value(tiny, 0.0, 0.0, 0.0, dtype=dtype)
    assert err == tiny and err <= tol
    assert tol == float(tolerance("complex", dtype=dtype, estimate=0.0, reference=0.0))
