"""Typos a new user makes get a one-line error that names the fix, and every formula gradcli prints reads back."""

from __future__ import annotations

import json
import math

import pytest

from gradcli.errors import ParseError, UsageError
from gradcli.expression import parse
from gradcli.expression.points import check_covers, parse_point
from gradcli.launcher import run_command


def parse_message(text: str) -> str:
    with pytest.raises(ParseError) as info:
        parse(text)
    return info.value.message


def usage(argv: list[str], capsys) -> str:
    """Run a command line that Click refuses; its one stderr line."""
    code = run_command(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


# --- coordinates ------------------------------------------------------------------------------
def test_coordinates_as_separate_arguments_say_commas(capsys):
    err = usage(["hessian", "x*y", "--at", "x=1", "y=2", "-m", "fd"], capsys)
    assert "separate the coordinates with commas: --at x=1,y=2" in err
    err = usage(["descend", "x*y", "--from", "x=1", "y=2", "z=3"], capsys)
    assert "separate the coordinates with commas: --from x=1,y=2,z=3" in err


def test_a_coordinate_read_as_an_expression_says_commas():
    # grad takes several expressions, so Click hands it y=2 as one
    message = parse_message("y=2")
    assert "coordinate" in message and "separate the coordinates with commas: x=1,y=2" in message
    assert "assignments" in parse_message("x = 1")  # typed with spaces it reads as an assignment


def test_coordinates_separated_by_a_space_in_one_at():
    with pytest.raises(UsageError) as info:
        parse_point("x=1 y=2")
    assert info.value.message == "--at: separate the coordinates with commas: --at x=1,y=2"
    assert info.value.position == 3
    with pytest.raises(UsageError, match="--from x=1,y=pi/2"):
        parse_point("x=1  y=pi/2", option="--from")
    assert parse_point("x=1, y=2").values == {"x": 1.0, "y": 2.0}  # a space after the comma is fine


def test_coordinates_in_the_cli(invoke):
    result = invoke("grad", "x*y", "--at", "x=1 y=2")
    assert result.exit_code == 2 and "separate the coordinates with commas: --at x=1,y=2" in result.stderr
    result = invoke("grad", "x*y", "y=2", "--at", "x=1")
    assert result.exit_code == 2 and "separate the coordinates with commas" in result.stderr


# --- function names glued to their argument ---------------------------------------------------
@pytest.mark.parametrize("name, call", [("sinx", "sin(x)"), ("cosx", "cos(x)"), ("expx", "exp(x)"),
                                        ("log2x", "log2(x)"), ("sinhx", "sinh(x)"), ("tanx1", "tan(x1)")])
def test_a_function_glued_to_a_variable_says_did_you_mean(name, call):
    expr = parse(f"{name} + 1")
    with pytest.raises(UsageError) as info:
        check_covers(parse_point("x=1"), expr.variables)
    assert f"did you mean {call}?" in info.value.message


def test_a_plain_unknown_name_keeps_its_message():
    with pytest.raises(UsageError) as info:
        check_covers(parse_point("x=1"), parse("x*speed").variables)
    assert info.value.message == "--at has no value for speed (add speed=...)"
    # sinx is a legal variable name: with a value, it is one
    assert parse_point("sinx=1").values == {"sinx": 1.0}


def test_glued_call_in_the_cli(invoke):
    result = invoke("eval", "sinx", "--at", "x=1")
    assert result.exit_code == 2 and "did you mean sin(x)?" in result.stderr and "Traceback" not in result.stderr


def test_a_function_used_without_parentheses_shows_the_call():
    assert "call it as sin(x)" in parse_message("sin x")
    assert "call it as exp(...)" in parse_message("2*exp")


# --- |x| and typeset characters ---------------------------------------------------------------
def test_bars_say_use_abs():
    assert "use abs(x)" in parse_message("|x|")
    assert "use abs(x - 1)" in parse_message("2*|x - 1|")
    assert "'or' combines comparisons" in parse_message("where(x > 0 | y > 0, x, y)")


@pytest.mark.parametrize("text, ascii_, whole", [
    ("2×x", "*", "2*x"), ("x·y", "*", "x*y"), ("3−x", "-", "3-x"), ("x²+1", "**2", "x**2+1"),
    ("½x", "(1/2)", "(1/2)*x"), ("x½", "(1/2)", "x*(1/2)"), ("x⁻¹", "**-1", "x**-1"), ("2π", "pi", "2pi"),
    ("x ≤ 1", "<=", "x <= 1"), ("αx", "alpha", "alpha*x"),
])
def test_typeset_characters_offer_the_ascii(text, ascii_, whole):
    message = parse_message(text)
    assert f"write '{ascii_}' instead" in message
    assert message.endswith(f"e.g. {whole}")


@pytest.mark.parametrize("text", ["2×x", "x²+1", "½x", "x·y", "3−x", "x⁻¹", "αx"])
def test_the_offered_ascii_parses(text):
    whole = parse_message(text).rsplit("e.g. ", 1)[1]
    parse(whole)


def test_a_character_without_ascii_says_so():
    assert "only ASCII letters" in parse_message("x + \u0445")  # Cyrillic ha, a look-alike of x


# --- --wrt ------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["derivative", "steps"])
def test_wrt_a_variable_not_in_the_expression(invoke, command):
    result = invoke(command, "x**2", "--at", "x=1", "--wrt", "y")
    assert result.exit_code == 2
    assert result.stderr.startswith("gradcli: error: --wrt y: 'y' is not a variable of the expression "
                                    "(its variables: x)")


def test_wrt_without_a_value_names_the_point(invoke):
    result = invoke("hessian", "x**2", "--at", "x=1", "--wrt", "y", "-m", "fd")
    assert result.exit_code == 2
    assert "--wrt y: 'y' has no value in --at (it gives x)" in result.stderr


# --- options of another command ---------------------------------------------------------------
def test_descend_at_says_from(capsys):
    err = usage(["descend", "x**2", "--at", "x=1"], capsys)
    assert "No such option: --at: did you mean --from?" in err


def test_grad_from_says_at(capsys):
    err = usage(["grad", "x**2", "--from", "x=1", "-m", "fd"], capsys)
    assert "No such option: --from: did you mean --at?" in err
    assert "Possible options" not in err


def test_other_unknown_options_keep_clicks_message(capsys):
    err = usage(["grad", "x", "--at", "x=1", "--bogus", "-m", "fd"], capsys)
    assert "No such option: --bogus" in err


# --- words that look like options -------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["grad", "x**2", "--at", "x=1", "-n", "2"],
    ["grad", "x**2", "--at", "x=1,n=1", "-n", "2", "-m", "fd"],  # n has a value: still not an expression
    ["hessian", "x**2", "-x", "--at", "x=1", "-m", "fd"],
    ["eval", "x", "--at", "x=1", "-n=2"],
    ["jvp", "x*y", "--at", "x=1,y=2", "--along", "x=1", "-s"],
])
def test_a_word_that_looks_like_an_option_is_refused(argv, capsys):
    typed = next(a for a in argv if a.startswith("-") and not a.startswith("--")).split("=")[0]
    err = usage(argv, capsys)
    assert err.startswith(f"gradcli: error: No such option: {typed} "), err
    assert f'gradcli {argv[0]} ... -- "{typed}"' in err  # and how to write it as an expression


def test_an_unknown_short_option_names_its_close_matches(capsys):
    err = usage(["grad", "x**2", "--at", "x=1", "-n", "2"], capsys)
    assert "No such option: -n (-n is --order of check, derivative, implicit, steps)" in err
    err = usage(["grad", "x**2", "--at", "x=1", "-w", "x"], capsys)
    assert "No such option: -w (Possible options: --watch, --workers, --wrt)" in err
    err = usage(["grad", "x**2", "--at", "x=1", "-eps", "1e-3"], capsys)
    assert "No such option: -eps (Possible options: --eps)" in err
    # -method is not -m with the value 'ethod'
    err = usage(["hessian", "x**2", "--at", "x=1", "-method", "fd"], capsys)
    assert "No such option: -method (Possible options: --method)" in err
    err = usage(["shell", "-n"], capsys)  # shell takes no expression: no '--' to offer
    assert "-- " not in err and "(see 'gradcli shell --help')" in err


@pytest.mark.parametrize("argv", [["grad", "x**2", "--at", "x=1", "--x"],
                                  ["grad", "-x**2", "--at", "x=1", "--foo=1"]])
def test_an_unknown_long_option_is_refused(argv, capsys):
    err = usage(argv, capsys)
    assert "No such option: --" in err


def test_expressions_that_start_with_a_minus_still_work(capsys):
    def gradient(argv):
        assert run_command([argv[0], "-m", "fd", "-f", "json", *argv[1:]]) == 0
        return json.loads(capsys.readouterr().out)["results"][0]["gradient"]["fd"]["x"]

    assert gradient(["grad", "-x**2", "--at", "x=1"]) == pytest.approx(-2)
    assert gradient(["grad", "--at", "x=1", "--", "-x**2"]) == pytest.approx(-2)
    assert gradient(["grad", "--at", "x=1", "--", "-x"]) == pytest.approx(-1)
    assert gradient(["grad", "-2*x", "--at", "x=1"]) == pytest.approx(-2)
    # negative numbers as option values, and a short option with its value glued on
    assert gradient(["grad", "x**2", "--at", "x=-1", "--eps", "1e-3"]) == pytest.approx(-2)
    assert run_command(["grad", "x**2", "--grid", "x=-1:1:3", "-mfd", "-fcsv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("-1.0,1.0,-2.0")


# --- formulas read back -----------------------------------------------------------------------
ROUND_TRIP = [
    ("e*x**2", 1), ("relu(x)", 1), ("relu(x)**3", 2), ("abs(x)", 1), ("abs(x)**3", 1), ("abs(x - 1)*y", 1),
    ("where(x > 0, x**2, -x)", 1), ("where(x > 0 and y < 1, x*y, 0)", 1), ("where(not (x > 0 or y > 1), x, y)", 1),
    ("where(x == 1, 0, x)", 1), ("where(x != 1, x**2, 0)", 1),
    ("max(x, 0)", 1), ("min(x, y, 2)", 1), ("clip(x, -1, 2)", 1), ("clip(x, y, 2)", 1), ("x**-2", 2),
    ("exp(x)", 1), ("atan2(x, y)", 1), ("sqrt(x)", 2), ("log(x, 2)", 1), ("sigmoid(x)", 2), ("softplus(x)", 1),
    ("erf(x)", 1), ("log10(x)", 1), ("log2(x)", 1), ("log1p(x)", 1), ("expm1(x)", 1), ("x**x", 1),
    ("logsumexp(x, y)", 1), ("stop_gradient(x)*x", 1), ("sec(x)", 1), ("cot(x)", 1), ("acosh(x + 2)", 1),
    ("atanh(x/4)", 1), ("pi*x**2", 1), ("x**(1/3)", 1), ("2**x", 1), ("exp(2)*x**2", 1), ("e**x*sin(x)", 3),
    ("tanh(x)", 2), ("asin(x/3)", 1), ("cosh(x)*sinh(y)", 1), ("1/(1 + e*x**2)", 1),
]
POINTS = [(0.37, 1.3), (1.7, -0.6), (-0.45, 2.2), (2.9, 0.8), (-1.6, -1.9)]


def _formula(text: str, order: int) -> tuple[str, object, dict]:
    from gradcli.methods import symbolic

    expr = parse(text)
    syms = symbolic.symbols_for(sorted({*expr.variables, "x", "y"}))
    d = symbolic.diff(symbolic.to_sympy(expr.tree, syms), *[syms["x"]] * order)
    return symbolic.formula_text(d), d, syms


@pytest.mark.parametrize("text, order", ROUND_TRIP)
def test_every_printed_formula_parses_back_to_the_derivative(text, order):
    import sympy as sp

    from gradcli.methods import symbolic

    printed, exact, syms = _formula(text, order)
    for sympy_only in ("E", "Abs", "Piecewise", "True", "sign", "&", "|", "~"):
        assert sympy_only not in printed, printed
    back = symbolic.to_sympy(parse(printed).tree, syms)
    if not exact.has(sp.Piecewise, sp.sign) and sp.simplify(back - exact) == 0:
        return
    compared = 0
    for x, y in POINTS:  # away from every kink of the list (0, 1, -1, 2 and x == y)
        at = {syms["x"]: sp.Float(x, 30), syms["y"]: sp.Float(y, 30)}
        want, got = complex(exact.evalf(30, subs=at)), complex(back.evalf(30, subs=at))
        if not (math.isfinite(want.real) and abs(want.imag) < 1e-20):
            continue
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), (printed, x, y)
        compared += 1
    assert compared >= 2, printed


def test_what_the_language_cannot_say_keeps_sympys_text():
    printed, _, _ = _formula("abs(x)", 2)  # an impulse is not a function
    assert "DiracDelta" in printed


def test_relu_prints_as_where_and_e_as_e():
    assert _formula("relu(x)", 1)[0] == "where(x > 0, 1, where(x < 0, 0, 1/2))"  # the one-sided mean at the kink
    assert _formula("e*x**2", 1)[0] == "2*e*x"
    assert _formula("abs(x)", 1)[0] == "where(x > 0, 1, where(x < 0, -1, 0))"


def test_a_printed_formula_pasted_back_into_grad(invoke):
    result = invoke("grad", "e*x**2", "--at", "x=1", "-m", "symbolic", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert '"2*e*x"' in result.stdout and "2*E*x" not in result.stdout
    formula = "2*e*x"
    again = invoke("eval", formula, "--at", "x=1", "-f", "json")
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["value"] == pytest.approx(2 * math.e)
