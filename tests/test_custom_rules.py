"""Custom rules (--rule): read by gradcli's parser, used by the tape (tf.custom_gradient) and SymPy's column,
checked exactly, at random points and to second order; a wrong rule exits 1 with a counterexample."""

from __future__ import annotations

import json
import math

import pytest

from gradcli.errors import ParseError
from gradcli.expression import parse
from gradcli.expression.rules import RuleError, define_rules, numerics_notes, parse_rule, read_rules
from gradcli.expression.tree import RuleCall, set_active_rules

LOG1PEXP = "log1pexp(x) = log(1 + exp(x)); d/dx = 1 - 1/(1 + exp(x))"


@pytest.fixture(autouse=True)
def no_rules_left_behind():
    yield
    set_active_rules([])


def _grad(text, at, methods=None, **kw):
    """grad's one-point document, with the result's warnings, notes and exit-1 flag (the Python API)."""
    import gradcli

    result = gradcli.grad(text, at=at, **({} if methods is None else {"method": methods}), **kw)
    return {**result.to_dict(), "failed": result.failed}


def test_log1pexp_in_float32_tape_nan_without_the_rule_1_with_it_exact_1():
    from gradcli.methods.tape import tape_gradient

    without, *_ = tape_gradient([parse("log(1 + exp(x))").tree], {"x": 100.0}, ["x"], dtype="float32")
    assert math.isnan(without[0]["x"])
    checked = define_rules([LOG1PEXP])
    report = _grad("log1pexp(x)", "x=100", dtype="float32", methods="symbolic,tape")
    r = report["results"][0]
    assert r["gradient"]["tape"]["x"] == 1.0 and r["gradient"]["symbolic"]["x"] == 1.0
    assert report["formulas"][0]["x"] == "1 - 1/(exp(x) + 1)" and not report["failed"]
    notes = numerics_notes([parse("log1pexp(x)").tree], ["log1pexp(x)"], report["point"], ["x"], "float32",
                           [r["gradient"]["tape"]])
    assert notes == ["the rule for log1pexp changes the tape's numerics: d(log1pexp(x))/dx is 1.0 on the tape with "
                     "the rule, nan with the body written out (log(1 + exp(x)))"]
    assert checked.notes == []  # SymPy proves this one


def test_the_command_end_to_end(invoke):
    result = invoke("grad", "log1pexp(x)", "--at", "x=100", "--dtype", "float32", "-m", "symbolic,tape",
                    "--rule", LOG1PEXP, "-f", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    text = json.dumps(doc)
    assert "changes the tape's numerics" in text and '"tape": {"x": 1.0}' in text.replace("\n", "")


def test_a_wrong_rule_exits_1_with_a_counterexample(invoke):
    with pytest.raises(RuleError) as info:
        define_rules(["log1pexp(x) = log(1 + exp(x)); d/dx = 1 - 1/(1 + exp(2*x))"])
    message = str(info.value)
    assert info.value.exit_code == 1
    assert message.startswith("rule log1pexp is wrong: d/dx = 1 - 1/(1 + exp(2*x)) is not the derivative of "
                              "log(1 + exp(x)): at x=")
    assert "the derivative is" in message
    result = invoke("grad", "g(x)", "--at", "x=1", "--rule", "g(u) = u**3; d/du = 3*u")
    assert result.exit_code == 1 and "rule g is wrong" in result.stderr and "at u=" in result.stderr


def test_a_rule_right_in_value_but_not_differentiable_as_stated_is_caught_at_second_order():
    with pytest.raises(RuleError) as info:
        define_rules(["sq(x) = x**2; d/dx = stop_gradient(2*x)"])
    message = str(info.value)
    assert message.startswith("rule sq is wrong to second order: the tape's d2/dx2 of sq")
    assert "is 0.0 at x=" in message and "the body's is 2.0" in message


def test_several_parameters_and_a_rule_calling_an_earlier_one():
    define_rules(["f(u, v) = u*sin(v); d/du = sin(v); d/dv = u*cos(v)",
                  "g(t) = f(t, t)**2; d/dt = 2*f(t, t)*(sin(t) + t*cos(t))"])
    report = _grad("f(x, y)*x + g(y)", "x=1,y=2")
    r = report["results"][0]
    exact = {"x": 2 * math.sin(2.0), "y": math.cos(2.0) + 2 * 2 * math.sin(2) * (math.sin(2) + 2 * math.cos(2))}
    for v in "xy":
        assert r["gradient"]["tape"][v] == pytest.approx(exact[v], rel=1e-14)
        assert r["gradient"]["symbolic"][v] == pytest.approx(exact[v], rel=1e-14)
        assert r["gradient"]["fd"][v] == pytest.approx(exact[v], rel=1e-8)
    assert not report["warnings"]
    assert "f(x, y)" in report["formulas"][0]["x"]  # SymPy keeps the rule's call in the formula


def test_the_rule_is_used_at_every_batch_point_on_the_tape():
    from gradcli.methods.tape import tape_gradients
    import numpy as np

    define_rules([LOG1PEXP])
    tree = parse("log1pexp(x)*y").tree
    out = tape_gradients([tree], {"x": np.array([100.0, 0.0]), "y": np.array([2.0, 3.0])}, ["x", "y"],
                         dtype="float32")
    np.testing.assert_allclose(out.gradients[0][:, 0], [2.0, 1.5])


def test_rules_are_read_by_gradcli_s_parser_only():
    r = parse_rule(LOG1PEXP)
    assert r.name == "log1pexp" and r.params == ("x",)
    set_active_rules([r])
    call = parse("log1pexp(2*x)").tree
    assert isinstance(call, RuleCall) and call.rule is r
    for text, words, column in [
        ("sin(x) = x; d/dx = 1", "'sin' is already gradcli's own", 0),
        ("f(x) = __import__('os'); d/dx = 0", "the body: unexpected character", 18),
        ("f(x) = x + y; d/dx = 1", "uses 'y', which is not a parameter", 11),
        ("f(x) = x; d/dy = 1", "'y' is not a parameter", 13),
        ("f(x, y) = x*y; d/dx = y", "no derivative by y", None),
        ("f(x) x", "no '='", 0),
        ("f(x) = x; d/dx = 1; d/dx = 1", "given twice", 23),
    ]:
        with pytest.raises(ParseError) as info:
            read_rules([text])
        assert words in info.value.message, (text, info.value.message)
        if column is not None:
            assert info.value.position == column, (text, info.value.position)
    set_active_rules([])
    with pytest.raises(ParseError, match="unknown function 'log1pexp'"):
        parse("log1pexp(x)")


def test_show_code_writes_the_rule_as_tf_custom_gradient_and_prints_the_tape_column():
    from generated_programs import run_generated
    from gradcli.cli import app
    from typer.testing import CliRunner

    args = ["grad", "log1pexp(x)*y", "--at", "x=100,y=2", "--dtype", "float32", "--rule", LOG1PEXP,
            "--rule", "h(u, v) = u*v; d/du = v; d/dv = u"]
    program = CliRunner().invoke(app, [*args, "--show-code"])
    assert program.exit_code == 0, program.stderr
    assert "@tf.custom_gradient\ndef rule_log1pexp(x):" in program.stdout
    printed = run_generated(program.stdout)
    # the tape column: the rule's gradient 1.0 * y (TF's own is NaN here), the body's value inf in float32
    assert "dz/dx = 2.0" in printed and "dz/dy = inf" in printed
    assert "dz/dx = y*exp(x)/(exp(x) + 1) = 2.0" in printed  # SymPy's program differentiates the body
    set_active_rules([])
    two = CliRunner().invoke(app, ["grad", "h(x, log1pexp(y))", "--at", "x=2,y=0", "--rule", LOG1PEXP, "--rule",
                                   "h(u, v) = u*v; d/du = v; d/dv = u", "--show-code", "-m", "tape"])
    assert two.exit_code == 0, two.stderr
    printed = run_generated(two.stdout)
    assert "dz/dx = 0.6931471805599453" in printed and "dz/dy = 1.0" in printed  # log(2); 2 * 1/2


SQ = "sq(u) = u**2; d/du = 2*u"


def test_rules_in_hessian_and_derivative_and_their_programs():
    """--rule on hessian and derivative: the tape differentiates the rule's formulas again for the second and
    higher orders (as tf.custom_gradient does), and --show-code writes the rule as that function."""
    from generated_programs import run_generated
    from gradcli.cli import app
    from typer.testing import CliRunner

    runner = CliRunner()
    doc = json.loads(runner.invoke(app, ["hessian", "sq(x)*y", "--at", "x=1,y=2", "--rule", SQ, "-f", "json"]).stdout)
    assert doc["hessian"]["tape"] == doc["hessian"]["symbolic"] == [[4.0, 2.0], [2.0, 0.0]]
    set_active_rules([])
    doc = json.loads(runner.invoke(app, ["derivative", "sq(x)**2", "--at", "x=1", "-n", "3", "--rule", SQ,
                                         "-f", "json"]).stdout)
    assert doc["derivatives"]["tape"] == doc["derivatives"]["symbolic"] == [4.0, 12.0, 24.0]
    set_active_rules([])
    program = runner.invoke(app, ["hessian", "sq(x)*y", "--at", "x=1,y=2", "--rule", SQ, "--show-code"])
    assert program.exit_code == 0 and "def rule_sq(u):" in program.stdout, program.stderr
    assert "[[4.0, 2.0], [2.0, 0.0]]" in run_generated(program.stdout).splitlines()
    set_active_rules([])
    program = runner.invoke(app, ["derivative", "sq(x)**2", "--at", "x=1", "-n", "3", "--rule", SQ,
                                  "--show-code"])
    assert program.exit_code == 0 and "def rule_sq(u):" in program.stdout, program.stderr
    printed = run_generated(program.stdout)
    assert "24.0" in printed and "12.0" in printed


def test_strict_on_hessian_and_derivative():
    from gradcli.cli import app
    from typer.testing import CliRunner

    runner = CliRunner()
    assert runner.invoke(app, ["derivative", "abs(x)", "--at", "x=0"]).exit_code == 0
    assert runner.invoke(app, ["derivative", "abs(x)", "--at", "x=0", "--strict"]).exit_code == 1
    assert runner.invoke(app, ["hessian", "abs(x)*y", "--at", "x=0,y=1", "-m", "fd", "--strict"]).exit_code == 1
    assert runner.invoke(app, ["hessian", "x**2*y", "--at", "x=1,y=1", "--strict"]).exit_code == 0


# Subtly wrong rules: off by 1e-9 or 1e-10 of the derivative, wrong at one point (a where(u == c, ...)), in a band
# 1e-3 wide, on u < 0, only for |u| > 50 or past a switch point; each refused with a counterexample.
SUBTLY_WRONG = [
    "sp(u) = log(1 + exp(u)); d/du = sigmoid(u)*(1 + 1e-9)",
    "s(u) = sin(u); d/du = where(u == 0, 0, cos(u))",
    "c(u) = cos(u); d/du = -sin(u) + 1e-9*sin(u)",
    "q(u) = u**3; d/du = 3*u**2 + exp(-1e6*(u-3)**2)",
    "ex(u) = exp(u); d/du = where(u == 1, 0, exp(u))",
    "a(u) = u*abs(u); d/du = 2*u",
    "t(u) = tanh(u); d/du = where(abs(u) > 50, 1, 1 - tanh(u)**2)",
    "w(u) = u**2; d/du = where(u == 2.5, 0, 2*u)",
    "h(u) = atan(u); d/du = 1/(1 + u**2) + 1e-12*exp(-(u-7)**2*1e8)",
    "g(u) = sqrt(u - 100); d/du = 0",
    "l(u) = log(u); d/du = 1/u*(1 + 1e-10)",
    "m(u, v) = u*v; d/du = v; d/dv = where(v == 1, 0, u)",
    "p(u) = u**4; d/du = where(u < 0, -4*u**3, 4*u**3)",
    "r(u) = relu(u); d/du = where(u > 1e-3, 1, 0)",
    "k(u) = softplus(u); d/du = sigmoid(u) + where(u > 60, 1e-3, 0)",
]
# Right rules, several where SymPy cannot prove the formula equal (abs, relu, max): accepted.
RIGHT_RULES = [
    "sp(u) = log(1 + exp(u)); d/du = sigmoid(u)",
    "s(u) = sin(u); d/du = cos(u)",
    "r(u) = relu(u); d/du = where(u > 0, 1, 0)",
    "k(u) = softplus(u); d/du = sigmoid(u)",
    "a(u) = abs(u); d/du = where(u > 0, 1, where(u < 0, -1, 0))",
    "w(u) = where(u > 0, u**2, 0); d/du = where(u > 0, 2*u, 0)",
    "m(u, v) = u*v; d/du = v; d/dv = u",
    "g(u) = sqrt(u - 100); d/du = 1/(2*sqrt(u - 100))",
    "t(u) = tanh(u); d/du = 1 - tanh(u)**2",
    "q(u) = u*abs(u); d/du = 2*abs(u)",
    "x1(u) = max(u, 0)**2; d/du = 2*relu(u)",
    "z(u) = log(1 + exp(u)); d/du = 1 - 1/(1 + exp(u))",
]


@pytest.mark.parametrize("text", SUBTLY_WRONG)
def test_a_subtly_wrong_rule_is_refused_with_a_counterexample(text):
    with pytest.raises(RuleError, match=r"is wrong: d/d\w+ = .* at \w+="):
        define_rules([text], time_limit=30)


@pytest.mark.parametrize("text", RIGHT_RULES)
def test_a_right_rule_is_accepted(text):
    define_rules([text], time_limit=30)


def test_the_wrong_rule_at_one_point_names_that_point():
    with pytest.raises(RuleError, match=r"at u=0.0 it is 0.0, the derivative is 1.0"):
        define_rules(["s(u) = sin(u); d/du = where(u == 0, 0, cos(u))"], time_limit=30)


def test_a_rule_checked_nowhere_in_its_domain_is_refused():
    with pytest.raises(RuleError, match="could not be checked|is wrong"):
        define_rules(["g(u) = sqrt(u - 1e6); d/du = 0"], time_limit=30)


def test_a_chain_of_doubling_rules_is_refused_before_any_check():
    import time

    from gradcli.errors import UsageError

    texts = ["r1(u) = sin(u); d/du = cos(u)"] + [f"r{k}(u) = r{k - 1}(u) + r{k - 1}(u); d/du = 2**{k - 1}*cos(u)"
                                                 for k in range(2, 17)]
    started = time.perf_counter()
    with pytest.raises(UsageError, match=r"rule r13: its body with the rules it calls written out has 12,287"):
        read_rules(texts)
    assert time.perf_counter() - started < 1
