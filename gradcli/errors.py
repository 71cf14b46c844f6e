"""The one exception family gradcli raises, and the exit code each member maps to.

The core raises these; only the CLI turns them into an exit status (see ``gradcli.cli``).
"""

from __future__ import annotations


class GradcliError(Exception):
    """Base class: every error meant for the user. ``exit_code`` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str, *, source: str | None = None, position: int | None = None):
        super().__init__(message)
        self.message = message
        #: the text the error points into (an expression or an option value), for the caret line
        self.source = source
        #: 0-based column in ``source`` that the error is about
        self.position = position

    def one_line(self) -> str:
        if self.position is not None:
            return f"{self.message} (column {self.position + 1})"
        return self.message

    def caret_lines(self) -> list[str]:
        """The source with a caret under the offending column, or nothing when there is no position."""
        if self.source is None or self.position is None:
            return []
        return ["  " + self.source, "  " + " " * self.position + "^"]


class UsageError(GradcliError):
    """Bad options or values on the command line (exit 2)."""

    exit_code = 2


class ParseError(UsageError):
    """An expression gradcli refuses to read: bad syntax, a forbidden construct, a hostile size (exit 2)."""


class ComputeError(GradcliError):
    """A well-formed request whose result cannot be computed: undefined point, overflow, divergence (exit 1)."""

    exit_code = 1
