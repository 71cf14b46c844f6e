"""The one exception family gradcli raises, and the exit code each member maps to.

The core raises these; only the CLI turns them into an exit status (see ``gradcli.cli``).
"""

from __future__ import annotations

import unicodedata

# Characters never written raw in a message: controls (C0, C1, DEL), format characters (bidi overrides and
# isolates, zero-width spaces and joiners, BOM), lone surrogates (undecodable bytes in argv), private-use and
# unassigned code points, and the line/paragraph separators. Raw, they retitle or clear a terminal, reorder
# the line it shows, or hide text.
_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _escape(ch: str) -> str:
    if unicodedata.category(ch) not in _UNPRINTABLE_CATEGORIES:
        return ch
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: unprintable characters shown as ``\\x1b``, ``\\u202e``, ``\\U000e0001``.

    Every message gradcli writes about user input goes through here (errors, caret lines, warnings, notes,
    Click's usage errors)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape(ch) for ch in text)


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide (East Asian) characters 2, combining marks 0."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def number_text(x: float) -> str:
    """A number in a message with the digits needed to tell it apart (shortest round trip: ``1.0000001``,
    ``5e-324``), an integral value without ``.0`` (``x=2``)."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


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
        """The message, escaped (see :func:`printable`); the column counts characters of what was typed."""
        if self.position is not None:
            return f"{printable(self.message)} (column {self.position + 1})"
        return printable(self.message)

    def caret_lines(self) -> list[str]:
        """The source (escaped) with a caret under the offending character, or nothing without a position.
        The caret is placed by the escaped text's display width, so it stays under the character."""
        if self.source is None or self.position is None:
            return []
        shown = printable(self.source)
        column = display_width(printable(self.source[:self.position]))
        return ["  " + shown, "  " + " " * column + "^"]


class UsageError(GradcliError):
    """Bad options or values on the command line (exit 2)."""

    exit_code = 2


class ParseError(UsageError):
    """An expression gradcli refuses to read: bad syntax, a forbidden construct, a hostile size (exit 2)."""


class ComputeError(GradcliError):
    """A well-formed request whose result cannot be computed: undefined point, overflow, divergence (exit 1)."""

    exit_code = 1
