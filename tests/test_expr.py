"""The expression language: what it reads, how, and what it refuses (with the position)."""

from __future__ import annotations

import math

import pytest

from gradcli.errors import ParseError
from gradcli.expression.evaluate import PYTHON_FLOAT64, evaluate
from gradcli.expression import MAX_DEPTH, MAX_LENGTH, MAX_NODES, Var, parse


def value(text: str, **env: float) -> float:
    return evaluate(parse(text).tree, env, PYTHON_FLOAT64)


@pytest.mark.parametrize("text, env, expected", [
    ("(x1+5)*x2**2", {"x1": 2, "x2": 3}, 63.0),
    ("2^3", {}, 8.0),
    ("2**3**2", {}, 512.0),            # right-associative
    ("-x**2", {"x": 3}, -9.0),         # -(x**2)
    ("2**-1", {}, 0.5),
    ("2x", {"x": 4}, 8.0),             # implicit multiplication by a number
    ("3(x+1)", {"x": 1}, 6.0),
    ("2x^2", {"x": 3}, 18.0),          # 2*(x^2), not (2x)^2
    ("1e-3*x", {"x": 2}, 0.002),
    (".5x", {"x": 2}, 1.0),
    ("x - y - z", {"x": 1, "y": 2, "z": 3}, -4.0),
    ("x / y / z", {"x": 8, "y": 2, "z": 2}, 2.0),
    ("log(8, 2)", {}, 3.0),
    ("ln(e)", {}, 1.0),
    ("atan2(1, 1)", {}, math.pi / 4),
    ("sigmoid(0)", {}, 0.5),
    ("abs(-2)+sqrt(4)", {}, 4.0),
    ("beta*gamma + lambda_", {"beta": 2, "gamma": 3, "lambda_": 1}, 7.0),
])
def test_values(text, env, expected):
    assert value(text, **env) == pytest.approx(expected, rel=1e-15)


def test_x1_is_one_variable_and_order_of_appearance():
    e = parse("x2*x1 + x1")
    assert e.variables == ("x2", "x1")
    assert isinstance(parse("x1").tree, Var)


def test_caret_is_power_never_xor():
    assert parse("x^2").text == "x**2"


def test_text_round_trips():
    for text in ["(x1 + 5)*x2**2", "-x**2 + 3*(x - 1)", "x/(y*z)", "(x**y)**z", "x**y**z", "sin(x)**2"]:
        once = parse(text).text
        assert parse(once).text == once
        assert value(once, x=1.3, y=0.7, z=1.1, x1=1.5, x2=2.5) == pytest.approx(
            value(text, x=1.3, y=0.7, z=1.1, x1=1.5, x2=2.5), rel=1e-15)


@pytest.mark.parametrize("text, fragment, column", [
    ("x.__class__", "attribute access", 2),
    ("().__class__.__base__.__subclasses__()", "attribute access", 3),
    ("__import__('os').system('id')", "strings are not allowed", 12),
    ("x if x else 1", "'if' is not allowed", 3),
    ("[x for x in y]", "indexing", 1),
    ("lambda: 1", ":", 7),
    ("sin(x=1)", "keyword arguments", 6),
    ("x = 1", "assignments", 3),
    ("x < 1", "comparisons", 3),
    ("x == 1", "comparisons", 3),
    ("foo(x)", "unknown function 'foo'", 1),
    ("arcsin(x)", "did you mean 'asin'", 1),
    ("sin + 1", "'sin' is a function", 1),
    ("\u0445 + 1", "CYRILLIC SMALL LETTER HA", 1),
    ("x + \u0445", "non-ASCII", 5),
    ("x*", "unexpected end", 3),
    ("(x", "missing ')'", 1),
    ("x)", "unmatched ')'", 2),
    ("x y", "expected an operator", 3),
    ("sin(x, y)", "takes 1 argument", 1),
    ("", "empty expression", 1),
    ("1e999", "out of float64 range", 1),
    ("lambda + 1", "reserved word", 1),
    ("x % 2", "'%'", 3),
])
def test_refusals_name_what_and_where(text, fragment, column):
    with pytest.raises(ParseError) as info:
        parse(text)
    assert fragment in info.value.message
    assert info.value.position == column - 1
    lines = info.value.caret_lines()
    assert lines[1].index("^") - 2 == column - 1


@pytest.mark.parametrize("name", ["class", "tf", "__x"])
def test_reserved_variable_names(name):
    with pytest.raises(ParseError):
        parse(f"{name} + 1")


@pytest.mark.parametrize("text", ["10**10**10", "9**9**9", "2**10**100", "0.5**(10**100)",
                                  "exp(exp(exp(exp(1))))", "sin(cos(exp(exp(exp(exp(1))))))",
                                  "x + 1e308*10", "exp(1000)*x"])
def test_constant_towers_refused_before_computing(text):
    with pytest.raises(ParseError, match="overflows float64|too large"):
        parse(text)


@pytest.mark.parametrize("text, fragment", [
    ("sqrt(-1) + x", "undefined"),
    ("x + 1/0", "division by zero"),
    ("0**-1 + x", "division by zero"),
    ("log(0) + x", "infinite"),
    ("(1+10**-20)**(10**30)*x", "too large"),  # the base rounds to 1.0 in float64, not exactly
])
def test_bad_constants_are_refused_as_input(text, fragment):
    with pytest.raises(ParseError, match=fragment):
        parse(text)


def test_huge_powers_of_literal_units_are_fine():
    assert value("(-1)**(10**30)*x + 1**(10**30)", x=2.0) == 3.0


@pytest.mark.parametrize("text", ["x*\uff11", "x*\u0661\u0662", "\uff12x"])
def test_only_ascii_digits(text):
    with pytest.raises(ParseError, match="non-ASCII"):
        parse(text)


def test_implicit_product_in_an_exponent_is_ambiguous():
    with pytest.raises(ParseError, match="ambiguous"):
        parse("x^2y")
    assert parse("x^(2y)").text == "x**(2*y)"
    assert parse("sin(2x)^2").text == "sin(2*x)**2"


def test_printing_keeps_exponent_literals_and_leading_minus():
    assert parse("1e300*x").text == "1e300*x"
    assert parse("-10*x**2").text == "-10*x**2"
    assert parse("2.0*x").text == "2*x"


def test_limits_on_size_and_depth():
    with pytest.raises(ParseError, match="nested too deeply"):
        parse("(" * (MAX_DEPTH + 5) + "x" + ")" * (MAX_DEPTH + 5))
    with pytest.raises(ParseError, match="too large"):
        parse("+".join(["x"] * (MAX_NODES // 2 + 1)))
    with pytest.raises(ParseError, match="longer than"):
        parse("x" + " " * MAX_LENGTH)
    with pytest.raises(ParseError, match="number too long"):
        parse("1" * 5000)
    # A long flat sum within the limits is fine: sums are flat, so no recursion trouble.
    assert value("+".join(["x"] * 2000), x=1.0) == 2000.0


def test_deep_but_allowed_nesting():
    text = "sin(" * 25 + "x" + ")" * 25
    assert math.isfinite(value(text, x=0.5))
