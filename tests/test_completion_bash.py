"""bash completes a word that bash itself splits at ':' (``-o sgd:0.1,ada<TAB>``), with gradcli's own script.

bash hands a completion function the line split at every character of COMP_WORDBREAKS, so ``sgd:0.1,ada``
arrives as ``sgd``, ``:``, ``0.1,ada``, and it replaces only the text after the last ':'. The generated
script runs here for real: called as bash calls it (COMP_LINE, COMP_POINT, COMP_WORDS, COMP_CWORD set the way
bash sets them), and typed into an interactive bash in a pseudo-terminal, where TAB edits the line."""

from __future__ import annotations

import os
import pty
import re
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gradcli.commands.bash_completion import after_breaks, current_word

BIN = Path(sys.executable).parent
GRADCLI = str(BIN / "gradcli")
SAFE = re.compile(r"[a-z0-9.:,+-]*")
BREAKS = " \t\n\"'><=;|&(:"
ADA = ["adam", "adamw", "adagrad", "adadelta", "adamax"]


def bash_words(line: str, breaks: str = BREAKS) -> tuple[list[str], int]:
    """COMP_WORDS and COMP_CWORD as bash makes them from an unquoted line: split at blanks, and each run of
    break characters a word of its own."""
    words = re.findall(rf"[^\s{re.escape(breaks)}]+|[{re.escape(breaks.strip())}]+", line)
    if not line or line[-1].isspace():
        words.append("")
    return words, len(words) - 1


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    result = subprocess.run([GRADCLI, "--show-completion", "bash"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    path = tmp_path_factory.mktemp("bash") / "gradcli.bash"
    path.write_text(result.stdout)
    return path


def environment(home: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HOME": str(home),
            "TF_CPP_MIN_LOG_LEVEL": "3"}


def call_completion(script: Path, cases: list[tuple[str, list[str], int, int]], cwd: Path,
                    wordbreaks: str | None = None) -> list[list[str]]:
    """COMPREPLY for each (COMP_LINE, COMP_WORDS, COMP_CWORD, COMP_POINT), from one bash."""
    program = [f"source {shlex.quote(str(script))}"]
    if wordbreaks is not None:
        program.append(f"COMP_WORDBREAKS={shlex.quote(wordbreaks)}")
    for line, words, cword, point in cases:
        program += [f"COMP_LINE={shlex.quote(line)}; COMP_POINT={point}",
                    f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); COMP_CWORD={cword}",
                    "_gradcli_completion gradcli",
                    "printf '%d' ${#COMPREPLY[@]}; ((${#COMPREPLY[@]})) && printf '<%s>' \"${COMPREPLY[@]}\"; echo"]
    result = subprocess.run(["bash", "--norc", "-c", "\n".join(program)], env=environment(cwd),
                            capture_output=True, text=True, timeout=120, cwd=cwd)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(cases), result.stdout + result.stderr
    replies = [re.findall(r"<([^>]*)>", line) for line in lines]
    assert [len(reply) for reply in replies] == [int(re.match(r"\d+", line)[0]) for line in lines]
    return replies


def as_bash_calls(*lines: str) -> list[tuple[str, list[str], int, int]]:
    return [(line, *bash_words(line), len(line)) for line in lines]


def test_the_word_is_read_across_colons_and_candidates_lose_what_bash_keeps(script, tmp_path):
    lines = ["gradcli descend x -o sgd:0.1,ada",
             "gradcli descend x -o sgd:0.1,adam:0.05,n",
             "gradcli descend x --optimizer=sgd:0.1,adag",
             "gradcli descend x --optimizer=sgd,adag",
             "gradcli descend x -o sgd,ada",
             "gradcli descend x -o sgd:",
             "gradcli grad x --at x=1 -m sym",
             "gradcli grad x --at x=1 -m tape,f",
             "gradcli gr",
             "gradcli grad x --format "]
    assert bash_words(lines[0]) == (["gradcli", "descend", "x", "-o", "sgd", ":", "0.1,ada"], 6)
    replies = call_completion(script, as_bash_calls(*lines), tmp_path)
    assert replies == [
        [f"0.1,{name}" for name in ADA],
        ["0.05,nesterov", "0.05,nadam"],
        ["0.1,adagrad"],
        ["sgd,adagrad"],  # bash replaces what follows '=': --optimizer=sgd,adagrad
        [f"sgd,{name}" for name in ADA],
        [],
        ["symbolic"],
        ["tape,fd"],
        ["grad"],
        ["table", "json", "jsonl", "csv", "latex", "parquet"],
    ]


def test_quoted_or_escaped_colons_are_not_breaks(script, tmp_path):
    # bash splits neither 'sgd:0.1 (an open quote) nor sgd\:0.1: it replaces the whole word.
    line_quoted, line_escaped = "gradcli descend x -o 'sgd:0.1,adag", "gradcli descend x -o sgd\\:0.1,adag"
    before = ["gradcli", "descend", "x", "-o"]
    cases = [(line_quoted, [*before, "'sgd:0.1,adag"], 4, len(line_quoted)),
             (line_escaped, [*before, "sgd\\:0.1,adag"], 4, len(line_escaped))]
    assert call_completion(script, cases, tmp_path) == [["sgd:0.1,adagrad"], ["sgd:0.1,adagrad"]]


def test_the_cursor_inside_the_line_and_a_colon_that_is_no_break(script, tmp_path):
    line = "gradcli descend x -o sgd:0.1,ada --steps 5"
    point = line.index(" --steps")
    words, _ = bash_words(line)
    assert call_completion(script, [(line, words, 6, point)], tmp_path) == [[f"0.1,{name}" for name in ADA]]
    # Without ':' in COMP_WORDBREAKS bash replaces the whole word: candidates stay whole.
    no_colon = BREAKS.replace(":", "")
    line = "gradcli descend x -o sgd:0.1,adag"
    cases = [(line, *bash_words(line, no_colon), len(line))]
    assert call_completion(script, cases, tmp_path, wordbreaks=no_colon) == [["sgd:0.1,adagrad"]]


def test_install_completion_writes_gradclis_script(tmp_path):
    result = subprocess.run([GRADCLI, "--install-completion", "bash"], env=environment(tmp_path),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    installed = (tmp_path / ".bash_completions" / "gradcli.sh").read_text()
    assert "_GRADCLI_COMPLETE=complete_bash_line" in installed and 'COMP_LINE="$COMP_LINE"' in installed
    assert "gradcli.sh" in (tmp_path / ".bashrc").read_text()


def test_a_call_without_the_line_still_completes(script, tmp_path):
    # A caller that sets only COMP_WORDS and COMP_CWORD (as Typer's script did) gets bash's words read.
    program = (f"source {shlex.quote(str(script))}\nCOMP_WORDS=(gradcli descend x -o sgd,ada)\nCOMP_CWORD=4\n"
               "_gradcli_completion gradcli\nprintf '<%s>' \"${COMPREPLY[@]}\"\n")
    result = subprocess.run(["bash", "--norc", "-c", program], env=environment(tmp_path), capture_output=True,
                            text=True, timeout=60)
    assert re.findall(r"<([^>]*)>", result.stdout) == [f"sgd,{name}" for name in ADA]


def hostile_words(marker: Path) -> list[str]:
    """Words with ':' as typed on a command line that would create ``marker`` if anything ran them."""
    m = str(marker)
    return [f"sgd:$(touch {m}),ada", f"'sgd:$(touch {m})',ada", f"sgd:0.1,'`touch {m}`':",
            f"\"sgd:$(touch {m})\":0.1,ad", f"sgd:0.1,ada$(touch {m}):", f"x:'\\\" *(e{{touch {m}}}) \\\"':,ta",
            f"sgd:0.1;touch {m};:ada", f"sgd\\:$(touch {m}):"]


def test_hostile_words_with_colons_give_only_safe_candidates(script, tmp_path):
    marker = tmp_path / "PWNED"
    lines = [f"gradcli {before} {word}" for before in ("descend x -o", "grad x --at x=1 -m")
             for word in hostile_words(marker)]
    for reply in call_completion(script, as_bash_calls(*lines), tmp_path):
        assert all(SAFE.fullmatch(candidate) for candidate in reply), reply
    assert not marker.exists()


@pytest.mark.parametrize("line, breaks, expected", [
    ("gradcli -o sgd:0.1,ada", ":=", (11, "sgd:0.1,ada", [3])),
    ("gradcli -o 'sgd:0.1,a", ":=", (11, "sgd:0.1,a", [])),
    ("gradcli -o sgd\\:0.1 x:y", ":=", (20, "x:y", [1])),
    ('gradcli -o "a\\b:c"d:e', ":=", (11, "a\\b:cd:e", [6])),
    ("gradcli -o a\\ b:c", ":", (11, "a b:c", [3])),
    ("gradcli ", ":", (8, "", [])),
])
def test_current_word_reads_quotes_as_bash_does(line, breaks, expected):
    assert current_word(line, breaks) == expected


def test_after_breaks():
    assert after_breaks("sgd:0.1,adam", 1, ":") == "0.1,adam"
    assert after_breaks("sgd:0.1,adam:0.2,n", 2, ":=") == "0.2,n"
    assert after_breaks("adam", 0, ":") == "adam"
    assert after_breaks("adam", 1, ":") is None


def type_into_bash(tmp_path: Path, script: Path, typed: list[bytes | tuple[bytes, bytes]]) -> str:
    """What an interactive bash with the script loaded shows after each of ``typed`` (``gradcli`` runs as a
    function that prints its arguments; completion still runs the real program, through env). readline
    reads the keys in order, so a TAB's completion is done before the keys after it are read."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp_path)
        os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], {**environment(tmp_path), "PS1": "$ "})

    def read_until(until: bytes, seconds: float = 60) -> bytes:
        out, end = b"", time.monotonic() + seconds
        while time.monotonic() < end and until not in out:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break
        return out

    shown = b""
    try:
        os.write(fd, f"source {shlex.quote(str(script))}; gradcli() {{ printf 'ARG<%s>\\n' \"$@\"; }}\n".encode())
        for n, keys in enumerate([b"", *typed]):
            if isinstance(keys, tuple):  # keys, and what to wait for (a listing shows only once input stops)
                os.write(fd, keys[0])
                shown += read_until(keys[1])
                continue
            # The echo's output (not the typed line, which shows $((n+1))) says that bash is done with keys.
            os.write(fd, keys + f"echo DONE$(({n}+1))\n".encode())
            shown += read_until(f"DONE{n + 1}\r\n".encode())
    finally:
        os.close(fd)
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    return shown.decode(errors="replace")


def test_an_interactive_bash_completes_after_the_colon(tmp_path, script):
    shown = type_into_bash(tmp_path, script, [b"gradcli descend x -o sgd:0.1,adag\t\n",
                                               b"gradcli grad x -m sym\t\n",
                                               b"gradcli descend x -o sgd:0.1,adam:0.05,nest\t\n",
                                               (b"gradcli descend x -o sgd:0.1,adam\t\t", b"0.1,adamw"),
                                               b"\x15"])
    assert "ARG<sgd:0.1,adagrad>" in shown, shown
    assert "ARG<symbolic>" in shown, shown
    assert "ARG<sgd:0.1,adam:0.05,nesterov>" in shown, shown
    # Two TABs list the candidates as bash shows them, the part after the last ':' (as for git's refs).
    assert "0.1,adamw" in shown and "0.1,adamax" in shown, shown


def test_hostile_words_typed_into_an_interactive_bash(tmp_path, script):
    marker = tmp_path / "PWNED"
    # Ctrl-U kills the line: it is never run (running it would expand the $(...) itself).
    type_into_bash(tmp_path, script, [f"gradcli descend x -o {word}\t\t\x15".encode()
                                      for word in hostile_words(marker)[:4]])
    assert not marker.exists()
