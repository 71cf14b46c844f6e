"""--show-code checks its options exactly as a computation would, in every command (it used to differ)."""

from __future__ import annotations

import pytest

COMMANDS = [["grad", "x**2"], ["hessian", "x**2"], ["derivative", "x**2"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("bad, words", [
    (["--method", "nope"], "unknown method 'nope'"),
    (["--eps", "-1"], "--eps must be a positive finite number"),
    (["--eps", "1e-30"], "vanishes next to x=1"),
])
def test_show_code_refuses_what_a_computation_refuses(invoke, command, bad, words):
    result = invoke(*command, "--at", "x=1", *bad, "--show-code")
    assert result.exit_code == 2
    assert result.stdout == "" and words in result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_show_code_with_good_options_prints_a_program(invoke, command):
    result = invoke(*command, "--at", "x=1", "--show-code")
    assert result.exit_code == 0 and "import tensorflow as tf" in result.stdout
