"""--strict (exit 1 on any warning too) on every command that can warn, and strict= in the API."""

from __future__ import annotations

import pytest

import gradcli

WARNING_RUNS = [
    ["grad", "abs(x)", "--at", "x=0", "-m", "fd"],
    ["hessian", "abs(x)*y", "--at", "x=0,y=1", "-m", "fd"],
    ["derivative", "abs(x)", "--at", "x=0", "-m", "fd"],
    ["jvp", "x**2 + 1e20", "--at", "x=1", "--along", "x=1", "-m", "symbolic,fd"],
    ["descend", "x**2", "--from", "x=1", "-o", "sgd", "--steps", "3"],
    ["hvp", "(exp(x*y) - 1)/(x*y)", "--at", "x=1e-6,y=1e-5", "--along", "x=1,y=1", "-m", "tape,fd"],
    ["trace", "log(1+exp(x))", "--at", "x=100", "--dtype", "float32"],
]


@pytest.mark.parametrize("args", WARNING_RUNS, ids=[a[0] for a in WARNING_RUNS])
def test_a_warning_exits_0_and_with_strict_1(invoke, args):
    plain = invoke(*args)
    assert plain.exit_code == 0 and "warning" in plain.stderr, (plain.exit_code, plain.stderr)
    strict = invoke(*args, "--strict")
    assert strict.exit_code == 1, strict.stderr
    if args[0] not in ("descend", "hvp"):  # (their tables show each run's seconds)
        assert strict.stdout == plain.stdout


def test_strict_in_the_api_marks_the_result_failed():
    assert not gradcli.grad("abs(x)", at="x=0", method="fd").failed
    assert gradcli.grad("abs(x)", at="x=0", method="fd", strict=True).failed
    assert gradcli.eval("x/0", at="x=1", strict=True).failed  # eval warns where a value is undefined: exit 1 anyway
    assert gradcli.descend("x**2", start="x=1", optimizer="sgd", steps=3, strict=True).failed
    assert not gradcli.check("x**2", expect="x=2*x", strict=True).failed  # proved: nothing to warn
