"""Completion never turns command-line text into code: candidates are names gradcli knows, in every shell.

zsh evaluates the candidates a completer prints, so one that echoed the typed text ran it on TAB
(``-m '\\" *(e{touch F}) \\"',``). Here the generated bash, zsh and fish scripts run for real on hostile
words (zsh in a pseudo-terminal, since its completion works only inside the line editor)."""

from __future__ import annotations

import os
import pty
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

from gradcli.commands.completion import complete_dtypes, complete_methods, complete_optimizers

BIN = Path(sys.executable).parent
GRADCLI = str(BIN / "gradcli")
SAFE = re.compile(r"[a-z0-9.:,+-]*")
# The command line before each comma-list option's word (its words counted for bash's COMP_CWORD).
BEFORE = {"-m": "gradcli grad x --at x=1 -m", "-o": "gradcli descend x -o"}


def hostile_words(marker: Path) -> list[str]:
    """Words as typed on a command line (shell quoting included) that would create ``marker`` if run."""
    m = str(marker)
    return [
        f"'\\\" *(e{{touch {m}}}) \\\"',",
        f"'\\\" *(e{{touch {m}}}) \\\"',ta",
        f"'$(touch {m})',",
        f"'`touch {m}`',t",
        f"'\";touch {m};\"',",
        f"\"'; touch {m}; '\",",
        f"'sgd:$(touch {m}),'",
    ]


@pytest.mark.parametrize("complete", [complete_methods, complete_dtypes, complete_optimizers])
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("abcdfgilmnoprstuy0123456789.:,;$`'\"\\ *(){}e-")),
                    max_size=30))
@example(text='\\" *(e{touch /tmp/PWNED}) \\",')
@example(text="sgd:0.1,adam:0.01,n")
@example(text="sgd:$(id),")
def test_every_candidate_is_built_from_known_names(complete, text):
    for candidate in complete(text):
        assert SAFE.fullmatch(candidate), candidate
        for item in candidate.split(","):
            name, _, rate = item.partition(":")
            assert name in complete("") or name in (c.split(",")[-1] for c in complete(""))
            assert not rate or re.fullmatch(r"[0-9.eE+-]+", rate)


def test_an_unknown_earlier_item_gives_no_candidate():
    assert complete_methods("tape,") == ["tape,symbolic", "tape,fd", "tape,complex"]
    assert complete_methods("TAPE,f") == ["tape,fd"]
    assert complete_methods("tap,") == []
    assert complete_methods('" *(e{touch x}) ",') == []
    assert complete_optimizers("SGD:1e-2,adag") == ["sgd:1e-2,adagrad"]
    assert complete_optimizers("sgd:0.1;x,ada") == []
    assert complete_optimizers("sgd:,ada") == []


def test_no_parameter_of_any_command_echoes_what_was_typed():
    import typer.main

    from gradcli.cli import app

    group = typer.main.get_command(app)
    typed = '" *(e{touch x}) ",'
    for name, command in group.commands.items():
        ctx = command.make_context(name, [], resilient_parsing=True)
        for parameter in command.params:
            for item in parameter.shell_complete(ctx, typed):
                assert typed not in item.value and SAFE.fullmatch(item.value.lower()), (name, parameter.name)


def _environment(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path),
            "TF_CPP_MIN_LOG_LEVEL": "3"}


def _script(shell: str) -> str:
    result = subprocess.run([GRADCLI, "--show-completion", shell], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_bash_script_on_hostile_words(tmp_path):
    script = tmp_path / "gradcli.bash"
    script.write_text(_script("bash"))
    marker = tmp_path / "PWNED"
    for option in ("-m", "-o"):
        for word in hostile_words(marker):
            # COMP_WORDS holds the words as bash's line editor splits them, quotes included; COMP_LINE the
            # line as typed (gradcli's script reads the word from it).
            before = BEFORE[option]
            program = (f"source {script}\nCOMP_WORDS=({before} {word})\n"
                       f"COMP_LINE={shlex.quote(before + ' ' + word)}; COMP_POINT=${{#COMP_LINE}}\n"
                       f"COMP_CWORD={len(before.split())}\n_gradcli_completion gradcli\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
            result = subprocess.run(["bash", "-c", program], env=_environment(tmp_path), capture_output=True,
                                    text=True, timeout=60, cwd=tmp_path)
            assert not marker.exists(), word
            assert all(SAFE.fullmatch(line) for line in result.stdout.split()), result.stdout
    program = (f"source {script}\nCOMP_WORDS=(gradcli descend x -o sgd,ada)\nCOMP_CWORD=4\n"
               f"_gradcli_completion gradcli\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    result = subprocess.run(["bash", "-c", program], env=_environment(tmp_path), capture_output=True,
                            text=True, timeout=60)
    assert "sgd,adam" in result.stdout.split()


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_script_on_hostile_words(tmp_path):
    script = tmp_path / "gradcli.fish"
    script.write_text(_script("fish"))
    marker = tmp_path / "PWNED"
    for word in [*hostile_words(marker), "tape,f"]:
        line = f"gradcli grad x --at x=1 -m {word}"
        result = subprocess.run(["fish", "--no-config", "-c", f"source {script}; complete -C {_fish_quote(line)}"],
                                env=_environment(tmp_path), capture_output=True, text=True, timeout=60,
                                cwd=tmp_path)
        assert not marker.exists(), word
        if word == "tape,f":
            assert result.stdout.split() == ["tape,fd"], result.stdout


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _zsh_tab(tmp_path: Path, script: Path, line: str) -> str:
    """Type ``line`` and TAB into an interactive zsh with the completion loaded; what the terminal showed."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: an interactive zsh without any user configuration
        os.chdir(tmp_path)
        os.execvpe("zsh", ["zsh", "-f", "-i"], _environment(tmp_path))
    shown = b""

    def read_for(seconds: float, *, until: bytes | None = None, quiet: float = 3.0) -> bytes:
        """What the terminal shows within ``seconds``: up to ``until`` when given, else until it has been
        quiet for ``quiet`` s (completion runs gradcli once, ~1 s: its candidates come in one burst)."""
        out, end, last = b"", time.monotonic() + seconds, time.monotonic()
        while time.monotonic() < end:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break
                last = time.monotonic()
                if until is not None and until in out:
                    break
            elif until is None and out and time.monotonic() - last > quiet:
                break
        return out

    try:
        os.write(fd, f"autoload -U compinit; compinit -u; source {script}; print READY\n".encode())
        shown += read_for(10, until=b"READY\r\n")
        os.write(fd, (line + "\t").encode())
        shown += read_for(10)
        os.write(fd, b"\x03exit\n")
        shown += read_for(1)
    finally:
        os.close(fd)
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    return shown.decode(errors="replace")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_script_on_hostile_words(tmp_path):
    script = tmp_path / "_gradcli"
    script.write_text(_script("zsh"))
    marker = tmp_path / "PWNED"
    for option in ("-m", "-o"):
        for word in hostile_words(marker)[:3]:
            _zsh_tab(tmp_path, script, f"{BEFORE[option]} {word}")
            assert not marker.exists(), (option, word)
    assert "tape,fd" in _zsh_tab(tmp_path, script, "gradcli grad x --at x=1 -m tape,f")
