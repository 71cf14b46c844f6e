"""What every terminal plot (plotext) shares: colour only on a terminal and never with
NO_COLOR, the terminal's width, the title and the legend printed outside the plot area (plotext draws its
legend over the data), integer step ticks, and plain ASCII when the output's encoding cannot hold box
drawing characters (a UnicodeEncodeError otherwise)."""

from __future__ import annotations

import math
import os
import unicodedata

from gradcli.render.layout import encodable, terminal_width, unicode_ok, wrap_plain

# Narrower than this plotext has no room for its axes: the plot overflows the terminal rather than breaking.
MIN_WIDTH = 30
MAX_WIDTH = 120
PIPE_WIDTH = 80


def colorless(file) -> bool:
    """No ANSI colours in a pipe, a file, or when NO_COLOR is set (https://no-color.org)."""
    isatty = getattr(file, "isatty", None)
    return isatty is None or not isatty() or bool(os.environ.get("NO_COLOR"))


def plot_width(file) -> int:
    return max(MIN_WIDTH, min(terminal_width(file, default=PIPE_WIDTH), MAX_WIDTH))


def integer_ticks(high: float, width: int) -> list[int]:
    """Round integer positions from 0 to ``high`` (about one per 12 columns): steps are counted, so the
    axis says 0 250 500 750, not 0.0e0 2.5e2."""
    top = max(1, math.ceil(high))
    wanted = max(2, width // 12)
    raw = top / wanted
    magnitude = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return list(range(0, top + 1, max(1, int(step))))


def _ascii_char(ch: str) -> str:
    """Box drawing as - | +; other symbols as :func:`gradcli.render.layout.encodable` spells them."""
    if ord(ch) < 128:
        return ch
    name = unicodedata.name(ch, "")
    if name.startswith("BOX DRAWINGS"):
        horizontal, vertical = "HORIZONTAL" in name, "VERTICAL" in name
        return "-" if horizontal and not vertical else "|" if vertical and not horizontal else "+"
    return encodable(ch, "ascii")


def for_output(text: str, file) -> str:
    """``text`` as the file can encode it: unchanged for UTF-8, else box drawing turned into ASCII."""
    if unicode_ok(file):
        return text
    return "".join(_ascii_char(ch) for ch in text)


def markers(file, unicode_markers: list[str]) -> list[str]:
    """The plot's markers, with non-ASCII ones replaced when the output cannot encode them."""
    if unicode_ok(file):
        return unicode_markers
    ascii_markers = [m for m in unicode_markers if m.isascii()]
    return ascii_markers + [m for m in "ox+*#@%&$=~^" if m not in ascii_markers]


def print_title(title: str, *, file, width: int) -> None:
    for line in wrap_plain(title, width):
        print(for_output(line, file), file=file)


def print_figure(fig, *, file, width: int, height: int) -> None:
    """Build the plotext figure at ``width`` x ``height`` and print it in the file's colours and encoding."""
    fig.plot_size(width, height)
    print(for_output(fig.build().string(colorless=colorless(file)), file), file=file)


def print_legend(entries: list[tuple[str, str]], *, file, width: int) -> None:
    """Under the plot, a line per marker: the data stays visible."""
    for marker, label in entries:
        for line in wrap_plain(f"  {marker}  {label}", width, indent=5):
            print(for_output(line, file), file=file)
