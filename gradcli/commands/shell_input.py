"""Where ``gradcli shell``'s lines come from: a pipe or a file, read in bounded pieces (an over-long line is
refused under its number, an endless one ends the session), or a terminal, with a prompt, line editing,
history and Tab completion (Python's ``readline``, where it exists)."""

from __future__ import annotations

import os
import stat
import sys
from typing import Callable, Iterator, TextIO

from gradcli.errors import UsageError
from gradcli.limits import SHELL_MAX_LINE_BYTES, SHELL_MAX_SKIP_BYTES

PROMPT = "gradcli> "
LEAVE = ("exit", "quit")  # the words that end a session


class TooLong(str):
    """A line longer than SHELL_MAX_LINE_BYTES, handed on (empty) so that it is refused under its number."""


def pipe_lines(stdin: TextIO) -> Iterator[tuple[int, str]]:
    """The lines of a pipe or file. Bytes that are not text in the stream's encoding are kept as Python
    keeps them in a command's arguments (surrogate escapes), so a line fails as that command would fail,
    instead of ending the shell at a decoding error."""
    raw = getattr(stdin, "buffer", None)
    if raw is None:  # a text-only stream (io.StringIO)
        lines = (line if len(line.encode("utf-8", "surrogateescape")) <= SHELL_MAX_LINE_BYTES + 1
                 else TooLong() for line in stdin)
    else:
        encoding = getattr(stdin, "encoding", None) or "utf-8"
        lines = (line if isinstance(line, TooLong) else line.decode(encoding, "surrogateescape")
                 for line in bounded_lines(raw))
    for number, line in enumerate(lines, start=1):
        yield number, line if isinstance(line, TooLong) else line.rstrip("\r\n")


def bounded_lines(raw) -> Iterator[bytes | TooLong]:
    """The lines of a binary stream, each read in at most SHELL_MAX_LINE_BYTES (plus its newline); a
    longer one is read past in pieces of that size and handed on as a :class:`TooLong`."""
    limit = SHELL_MAX_LINE_BYTES + 1  # the newline
    while True:
        line = raw.readline(limit)
        if not line:
            return
        if len(line) < limit or line.endswith(b"\n"):
            yield line
            continue
        skipped = len(line)
        while line and not line.endswith(b"\n"):
            line = raw.readline(limit)
            skipped += len(line)
            if skipped > SHELL_MAX_SKIP_BYTES:  # /dev/zero, /dev/full, a binary file: no end of line comes
                raise UsageError(f"standard input has a line of more than {SHELL_MAX_SKIP_BYTES:,} bytes: it is "
                                 "not a file of command lines")
        yield TooLong()


def read_at_prompt(prompt: str) -> str:
    """``input``, with the prompt on stderr when stdout is not the terminal (gradcli shell > results.txt
    keeps prompts out of the results; line editing then needs both on the terminal, as Python's does)."""
    if sys.stdout.isatty():
        return input(prompt)
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return input()


def terminal_lines(read: Callable[[str], str] = read_at_prompt) -> Iterator[tuple[int, str]]:
    """Lines typed at the prompt, with line editing and history (Python's ``readline``, where it exists)."""
    history = start_line_editing()
    number = 0
    while True:
        try:
            text = read(PROMPT)
        except EOFError:  # Ctrl-D
            print(file=sys.stderr)
            return
        except KeyboardInterrupt:  # Ctrl-C at the prompt cancels the line being typed
            print(file=sys.stderr)
            continue
        number += 1
        save_history(history)
        yield number, TooLong() if len(text.encode("utf-8", "surrogateescape")) > SHELL_MAX_LINE_BYTES else text


def history_path() -> str:
    """$XDG_STATE_HOME/gradcli/history when XDG_STATE_HOME is set, else ~/.gradcli_history."""
    state = os.environ.get("XDG_STATE_HOME")
    if state:
        return os.path.join(state, "gradcli", "history")
    return os.path.join(os.path.expanduser("~"), ".gradcli_history")


def start_line_editing() -> str | None:
    """Load the history and set up completion; the history file's path, or None without ``readline``."""
    try:
        import readline
    except ImportError:  # e.g. a Python built without it: input() still reads lines
        return None
    path = history_path()
    try:
        if regular_or_absent(path):
            readline.read_history_file(path)
    except (OSError, ValueError):  # none yet, or unreadable: start afresh
        pass
    readline.set_history_length(1000)
    readline.set_completer(complete)
    readline.set_completer_delims(" \t\n\"'")
    readline.parse_and_bind("tab: complete")
    return path


def save_history(path: str | None) -> None:
    """Write the history after every line (a killed shell keeps it); an unwritable place is not an error."""
    if path is None:
        return
    try:
        import readline

        os.makedirs(os.path.dirname(path), exist_ok=True)
        if regular_or_absent(path):
            readline.write_history_file(path)
    except (OSError, ValueError):
        pass


def regular_or_absent(path: str) -> bool:
    """Only a regular file is history: opening a FIFO there would wait for a writer (or reader) forever,
    and a device is not ours to write. Opened without blocking to look (a FIFO opens at once so)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    finally:
        os.close(fd)


def complete(text: str, state: int) -> str | None:
    """Tab completion: command names first, then the options of the command on the line."""
    try:
        import readline

        words = readline.get_line_buffer()[:readline.get_begidx()].split()
        candidates = completion_candidates(words, text)
        return candidates[state] if state < len(candidates) else None
    except Exception:  # a completer must never break the prompt
        return None


def completion_candidates(words: list[str], text: str) -> list[str]:
    import typer.main

    from gradcli.cli import app

    group = typer.main.get_command(app)
    if not words:
        names = [n for n in group.list_commands(None) if n != "shell"] + ["help", *LEAVE]
        return sorted(n + " " for n in names if n.startswith(text))
    command = group.get_command(None, words[-1] if words[0] == "help" else words[0])
    if command is None:
        return []
    options = {o for p in command.params for o in p.opts + p.secondary_opts if o.startswith("-")}
    return sorted(o + " " for o in options if o.startswith(text) and text.startswith("-"))
