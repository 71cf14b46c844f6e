"""The loop behind ``gradcli shell``: gradcli command lines, one process, TensorFlow and SymPy loaded once.

Each line goes through :func:`gradcli.launcher.run_command`, the console script's own path, so a line
prints, fails and exits exactly as ``gradcli LINE`` would; the shell adds only what a session needs:
reading lines (a terminal with a prompt, history and line editing, or a pipe), a line number in front of
gradcli's messages when reading from a pipe, the worst exit code, and Ctrl-C.
"""

from __future__ import annotations

import os
import shlex
import sys
from typing import Callable, Iterator, TextIO

PROMPT = "gradcli> "
# The shell's exit code is the worst of its commands' codes, in this order (an unknown code counts as 1).
SEVERITY = {0: 0, 1: 1, 2: 2, 130: 3}
INTERRUPTED = 130
LEAVE = ("exit", "quit")
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
        from gradcli.errors import UsageError

        raise UsageError("already in gradcli shell: type the command itself (exit or quit leaves the shell)")
    _active = True
    try:
        from gradcli.commands.shell_sympy import start_fork_server

        start_fork_server()  # before any thread or TensorFlow (see gradcli.commands.shell_sympy)
        if interactive:  # (the console script lets Ctrl-C raise KeyboardInterrupt here: gradcli.interrupts)
            warm_up = start_warm_up()
            lines = terminal_lines(before_each=warm_up.join)
        else:
            lines = pipe_lines(stdin)
        return run_lines(lines, interactive=interactive)
    finally:
        _active = False


def start_warm_up():
    """At a terminal, load TensorFlow and SymPy while the first line is typed (a pipe gains nothing: its
    first command starts at once and imports them itself, SymPy in a forked worker on the other core).

    SymPy's worker is forked first, before any thread runs (see gradcli.methods.worker), and takes the
    first symbolic job; later jobs go to workers of the fork server (gradcli.commands.shell_sympy).
    Commands wait for the warm-up to end: TensorFlow's import silences file descriptor 2 while it runs,
    which would swallow their messages."""
    import threading

    from gradcli.methods.worker import prestart_worker

    prestart_worker()
    thread = threading.Thread(target=_load_heavy_modules, daemon=True, name="gradcli-warm-up")
    thread.start()
    return thread


def _load_heavy_modules() -> None:
    try:
        from gradcli.methods.tf_runtime import load_tensorflow

        load_tensorflow()
        import sympy  # noqa: F401

        from gradcli.methods import symbolic  # noqa: F401
    except Exception:  # the command that needs the module will say what is wrong, in its own words
        pass


def run_lines(lines: Iterator[tuple[int, str]], *, interactive: bool) -> int:
    worst = 0
    while True:
        try:
            number, text = next(lines)
        except StopIteration:
            return worst
        except KeyboardInterrupt:  # while reading a pipe: the run ends (at a prompt, see terminal_lines)
            print("gradcli: interrupted", file=sys.stderr)
            return INTERRUPTED
        code = run_line(text, number=None if interactive else number)
        if code is None:
            return worst
        worst = worse(worst, code)
        if code == INTERRUPTED and not interactive:
            return INTERRUPTED


def run_line(text: str, *, number: int | None) -> int | None:
    """Run one line; its exit code, or None for ``exit``/``quit``. ``number`` prefixes gradcli's messages."""
    with numbered_messages(number):
        try:
            argv = shlex.split(text, comments=True)
        except ValueError as exc:  # an unclosed quote, a lone backslash
            print(f"gradcli: error: cannot split the line: {str(exc)[0].lower()}{str(exc)[1:]}", file=sys.stderr)
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


def run_command_line(argv: list[str]) -> int:
    from gradcli.commands.shell_sympy import prepare_worker
    from gradcli.launcher import run_command

    prepare_worker()  # no-op once one waits (see below) or before TensorFlow is loaded
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
        print(f"  {name:<{width}}{group.commands[name].get_short_help_str(limit=70)}")
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


def pipe_lines(stdin: TextIO) -> Iterator[tuple[int, str]]:
    """The lines of a pipe or file. Bytes that are not text in the stream's encoding are kept as Python
    keeps them in a command's arguments (surrogate escapes), so a line fails as that command would fail,
    instead of ending the shell at a decoding error."""
    raw = getattr(stdin, "buffer", None)
    if raw is None:  # a text-only stream (io.StringIO)
        lines = iter(stdin)
    else:
        encoding = getattr(stdin, "encoding", None) or "utf-8"
        lines = (line.decode(encoding, "surrogateescape") for line in raw)
    for number, line in enumerate(lines, start=1):
        yield number, line.rstrip("\r\n")


def read_at_prompt(prompt: str) -> str:
    """``input``, with the prompt on stderr when stdout is not the terminal (gradcli shell > results.txt
    keeps prompts out of the results; line editing then needs both on the terminal, as Python's does)."""
    if sys.stdout.isatty():
        return input(prompt)
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return input()


def terminal_lines(read: Callable[[str], str] = read_at_prompt, *,
                   before_each: Callable[[], None] = lambda: None) -> Iterator[tuple[int, str]]:
    """Lines typed at the prompt, with line editing and history (Python's ``readline``, where it exists);
    ``before_each`` runs after a line is typed, before it is handed on (Ctrl-C there cancels the line)."""
    history = start_line_editing()
    number = 0
    while True:
        try:
            text = read(PROMPT)
            before_each()
        except EOFError:  # Ctrl-D
            print(file=sys.stderr)
            return
        except KeyboardInterrupt:  # Ctrl-C at the prompt cancels the line being typed
            print(file=sys.stderr)
            continue
        number += 1
        save_history(history)
        yield number, text


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
        readline.write_history_file(path)
    except (OSError, ValueError):
        pass


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
    command = group.commands.get(words[-1] if words[0] == "help" else words[0])
    if command is None:
        return []
    options = {o for p in command.params for o in p.opts + p.secondary_opts if o.startswith("-")}
    return sorted(o + " " for o in options if o.startswith(text) and text.startswith("-"))
