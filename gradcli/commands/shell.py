"""``gradcli shell``."""

from __future__ import annotations

import io
import sys

import typer

from gradcli.commands.common import handle_errors


@handle_errors
def shell() -> None:
    """Many commands in one process: TensorFlow and SymPy load once, then each line answers at once.

    Type a command as after 'gradcli' (grad "x**2" --at x=3); help lists them; exit, quit or Ctrl-D
    leaves. From a pipe each line's output follows the last; errors name the line. The exit code is
    the worst of the commands': 130 (interrupted) > 2 > 1 > 0.

    Examples:

    \b
      gradcli shell                   a prompt: gradcli> grad "sin(x)" --at x=1
      gradcli shell < commands.txt    one command per line; # comments
      printf '%s\\n' 'eval x**2 --at x=3' 'grad x**3 --at x=2' | gradcli shell
    """
    from gradcli.commands.shell_loop import run_shell

    stdin = sys.stdin if sys.stdin is not None else io.StringIO()  # `gradcli shell <&-`: no lines
    raise typer.Exit(run_shell(stdin, interactive=stdin.isatty()))
