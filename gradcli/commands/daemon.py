"""``gradcli daemon start|stop|status|restart``: a warm process for ``GRADCLI_DAEMON=1`` (docs/daemon.md).

Imports only Typer here: the daemon's modules load when one of these commands runs.
"""

from __future__ import annotations

import sys

import typer

daemon_app = typer.Typer(
    name="daemon", no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="A warm gradcli (TensorFlow and SymPy loaded) that runs each call when GRADCLI_DAEMON=1 is set; "
    "without a running daemon calls run as usual.")


def _say(result: tuple[int, str]) -> None:
    code, line = result
    print(line, file=sys.stderr if code else sys.stdout)
    raise typer.Exit(code)


@daemon_app.command("start", short_help="Start the daemon (waits until it serves).")
def start() -> None:
    """Start the daemon in the background and wait until it answers (it imports TensorFlow first)."""
    from gradcli.daemon import control

    _say(control.start())


@daemon_app.command("stop", short_help="Stop the daemon (running commands finish first).")
def stop() -> None:
    """Stop the daemon: it takes no new call, and exits once the running ones have."""
    from gradcli.daemon import control

    _say(control.stop())


@daemon_app.command("status", short_help="Pid, uptime, version, requests served, memory.")
def status() -> None:
    """Whether the daemon runs, and its pid, uptime, version, requests served and memory (exit 1: none)."""
    from gradcli.daemon import control

    info = control.status()
    if info is None:
        print("gradcli daemon: not running")
        raise typer.Exit(1)
    print(control.describe(info))


@daemon_app.command("restart", short_help="Stop the daemon if it runs, then start it.")
def restart() -> None:
    """Stop the daemon if it runs, then start a fresh one (after an upgrade, say)."""
    from gradcli.daemon import control

    code, line = control.stop()
    if code:
        _say((code, line))
    _say(control.start())
