"""gradcli eval: the value alone, for scripts."""

from __future__ import annotations

import json

import pytest


def test_plain_value_alone(invoke):
    result = invoke("eval", "x**2 + sin(y)", "--at", "x=2,y=0")
    assert result.exit_code == 0 and result.stdout == "4.0\n" and result.stderr == ""


def test_float32_has_float32_digits_and_a_constant_needs_no_point(invoke):
    assert invoke("eval", "x/3", "--at", "x=1", "--dtype", "float32").stdout == "0.33333334\n"
    assert invoke("eval", "x/3", "--at", "x=1").stdout == "0.3333333333333333\n"
    assert invoke("eval", "2**10").stdout == "1024.0\n"


def test_json(invoke):
    doc = json.loads(invoke("eval", "3*x**2+2*x-1", "--at", "x=1", "-f", "json").stdout)
    assert doc == {"command": "eval", "expression": "3*x**2 + 2*x - 1", "point": {"x": 1.0}, "dtype": "float64",
                   "value": 4.0, "warnings": []}


@pytest.mark.parametrize("expression, at", [("log(x)", "x=-1"), ("1/x", "x=0"), ("sqrt(x)", "x=-4")])
def test_an_undefined_value_is_no_number_and_exit_1(invoke, expression, at):
    result = invoke("eval", expression, "--at", at)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("gradcli: warning: ") and "at x=" in result.stderr
    doc = json.loads(invoke("eval", expression, "--at", at, "-f", "json").stdout)
    assert doc["value"] is None and doc["warnings"]


@pytest.mark.parametrize("args", [["x*y", "--at", "x=1"], ["x", "--at", "x=1", "-f", "yaml"], ["(x", "--at", "x=1"]])
def test_usage_errors(invoke, args):
    result = invoke("eval", *args)
    assert result.exit_code == 2 and result.stdout == ""  # (Click's own wording for -f csv in process)
