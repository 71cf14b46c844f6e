"""JSON Lines input: one JSON object per line, one point per object."""

from __future__ import annotations

import json
import math
import sys
from typing import Iterator

from gradcli.expression.sources.lines import Lines
from gradcli.expression.sources.messages import Where, both_message, missing_message, short_detail, show, show_json
from gradcli.expression.sources.numbers import NotANumber, parse_number
from gradcli.expression.sources.shapes import Needs, Row


class _NonFinite:
    """NaN / Infinity / -Infinity in JSON text: Python's json reads them, JSON does not have them."""

    def __init__(self, text: str):
        self.text = text


class _OutOfRange:
    """A JSON number beyond float64 (``1e400``): Python's json reads it as infinity, which no JSON
    writer can give back; the text is kept for the error message."""

    def __init__(self, text: str):
        self.text = text


class _DuplicateKey(ValueError):
    pass


class Fields(dict):
    """One record's pass-through keys, with ``columns``: every pass-through key of the whole input (a
    regular file, read whole before anything is computed), in order of first appearance. A CSV written
    from JSON Lines takes its columns from here, not from the first record, whose keys may be fewer.
    True even when empty, so that each record of such an input carries its (maybe empty) fields."""

    __slots__ = ("columns",)

    def __init__(self, items, columns: tuple[str, ...]):
        super().__init__(items)
        self.columns = columns

    def __bool__(self) -> bool:
        return bool(self.columns) or len(self) > 0


# Python's json messages, worded as gradcli's own (the column is added after).
_JSON_MESSAGES = (
    ("Expecting value", "a value is missing or is not JSON"),
    ("Expecting ',' delimiter", "a ',' is missing between two items"),
    ("Expecting ':' delimiter", "a ':' is missing after a key"),
    ("Expecting property name enclosed in double quotes", "a key must be a string in double quotes"),
    ("Unterminated string", "a string has no closing '\"'"),
    ("Invalid control character", "a control character (a tab, a newline) in a string must be escaped"),
    ("Invalid \\uXXXX escape", "a \\u escape needs four hexadecimal digits"),
    ("Invalid \\escape", "a string has an unknown backslash escape"),
    ("Extra data", "there is more text after the object (one object per line)"),
)


def _value_message(exc: ValueError) -> str:
    """A JSON number Python will not convert, in gradcli's words (not Python's advice on sys settings)."""
    text = str(exc)
    if "integer string conversion" in text:
        return (f"an integer with more than {sys.get_int_max_str_digits()} digits, far beyond what float64 holds "
                "(1.8e308)")
    return short_detail(text or type(exc).__name__)


def _json_message(msg: str) -> str:
    for python, ours in _JSON_MESSAGES:
        if msg.startswith(python):
            return ours
    return "the text is not JSON"


def _object_pairs(pairs: list[tuple[str, object]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(f"duplicate key {show(k)}")
            seen.add(k)
    return d


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    return "a number"


class JsonlReader:
    format = "jsonl"

    def __init__(self, lines: Lines, where: Where, needs: Needs, *, columns: tuple[str, ...] | None = None):
        """``columns``: every pass-through key of the input, known when a regular file was read whole
        before (each row's fields are then :class:`Fields` carrying them)."""
        self._lines = lines
        self._where = where
        self._needs = needs
        self._columns = columns
        self._non_finite: list[_NonFinite | _OutOfRange] = []
        self._decoder = json.JSONDecoder(parse_constant=self._constant, parse_float=self._float,
                                         object_pairs_hook=_object_pairs)
        self._seen: dict[str, None] = {}
        self._first = self._next_record()
        if self._first is not None:
            line, obj = self._first
            missing = [v for v in needs.from_input if v not in obj]
            if missing:
                raise where.at(line, missing_message("key", missing, needs.fixed_option))
            self._check_both(line, obj)
            self._register(obj)  # field_names is known from the first record on

    @property
    def field_names(self) -> list[str]:
        return list(self._seen)

    def _constant(self, text: str) -> _NonFinite:
        marker = _NonFinite(text)
        self._non_finite.append(marker)
        return marker

    def _float(self, text: str) -> "float | _OutOfRange":
        value = float(text)
        if math.isinf(value):
            marker = _OutOfRange(text)
            self._non_finite.append(marker)
            return marker
        return value

    def _next_record(self) -> tuple[int, dict] | None:
        where = self._where
        for text in self._lines:
            if not text.strip():
                continue
            line = self._lines.number
            self._non_finite.clear()
            text = text.rstrip("\r\n")  # a column past the end would be on the "next line"
            try:
                obj = self._decoder.decode(text)
            except json.JSONDecodeError as exc:
                at = "at the end of the line" if exc.pos >= len(text.rstrip()) else f"column {exc.colno}"
                raise where.at(line, f"invalid JSON: {_json_message(exc.msg)} ({at})") from None
            except _DuplicateKey as exc:
                raise where.at(line, f"invalid JSON: {exc}") from None
            except RecursionError:
                raise where.at(line, "invalid JSON: nested too deeply (arrays or objects within each other "
                                     "hundreds of levels deep)") from None
            except ValueError as exc:
                raise where.at(line, f"invalid JSON: {_value_message(exc)}") from None
            if not isinstance(obj, dict):
                raise where.at(line, f"expected a JSON object {{...}} on each line, got {_json_kind(obj)}")
            if self._non_finite:
                for name in self._needs.from_input:
                    v = obj.get(name)
                    if isinstance(v, (_NonFinite, _OutOfRange)):
                        raise where.at(line, f"{name}: {short_detail(v.text, 40)} is not a finite number")
                first = self._non_finite[0]
                if isinstance(first, _OutOfRange):
                    raise where.at(line, f"{short_detail(first.text, 40)} is beyond the float64 range (about 1.8e308) and "
                                         "cannot be passed through as a number: write it as a string")
                raise where.at(line, f"invalid JSON: {self._non_finite[0].text} is not a JSON value "
                                     "(JSON has no NaN or Infinity)")
            return line, obj
        return None

    def _register(self, obj: dict) -> None:
        seen, needed = self._seen, self._needs.needed
        for k in obj:
            if k not in seen and k not in needed:
                seen[k] = None

    def _check_both(self, line: int, obj: dict) -> None:
        for v in self._needs.fixed:
            if v in obj:
                raise self._where.at(line, both_message(v, "key", self._needs.fixed_option))

    def _number(self, line: int, name: str, value: object) -> float:
        where = self._where
        if isinstance(value, str):
            try:
                return parse_number(value)
            except NotANumber as exc:
                raise where.at(line, f"{name}: {show(value)} {exc.reason}") from None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:
                number = math.inf
            if math.isfinite(number):
                return number
            raise where.at(line, f"{name}: {show_json(value)} is not a finite number")
        raise where.at(line, f"{name}: {show_json(value)} is not a number ({_json_kind(value)})")

    def rows(self) -> Iterator[Row]:
        needs, where = self._needs, self._where
        record = self._first
        self._first = None
        if record is None:
            record = self._next_record()
        while record is not None:
            line, obj = record
            if needs.fixed:
                self._check_both(line, obj)
            values = []
            for name in needs.from_input:
                if name not in obj:
                    raise where.at(line, missing_message("key", [name], needs.fixed_option))
                values.append(self._number(line, name, obj[name]))
                misfit = needs.misfit(name, values[-1])
                if misfit:
                    raise where.at(line, misfit)
            fields = {k: v for k, v in obj.items() if k not in needs.needed}
            if self._columns is not None:
                fields = Fields(fields, self._columns)
            self._register(fields)
            yield line, values, fields
            record = self._next_record()
