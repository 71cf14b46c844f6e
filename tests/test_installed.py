"""Real subprocess runs of the installed `gradcli` command, and the lazy-import promises."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

GRADCLI = shutil.which("gradcli") or os.path.join(os.path.dirname(sys.executable), "gradcli")


def run(*args: str, timeout: float = 120):
    return subprocess.run([GRADCLI, *args], capture_output=True, text=True, timeout=timeout)


def test_installed_command_full_grad_and_no_tf_noise():
    result = run("grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["results"][0]["gradient"]["tape"] == {"x1": 9.0, "x2": 42.0}
    # TensorFlow's start-up log lines (oneDNN, cuda, absl) never reach the user
    assert result.stderr == ""


def test_version_and_module_entry_point():
    assert run("--version").stdout.startswith("gradcli ")
    result = subprocess.run([sys.executable, "-m", "gradcli", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("gradcli ")


PROBE = """
import sys
from gradcli.launcher import main
sys.argv = ["gradcli"] + sys.argv[1:]
try:
    main()
except SystemExit:
    pass
print("\\nLOADED:" + ",".join(m for m in ("tensorflow", "keras", "sympy") if m in sys.modules), file=sys.stderr)
"""


def loaded_modules(*args: str) -> set[str]:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    line = [ln for ln in result.stderr.splitlines() if ln.startswith("LOADED:")][-1]
    return set(filter(None, line[len("LOADED:"):].split(",")))


def test_help_imports_neither_tensorflow_nor_sympy():
    assert loaded_modules("--help") == set()
    assert loaded_modules("grad", "--help") == set()


def test_symbolic_and_fd_path_does_not_import_tensorflow():
    # SymPy may be imported here or in the forked worker; TensorFlow and Keras never.
    assert loaded_modules("grad", "x**2", "--at", "x=1", "--method", "symbolic,fd") <= {"sympy"}


def test_refusals_come_before_tensorflow_and_promptly():
    for hostile in ["10**10**10", "9**9**9", "2**10**100", "sin(cos(exp(exp(exp(exp(1))))))"]:
        assert loaded_modules("grad", hostile, "--at", "x=1") == set()
        # A hang guard, not a speed assertion: the real figure is in bench/ and the README.
        start = time.monotonic()
        result = run("grad", hostile, "--at", "x=1", timeout=30)
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        assert time.monotonic() - start < 30


def test_symbolic_time_bound_leaves_the_column_out():
    # gradcli waits at most 0.5 s (from SymPy's start) for the symbolic column; SymPy's exact value of
    # exp(-10**10**10**10) takes for ever (SymPy is imported ahead, so an easy expression would now finish in
    # time), so the column is left out with a note, and fd's column still comes back.
    result = run("grad", "exp(-x**x**x**x)", "--at", "x=10", "--method", "symbolic,fd", "--symbolic-timeout",
                 "0.5", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["methods"] == ["fd"]
    assert doc["results"][0]["gradient"]["fd"]["x"] == 0.0
    assert "symbolic column left out" in result.stderr


@pytest.mark.parametrize("args, fragment", [
    (["grad", "x", "--at", "x=1", "--bogus"], "No such option: --bogus (see 'gradcli grad --help')"),
    (["grad", "x", "--at", "x=1", "--dtype", "float16"], "Invalid value for '--dtype'"),
    (["derivative", "x", "--at", "x=1", "--order", "abc"], "Invalid value for '--order'"),
    (["grad"], "give an expression"),  # EXPR or --file
    (["nonsense"], "No such command 'nonsense'. (see 'gradcli --help')"),
])
def test_option_errors_of_the_installed_command_are_one_line(args, fragment):
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradcli: error: ") and fragment in lines[0], lines
    assert result.stdout == ""


def test_an_expression_may_start_with_a_minus():
    result = run("grad", "-x**2", "--at", "x=3", "-m", "symbolic", "-f", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["results"][0]["gradient"]["symbolic"]["x"] == -6.0


@pytest.mark.parametrize("argv, expected", [
    (["grad", "-x**2", "--at", "x=1"], ["grad", "--at", "x=1", "--", "-x**2"]),
    (["grad", "x", "-2*x", "-m", "fd", "--at=x=1"], ["grad", "-m", "fd", "--at=x=1", "--", "x", "-2*x"]),
    (["descend", "--from", "x=1", "-10*x**2", "--lr", "-0.1"],
     ["descend", "--from", "x=1", "--lr", "-0.1", "--", "-10*x**2"]),
    (["hessian", "-x*y", "--show-code", "--at", "x=1,y=2"], ["hessian", "--show-code", "--at", "x=1,y=2", "--",
                                                            "-x*y"]),
    (["trace", "-x**2", "--at", "x=1"], ["trace", "--at", "x=1", "--", "-x**2"]),
    (["jvp", "-x*y", "--at", "x=1,y=2", "--along", "x=1"], ["jvp", "--at", "x=1,y=2", "--along", "x=1", "--",
                                                          "-x*y"]),
    (["hvp", "-x*y", "--at", "x=1,y=2", "--along", "x=1"], ["hvp", "--at", "x=1,y=2", "--along", "x=1", "--",
                                                          "-x*y"]),
    (["grad", "x**2", "--at", "x=-1"], ["grad", "x**2", "--at", "x=-1"]),  # nothing to move
    (["grad", "-x", "--help"], ["grad", "-x", "--help"]),
    (["grad", "--at", "x=1", "--", "-x"], ["grad", "--at", "x=1", "--", "-x"]),
])
def test_arguments_that_start_with_a_minus_are_expressions(argv, expected):
    from gradcli.cli import app
    from gradcli.launcher import negative_expressions_as_arguments

    assert negative_expressions_as_arguments(argv, app) == expected

