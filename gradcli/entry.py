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
        from gradcli.worker import prestart_worker

        prestart_worker()
    from gradcli.cli import app

    app(prog_name="gradcli")
