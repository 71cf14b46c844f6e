"""Help at 80 columns (examples, nothing cut, ~40 lines), case-insensitive choices, and shell completion
(issue 9, item 3; item 7's case-insensitive choices)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gradcli.commands.completion import complete_methods, complete_optimizers

GRADCLI = str(Path(sys.executable).with_name("gradcli"))
COMMANDS = ("grad", "hessian", "derivative", "descend", "eval", "check", "steps", "trace", "jvp", "hvp", "propagate", "implicit")


def help_text(runner, *args: str, columns: int = 80) -> str:
    from gradcli.cli import app

    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": str(columns)}, terminal_width=columns)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_80_columns_with_examples_and_nothing_cut(runner, command):
    text = help_text(runner, command)
    lines = text.splitlines()
    assert len(lines) <= 48, f"{command} --help has {len(lines)} lines"  # one screen of a laptop terminal
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert "…" not in text
    examples = [line for line in lines if line.strip().startswith(f"gradcli {command} ")]
    assert 2 <= len(examples) <= 4, examples
    # No long type label squeezes the descriptions: the help column starts at 32 or before.
    help_starts = [len(m.group(1)) for line in lines if (m := re.match(r"^(  -\S.*?\s{2,})\S", line))]
    assert help_starts and max(help_starts) <= 32, help_starts


@pytest.mark.parametrize("command", ("grad", "hessian", "derivative"))
def test_at_is_marked_required_unless_many_points(runner, command):
    text = " ".join(help_text(runner, command).split())
    assert "--at X=V,..." in text
    assert "[required unless --points/--grid]" in text
    assert ";" not in text[text.index("--at X=V"):text.index("[required unless")]  # ';' is refused in --at


def test_root_help_lists_every_command_whole(runner):
    text = help_text(runner)
    commands = text[text.index("Commands:"):]
    assert "..." not in commands and "…" not in commands
    for command in COMMANDS:
        assert re.search(rf"^  {command}\s+\S", commands, re.M)
    assert "--install-completion" in text and "--show-completion" in text


def test_choices_are_case_insensitive(invoke):
    result = invoke("eval", "x**2", "--at", "x=3", "-f", "JSON", "--dtype", "FLOAT32")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["dtype"] == "float32"
    result = invoke("grad", "x**2", "--at", "x=3", "-m", "FD", "-f", "Json", "--scheme", "CENTRAL")
    assert result.exit_code == 0, result.stderr
    assert list(json.loads(result.stdout)["results"][0]["gradient"]) == ["fd"]
    result = invoke("check", "x**2", "-e", "x=2*x", "--at", "x=1", "-f", "JSON")
    assert result.exit_code == 0, result.stderr
    result = invoke("descend", "x**2", "--from", "x=1", "-o", "Adam,SGD", "--show-code")
    assert result.exit_code == 0, result.stderr
    assert "Adam(" in result.stdout and "SGD(" in result.stdout
    result = invoke("grad", "x**2", "--at", "x=3", "-f", "YAML")
    assert result.exit_code == 2


def test_comma_list_completion_completes_the_last_item():
    assert complete_methods("") == ["symbolic", "tape", "fd", "complex"]
    assert complete_methods("tape,") == ["tape,symbolic", "tape,fd", "tape,complex"]
    assert complete_methods("symbolic,F") == ["symbolic,fd"]
    assert complete_optimizers("ada") == ["adam", "adamw", "adagrad", "adadelta", "adamax"]
    assert complete_optimizers("sgd:0.1,adam:0.01,n") == ["sgd:0.1,adam:0.01,nesterov", "sgd:0.1,adam:0.01,nadam"]


def _complete_bash(words: str) -> list[str]:
    env = {**os.environ, "_GRADCLI_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
    result = subprocess.run([GRADCLI], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_installed_command_completes_commands_options_and_choices():
    assert _complete_bash("gradcli gr") == ["grad"]
    assert _complete_bash("gradcli grad x --dt") == ["--dtype"]
    assert _complete_bash("gradcli grad x --format ") == ["table", "json", "jsonl", "csv", "latex", "parquet"]
    assert _complete_bash("gradcli steps x --fi") == ["--file"]
    assert _complete_bash("gradcli steps x --dtype float64,") == ["float64,float32"]
    assert _complete_bash("gradcli descend x -o sgd,ada") == [
        "sgd,adam", "sgd,adamw", "sgd,adagrad", "sgd,adadelta", "sgd,adamax"]


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o default -F _gradcli_completion gradcli"),
                                           ("zsh", "compdef _gradcli_completion gradcli"),
                                           ("fish", "complete --command gradcli")])
def test_show_completion_prints_a_script(shell, marker):
    result = subprocess.run([GRADCLI, "--show-completion", shell], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert marker in result.stdout
    assert "_GRADCLI_COMPLETE=complete_" in result.stdout


def test_help_imports_only_the_command_layer():
    """``--help`` and completion load the CLI and a few constant modules, none of the core (48 modules
    did, through one enum and one constant, before the constants moved to modules of their own)."""
    code = ("import sys, gradcli.cli; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('gradcli'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    loaded = set(result.stdout.split())
    outside = {m for m in loaded if not m.startswith("gradcli.commands")} - {
        "gradcli", "gradcli.cli", "gradcli.errors", "gradcli.limits", "gradcli.streams", "gradcli.methods",
        "gradcli.methods.fd_schemes", "gradcli.dtypes", "gradcli.library", "gradcli.library.requests"}
    assert not outside, sorted(outside)
    assert len(loaded) <= 14, sorted(loaded)  # the command list: no command's module (gradcli.cli.LAZY_COMMANDS)


@pytest.mark.parametrize("command", ["grad", "jvp", "descend", "check"])
def test_a_command_s_help_imports_that_command_s_modules_only(command):
    code = ("import sys; from gradcli.launcher import run_command; "
            f"run_command([{command!r}, '--help']); "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('gradcli'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    loaded = set(result.stdout.splitlines()[-1].split())
    others = {f"gradcli.commands.{c}" for c in ("grad", "hessian", "derivative", "descend", "check", "steps",
                                                 "trace", "jvp", "hvp")} - {f"gradcli.commands.{command}"}
    assert f"gradcli.commands.{command}" in loaded and not loaded & others, sorted(loaded)
    assert len(loaded) <= 20, sorted(loaded)
