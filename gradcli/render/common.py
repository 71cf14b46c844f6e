"""Shared pieces of rendering: number formats, strict JSON, CSV writing, the rich consoles."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import sys
from contextvars import ContextVar
from typing import Any, Callable, Iterable

from rich.console import Console

from gradcli.render.layout import encodable_file, terminal_width
from gradcli.render.numbers import error, number  # noqa: F401 (the views' number formats, read from here too)

# The console the views draw on instead of stdout's, in this context (drawing_on: the Python API's tables,
# drawn into a string, each call in its own thread's context).
_drawing_console: ContextVar[Console | None] = ContextVar("gradcli_drawing_console", default=None)


def to_json(doc: dict) -> str:
    """Strict JSON: ``allow_nan=False`` fails loudly rather than print NaN/Infinity tokens."""
    return json.dumps(doc, indent=2, allow_nan=False)


def to_csv(header: list[str], rows: Iterable[list[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    from gradcli.streams import csv_headers

    if csv_headers.needed(header):  # a gradcli shell session continues the previous line's CSV
        writer.writerow(header)
    for row in rows:
        writer.writerow([_csv_cell(v) for v in row])
    return buf.getvalue()


def _csv_cell(v: Any) -> Any:
    """Empty for missing or non-finite numbers (as JSON's null); floats with every digit."""
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    return v


def stdout_console() -> Console:
    # COLUMNS or the terminal's width; when piped, wide enough for long formulas. Tables printed through
    # gradcli.render.layout fit whatever width this is without cutting anything; a stdout that is not UTF-8
    # gets '+/-' for '±' (rich draws ASCII boxes itself) instead of a UnicodeEncodeError. While --svg/--html
    # record (exporting), every view prints through the export's console: stdout, and the recording.
    if (console := _drawing_console.get()) is not None:
        return console
    if _export is not None:
        return _export.console
    return Console(file=encodable_file(sys.stdout), highlight=False, width=terminal_width(sys.stdout, default=160))


@contextlib.contextmanager
def drawing_on(console: Console):
    """Every view drawn in this block (in this context) draws on ``console``, not on stdout."""
    token = _drawing_console.set(console)
    try:
        yield console
    finally:
        _drawing_console.reset(token)


def stderr_console() -> Console:
    return Console(file=sys.stderr, highlight=False, width=terminal_width(sys.stderr, default=160))


def print_diagnostics(warnings: list[str], notes: list[str]) -> None:
    """Warnings and notes go to stderr, one line each (escaped: they may quote what the user typed)."""
    from gradcli.errors import printable

    for w in warnings:
        print_diagnostic(f"gradcli: warning: {printable(w)}", "warning")
    for n in notes:
        print_diagnostic(f"gradcli: note: {printable(n)}", "note")


def print_diagnostic(line: str, kind: str) -> None:
    """One line on stderr (``kind``: warning, note or summary), and in the --svg/--html export, styled apart."""
    print(line, file=sys.stderr)
    if _export is not None:
        _export.diagnostic(line, kind)


# ---------------------------------------------------------------------------------------------
# Slides: --svg FILE and --html FILE, a recording of what a command shows
# ---------------------------------------------------------------------------------------------
# The formats a command shows to a person (a table, check's text, eval's number): the ones an export records.
HUMAN_FORMATS = ("table", "text", "plain")
DIAGNOSTIC_STYLES = {"warning": "bold yellow", "note": "dim", "summary": "dim"}


class Export:
    """One command's output as rich records it, for ``--svg``/``--html``: what goes to stdout (the rich
    tables through :func:`stdout_console`, plain ``print`` lines through a tee on ``sys.stdout``) and the
    diagnostics that go to stderr, styled apart. The export is what the terminal shows, at its width."""

    def __init__(self, svg: str | None, html: str | None, title: str):
        self.svg, self.html, self.title = svg, html, title
        self.stdout = sys.stdout
        self.console = Console(file=encodable_file(self.stdout), record=True, highlight=False,
                               width=terminal_width(self.stdout, default=160))

    def record(self, text) -> None:
        """``text`` (a str, which may carry ANSI styles, or rich Text) into the recording only."""
        from rich.text import Text

        if isinstance(text, str):
            text = _text_from_ansi(text) if "\x1b" in text else Text(text)
        shown, self.console.file = self.console.file, io.StringIO()
        try:
            self.console.print(text, end="", soft_wrap=True, markup=False, highlight=False)
        finally:
            self.console.file = shown

    def diagnostic(self, line: str, kind: str) -> None:
        """A stderr line in the recording, wrapped at spaces to the console's width (prose: 'two-sided'
        stays whole; a word longer than a line keeps a line of its own)."""
        import textwrap

        from rich.text import Text

        pieces = textwrap.wrap(line, self.console.width, subsequent_indent="  ", break_long_words=False,
                               break_on_hyphens=False) or [""]
        for piece in pieces:
            self.record(Text(piece + "\n", style=DIAGNOSTIC_STYLES[kind]))

    def save(self) -> None:
        """Write the files. The frame is as wide as the widest line (never narrower: nothing is clipped)."""
        from rich.cells import cell_len

        text = self.console.export_text(clear=False)
        self.console.width = max([20, *(cell_len(line) for line in text.splitlines())])
        for path, render in ((self.svg, lambda: self.console.export_svg(title=self.title, clear=False)),
                             (self.html, lambda: self.console.export_html(clear=False))):
            if path is not None:
                _write_export(path, render())


def _text_from_ansi(text: str):
    """Styled text from ANSI escapes (a plot drawn in colour), with its trailing newline kept."""
    from rich.text import Text

    return Text("\n").join(Text.from_ansi(line) for line in text.split("\n"))


def _write_export(path: str, content: str) -> None:
    from gradcli.output_files import write_whole

    write_whole(path, lambda file: file.write(content))


class _Tee:
    """``sys.stdout`` while an export records: each write goes to stdout and into the recording."""

    def __init__(self, export: Export):
        self._export = export

    def write(self, text: str) -> int:
        written = self._export.stdout.write(text)
        self._export.record(text)
        return written

    def __getattr__(self, name):
        return getattr(self._export.stdout, name)


_export: Export | None = None


@contextlib.contextmanager
def exporting(svg: str | None, html: str | None, *, output=None, title: str = "gradcli",
              shown: Callable[[BaseException], bool] = lambda exc: False):
    """Record the command run inside for ``--svg``/``--html`` (nothing when both are None) and write the
    files when it ends with its output shown: normally, or by an exception ``shown`` accepts (the CLI's
    exit 1 after a table with an undefined value). The export is of what a person reads: with ``-f json``,
    ``csv`` or ``latex`` it is refused (a UsageError, before anything runs)."""
    global _export
    if svg is None and html is None:
        yield
        return
    from gradcli.errors import UsageError

    format_name = getattr(output, "value", output)
    if format_name is not None and format_name not in HUMAN_FORMATS:
        raise UsageError(f"--svg and --html record the table a person reads: drop -f {format_name} "
                         f"(or write it with shell redirection: -f {format_name} > FILE)")
    if svg is not None and html is not None and os.path.abspath(svg) == os.path.abspath(html):
        raise UsageError("--svg and --html name the same file: give each its own")
    export = Export(svg, html, title)
    previous, _export = _export, export
    sys.stdout = _Tee(export)
    save = False
    try:
        yield
        save = True
    except BaseException as exc:
        save = shown(exc)
        raise
    finally:
        sys.stdout = export.stdout
        _export = previous
        if save:  # after the restore: a file that cannot be written is an error of its own
            export.save()
