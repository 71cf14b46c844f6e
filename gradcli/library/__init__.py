"""gradcli as a library: one Request per command, run by the batch engine with a given sink, giving a Run.

- :mod:`gradcli.library.requests`: :class:`GradRequest`, :class:`HessianRequest`, :class:`DerivativeRequest`,
  :class:`EvalRequest`, :class:`DescendRequest`, :class:`CheckRequest`: every option of the command with its
  default (written here once: the Typer commands and the Python API take theirs from these), checked once.
- :mod:`gradcli.library.run`: :class:`Run` (header, summary, warnings, notes, failed; the records when
  collected) and :class:`Collect`, the sink that keeps the records.
- :mod:`gradcli.library.points`: what the points may be (the --at texts or a mapping, a path, a mapping of
  columns or a DataFrame) and their chunks.

The CLI is one client (gradcli.commands: its options -> a Request -> run with the format's writer), the Python
API another (gradcli.api: keyword arguments -> the same Request -> run with :class:`Collect` -> a Result).
Nothing here imports Typer, Click or rich, nor writes to stdout or stderr; this module imports nothing heavy.
"""

from __future__ import annotations

_EXPORTS = {
    "GradRequest": "requests", "HessianRequest": "requests", "DerivativeRequest": "requests",
    "EvalRequest": "requests", "DescendRequest": "requests", "CheckRequest": "requests",
    "PropagateRequest": "propagate_request", "Run": "run", "Collect": "run",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f"gradcli.library.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'gradcli.library' has no attribute {name!r}")
