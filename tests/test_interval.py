"""Interval arithmetic over gradcli's tree (gradcli.uncertainty.interval*): every enclosure holds the function's
values over the box, computed independently with mpmath at 50 digits (dense points, the ends, and the
function's extrema inside), and is tight where the function is monotone; poles and domain edges."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcli.expression import parse
from gradcli.uncertainty.interval import Interval, number
from gradcli.uncertainty.interval_tree import box, enclose
from oracle import Undefined, oracle_value

mpmath.mp.dps = 50

# name: the domain the box is drawn from (lo, hi)
ONE_ARGUMENT = {
    "sin": (-20, 20), "cos": (-20, 20), "tan": (-1.4, 1.4), "atan": (-50, 50), "exp": (-30, 30),
    "expm1": (-5, 5), "log": (0.01, 100), "log2": (0.01, 100), "log10": (0.01, 100), "log1p": (-0.9, 10),
    "sqrt": (0, 100), "sinh": (-10, 10), "cosh": (-10, 10), "tanh": (-5, 5), "asinh": (-10, 10),
    "acosh": (1, 20), "atanh": (-0.99, 0.99), "asin": (-1, 1), "acos": (-1, 1), "erf": (-3, 3),
    "sigmoid": (-10, 10), "softplus": (-10, 10), "relu": (-3, 3), "abs": (-3, 3), "sec": (-1.4, 1.4),
}
SAMPLES = 41


def values_over(text: str, lo: dict, hi: dict) -> list:
    """mpmath values at a grid of the box (the ends included), each a 50-digit number."""
    names = list(lo)
    out = []
    grid = [[lo[n] + (hi[n] - lo[n]) * Fraction(i, SAMPLES - 1) for i in range(SAMPLES)] for n in names]
    import itertools

    for combo in itertools.product(*grid) if len(names) > 1 else ((g,) for g in grid[0]):
        point = {n: mpmath.mpf(c.numerator) / c.denominator for n, c in zip(names, combo)}
        try:
            out.append(oracle_value(text, point))
        except Undefined:
            continue
    return out


def assert_encloses(text: str, lo: dict, hi: dict, extra: list | None = None) -> Interval:
    tree = parse(text).tree
    iv = enclose(tree, {n: Interval(float(lo[n]), float(hi[n])) for n in lo})
    for v in values_over(text, lo, hi) + (extra or []):
        assert iv.lo <= v <= iv.hi, (text, lo, hi, iv, v)
    return iv


@settings(max_examples=6, deadline=None)
@given(st.sampled_from(sorted(ONE_ARGUMENT)), st.floats(0, 1), st.floats(0, 1))
def test_each_function_encloses_its_values(name, a, b):
    low, high = ONE_ARGUMENT[name]
    x0, x1 = sorted((low + (high - low) * a, low + (high - low) * b))
    assert_encloses(f"{name}(x)", {"x": Fraction(x0)}, {"x": Fraction(x1)})


@pytest.mark.parametrize("name", sorted(ONE_ARGUMENT))
def test_monotone_pieces_are_tight(name):
    """Over a piece where the function is monotone the enclosure is its ends' values, a few ulps wider."""
    low, high = ONE_ARGUMENT[name]
    x0 = low + (high - low) * 0.61
    x1 = x0 + 0.2  # narrow: no extremum of sin or cos inside
    iv = assert_encloses(f"{name}(x)", {"x": Fraction(x0)}, {"x": Fraction(x1)})
    values = values_over(f"{name}(x)", {"x": Fraction(x0)}, {"x": Fraction(x1)})
    width = float(max(values) - min(values))
    assert iv.hi - iv.lo <= width * (1 + 1e-12) + 8 * math.ulp(max(abs(iv.lo), abs(iv.hi))), name


def test_sine_and_cosine_reach_their_extrema_inside():
    iv = assert_encloses("sin(x)", {"x": Fraction(1)}, {"x": Fraction(2)}, extra=[mpmath.mpf(1)])
    assert iv.hi == 1.0 or iv.hi == math.nextafter(1.0, 2)
    iv = assert_encloses("cos(x)", {"x": Fraction(3)}, {"x": Fraction(4)}, extra=[mpmath.mpf(-1)])
    assert iv.lo <= -1.0
    iv = enclose(parse("sin(x)").tree, {"x": Interval(0.0, 1.0)})
    assert iv.hi < 0.85  # no extremum inside: sin(1) = 0.841..., not 1


@pytest.mark.parametrize("text, lo, hi", [
    ("x**2 - 3*x*y + exp(y)", (-1, 0), (2, 1)), ("x/(1 + y**2)", (-2, -1), (3, 2)),
    ("atan2(y, x)", (0.5, -1), (2, 1)), ("atan2(y, x)", (-1, 0.5), (1, 2)), ("x**y", (0.5, 0.5), (2, 3)),
    ("min(x, y) + max(x, 2*y)", (-1, -1), (1, 2)), ("clip(x, -0.5, y)", (-2, 0), (2, 1)),
    ("logsumexp(x, y)", (-3, -1), (2, 4)), ("where(x > y, x - y, y*x)", (-1, -1), (1, 1)),
    ("sqrt(x**2 + y**2)", (-1, -2), (2, 1)), ("log(x, 2) * y", (1, -1), (8, 1)), ("x**3 - x", (-2, -1), (2, 1)),
])
def test_expressions_of_two_variables(text, lo, hi):
    assert_encloses(text, {"x": Fraction(lo[0]), "y": Fraction(lo[1])}, {"x": Fraction(hi[0]), "y": Fraction(hi[1])})


@pytest.mark.parametrize("text, lo, hi", [("1/x", -1.0, 1.0), ("tan(x)", 1.0, 2.0), ("x**-2", -0.5, 0.5),
                                          ("cot(x)", -0.1, 0.1)])
def test_a_pole_inside_is_unbounded(text, lo, hi):
    iv = enclose(parse(text).tree, {"x": Interval(lo, hi)})
    assert iv.lo == -math.inf or iv.hi == math.inf
    assert iv.to_dict()["lower"] is None or iv.to_dict()["upper"] is None


def test_a_box_reaching_outside_the_domain_is_marked_undefined():
    iv = enclose(parse("log(x)").tree, {"x": Interval(-1.0, 2.0)})
    assert iv.undefined and iv.lo == -math.inf and iv.hi >= math.log(2)
    iv = enclose(parse("sqrt(x)").tree, {"x": Interval(-1.0, 4.0)})
    assert iv.undefined and iv.lo <= 0 and iv.hi >= 2.0
    assert enclose(parse("sqrt(x)").tree, {"x": Interval(-2.0, -1.0)}).empty


def test_constants_enclose_their_exact_values():
    iv = number(Fraction(1, 10))
    assert Fraction(iv.lo) <= Fraction(1, 10) <= Fraction(iv.hi) and iv.lo < iv.hi
    assert number(Fraction(1, 2)) == Interval(0.5, 0.5)
    pi = enclose(parse("pi").tree, {})
    assert pi.lo < mpmath.pi < pi.hi
    assert enclose(parse("0.1 + 0.2").tree, {}).contains(0.3)


def test_the_box_is_mean_plus_minus_k_sd_rounded_outward():
    b = box({"x": 0.1, "y": 2.0}, {"x": 0.1, "y": 0.0}, 3.0)
    assert b["y"] == Interval(2.0, 2.0)
    assert Fraction(b["x"].lo) <= Fraction(0.1) - 3 * Fraction(0.1) and Fraction(b["x"].hi) >= 4 * Fraction(0.1)


def test_an_exact_sum_is_not_widened_and_a_rounded_one_is():
    tree = parse("x - x").tree
    assert enclose(tree, {"x": Interval(2.0, 2.0)}) == Interval(0.0, 0.0)
    iv = enclose(parse("x + y").tree, {"x": Interval(0.1, 0.1), "y": Interval(0.2, 0.2)})
    assert Fraction(iv.lo) <= Fraction(0.1) + Fraction(0.2) <= Fraction(iv.hi) and iv.lo < iv.hi
