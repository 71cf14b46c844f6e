"""The console script ``gradcli``: a look at the arguments first, then the Typer app.

Kept apart from :mod:`gradcli.cli` so that nothing heavy is imported before :func:`main` decides
whether to start SymPy's worker process (it then imports SymPy on the other core while this process
imports Typer and parses the options).
"""

from __future__ import annotations

import functools
import os
import re
import sys


def will_differentiate_symbolically(argv: list[str]) -> bool:
    """``grad`` with SymPy's column wanted (a cheap look; Typer parses the arguments for real)."""
    if not argv or argv[0] != "grad" or any(a in ("-h", "--help", "--show-code") for a in argv):
        return False
    for i, a in enumerate(argv):
        value = a.split("=", 1)[1] if a.startswith("--method=") else (
            argv[i + 1] if a in ("--method", "-m") and i + 1 < len(argv) else None)
        if value is not None and "symbolic" not in value.lower() and value.strip().lower() != "all":
            return False
    return True


def main() -> None:
    if os.environ.get("GRADCLI_DAEMON") == "1":  # first, before anything heavy: the warm daemon, if it runs
        from gradcli.daemon.client import run_through_daemon

        handed = run_through_daemon(sys.argv[1:])
        if handed is not None:
            from gradcli.daemon.client import exit_now

            exit_now(handed)
    from gradcli import interrupts, streams

    # First: descriptors 0-2 held open and the streams' failures made visible (gradcli.streams), then
    # SIGINT/SIGTERM and the private temporary directory (gradcli.interrupts), before any worker is forked.
    streams.guard_standard_streams()
    interrupts.install()
    if sys.argv[1:2] == ["shell"] and sys.stdin.isatty():  # Ctrl-C at its prompt cancels the line
        interrupts.cancel_with_keyboard_interrupt()
    try:
        code = run_command(sys.argv[1:])
        streams.flush_output()  # a full disk shows here, not in Python's flush at exit
    except streams.OutputWriteError as exc:
        code = streams.exit_code_for(exc)
    sys.exit(code)


def run_command(argv: list[str]) -> int:
    """Run one gradcli command line (``argv`` without the leading ``gradcli``) and return its exit code,
    without calling ``sys.exit``: the console script and ``gradcli shell`` (a line at a time) share it."""
    if will_differentiate_symbolically(argv):
        from gradcli.methods.worker import prestart_worker

        prestart_worker()
    named_shell = choose_completion_shell(argv)
    import typer

    from gradcli.cli import app

    # Typer's vendored Click raises these for bad options; their class is reached through a public one.
    click_exception = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    try:
        args = negative_expressions_as_arguments(argv, app)
        # Typer reads the switch when it builds the command: a shell line naming a shell gets a fresh one
        command = click_command.__wrapped__(app) if named_shell else click_command(app)
        code = command(args=args, prog_name="gradcli", standalone_mode=False)
    except click_exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `gradcli` or `gradcli grad`: the help
            exc.show()
            return exc.exit_code
        return _usage_error(exc, argv)
    except typer.Abort:
        print("gradcli: aborted", file=sys.stderr)
        return 1
    except SystemExit as exc:  # Click exits by itself in a few places
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        if named_shell:  # the next line of a gradcli shell detects the shell again
            import os

            os.environ.pop("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", None)
    return code if isinstance(code, int) else 0


COMPLETION_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def choose_completion_shell(argv: list[str]) -> bool:
    """``--show-completion zsh`` / ``--install-completion fish``: the named shell, not the one running (True).

    Typer's options detect the shell and take no value; with this variable set (Typer's own switch) they
    take the shell's name instead. Without a name they keep detecting it."""
    if len(argv) >= 2 and argv[0] in ("--show-completion", "--install-completion") \
            and argv[1].lower() in COMPLETION_SHELLS:
        import os

        os.environ["_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"] = "1"
        return True
    return False


def commands() -> tuple[str, ...]:
    """The commands that take expressions and options (the daemon's subcommands are not among them): the
    command line's own list (gradcli.cli.ORDER)."""
    from gradcli.cli import ORDER

    return tuple(name for name in ORDER if name != "daemon")


@functools.cache
def click_command(app):
    """The Click command Typer builds from ``app``, built once per process: building it takes ~60 ms
    (Typer reads every command's signature), once per line in ``gradcli shell``."""
    import typer.main

    return typer.main.get_command(app)


def negative_expressions_as_arguments(argv: list[str], app) -> list[str]:
    """``gradcli grad "-x**2" --at x=1``: an argument that starts with '-' and is none of the command's
    options is an expression. Click would take it for an unknown option, so the command's arguments are
    moved, in order, after a ``--``; options (and the values they take) keep their meaning and place.

    A word that looks like an option (``-n``, ``-eps``, ``--foo=1``) is refused as one (Click's
    ``NoSuchOption``, with the options it may stand for), never read as an expression: ``grad x**2 -n 2``
    would otherwise differentiate ``-n`` and ``2`` too. Such an expression goes after ``--``."""
    if not argv or argv[0] not in commands() or any(a in ("-h", "--help") for a in argv):
        return argv
    rest, after = argv[1:], []
    if "--" in rest:
        cut = rest.index("--")
        rest, after = rest[:cut], rest[cut + 1:]
    if not any(a.startswith("-") and not a.startswith("--") and len(a) > 1 for a in rest):
        return argv  # the common case: no Click command is built here (Click refuses an unknown --name)

    command = click_command(app).get_command(None, argv[0])
    options = [p for p in command.params if type(p).__name__.endswith("Option")]
    names = {n for p in options for n in p.opts + p.secondary_opts}
    takes_value = {n for p in options if not p.is_flag and not p.count for n in p.opts}
    kept, arguments, i = [], [], 0
    while i < len(rest):
        token = rest[i]
        name = token.split("=", 1)[0] if token.startswith("--") else token
        if name in names or token.startswith("--"):  # an option (an unknown --name stays one: Click says so)
            kept.append(token)
            if name in takes_value and "=" not in token and i + 1 < len(rest):
                kept.append(rest[i + 1])
                i += 1
        elif _OPTION_LIKE.fullmatch(token) and (token[:2] not in names or "-" + name.split("=", 1)[0] in names):
            raise _no_such_option(token, argv[0], names)  # -n, -eps; and -method is not -m with 'ethod'
        elif token[:2] in names:  # a short option with its value glued on (-mfd)
            kept.append(token)
        else:
            arguments.append(token)
        i += 1
    if not any(a.startswith("-") for a in arguments):
        return argv
    return [argv[0], *kept, "--", *arguments, *after]


# A word that reads as an option, not an expression: '-' and a name (-n, -x1, -eps, -n=2). An expression
# that starts with '-' has an operator, a bracket or a digit in it (-x**2, -(x+1), -2*x) or goes after '--'.
_OPTION_LIKE = re.compile(r"-[A-Za-z_][A-Za-z0-9_-]*(=.*)?", re.DOTALL)


def _no_such_option(token: str, command: str, names: set[str]):
    """Click's usage error for the unknown option ``token``, with the options of ``command`` it may stand
    for: ``-eps`` is ``--eps``, ``-s`` one of the ``--s...``; a short option of another command is named as
    that command's."""
    import difflib

    import typer

    usage_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    typed = token.split("=", 1)[0]
    word = typed[1:]
    long_names = sorted(n for n in names if n.startswith("--"))
    if len(word) == 1:
        possible = [n for n in long_names if n[2:3] == word and not n.startswith("--no-")]
    elif "--" + word in long_names:  # -eps for --eps
        possible = ["--" + word]
    else:
        possible = difflib.get_close_matches("--" + word, long_names, n=3, cutoff=0.7)
    message = f"No such option: {typed}"
    elsewhere = _short_option_elsewhere(typed, command)
    if elsewhere:
        message += f" ({elsewhere})"
    if possible:
        message += f" (Possible options: {', '.join(possible)})"
    return usage_error(message)


def _short_option_elsewhere(short: str, command: str) -> str | None:
    """``-n`` on grad: "-n is --order of derivative, check, steps" (None: no other command has it)."""
    if len(short) != 2:
        return None
    from gradcli.cli import app

    meanings: dict[str, list[str]] = {}
    group = click_command(app)
    for name in group.list_commands(None):  # every command made: an error's hint only
        if name == command:
            continue
        other = group.get_command(None, name)
        for param in getattr(other, "params", ()):
            if short in getattr(param, "opts", ()):
                meanings.setdefault(next(o for o in param.opts if o.startswith("--")), []).append(name)
    if not meanings:
        return None
    return "; ".join(f"{short} is {long} of {', '.join(sorted(users))}" for long, users in meanings.items())


def _usage_error(exc, argv: list[str]) -> int:
    """Click's usage errors as gradcli's own one-line errors (exit 2)."""
    message = exc.format_message()
    command = argv[0] if argv and argv[0] in commands() else None
    hint = f"see 'gradcli {command} --help'" if command else "see 'gradcli --help'"
    # Expressions that start with '-' are arguments already (negative_expressions_as_arguments), except a
    # word that reads as an option (-n): refused, with the way to give it as an expression.
    if message.startswith("No such option: -") and not message.startswith("No such option: --") \
            and command and _takes_expressions(command):
        typed = message[len("No such option: "):].split(" ", 1)[0]
        hint = f"an expression that starts with '-' goes after '--', e.g. gradcli {command} ... -- \"{typed}\""
    instead = _option_meant(message, command)
    if instead is not None:
        message = f"{message.split(' (Possible options')[0]}: did you mean {instead}"
    coordinates = _coordinates_as_arguments(message, argv)
    if coordinates is not None:
        message = coordinates
    from gradcli.errors import printable

    # Click quotes the bad value as typed: escape it (an ESC sequence would reach the terminal raw).
    print(f"gradcli: error: {printable(message)} ({hint})", file=sys.stderr)
    return getattr(exc, "exit_code", 2) or 2


def _takes_expressions(command: str) -> bool:
    from gradcli.cli import app

    return any(type(p).__name__.endswith("Argument") for p in click_command(app).get_command(None, command).params)


# Options one command has under another's name: descend starts --from a point, the others work --at one.
_OTHER_NAMES = {"--at": ("--from",), "--from": ("--at",), "--point": ("--at", "--from"), "--start": ("--from",),
                "--x0": ("--from",), "--var": ("--wrt",), "--variable": ("--wrt",), "--by": ("--wrt",)}


def _option_meant(message: str, command: str | None) -> str | None:
    """``descend ... --at``: the option of this command that the unknown one stands for (None: no guess)."""
    if command is None or not message.startswith("No such option: --"):
        return None
    typed = message[len("No such option: "):].split(" ", 1)[0].split("=", 1)[0]
    from gradcli.cli import app

    params = click_command(app).get_command(None, command).params
    names = {n for p in params for n in p.opts}
    meant = [n for n in _OTHER_NAMES.get(typed, ()) if n in names]
    if not meant:
        return None
    why = {"--from": f"{command} starts from the point given with --from",
           "--at": f"{command} works at the point given with --at"}.get(meant[0])
    return f"{meant[0]}?" + (f" {why}" if why else "")


def _coordinates_as_arguments(message: str, argv: list[str]) -> str | None:
    """``--at x=1 y=2``: Click reads y=2 as an extra argument. Say that a comma joins the coordinates."""
    import itertools
    import re

    if not message.startswith("Got unexpected extra argument"):
        return None
    coordinate = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=(?!=)")
    for i, token in enumerate(argv[:-1]):
        option, eq, value = token.partition("=")
        if option not in ("--at", "--from"):
            continue
        value = value if eq else argv[i + 1]
        following = itertools.takewhile(lambda t: not t.startswith("-"), argv[i + 1 if eq else i + 2:])
        extra = [t for t in following if coordinate.match(t)]
        if extra:
            return (f"{' '.join(extra)} is a separate argument: separate the coordinates with commas: "
                    f"{option} {','.join([value, *extra])}")
    return None
