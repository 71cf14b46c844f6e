"""``E`` is Euler's number, as ``e`` is (SymPy's spelling, pasted from its output): never a variable."""

from __future__ import annotations

import math

import pytest

from gradcli.errors import ParseError, UsageError
from gradcli.expression import Const, parse
from gradcli.expression.evaluate import PYTHON_FLOAT64, evaluate
from gradcli.expression.points import parse_point


def test_E_reads_as_the_constant_e():
    expr = parse("E**x + 2*E")
    assert expr.variables == ("x",)
    assert parse("E").tree == Const("e")
    assert parse("E**x").text == parse("e**x").text == "e**x"
    assert evaluate(parse("E**x").tree, {"x": 2.0}, PYTHON_FLOAT64) == math.e ** 2
    assert evaluate(parse("ln(E)").tree, {}, PYTHON_FLOAT64) == 1.0


@pytest.mark.parametrize("text", ["E(x)", "2*E(1)"])
def test_E_is_no_function(text):
    with pytest.raises(ParseError, match="unknown function 'E'"):
        parse(text)


def test_E_cannot_be_given_a_value():
    with pytest.raises(UsageError) as info:
        parse_point("x=1,E=2")
    assert info.value.message == "--at: 'E' is the constant e (Euler's number, 2.718...) and cannot be a variable"


def test_E_in_at_is_one_line_naming_the_constant(invoke):
    result = invoke("grad", "E**x", "--at", "x=1,E=2", "-m", "fd")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == ("gradcli: error: --at: 'E' is the constant e (Euler's number, "
                                             "2.718...) and cannot be a variable (column 5)")


def test_grad_of_E_to_the_x_on_every_method(invoke_json):
    doc = invoke_json("grad", "E**x", "--at", "x=1", "-m", "symbolic,tape,fd,complex")
    gradient = doc["results"][0]["gradient"]
    assert gradient["symbolic"]["x"] == gradient["tape"]["x"] == gradient["complex"]["x"] == pytest.approx(
        math.e, rel=1e-15)
    assert gradient["fd"]["x"] == pytest.approx(math.e, rel=1e-9)


def test_hessian_and_derivative_of_E(invoke_json):
    doc = invoke_json("hessian", "E**(x*y)", "--at", "x=1,y=1", "-m", "symbolic,tape,fd")
    want = [math.e, 2 * math.e, 2 * math.e, math.e]
    for method, rel in (("symbolic", 1e-15), ("tape", 1e-15), ("fd", 1e-6)):
        assert sum(doc["hessian"][method], []) == pytest.approx(want, rel=rel)
    doc = invoke_json("derivative", "E**(2*x)", "--at", "x=1", "-n", "3", "-m", "symbolic,tape")
    assert doc["expression"] == "e**(2*x)"
    for method in ("symbolic", "tape"):
        assert doc["derivatives"][method] == pytest.approx([2 * math.e ** 2, 4 * math.e ** 2, 8 * math.e ** 2],
                                                           rel=1e-14)


def test_eval_of_E(invoke):
    result = invoke("eval", "E")
    assert result.exit_code == 0, result.stderr
    assert float(result.stdout) == math.e
    result = invoke("eval", "E*x - e*x", "--at", "x=3")
    assert result.exit_code == 0, result.stderr
    assert float(result.stdout) == 0.0
