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
        for path, render in ((self.svg, lambda: terminal_svg(self.console, self.title)),
                             (self.html, lambda: self.console.export_html(clear=False))):
            if path is not None:
                _write_export(path, render())


# The SVG's terminal cell: 12.2 px wide (rich's own export's), its font sized so that a monospace font's
# advance (0.6 em: DejaVu Sans Mono, Menlo, Fira Code) is that width.
SVG_CELL_WIDTH, SVG_LINE_HEIGHT, SVG_FONT_SIZE = 12.2, 24.4, 20.3
SVG_TOP, SVG_LEFT = 41.0, 9.0  # where the first line's cell begins: below the title bar, inside the frame
SVG_RUN = 8  # cells of text placed at their own column: a font's advance a little off drifts within 8 at most
SVG_FONTS = "'DejaVu Sans Mono', Menlo, 'Fira Code', Consolas, 'Liberation Mono', monospace"


def terminal_svg(console: Console, title: str) -> str:
    """What ``console`` recorded as an SVG image that renders the same in a browser, rsvg-convert and cairosvg:
    rich's own export needs a browser (CSS classes, web fonts, ``textLength`` to fit each run to its cells),
    so here every style is presentation attributes, and every run of at most :data:`SVG_RUN` cells of text
    is placed at its own column (:func:`_svg_runs`)."""
    from html import escape

    from rich.cells import cell_len
    from rich.segment import Segment
    from rich.terminal_theme import SVG_EXPORT_THEME as theme
    from rich.text import Text

    foreground, background = theme.foreground_color.hex, theme.background_color.hex
    lines = console.export_text(clear=False, styles=True).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    columns = max([console.width, *(cell_len(Text.from_ansi(line).plain) for line in lines)])
    top, left = SVG_TOP, SVG_LEFT
    width = left * 2 + columns * SVG_CELL_WIDTH
    height = top + len(lines) * SVG_LINE_HEIGHT + 10
    body = []
    for row, line in enumerate(lines):
        y = top + row * SVG_LINE_HEIGHT
        baseline = y + SVG_LINE_HEIGHT * 0.75
        column = 0
        for text, style, _ in Segment.simplify(Text.from_ansi(line).render(console)):
            fill, back = foreground, None
            if style is not None:
                fill = style.color.get_truecolor(theme).hex if style.color and not style.color.is_default else fill
                if style.bgcolor and not style.bgcolor.is_default:
                    back = style.bgcolor.get_truecolor(theme, foreground=False).hex
                if style.reverse:
                    fill, back = back or background, fill
                if style.dim:
                    fill = _blend(fill, background, 0.4)
            cells = cell_len(text)
            if back is not None:
                body.append(f'<rect x="{left + column * SVG_CELL_WIDTH:g}" y="{y:g}" '
                            f'width="{cells * SVG_CELL_WIDTH:g}" height="{SVG_LINE_HEIGHT:g}" fill="{back}"/>')
            attributes = f'fill="{fill}"'
            if style is not None and style.bold:
                attributes += ' font-weight="bold"'
            if style is not None and style.italic:
                attributes += ' font-style="italic"'
            if style is not None and (style.underline or style.strike):
                attributes += f' text-decoration="{"underline" if style.underline else "line-through"}"'
            for start, run in _svg_runs(text):
                x = left + (column + start) * SVG_CELL_WIDTH
                body.append(f'<text x="{x:g}" y="{baseline:g}" {attributes}>{escape(run, quote=False)}</text>')
            column += cells
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}" height="{height:g}" '
        f'viewBox="0 0 {width:g} {height:g}">',
        "<!-- gradcli: what the terminal showed; every style as attributes, every run of text at its column -->",
        f'<rect x="0.5" y="0.5" width="{width - 1:g}" height="{height - 1:g}" rx="8" fill="#292929" '
        'stroke="#6b6b6b"/>',
        *(f'<circle cx="{26 + 22 * k}" cy="22" r="7" fill="{c}"/>'
          for k, c in enumerate(("#ff5f57", "#febc2e", "#28c840"))),
        f'<text x="{width / 2:g}" y="27" fill="{foreground}" font-family="Arial, \'DejaVu Sans\', sans-serif" '
        f'font-size="18" font-weight="bold" text-anchor="middle">{escape(title)}</text>',
        f'<g font-family="{SVG_FONTS}" font-size="{SVG_FONT_SIZE:g}" xml:space="preserve">',
        *body, "</g>", "</svg>", ""])


def _svg_runs(text: str):
    """(cell offset, run) for each piece of ``text``: at most :data:`SVG_RUN` cells of characters, with the
    spaces that follow them (so that the pieces of a line, joined, are the line; a space is never the first
    visible thing in a piece, so no renderer's rules for white space can move a character)."""
    import re

    from rich.cells import cell_len

    offset = 0
    for match in re.finditer(r"[ \xa0]+|[^ \xa0]+[ \xa0]*", text):
        piece = match.group(0)
        word = piece.rstrip(" \xa0")
        run = ""
        for ch in word:
            if run and cell_len(run + ch) > SVG_RUN:
                yield offset, run
                offset += cell_len(run)
                run = ""
            run += ch
        run += piece[len(word):]
        yield offset, run
        offset += cell_len(run)


def _blend(color: str, onto: str, amount: float) -> str:
    """``color`` moved ``amount`` of the way to ``onto`` (rich's dim)."""
    a, b = (tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in (color, onto))
    return "#" + "".join(f"{round(x + (y - x) * amount):02x}" for x, y in zip(a, b))


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
