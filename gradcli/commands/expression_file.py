"""``--file PATH`` (``-``: standard input): the expression from a file, for every expression-taking command.

The file may span lines (a line break is a space) and carry comments: ``#`` to the end of its line is left
out (so comments do not count toward the expression's length limit). A position in the expression read is
mapped back to the file: an error's caret is reported as ``FILE:LINE:COLUMN`` under that line of the file.
"""

from __future__ import annotations

import bisect
import sys
from dataclasses import dataclass, field

from gradcli.errors import GradcliError, UsageError, display_width, printable
from gradcli.limits import EXPRESSION_MAX_CHARS
from gradcli.streams import stdin_refusal

# Larger files are refused, comments included: the parser's limit on the expression itself.
MAX_FILE_CHARS = EXPRESSION_MAX_CHARS


@dataclass
class ExpressionFile:
    label: str  # the path, or <stdin>
    original: str  # as read
    text: str  # the expression: comments left out, each line break a space
    #: (start in ``text``, start in ``original``) of each line's expression part, in order
    starts: list[tuple[int, int]] = field(default_factory=list)

    def locate(self, position: int) -> tuple[int, int, str]:
        """(line, column), both 1-based, and that line of the file, for a position in ``text``. A position in
        the trailing blanks (the end of the expression) is put just after its last character."""
        position = min(position, len(self.text.rstrip()))
        index = max(bisect.bisect_right(self.starts, (position, len(self.original) + 1)) - 1, 0)
        text_start, original_start = self.starts[index] if self.starts else (0, 0)
        position = original_start + position - text_start
        before = self.original[:position]
        line = before.count("\n") + 1
        start = before.rfind("\n") + 1
        end = self.original.find("\n", start)
        return line, position - start + 1, self.original[start:end if end >= 0 else len(self.original)]


# The file the running command read (one command at a time, also in ``gradcli shell``).
_current: ExpressionFile | None = None


def expression_text(expression: str | None, file: str | None) -> str:
    """EXPR or the expression of --file: exactly one of them."""
    global _current
    _current = None
    if expression is not None and file is not None:
        raise UsageError("give the expression or --file, not both")
    if file is None:
        if expression is None:
            raise UsageError("give an expression, e.g. \"x**2\", or --file PATH ('-': standard input)")
        return expression
    _current = read_expression_file(file)
    return _current.text


def read_expression_file(path: str) -> ExpressionFile:
    label = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            original = sys.stdin.read(MAX_FILE_CHARS + 1)
        else:
            with open(path, encoding="utf-8") as f:
                refusal = stdin_refusal(path, f.fileno())
                if refusal:
                    raise UsageError(f"--file {label} {refusal}")
                original = f.read(MAX_FILE_CHARS + 1)
    except UnicodeDecodeError:
        raise UsageError(f"--file {label}: not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"--file {label}: {exc.strerror or exc}") from None
    if len(original) > MAX_FILE_CHARS:
        raise UsageError(f"--file {label}: longer than {MAX_FILE_CHARS:,} characters")
    original = original.replace("\r\n", " \n").replace("\r", "\n")  # same length: positions still match
    # Comments are left out, not blanked: the expression's length limit is the expression's, not the
    # notes'. ``starts`` maps a position in the text read back to the file's line and column.
    pieces, starts, at, length = [], [], 0, 0
    for line in original.split("\n"):
        code = line.split("#", 1)[0]
        starts.append((length, at))
        pieces.append(code)
        length += len(code) + 1
        at += len(line) + 1
    text = " ".join(pieces)
    if not text.strip():
        raise UsageError(f"--file {label} has no expression (only blank lines or # comments)")
    return ExpressionFile(label, original, text, starts)


def file_error_lines(exc: GradcliError) -> list[str] | None:
    """An error inside the expression of --file as ``FILE:LINE:COLUMN: message`` and the caret under that
    line of the file; None for any other error."""
    if _current is None or exc.source != _current.text or exc.position is None:
        return None
    line, column, text = _current.locate(exc.position)
    caret = display_width(printable(text[:column - 1]))
    return [f"gradcli: error: {printable(_current.label)}:{line}:{column}: {printable(exc.message)}",
            "  " + printable(text), "  " + " " * caret + "^"]


def expressions_from(expressions: list[str] | None, file: str | None) -> list[str]:
    """grad's EXPR... or the one expression of --file."""
    if file is None and expressions:
        expression_text(expressions[0], None)  # (forgets an earlier command's file)
        return expressions
    return [expression_text(" ".join(expressions) if expressions else None, file)]
