"""CSV input: a header row of column names, then one point per row."""

from __future__ import annotations

import csv
from typing import Iterator

from gradcli.expression.sources.lines import Lines
from gradcli.expression.sources.messages import Where, both_message, missing_message, show
from gradcli.expression.sources.numbers import ASCII_SPACE, NotANumber, parse_number
from gradcli.expression.sources.shapes import Needs, Row


# Python's csv messages, worded as gradcli's own.
_CSV_MESSAGES = (
    ("expected after", "a quoted field must end with '\"' followed by ',' or the end of the line"),
    ("unexpected end of data", "a quoted field has no closing '\"' before the end of the input"),
    ("new-line character seen in unquoted field", "a carriage return inside a field that is not quoted"),
    ("field larger than field limit", "a field is longer than {limit:,} characters"),
    ("line contains NUL", "the line contains a NUL byte"),
)


def _csv_message(msg: str) -> str:
    for python, ours in _CSV_MESSAGES:
        if python in msg:
            return ours.format(limit=csv.field_size_limit())
    return "the line is not CSV"


class CsvReader:
    format = "csv"

    def __init__(self, lines: Lines, where: Where, needs: Needs, *, require_header: bool):
        self._where = where
        self._needs = needs
        self._reader = csv.reader(lines, strict=True)
        header = self._next_row()
        if header is None:
            if require_header:
                raise where.at(None, "is empty: a CSV file needs a header row of column names")
            self.field_names: list[str] = []
            self._columns: list[tuple[str, int]] = []
            self._passing: list[tuple[str, int]] = []
            self._width = 0
            self._done = True
            return
        self._done = False
        line, names = header
        names = [n.strip(ASCII_SPACE) for n in names]
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if not name:
                raise where.at(line, f"column {i + 1} of the header has no name")
            if name in seen:
                raise where.at(line, f"column {show(name)} appears twice in the header "
                                     f"(columns {seen[name] + 1} and {i + 1})")
            seen[name] = i
        for v in needs.names:
            if v in seen and v in needs.fixed:
                raise where.at(line, both_message(v, "column", needs.fixed_option))
        missing = [v for v in needs.from_input if v not in seen]
        if missing:
            raise where.at(line, missing_message("column", missing, needs.fixed_option))
        self._width = len(names)
        self._columns = [(v, seen[v]) for v in needs.from_input]
        self._passing = [(n, i) for i, n in enumerate(names) if n not in needs.needed]
        self.field_names = [n for n, _ in self._passing]

    def _next_row(self) -> tuple[int, list[str]] | None:
        while True:
            start = self._reader.line_num + 1
            try:
                row = next(self._reader)
            except StopIteration:
                return None
            except csv.Error as exc:
                raise self._where.at(start, f"malformed CSV: {_csv_message(str(exc))}") from None
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # a blank line
            return start, row

    def rows(self) -> Iterator[Row]:
        if self._done:
            return
        where, width, columns, passing = self._where, self._width, self._columns, self._passing
        while True:
            got = self._next_row()
            if got is None:
                return
            line, row = got
            if len(row) != width:
                few = "missing" if len(row) < width else "extra"
                raise where.at(line, f"{few} field: the row has {len(row)} field{'s' if len(row) != 1 else ''}, "
                                     f"the header {width}")
            values = []
            for name, i in columns:
                try:
                    values.append(parse_number(row[i]))
                except NotANumber as exc:
                    raise where.at(line, f"{name}: {show(row[i])} {exc.reason}") from None
                misfit = self._needs.misfit(name, values[-1])
                if misfit:
                    raise where.at(line, misfit)
            yield line, values, {n: row[i] for n, i in passing}
