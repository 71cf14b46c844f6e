"""Hostile input (issue 10, items 3 and 4): control characters escaped in every message, ASCII digits only,
``1e`` refused, nesting counted as written, subnormals, points printed with their digits, variable counts."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcli.errors import ParseError, UsageError, number_text, printable
from gradcli.expression import parse
from gradcli.expression.parser import MAX_DEPTH, MAX_VARIABLES
from gradcli.expression.points import MAX_HESSIAN_VARIABLES, parse_point
from gradcli.results import point_text

ESC = "\x1b"
RLO = "\u202e"
HOSTILE = f"{ESC}]0;pwned\x07{ESC}[2J{RLO}\u2066\u200b\ufeff\x85\x7f"


def no_raw_controls(text: str) -> bool:
    return not any(unicodedata.category(ch) in ("Cc", "Cf") and ch != "\n" for ch in text)


# ---- control characters, escape sequences and bidi overrides are shown escaped -------------------------------
def test_printable_escapes_controls_and_format_characters():
    assert printable("x\x1b[2J") == "x\\x1b[2J"
    assert printable("a\u202eb\u2066c\u200bd\ufeffe\x85\x7f") == "a\\u202eb\\u2066c\\u200bd\\ufeffe\\x85\\x7f"
    assert printable("plain x**2, π and 中文") == "plain x**2, π and 中文"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_printable_never_leaves_a_control_or_format_character(text):
    shown = printable(text)
    assert not any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in shown)
    if text.isprintable():
        assert shown == text


@pytest.mark.parametrize("args", [
    ["eval", f"x+{HOSTILE}", "--at", "x=1"],  # the expression: error and caret lines
    ["eval", "x", "--at", f"x=1{HOSTILE}"],  # a point value
    ["eval", "x", "--at", f"{HOSTILE}=1"],  # a point name
    ["grad", "x", "--at", "x=1", "--wrt", f"x{HOSTILE}"],
    ["grad", "x", "--at", "x=1", "--method", f"tape{HOSTILE}"],
    ["descend", "x**2", "--from", "x=1", "--optimizer", f"sgd{HOSTILE}"],
    ["grad", "x", "--points", f"no-such-file{HOSTILE}.csv"],
])
def test_errors_about_user_input_never_write_raw_controls(invoke, args):
    result = invoke(*args)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("gradcli: error:")
    assert no_raw_controls(result.stderr), repr(result.stderr)
    assert "\\x1b" in result.stderr or "\\u202e" in result.stderr


def test_the_caret_stays_under_the_character_after_escaping():
    spec = "x=1\t,x=2"  # the tab is shown as \x09 (4 columns): the caret follows it
    with pytest.raises(UsageError) as info:
        parse_point(spec)
    source_line, caret_line = info.value.caret_lines()
    assert source_line == "  x=1\\x09,x=2"
    assert caret_line.index("^") == source_line.index("x=2")
    # wide characters before the column take two terminal columns each
    wide = UsageError("bad", source="中文+x?", position=4)
    assert wide.caret_lines()[1] == "  " + " " * 6 + "^"


def test_warnings_and_notes_are_escaped(capsys):
    from gradcli.render.common import print_diagnostics

    print_diagnostics([f"bad {ESC}[2J"], [f"note {RLO}"])
    err = capsys.readouterr().err
    assert no_raw_controls(err) and "\\x1b[2J" in err and "\\u202e" in err


def test_click_usage_errors_are_escaped_by_the_launcher(capsys):
    """Click quotes most bad values with repr, but not every message does (a callback's BadParameter, a future
    Click): the console script escapes whatever Click says."""
    import typer

    from gradcli.launcher import _usage_error

    assert _usage_error(typer.BadParameter(f"'{ESC}[2Jjson' is not one of 'plain', 'json'"), ["eval"]) == 2
    err = capsys.readouterr().err
    assert no_raw_controls(err) and "\\x1b[2Jjson" in err, err


def test_installed_command_escapes_an_expression_and_a_choice():
    gradcli = os.path.join(os.path.dirname(sys.executable), "gradcli")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    for args in ([f"{ESC}]0;pwned{chr(7)}x", "--at", "x=1"], ["x", "--at", "x=1", "--dtype", f"float{RLO}64"]):
        done = subprocess.run([gradcli, "eval", *args], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 2 and done.stdout == ""
        assert no_raw_controls(done.stderr) and ("\\x1b" in done.stderr or "\\u202e" in done.stderr), done.stderr


# ---- numbers: ASCII digits only, everywhere ----------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ["descend", "x**2", "--from", "x=1", "--lr", "０.１"],
    ["descend", "x**2", "--from", "x=1", "--steps", "١٠"],
    ["descend", "x**2", "--from", "x=1", "--tol", "１e-3"],
    ["descend", "x**2", "--from", "x=1", "--steps", "1_000"],
    ["derivative", "x**2", "--at", "x=1", "--order", "２"],
    ["grad", "x", "--at", "x=1", "--eps", "１e-3"],
    ["grad", "x", "--at", "x=1", "--batch-size", "１０"],
    ["hessian", "x", "--at", "x=1", "--symbolic-timeout", "５"],
    ["eval", "x", "--at", "x=１"],
    ["eval", "x", "--at", "x=٣"],
])
def test_numbers_with_other_scripts_digits_are_refused(invoke, args):
    result = invoke(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "ASCII" in result.stderr or "not a number" in result.stderr or "not a whole number" in result.stderr


def test_every_numeric_option_of_every_command_reads_ascii_digits_only():
    import typer.main

    from gradcli.cli import app

    checked = 0
    group = typer.main.get_command(app)
    for command in (group.get_command(None, name) for name in group.list_commands(None)):
        for param in command.params:
            if param.type.name in ("int", "integer", "int range", "float", "float range"):
                with pytest.raises(Exception, match="ASCII"):
                    param.type.convert("１", param, None)
                checked += 1
    assert checked >= 10


def test_ascii_numbers_still_read(invoke):
    result = invoke("descend", "x**2", "--from", "x=1", "--lr", ".5", "--steps", "3", "--tol", "1E-3",
                    "--stationary-timeout", "0", "--format", "json")
    assert result.exit_code == 0, result.stderr


# ---- 1e without exponent digits -----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, column", [("2*1e", 3), ("1e", 1), ("1.5E+x", 3), ("x+3e", 3)])
def test_a_number_ending_in_e_is_refused_with_a_hint(text, column):
    with pytest.raises(ParseError, match=r"(?i)no exponent digits: did you mean .*e0 or .*\*e") as info:
        parse(text)
    assert info.value.position == column


def test_e_after_a_number_keeps_its_other_meanings():
    assert parse("2e3").text == "2e3"
    assert parse("2 e").text == "2*e"
    assert parse("2exp(x)").text == "2*exp(x)"


def test_at_x_1e_is_refused_with_a_caret(invoke):
    result = invoke("eval", "x", "--at", "x=1e")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert "did you mean 1e0 or 1*e?" in lines[0]
    assert lines[1] == "  x=1e" and lines[2] == "     ^"


def test_a_points_cell_1e_is_not_a_number():
    from gradcli.expression.sources.numbers import NotANumber, parse_number

    with pytest.raises(NotANumber):
        parse_number("1e")


# ---- nesting is counted as written ----------------------------------------------------------------------------------
def test_30_and_60_nested_parentheses_are_read():
    for depth in (30, MAX_DEPTH):
        assert parse("(" * depth + "x" + ")" * depth).text == "x"
    assert parse("sin(" * MAX_DEPTH + "x" + ")" * MAX_DEPTH).variables == ("x",)


@pytest.mark.parametrize("text, depth", [
    ("(" * 61 + "x" + ")" * 61, 61),
    ("(" * 75 + "x" + ")" * 75, 75),
    ("-(" * 31 + "x" + ")" * 31, 62),  # a sign and a parenthesis each
    ("x^" * 61 + "x", 61),  # exponents nest to the right
    ("atan2(1," * 59 + "-(-x)" + ")" * 59, 62),  # calls, then a sign, a parenthesis, a sign
])
def test_too_deep_states_the_real_depth_and_the_limit(text, depth):
    with pytest.raises(ParseError) as info:
        parse(text)
    assert f"nested too deeply: {depth} levels" in info.value.message
    assert f"the limit is {MAX_DEPTH}" in info.value.message


def test_very_deep_input_is_refused_without_recursion():
    for text in ("(" * 4900 + "x" + ")" * 4900, "-" * 9000 + "x", "(" * 9000, "x^" * 4900 + "x"):
        with pytest.raises(ParseError, match="nested too deeply: [0-9]+ levels"):
            parse(text)


def test_deepest_allowed_nesting_is_computed_end_to_end(invoke_json):
    text = "sin(" * MAX_DEPTH + "x" + ")" * MAX_DEPTH
    doc = invoke_json("grad", text, "--at", "x=0.5", "-m", "tape,fd")
    gradient = doc["results"][0]["gradient"]
    assert abs(gradient["tape"]["x"] - gradient["fd"]["x"]) < 1e-8


# ---- subnormals ---------------------------------------------------------------------------------------------------
def test_subnormal_numbers_are_float64_numbers(invoke):
    assert parse("5e-324*x").variables == ("x",)
    for args, shown in ((["x", "--at", "x=5e-324"], "5e-324"), (["1e-300/1e10"], "1e-310"),
                        (["x", "--at", "x=2.5e-320", "--dtype", "float64"], "2.5e-320"),
                        (["x", "--at", "x=1e-40", "--dtype", "float32"], "1e-40")):
        result = invoke("eval", *args)
        assert (result.exit_code, result.stdout.strip()) == (0, shown), result.stderr


def test_numbers_that_round_to_zero_are_refused(invoke):
    with pytest.raises(ParseError, match="out of float64 range"):
        parse("1e-325*x")
    result = invoke("eval", "x", "--at", "x=1e-300", "--dtype", "float32")
    assert result.exit_code == 2 and "x=1e-300 rounds to 0 in float32" in result.stderr


# ---- points in messages with the digits that tell them apart --------------------------------------------------------
def test_points_in_messages_keep_their_digits(invoke):
    assert point_text({"x": 1.0000001, "y": 2.0, "z": -0.1}) == "x=1.0000001, y=2, z=-0.1"
    assert number_text(5e-324) == "5e-324"
    result = invoke("eval", "1/(x-1.0000001)", "--at", "x=1.0000001")
    assert result.exit_code == 1 and "at x=1.0000001" in result.stderr


# ---- variable counts ------------------------------------------------------------------------------------------------
def _names(n: int) -> list[str]:
    return [f"v{i}" for i in range(n)]


def test_a_hessian_over_too_many_variables_is_refused_before_computing(invoke):
    at = ",".join(f"{v}=1" for v in _names(MAX_HESSIAN_VARIABLES + 1))
    result = invoke("hessian", "v0*v1", "--at", at, "-m", "fd")
    assert result.exit_code == 2
    assert f"{MAX_HESSIAN_VARIABLES + 1} variables; the limit for a Hessian is {MAX_HESSIAN_VARIABLES}" in result.stderr
    # --wrt picks the ones wanted: within the limit again
    result = invoke("hessian", "v0*v1", "--at", at, "--wrt", "v0,v1", "-m", "fd", "--format", "json")
    assert result.exit_code == 0, result.stderr


def test_a_hessian_over_too_many_variables_is_refused_for_many_points_too(invoke):
    names = _names(MAX_HESSIAN_VARIABLES + 1)
    result = invoke("hessian", "+".join(names), "--grid", "v0=0:1:2", "-m", "fd")
    assert result.exit_code == 2 and "limit for a Hessian" in result.stderr


def test_points_and_expressions_have_a_variable_limit(invoke):
    at = ",".join(f"{v}=1" for v in _names(MAX_VARIABLES + 1))
    result = invoke("grad", "v0", "--at", at, "-m", "fd")
    assert result.exit_code == 2 and f"gives {MAX_VARIABLES + 1:,} variables; the limit is {MAX_VARIABLES:,}" \
        in result.stderr
    with pytest.raises(ParseError, match=f"the limit is {MAX_VARIABLES:,}"):
        parse("+".join(_names(MAX_VARIABLES + 1)))


def test_point_variables_the_expression_lacks_get_a_note(invoke):
    result = invoke("eval", "x", "--at", "x=1,y=2")
    assert result.exit_code == 0 and "--at gives y, which is not in the expression" in result.stderr
    for command in ("grad", "hessian"):
        result = invoke(command, "x**2", "--at", "x=1,y=2", "-m", "fd", "--format", "json")
        assert result.exit_code == 0
        assert "--at gives y, which is not in the expression: its derivatives are 0" in result.stderr


def test_descend_bounds_variables_times_optimizers(invoke):
    from gradcli.expression.points import MAX_DESCENT_PAIRS

    names = _names(MAX_DESCENT_PAIRS // 13 + 1)
    result = invoke("descend", "+".join(f"{v}**2" for v in names), "-o", "all")
    assert result.exit_code == 2
    assert f"{len(names)} variables x 13 optimizers" in result.stderr
    assert f"the limit is {MAX_DESCENT_PAIRS:,}" in result.stderr


def test_descend_bounds_variables_with_one_optimizer(invoke):
    """1,000 variables with adam peaked at 2.04 GiB (gradcli and its SymPy worker): past the ~2 GB bound."""
    from gradcli.expression.points import MAX_DESCENT_PAIRS

    names = _names(MAX_DESCENT_PAIRS + 1)
    result = invoke("descend", "+".join(f"{v}**2" for v in names), "-o", "adam")
    assert result.exit_code == 2 and MAX_DESCENT_PAIRS <= 500
    assert f"{len(names)} variables x 1 optimizer is {len(names)} variable-optimizer pairs" in result.stderr


def test_many_points_over_many_variables_are_computed_fewer_at_a_time():
    """A chunk's memory follows points x n^3 (hessian) and points x n^2 (grad): 4,096 points of a Hessian over
    100 variables went past 24 GB."""
    from gradcli.compute.batch.grad import GradBatch
    from gradcli.compute.batch.hessian import HessianBatch

    hessian = HessianBatch("+".join(_names(100)), methods="fd")
    assert hessian.chunk_size(4096) == 4 and "computed 4 points at a time" in hessian.notes[0]
    few = HessianBatch("x*y", methods="fd")
    assert few.chunk_size(4096) == 4096 and few.notes == []
    grad = GradBatch(["+".join(_names(1000))], methods="fd")
    assert grad.chunk_size(4096) == 8 and "computed 8 points at a time" in grad.notes[0]


def test_a_file_name_in_an_error_is_escaped(invoke, tmp_path):
    path = tmp_path / f"e{ESC}[2J.txt"
    path.write_text("x +\n foo(x)\n")
    result = invoke("eval", "--file", str(path), "--at", "x=1")
    assert result.exit_code == 2 and no_raw_controls(result.stderr) and "e\\x1b[2J.txt:2:2:" in result.stderr


def test_an_internal_error_quoting_input_is_escaped(capsys):
    import typer

    from gradcli.commands.common import handle_errors

    @handle_errors
    def failing():
        raise ValueError(f"cannot use {HOSTILE}")

    with pytest.raises(typer.Exit) as ended:
        failing()
    assert ended.value.exit_code == 1
    err = capsys.readouterr().err
    assert err.startswith("gradcli: internal error: ValueError: cannot use \\x1b]0;pwned\\x07")
    assert no_raw_controls(err), repr(err)


@pytest.mark.parametrize("command", [["grad", "x**2", "-m", "symbolic,fd"], ["descend", "x**2", "--steps", "2"]])
def test_pass_through_columns_are_escaped_in_tables(invoke, tmp_path, command):
    points = tmp_path / "points.csv"
    points.write_text(f"x,label{ESC}[2J\n1,a{HOSTILE}b\n", encoding="utf-8")
    result = invoke(*command, "--points", str(points))
    assert result.exit_code == 0, result.stderr
    assert "label\\x1b[2J" in result.stdout and "a\\x1b]0;pwned\\x07" in result.stdout
    assert no_raw_controls(result.stdout), repr(result.stdout)
