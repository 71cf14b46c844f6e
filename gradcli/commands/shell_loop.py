"""The loop behind ``gradcli shell``: gradcli command lines, one process, TensorFlow and SymPy loaded once.

Each line goes through :func:`gradcli.launcher.run_command`, the console script's own path, so a line
prints, fails and exits exactly as ``gradcli LINE`` would; the shell adds only what a session needs:
reading lines (a terminal with a prompt, history and line editing, or a pipe), a line number in front of
gradcli's messages when reading from a pipe, the worst exit code, and Ctrl-C.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from typing import Callable, ContextManager, Iterator, TextIO

from gradcli import streams
from gradcli.errors import UsageError
from gradcli.commands.shell_input import LEAVE, TooLong, pipe_lines, terminal_lines
from gradcli.limits import SHELL_MAX_LINE_BYTES

# The shell's exit code is the worst of its commands' codes, in this order (an unknown code counts as 1).
SEVERITY = {0: 0, 1: 1, 2: 2, 130: 3}
INTERRUPTED = 130
# Options whose value '-' would read standard input: in the shell that is the stream of command lines.
STDIN_OPTIONS = ("--points", "--file")

_active = False  # a shell runs in this process: `shell` typed inside it is refused


def worse(a: int, b: int) -> int:
    """The worse of two exit codes (see :data:`SEVERITY`)."""
    return b if SEVERITY.get(b, 1) > SEVERITY.get(a, 1) else a


def run_shell(stdin: TextIO, *, interactive: bool) -> int:
    """Read and run command lines until ``exit``/``quit``/end of input; return the worst exit code."""
    global _active
    if _active:
        raise UsageError("already in gradcli shell: type the command itself (exit or quit leaves the shell)")
    _active = True
    streams.reserve_stdin()  # a line's --points /dev/stdin would read the session's own lines
    streams.csv_headers.start_session()
    try:
        # SymPy first: the fork server imports it at once, and every SymPy job's worker comes from there
        # (see gradcli.commands.shell_sympy); started before any thread, as forking requires.
        from gradcli.commands.shell_sympy import fork_server_running, prepare_worker, start_fork_server

        start_fork_server()
        prepare_worker()
        waiting = contextlib.nullcontext
        if fork_server_running():  # (else jobs fork from this process: never while TensorFlow loads)
            from gradcli.commands.shell_tensorflow import start_loading

            loader = start_loading()
            if loader is not None:
                waiting = functools.partial(loader.waiting_for_a_line, None if interactive else stdin)
        # (the console script lets Ctrl-C raise KeyboardInterrupt at the prompt: gradcli.interrupts)
        lines = terminal_lines() if interactive else pipe_lines(stdin)
        return run_lines(lines, interactive=interactive, waiting=waiting)
    finally:
        _active = False
        streams.reserve_stdin(False)
        streams.csv_headers.start_session(False)


def run_lines(lines: Iterator[tuple[int, str]], *, interactive: bool,
              waiting: Callable[[], ContextManager] = contextlib.nullcontext) -> int:
    """Run the lines; ``waiting()`` is entered while the next line is awaited (TensorFlow's background
    load works then: gradcli.commands.shell_tensorflow)."""
    worst = 0
    while True:
        try:
            with waiting():
                number, text = next(lines)
        except StopIteration:
            return worst
        except KeyboardInterrupt:  # while reading a pipe: the run ends (at a prompt, see terminal_lines)
            print("gradcli: interrupted", file=sys.stderr)
            return INTERRUPTED
        except OSError as exc:  # a closed stdin, an I/O error: no more lines can come
            print(f"gradcli: error: cannot read the command lines: {exc.strerror or exc}", file=sys.stderr)
            return worse(worst, 2)
        code = run_line(text, number=None if interactive else number)
        if code is None:
            return worst
        worst = worse(worst, code)
        if code == INTERRUPTED and not interactive:
            return INTERRUPTED


def run_line(text: str, *, number: int | None) -> int | None:
    """Run one line; its exit code, or None for ``exit``/``quit``. ``number`` prefixes gradcli's messages."""
    with numbered_messages(number):
        if isinstance(text, TooLong):
            print(f"gradcli: error: the line is longer than {SHELL_MAX_LINE_BYTES:,} bytes (put a long "
                  "expression in a file and give --file PATH)", file=sys.stderr)
            return 2
        try:
            argv = split_line(text)
        except ValueError as exc:  # an unclosed quote, a lone backslash
            print(f"gradcli: error: cannot split the line: {exc}", file=sys.stderr)
            return 2
        if argv[:1] == ["gradcli"]:  # typed out of habit
            argv = argv[1:]
        if not argv:
            return 0
        if argv[0] in LEAVE:
            return None
        if argv[0] == "help":
            return show_help(argv[1:])
        refusal = refusal_for(argv)
        if refusal:
            print(f"gradcli: error: {refusal}", file=sys.stderr)
            return 2
        try:
            return run_command_line(argv)
        except KeyboardInterrupt:  # outside a command's own handler (parsing the options)
            print("gradcli: interrupted", file=sys.stderr)
            return INTERRUPTED
        finally:
            flush_streams()


# One piece of a POSIX shell word at a time (shlex.split(..., comments=True) with posix=True, whose
# quoted words grow by one character at a time: a 1 MB line took a minute). The double-quoted form is
# the unrolled [^"\\]*(\\.[^"\\]*)*: no two ways to match one text, so an unclosed quote fails in linear time.
_PIECE = re.compile(r"""
    (?P<plain>[^ \t\r\n'"\\\#]+)
  | '(?P<single>[^']*)'
  | "(?P<double>[^"\\]*(?:\\.[^"\\]*)*)"
  | \\(?P<escaped>.)
  | (?P<space>[ \t\r\n]+)
  | (?P<comment>\#)
  | (?P<bad>.)
""", re.VERBOSE | re.DOTALL)
_DOUBLE_QUOTED_ESCAPE = re.compile(r'\\(["\\])')
_DOUBLE_QUOTED_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)


def split_line(text: str) -> list[str]:
    """The words of a command line as a POSIX shell splits them (quotes, backslashes, # comments to the
    end of the line), in time linear in its length; ValueError for an unclosed quote or a trailing
    backslash (shlex's words)."""
    words: list[str] = []
    parts: list[str] = []
    in_word = False
    pos = 0
    while pos < len(text):
        match = _PIECE.match(text, pos)
        kind, pos = match.lastgroup, match.end()
        if kind in ("space", "comment"):
            if in_word:
                words.append("".join(parts))
                parts, in_word = [], False
            if kind == "comment":
                newline = text.find("\n", pos)
                pos = len(text) if newline < 0 else newline + 1
            continue
        if kind == "bad":
            raise ValueError(_why_unsplit(text, match.start()))
        piece = match.group(kind)
        parts.append(_DOUBLE_QUOTED_ESCAPE.sub(r"\1", piece) if kind == "double" else piece)
        in_word = True
    if in_word:
        words.append("".join(parts))
    return words


def _why_unsplit(text: str, at: int) -> str:
    """shlex's reason for the character at ``at`` that starts no piece: a backslash at the end, or a
    quote never closed (a double quote whose text ends in a lone backslash: the backslash's)."""
    if text[at] == "\\":
        return "no escaped character"
    if text[at] == '"' and _DOUBLE_QUOTED_BODY.match(text, at + 1).end() < len(text):
        return "no escaped character"
    return "no closing quotation"


def run_command_line(argv: list[str]) -> int:
    from gradcli.commands.shell_sympy import prepare_worker
    from gradcli.launcher import run_command

    prepare_worker()  # no-op once one waits (see below)
    try:
        return run_command(argv)
    finally:
        prepare_worker()  # the next line's worker starts while this line's output is written and read


def refusal_for(argv: list[str]) -> str | None:
    """What the shell cannot run for this line, said as gradcli's usage error (exit 2)."""
    if argv[0] == "shell":
        return "already in gradcli shell: type the command itself (exit or quit leaves the shell)"
    for option in STDIN_OPTIONS:
        for i, token in enumerate(argv):
            if token == f"{option}=-" or (token == option and argv[i + 1:i + 2] == ["-"]):
                return (f"{option} -: standard input is the shell's own input here; give a file "
                        f"(e.g. {option} points.csv)")
    return None


def show_help(topics: list[str]) -> int:
    """``help``: the commands and the shell's own words; ``help grad``: that command's ``--help``."""
    if topics:
        return run_command_line([topics[0], "--help"])
    import typer.main

    from gradcli.cli import app

    group = typer.main.get_command(app)
    names = [n for n in group.list_commands(None) if n != "shell"]
    width = max(len(n) for n in [*names, "exit, quit"]) + 2
    for name in names:
        print(f"  {name:<{width}}{group.get_command(None, name).get_short_help_str(limit=70)}")
    print(f"  {'help CMD':<{width}}CMD's options (the same as CMD --help)")
    print(f"  {'exit, quit':<{width}}leave the shell (so does Ctrl-D)")
    print("Type a command as after 'gradcli', e.g.  grad \"x**2\" --at x=3")
    sys.stdout.flush()
    return 0


def flush_streams() -> None:
    """Each line's output before the next line's (a reader of the pipe gets it now). A failing stdout
    raises (the reader left, the disk is full: the shell ends as a command would); stderr may fail."""
    sys.stdout.flush()
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class numbered_messages:
    """While a piped line runs, gradcli's own messages on stderr ("gradcli: error: ...") read
    "gradcli: line 3: error: ..."; other stderr text passes as it is."""

    def __init__(self, number: int | None):
        self.number = number

    def __enter__(self):
        self.saved = sys.stderr
        if self.number is not None and sys.stderr is not None:
            sys.stderr = LineNumberedStream(sys.stderr, f"gradcli: line {self.number}: ")
        return self

    def __exit__(self, *exc) -> None:
        sys.stderr = self.saved


class LineNumberedStream:
    """A text stream that puts ``prefix`` in place of "gradcli: " at the start of each line written."""

    def __init__(self, stream: TextIO, prefix: str):
        self._stream = stream
        self._prefix = prefix
        self._at_line_start = True

    def write(self, text: str) -> int:
        pieces = text.splitlines(keepends=True)
        out = []
        for piece in pieces:
            if self._at_line_start and piece.startswith("gradcli: "):
                piece = self._prefix + piece[len("gradcli: "):]
            out.append(piece)
            self._at_line_start = piece.endswith(("\n", "\r"))
        self._stream.write("".join(out))
        return len(text)

    def __getattr__(self, name):  # flush, isatty, fileno, encoding...: the real stream's
        return getattr(self._stream, name)
