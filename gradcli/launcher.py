"""The console script ``gradcli``: a look at the arguments first, then the Typer app.

Kept apart from :mod:`gradcli.cli` so that nothing heavy is imported before :func:`main` decides
whether to start SymPy's worker process (it then imports SymPy on the other core while this process
imports Typer and parses the options).
"""

from __future__ import annotations

import sys


def will_differentiate_symbolically(argv: list[str]) -> bool:
    """``grad`` with SymPy's column wanted (a cheap look; Typer parses the arguments for real)."""
    if not argv or argv[0] != "grad" or any(a in ("-h", "--help", "--show-code") for a in argv):
        return False
    for i, a in enumerate(argv):
        value = a.split("=", 1)[1] if a.startswith("--method=") else (
            argv[i + 1] if a in ("--method", "-m") and i + 1 < len(argv) else None)
        if value is not None and "symbolic" not in value and value.strip() != "all":
            return False
    return True


def main() -> None:
    if will_differentiate_symbolically(sys.argv[1:]):
        from gradcli.methods.worker import prestart_worker

        prestart_worker()
    import typer

    from gradcli.cli import app

    # Typer's vendored Click raises these for bad options; their class is reached through a public one.
    click_exception = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    try:
        code = app(prog_name="gradcli", standalone_mode=False)
    except click_exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `gradcli` or `gradcli grad`: the help
            exc.show()
            sys.exit(exc.exit_code)
        sys.exit(_usage_error(exc, sys.argv[1:]))
    except typer.Abort:
        print("gradcli: aborted", file=sys.stderr)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


COMMANDS = ("grad", "hessian", "derivative", "descend")


def _usage_error(exc, argv: list[str]) -> int:
    """Click's usage errors as gradcli's own one-line errors (exit 2)."""
    message = exc.format_message()
    command = argv[0] if argv and argv[0] in COMMANDS else None
    hint = f"see 'gradcli {command} --help'" if command else "see 'gradcli --help'"
    # gradcli's short options are -m -f -o -n -h: an unknown single-dash one is a negative expression.
    if message.startswith("No such option: -") and not message.startswith("No such option: --"):
        hint = "an expression that starts with '-' goes after '--', e.g. gradcli descend --from x=1 -- \"-x**2\""
    print(f"gradcli: error: {message} ({hint})", file=sys.stderr)
    return getattr(exc, "exit_code", 2) or 2
