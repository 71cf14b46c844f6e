"""Shared pieces of rendering: number formats, strict JSON, CSV writing, the rich consoles."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from typing import Any, Iterable

from rich.console import Console


def number(x: float | None) -> str:
    """A value with every digit float64 needs to round-trip, so FD's error is visible (7.999999999999119)."""
    if x is None:
        return "undefined"
    if isinstance(x, float) and not math.isfinite(x):
        return "undefined"
    return repr(float(x))


def error(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0"
    return f"{x:.2e}"


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
    # gets '+/-' for '±' (rich draws ASCII boxes itself) instead of a UnicodeEncodeError.
    from gradcli.render.layout import encodable_file, terminal_width

    return Console(file=encodable_file(sys.stdout), highlight=False, width=terminal_width(sys.stdout, default=160))


def stderr_console() -> Console:
    from gradcli.render.layout import terminal_width

    return Console(file=sys.stderr, highlight=False, width=terminal_width(sys.stderr, default=160))


def print_diagnostics(warnings: list[str], notes: list[str]) -> None:
    """Warnings and notes go to stderr, one line each (escaped: they may quote what the user typed)."""
    from gradcli.errors import printable

    for w in warnings:
        print(f"gradcli: warning: {printable(w)}", file=sys.stderr)
    for n in notes:
        print(f"gradcli: note: {printable(n)}", file=sys.stderr)
