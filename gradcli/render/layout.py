"""Tables and lines that fit any terminal width without cutting anything.

rich shrinks a table that is wider than the console by cutting cells with '…' (or, with
``overflow="fold"``, by splitting them over lines): either way a number reads as another number. Here
every column is ``no_wrap`` and the layout is chosen before rich sees it:

1. the whole table, when its natural width fits;
2. formula-like columns (``Column.role == FORMULA``: formulas, prose) listed under the table;
3. also secondary columns (an error, a time) stacked under the column they belong to (``Column.under``);
4. a record per row: ``name: value`` lines, prose wrapped at spaces and operators, numbers never.

Whenever the table is not shown whole, a note on stderr says how it was laid out and how to see the table
(a wider terminal or ``--format json``). Titles and header lines wrap at spaces and operator boundaries
only, never inside a number or a name.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import weakref
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gradcli.render.numbers import error

VALUE, FORMULA, SECONDARY = "value", "formula", "secondary"
# Record layout: a value that does not fit beside its name goes on the next line, indented this much.
_VALUE_INDENT = 4
# Tokens that must stay whole: numbers (with their exponent's sign), names, '**'; anything else is one char.
_TOKEN = re.compile(r"\s+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[A-Za-z_][A-Za-z_0-9]*|\*\*|.", re.DOTALL)
_BREAK_AFTER = {"*", "/", ",", "(", ";"}  # not after "**": the power stays with its base
_OPERAND_END = re.compile(r"[A-Za-z_0-9.)\]]$")


def terminal_width(file, *, default: int) -> int:
    """COLUMNS when set (a user's override, a test), else the terminal's width, else ``default`` (a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    isatty = getattr(file, "isatty", None)
    if isatty is not None and isatty():
        return shutil.get_terminal_size().columns
    return default


# Characters gradcli writes beyond ASCII, and what an output that cannot encode them gets instead.
_ASCII_FALLBACK = str.maketrans({"±": "+/-", "λ": "lambda", "…": "...", "•": "*", "×": "x", "−": "-"})


def unicode_ok(file) -> bool:
    encoding = (getattr(file, "encoding", None) or "utf-8").lower().replace("_", "-")
    return encoding.startswith("utf")


def encodable(text: str, encoding: str) -> str:
    """``text`` as ``encoding`` can write it: what it cannot encode spelled in ASCII ('+/-'), else '?'."""
    try:
        text.encode(encoding)
        return text
    except UnicodeEncodeError:
        pass
    out = []
    for ch in text:
        try:
            ch.encode(encoding)
            out.append(ch)
        except UnicodeEncodeError:
            out.append(ch.translate(_ASCII_FALLBACK) if ord(ch) in _ASCII_FALLBACK else "?")
    return "".join(out)


def _encodable_text(console: Console, text: Text) -> Text:
    """Before measuring: a cell as the console's encoding can write it (styles of parts are lost then)."""
    if console.encoding.startswith("utf"):
        return text
    plain = encodable(text.plain, console.encoding)
    return text if plain == text.plain else Text(plain, style=text.style)


def _encodable_table(console: Console, table: FittedTable) -> FittedTable:
    if console.encoding.startswith("utf"):
        return table
    columns = [Column(encodable(c.header, console.encoding), c.justify, c.style, c.role,
                      None if c.under is None else encodable(c.under, console.encoding)) for c in table.columns]
    rows = [[_encodable_text(console, cell) for cell in row] for row in table.rows]
    title = None if table.title is None else encodable(table.title, console.encoding)
    return FittedTable(columns, title, rows)


class _EncodableFile:
    """A text file whose writes are made encodable first (rich's console writes through it)."""

    def __init__(self, file):
        self._file = file

    def write(self, text: str) -> int:
        return self._file.write(encodable(text, self._file.encoding))

    def __getattr__(self, name):
        return getattr(self._file, name)


def encodable_file(file):
    """``file`` itself when it takes UTF-8; else a wrapper that never raises UnicodeEncodeError."""
    return file if unicode_ok(file) else _EncodableFile(file)


# ---------------------------------------------------------------------------------------------
# Lines: wrap at spaces and operator boundaries only
# ---------------------------------------------------------------------------------------------
def _break_points(plain: str) -> list[int]:
    """Offsets where a line may end: after spaces, after ``* / , (``, before a binary + or -."""
    points = []
    last = ""  # the last token that is not a space
    for m in _TOKEN.finditer(plain):
        token = m.group()
        if token in ("+", "-") and _OPERAND_END.search(last):
            points.append(m.start())
        if token.isspace() or token in _BREAK_AFTER:
            points.append(m.end())
        if not token.isspace():
            last = token
    points.append(len(plain))
    return sorted({p for p in points if 0 < p <= len(plain)})


def _cuts(plain: str, width: int, indent: int) -> list[int]:
    """Greedy line ends: as much as fits on each line; a piece wider than a whole line takes a line of its
    own and overflows it rather than being cut."""
    def length(start: int, end: int) -> int:  # continuation lines lose their leading spaces; the first keeps them
        piece = plain[start:end].rstrip()
        return len(piece.lstrip()) if start else len(piece)

    cuts, start, room, last_fit = [], 0, width, None
    for point in _break_points(plain):
        if length(start, point) <= room:
            last_fit = point
            continue
        if last_fit is not None and last_fit > start:
            cuts.append(last_fit)
            start, room = last_fit, width - indent
            if length(start, point) <= room:
                last_fit = point
                continue
        cuts.append(point)
        start, room, last_fit = point, width - indent, None
    return [c for c in cuts if 0 < c < len(plain)]


def wrap_text(text: Text | str, width: int, *, indent: int = 2) -> list[Text]:
    """``text`` as lines of at most ``width`` cells (continuations indented), broken only where
    :func:`_break_points` allows; a number or name longer than a line stays whole."""
    if isinstance(text, str):
        text = Text(text)
    lines = []
    for index, piece in enumerate(text.divide(_cuts(text.plain, max(1, width), indent))):
        lead = len(piece.plain) - len(piece.plain.lstrip())
        piece = piece[lead:] if index else piece
        piece.rstrip()
        lines.append(Text(" " * indent) + piece if index else piece)
    return lines


def wrap_plain(text: str, width: int, *, indent: int = 2) -> list[str]:
    return [line.plain for line in wrap_text(text, width, indent=indent)]


def print_line(console: Console, text: Text | str, *, indent: int = 2, markup: bool = True) -> None:
    """One logical line (rich markup allowed), wrapped to the console's width at safe points only."""
    if isinstance(text, str):
        text = Text.from_markup(text) if markup else Text(text)
    text = _encodable_text(console, text)
    for line in wrap_text(text, console.width, indent=indent):
        console.print(line, soft_wrap=True)


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------
@dataclass
class Column:
    header: str
    justify: str = "right"
    style: str = ""
    role: str = VALUE  # VALUE: never wrapped; FORMULA: may move under the table; SECONDARY: may stack under `under`
    under: str | None = None  # SECONDARY columns: the header of the column they belong to (an error's value)


@dataclass
class FittedTable:
    """A table's content; :func:`print_table` picks the layout. Cells are plain strings or rich Text."""

    columns: list[Column]
    title: str | None = None
    rows: list[list[Text]] = field(default_factory=list)

    def add_row(self, *cells: str | Text) -> None:
        self.rows.append([c if isinstance(c, Text) else Text(str(c)) for c in cells])


def estimate(x: float | None) -> str:
    """A method's own error estimate in its column: '± 3.56e-09', or '-' where there is no value (None, or
    NaN beside an undefined value)."""
    return "-" if x is None or x != x else "± " + error(x)


def method_columns(methods: list[str], labels: dict[str, str]) -> list[Column]:
    """grad's and derivative's columns per method: its value, then (stacked under it when narrow) its error
    against the exact column when SymPy's is there, and fd's and the complex step's own error estimates, with
    or without it."""
    columns = []
    for m in methods:
        columns.append(Column(labels[m]))
        if m != "symbolic" and "symbolic" in methods:
            columns.append(Column(f"{m} error", role=SECONDARY, under=labels[m]))
        if m in ("fd", "complex"):  # gradcli.methods.fd_error, gradcli.methods.complex_step
            columns.append(Column(f"{m} ± estimate", role=SECONDARY, under=labels[m]))
    return columns


def print_table(console: Console, table: FittedTable) -> str:
    """Print ``table`` in the first layout that fits the console; returns the layout's name."""
    table = _encodable_table(console, table)
    if table.title:
        print_line(console, Text(table.title, style="italic"), markup=False)
    if not table.rows:
        return "empty"
    for name, columns, rows, formulas, how in _candidate_layouts(table):
        rich_table = _rich_table(columns, rows)
        if _natural_width(console, rich_table) <= console.width:
            console.print(rich_table)
            if formulas:
                _print_formulas(console, table, formulas)
            if how:
                _note(console, how)
            return name
    _print_records(console, table)
    _note(console, "the table is shown as one record per row")
    return "records"


def _candidate_layouts(table: FittedTable):
    """(name, columns, rows, formula columns listed under it, what changed), from the whole table to the most
    compact."""
    yield "table", table.columns, table.rows, [], ""
    headers = [c.header for c in table.columns]
    formulas = [i for i, c in enumerate(table.columns) if c.role == FORMULA]
    kept = [i for i in range(len(table.columns)) if i not in formulas]
    moved = f"{_names(headers[i] for i in formulas)} listed under the table" if formulas else ""
    if formulas and len(kept) > 1:
        yield "formulas below", [table.columns[i] for i in kept], [[r[i] for i in kept] for r in table.rows], \
            formulas, moved
    stacked = {i: headers.index(c.under) for i, c in enumerate(table.columns)
               if c.role == SECONDARY and c.under in headers and headers.index(c.under) in kept}
    if stacked:
        columns, rows = _stack(table, [i for i in kept if i not in stacked], stacked)
        targets = dict.fromkeys(stacked.values())
        how = "; ".join(f"{_names(headers[i] for i in stacked if stacked[i] == j)} in parentheses under '{headers[j]}'"
                        for j in targets)
        yield "stacked", columns, rows, formulas, "; ".join(filter(None, [moved, how]))


def _names(headers) -> str:
    return ", ".join(f"'{h}'" for h in headers)


def _stack(table: FittedTable, kept: list[int], stacked: dict[int, int]):
    """Each secondary column folded into its column (several may share one): the header and every cell get a
    line per secondary column, in parentheses."""
    below: dict[int, list[int]] = {}
    for source, target in stacked.items():
        below.setdefault(target, []).append(source)
    columns = []
    for i in kept:
        c = table.columns[i]
        header = "\n".join([c.header, *[f"({table.columns[j].header})" for j in below.get(i, [])]])
        columns.append(Column(header, c.justify, c.style))
    rows = []
    for r in table.rows:
        rows.append([Text.assemble(r[i], *[part for j in below[i] for part in ("\n(", r[j], ")")])
                     if i in below else r[i] for i in kept])
    return columns, rows


def _rich_table(columns: list[Column], rows: list[list[Text]]) -> Table:
    t = Table()
    for c in columns:
        t.add_column(c.header, justify=c.justify, style=c.style or None, no_wrap=True)
    for r in rows:
        t.add_row(*r)
    return t


def _natural_width(console: Console, table: Table) -> int:
    return console.measure(table, options=console.options.update_width(1_000_000)).maximum


def _print_formulas(console: Console, table: FittedTable, formulas: list[int]) -> None:
    """The formula columns of a table shown without them: the column's name, then ``key: formula`` lines."""
    for i in formulas:
        print_line(console, Text(table.columns[i].header, style="bold"), markup=False)
        for r in table.rows:
            print_line(console, Text.assemble("  ", r[0], ": ", r[i]), indent=4, markup=False)


def _print_records(console: Console, table: FittedTable) -> None:
    """A block per row: the first column's ``name: value``, then the others indented, one a line."""
    key = table.columns[0]
    for n, r in enumerate(table.rows):
        if n:
            console.print()
        head = Text.assemble((f"{key.header}: " if key.header else "", "bold"), r[0])
        print_line(console, head, markup=False)
        for c, cell in zip(table.columns[1:], r[1:]):
            if cell.plain:  # an empty cell (a row of counts only) has nothing to say
                _print_field(console, c, cell)


def _print_field(console: Console, column: Column, cell: Text) -> None:
    """``  name: value`` on one line when it fits; else the name, then the value on lines of its own (a
    formula wrapped at operators, a number whole even when it is wider than the terminal)."""
    line = Text.assemble("  ", (column.header, "bold"), ": ", cell)
    if line.cell_len <= console.width:
        console.print(line, soft_wrap=True)
        return
    print_line(console, Text.assemble("  ", (column.header + ":", "bold")), indent=4, markup=False)
    indent = max(0, min(_VALUE_INDENT, console.width - cell.cell_len))
    if column.role == FORMULA:
        print_line(console, Text.assemble(" " * indent, cell), indent=indent + 2, markup=False)
    else:
        for part in cell.split("\n"):
            console.print(Text.assemble(" " * indent, part), soft_wrap=True)


_noted: weakref.WeakKeyDictionary[Console, set[str]] = weakref.WeakKeyDictionary()


def _note(console: Console, how: str) -> None:
    """Once per console and layout, on stderr: how the table was laid out and how to see it whole."""
    seen = _noted.setdefault(console, set())
    if how in seen:
        return
    seen.add(how)
    print(f"gradcli: note: at {console.width} columns, {how}; a wider terminal (or COLUMNS=...) shows the whole "
          "table, and --format json has every field", file=sys.stderr)


def print_side_by_side(console: Console, tables: list[FittedTable], *, gap: int = 2) -> None:
    """Small tables (a Hessian per method) next to each other when they all fit in one row, else one after
    another, each in the layout that fits."""
    from rich.columns import Columns

    tables = [_encodable_table(console, t) for t in tables]
    rendered = []
    for t in tables:
        r = _rich_table(t.columns, t.rows)
        r.title, r.title_justify = t.title, "left"
        rendered.append(r)
    widths = [max(_natural_width(console, r), len(t.title or "")) for r, t in zip(rendered, tables)]
    if len(tables) > 1 and sum(widths) + gap * (len(tables) - 1) <= console.width:
        console.print(Columns(rendered, padding=(0, gap)))
        return
    for t in tables:
        print_table(console, t)
