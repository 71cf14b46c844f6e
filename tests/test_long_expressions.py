"""Expressions longer than a person types: up to 1,000,000 characters from --file (docs/limits.md), 10,000 as
an argument on the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradcli.errors import ParseError
from gradcli.expression import parse
from gradcli.limits import COMMAND_LINE_EXPRESSION_MAX_CHARS, EXPRESSION_MAX_CHARS


def rosenbrock(n: int) -> str:
    """The chained Rosenbrock function over x1..xn."""
    return " + ".join(f"100*(x{i + 1}-x{i}**2)**2 + (1-x{i})**2" for i in range(1, n))


def point(n: int) -> np.ndarray:
    return np.array([(-1) ** i * 0.5 + 0.001 * i for i in range(1, n + 1)])


def coordinates(x: np.ndarray) -> str:
    return ",".join(f"x{i}={float(v)!r}" for i, v in enumerate(x, 1))


def value(x: np.ndarray) -> float:
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def gradient(x: np.ndarray) -> np.ndarray:
    g = np.zeros_like(x)
    g[:-1] += -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def hessian_times(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    diagonal = np.zeros_like(x)
    diagonal[:-1] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    diagonal[1:] += 200
    off = -400 * x[:-1]  # H[i, i+1] = H[i+1, i]
    hv = diagonal * v
    hv[:-1] += off * v[1:]
    hv[1:] += off * v[:-1]
    return hv


def test_the_limits_are_the_documented_ones():
    assert EXPRESSION_MAX_CHARS == 1_000_000 and COMMAND_LINE_EXPRESSION_MAX_CHARS == 10_000
    text = rosenbrock(1000)
    assert len(text) > 30_000
    assert len(parse(text).variables) == 1000
    with pytest.raises(ParseError, match="expression longer than 1,000,000 characters"):
        parse("x" + " " * EXPRESSION_MAX_CHARS)


def test_eval_of_a_file_over_1000_variables(tmp_path, invoke):
    path = tmp_path / "rosenbrock.txt"
    path.write_text(rosenbrock(1000) + "\n")
    x = point(1000)
    result = invoke("eval", "--file", str(path), "--at", coordinates(x))
    assert result.exit_code == 0, result.stderr
    assert float(result.stdout) == pytest.approx(value(x), rel=1e-13)


def test_grad_of_a_file_past_the_command_lines_limit(tmp_path, invoke):
    n = 300  # 11,000 characters, more than 5,000 terms and operators; fd takes seconds here
    path = tmp_path / "rosenbrock.txt"
    path.write_text(rosenbrock(n) + "\n")
    x = point(n)
    result = invoke("grad", "--file", str(path), "--at", coordinates(x), "-m", "fd", "-f", "json")
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)["results"][0]["gradient"]["fd"]
    assert np.allclose([got[f"x{i}"] for i in range(1, n + 1)], gradient(x), rtol=1e-7, atol=1e-6)


def test_hvp_of_a_file_over_1000_variables(tmp_path, invoke):
    n = 1000
    path = tmp_path / "rosenbrock.txt"
    path.write_text(rosenbrock(n) + "\n")
    x, v = point(n), np.ones(n)
    result = invoke("hvp", "--file", str(path), "--at", coordinates(x), "--along", coordinates(v),
                    "-m", "for", "-f", "json")
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)["hvp"]["forward-over-reverse"]
    assert np.allclose(got, hessian_times(x, v), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("command", ["eval", "jvp"])
def test_a_long_expression_on_the_command_line_is_refused(command, capsys):
    from gradcli.launcher import run_command

    text = "+".join(["x"] * 6000)  # 11,999 characters
    argv = [command, text, "--at", "x=1"] + (["--along", "x=1"] if command == "jvp" else [])
    assert run_command(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gradcli: error: expression of 11,999 characters: the command line takes at most 10,000")
    assert ("a longer one goes in --file PATH" in err) == (command == "eval")  # jvp has no --file
    assert err.count("\n") == 1


def test_the_same_expression_from_a_file_is_read(tmp_path, invoke):
    path = tmp_path / "sum.txt"
    path.write_text("+".join(["x"] * 6000))
    result = invoke("eval", "--file", str(path), "--at", "x=1")
    assert result.exit_code == 0, result.stderr
    assert float(result.stdout) == 6000.0
