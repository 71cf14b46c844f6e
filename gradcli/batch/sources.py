"""Where batch points come from: ``--points FILE`` (CSV or JSON Lines, ``-`` for stdin) and ``--grid SPEC``.

Pure core: no typer, rich, sympy or tensorflow here; NumPy is imported when chunks are built.

A :class:`PointSource` hands out :class:`PointChunk` s of at most ``chunk_size`` points: one float64
array per needed variable (values fixed by ``--at`` broadcast), the pass-through columns of every
point, and the line each point came from. Memory is bounded by ``chunk_size``, never by the input:

- a FILE is read twice. :func:`open_points` validates it in a first streaming pass that keeps
  nothing, so a bad row anywhere is a usage error (exit 2) before anything is computed, and
  ``total`` is known; :meth:`PointSource.chunks` then reads it again.
- STDIN (or a pipe named as a file) is read once and validated as it is read: the good rows before
  a bad line come out as a last, partial chunk, and the next iteration raises the error for the bad
  line, so whatever the caller wrote for the earlier rows stays valid.
- a GRID is generated chunk by chunk from the flat index range (``numpy.unravel_index``).

Every error is a :class:`gradcli.errors.UsageError` worded ``"{option} {label}:{line}: what is wrong"``;
text echoed from the input is shortened and has its non-printable characters escaped.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import os
import re
import stat
import sys
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, TextIO

from gradcli.errors import GradcliError, UsageError
from gradcli.points import split_top_level

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from gradcli.points import Point

#: the most points ``--grid`` may describe
MAX_GRID_POINTS = 100_000_000
#: the longest physical input line read (bytes for files, characters for text streams)
MAX_LINE_LENGTH = 1 << 20
#: how much of an offending value an error message echoes
SHOW_CHARS = 40

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Plain decimal / float text, ASCII digits only ([0-9] never matches other scripts' digits; float()
# alone would take fullwidth or Arabic-Indic digits, '1_000' and 'infinity').
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_COUNT = re.compile(r"[0-9]+\Z")
_ASCII_SPACE = " \t\r\n\f\v"
_NON_FINITE_WORDS = ("nan", "inf", "infinity")
_CSV_SUFFIXES = (".csv",)
_JSONL_SUFFIXES = (".jsonl", ".ndjson")


# ---------------------------------------------------------------------------------------------
# The public shapes
# ---------------------------------------------------------------------------------------------
@dataclass
class PointChunk:
    """At most ``chunk_size`` points."""

    #: float64 arrays of shape [P], one per needed variable, in ``variables`` order
    values: dict[str, "np.ndarray"]
    #: per point, the pass-through columns (not needed variables) in file order; ``{}`` for a grid
    fields: list[dict[str, object]]
    #: per point, the 1-based physical line of the input it came from; None for grid points
    lines: list[int | None]

    def __len__(self) -> int:
        return len(self.lines)


class PointSource:
    """Where the points come from. ``chunks()`` yields :class:`PointChunk` s in input order."""

    #: how errors and reports name the input: the path, ``<stdin>`` or ``--grid``
    label: str
    #: pass-through column names (CSV: header order; JSON Lines: order of first appearance, so far)
    field_names: list[str]
    #: the needed variables, in the order the caller gave them
    variable_names: list[str]
    #: the number of points when known up front (grid, validated file); None for a stream
    total: int | None
    #: "csv", "jsonl" or "grid"
    format: str

    def chunks(self) -> Iterator[PointChunk]:  # pragma: no cover - every source overrides it
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# Showing input text safely
# ---------------------------------------------------------------------------------------------
def _escape(text: str) -> str:
    """``text`` with every non-printable character (controls, bidi overrides, zero-width) escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _show(text: str, limit: int = SHOW_CHARS) -> str:
    """A short, quoted, escaped rendering of ``text`` for an error message."""
    if len(text) > limit:
        text = text[:limit] + "..."
    return repr(text)  # repr escapes exactly the non-printable characters


def _show_json(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = "?"
    if len(text) > SHOW_CHARS:
        text = text[:SHOW_CHARS] + "..."
    return text


def _short_detail(message: str, limit: int = 100) -> str:
    message = _escape(message)
    return message if len(message) <= limit else message[:limit] + "..."


class _Where:
    """Words errors about one input: ``{option} {label}:{line}: ...``."""

    def __init__(self, option: str, label: str):
        self.option = option
        self.label = label

    def at(self, line: int | None, what: str) -> UsageError:
        if line is None:
            return UsageError(f"{self.option} {self.label}: {what}")
        return UsageError(f"{self.option} {self.label}:{line}: {what}")


# ---------------------------------------------------------------------------------------------
# Numbers: plain decimal text fast, else a constant expression read exactly as --at reads it
# ---------------------------------------------------------------------------------------------
class _NotANumber(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _parse_number(text: str) -> float:
    """The finite float64 that ``text`` denotes (``1.5``, ``-2e-3``, ``pi/4``), or :class:`_NotANumber`."""
    s = text.strip(_ASCII_SPACE)
    if _DECIMAL.match(s):
        value = float(s)
        if math.isfinite(value):
            return value
        raise _NotANumber("is not a finite number")
    value, reason = _constant_value(s)
    if reason:
        raise _NotANumber(reason)
    return value


def _constant_value(s: str) -> tuple[float, str]:
    """(value, "") or (nan, why not). Short texts are cached: a column of ``pi/4`` is parsed once."""
    return _cached_constant_value(s) if len(s) <= 200 else _read_constant(s)


def _read_constant(s: str) -> tuple[float, str]:
    if s.lstrip("+-").lower() in _NON_FINITE_WORDS:
        return math.nan, "is not a finite number"
    from gradcli.evaluate import PYTHON_FLOAT64, evaluate
    from gradcli.expr import parse

    try:
        expr = parse(s)
    except GradcliError as exc:
        if not s:
            return math.nan, "is not a number"
        return math.nan, f"is not a number ({_short_detail(exc.message)})"
    if expr.variables:
        return math.nan, "is not a number"
    try:
        value = float(evaluate(expr.tree, {}, PYTHON_FLOAT64))
    except (ArithmeticError, ValueError):  # PYTHON_FLOAT64 returns inf/nan instead; belt and braces
        return math.nan, "is not a finite number"
    if not math.isfinite(value):
        return math.nan, "is not a finite number"
    return value, ""


_cached_constant_value = functools.lru_cache(maxsize=1024)(_read_constant)


# ---------------------------------------------------------------------------------------------
# Physical lines
# ---------------------------------------------------------------------------------------------
class _Lines:
    """The physical lines of one input as text, numbered from 1, each at most MAX_LINE_LENGTH long.

    ``number`` is the number of the last line handed out. Lines looked at by :meth:`first_nonblank`
    are handed out again, so numbering always counts every physical line.
    """

    def __init__(self, read: Callable[[], str | None], where: _Where):
        self._read_raw = read
        self._where = where
        self._pending: deque[str] = deque()
        self._read_count = 0  # lines read from the input, handed out or pending
        self.number = 0

    @classmethod
    def from_binary(cls, f, where: _Where) -> "_Lines":
        state = {"first": True}

        def read() -> str | None:
            raw = f.readline(MAX_LINE_LENGTH + 1)
            if not raw:
                return None
            line = lines._read_count + 1
            if len(raw) > MAX_LINE_LENGTH:
                raise where.at(line, f"line longer than {MAX_LINE_LENGTH:,} bytes")
            if state["first"]:
                state["first"] = False
                if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark (Excel writes one)
                    raw = raw[3:]
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise where.at(line, f"not valid UTF-8 (byte {exc.start + 1} of the line)") from None

        lines = cls(read, where)
        return lines

    @classmethod
    def from_text(cls, stream, where: _Where) -> "_Lines":
        state = {"first": True}
        readline = getattr(stream, "readline", None)
        iterator = None if readline is not None else iter(stream)

        def read() -> str | None:
            line = lines._read_count + 1
            try:
                text = readline(MAX_LINE_LENGTH + 1) if readline is not None else next(iterator, "")
            except UnicodeDecodeError as exc:
                raise where.at(line, f"not valid UTF-8 ({exc.reason})") from None
            if not text:
                return None
            if len(text) > MAX_LINE_LENGTH:
                raise where.at(line, f"line longer than {MAX_LINE_LENGTH:,} characters")
            if state["first"]:
                state["first"] = False
                text = text.removeprefix("\ufeff")
            return text

        lines = cls(read, where)
        return lines

    def _read(self) -> str | None:
        text = self._read_raw()
        if text is not None:
            self._read_count += 1
        return text

    def __iter__(self) -> "_Lines":
        return self

    def __next__(self) -> str:
        text = self._pending.popleft() if self._pending else self._read()
        if text is None:
            raise StopIteration
        self.number += 1
        return text

    def first_nonblank(self) -> str | None:
        """Look ahead to the first line that is not blank (None at the end); hand it out again later."""
        for text in self._pending:
            if text.strip():
                return text
        while True:
            text = self._read()
            if text is None:
                return None
            self._pending.append(text)
            if text.strip():
                return text


def _sniff(lines: _Lines) -> str | None:
    """"jsonl" when the first non-blank character is '{', "csv" otherwise, None for an empty input."""
    first = lines.first_nonblank()
    if first is None:
        return None
    return "jsonl" if first.lstrip().startswith("{") else "csv"


# ---------------------------------------------------------------------------------------------
# Readers: lines -> validated rows (line, values of the needed variables the input gives, fields)
# ---------------------------------------------------------------------------------------------
Row = tuple[int, list[float], dict[str, object]]


class _Needs:
    """The needed variables, split into those the input must give and those --at fixes."""

    def __init__(self, variables: list[str], fixed):
        self.names = list(dict.fromkeys(variables))
        given = _fixed_values(fixed)
        self.fixed = {v: float(given[v]) for v in self.names if v in given}
        self.from_input = [v for v in self.names if v not in self.fixed]
        self.needed = frozenset(self.names)


def _fixed_values(fixed) -> Mapping[str, float]:
    if fixed is None:
        return {}
    if isinstance(fixed, Mapping):
        return fixed
    return fixed.values


def _missing_message(kind: str, missing: list[str]) -> str:
    listed = ", ".join(missing)
    example = ",".join(f"{v}=value" for v in missing)
    return f"no {kind} for {listed}: add {'it' if len(missing) == 1 else 'them'} or give --at {example}"


def _both_message(name: str, kind: str) -> str:
    return f"{name} is given both by the {kind} {name!r} and by --at (ambiguous); give it in one place only"


class _CsvReader:
    format = "csv"

    def __init__(self, lines: _Lines, where: _Where, needs: _Needs, *, require_header: bool):
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
        names = [n.strip(_ASCII_SPACE) for n in names]
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if not name:
                raise where.at(line, f"column {i + 1} of the header has no name")
            if name in seen:
                raise where.at(line, f"column {_show(name)} appears twice in the header "
                                     f"(columns {seen[name] + 1} and {i + 1})")
            seen[name] = i
        for v in needs.names:
            if v in seen and v in needs.fixed:
                raise where.at(line, _both_message(v, "column"))
        missing = [v for v in needs.from_input if v not in seen]
        if missing:
            raise where.at(line, _missing_message("column", missing))
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
                raise self._where.at(start, f"malformed CSV: {_short_detail(str(exc))}") from None
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
                    values.append(_parse_number(row[i]))
                except _NotANumber as exc:
                    raise where.at(line, f"{name}: {_show(row[i])} {exc.reason}") from None
            yield line, values, {n: row[i] for n, i in passing}


class _NonFinite:
    """NaN / Infinity / -Infinity in JSON text: Python's json reads them, JSON does not have them."""

    def __init__(self, text: str):
        self.text = text


class _DuplicateKey(ValueError):
    pass


def _object_pairs(pairs: list[tuple[str, object]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(f"duplicate key {_show(k)}")
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


class _JsonlReader:
    format = "jsonl"

    def __init__(self, lines: _Lines, where: _Where, needs: _Needs):
        self._lines = lines
        self._where = where
        self._needs = needs
        self._non_finite: list[_NonFinite] = []
        self._decoder = json.JSONDecoder(parse_constant=self._constant, object_pairs_hook=_object_pairs)
        self._seen: dict[str, None] = {}
        self._first = self._next_record()
        if self._first is not None:
            line, obj = self._first
            missing = [v for v in needs.from_input if v not in obj]
            if missing:
                raise where.at(line, _missing_message("key", missing))
            self._check_both(line, obj)
            self._register(obj)  # field_names is known from the first record on

    @property
    def field_names(self) -> list[str]:
        return list(self._seen)

    def _constant(self, text: str) -> _NonFinite:
        marker = _NonFinite(text)
        self._non_finite.append(marker)
        return marker

    def _next_record(self) -> tuple[int, dict] | None:
        where = self._where
        for text in self._lines:
            if not text.strip():
                continue
            line = self._lines.number
            self._non_finite.clear()
            try:
                obj = self._decoder.decode(text)
            except json.JSONDecodeError as exc:
                raise where.at(line, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
            except _DuplicateKey as exc:
                raise where.at(line, f"invalid JSON: {exc}") from None
            except (ValueError, RecursionError) as exc:
                raise where.at(line, f"invalid JSON: {_short_detail(str(exc) or type(exc).__name__)}") from None
            if not isinstance(obj, dict):
                raise where.at(line, f"expected a JSON object {{...}} on each line, got {_json_kind(obj)}")
            if self._non_finite:
                for name in self._needs.from_input:
                    v = obj.get(name)
                    if isinstance(v, _NonFinite):
                        raise where.at(line, f"{name}: {v.text} is not a finite number")
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
                raise self._where.at(line, _both_message(v, "key"))

    def _number(self, line: int, name: str, value: object) -> float:
        where = self._where
        if isinstance(value, str):
            try:
                return _parse_number(value)
            except _NotANumber as exc:
                raise where.at(line, f"{name}: {_show(value)} {exc.reason}") from None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:
                number = math.inf
            if math.isfinite(number):
                return number
            raise where.at(line, f"{name}: {_show_json(value)} is not a finite number")
        raise where.at(line, f"{name}: {_show_json(value)} is not a number ({_json_kind(value)})")

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
                    raise where.at(line, _missing_message("key", [name]))
                values.append(self._number(line, name, obj[name]))
            fields = {k: v for k, v in obj.items() if k not in needs.needed}
            self._register(fields)
            yield line, values, fields
            record = self._next_record()


class _EmptyReader:
    """An input with no non-blank line and no format by extension: no points."""

    format = "jsonl"

    @property
    def field_names(self) -> list[str]:
        return []

    def rows(self) -> Iterator[Row]:
        return iter(())


def _reader(fmt: str | None, lines: _Lines, where: _Where, needs: _Needs, *, by_extension: bool):
    if fmt is None:
        return _EmptyReader()
    if fmt == "csv":
        return _CsvReader(lines, where, needs, require_header=by_extension)
    return _JsonlReader(lines, where, needs)


def _chunked(rows: Iterator[Row], needs: _Needs, chunk_size: int) -> Iterator[PointChunk]:
    """Group rows into chunks; the rows read before an error come out first, then the error."""
    import numpy as np

    columns: list[list[float]] = [[] for _ in needs.from_input]
    fields: list[dict[str, object]] = []
    lines: list[int | None] = []

    def build() -> PointChunk:
        n = len(lines)
        given = dict(zip(needs.from_input, columns))
        values = {}
        for v in needs.names:
            if v in needs.fixed:
                values[v] = np.full(n, needs.fixed[v], dtype=np.float64)
            else:
                values[v] = np.array(given[v], dtype=np.float64)
        return PointChunk(values, fields, lines)

    error: UsageError | None = None
    try:
        for line, row_values, row_fields in rows:
            for column, value in zip(columns, row_values):
                column.append(value)
            fields.append(row_fields)
            lines.append(line)
            if len(lines) >= chunk_size:
                chunk = build()
                columns = [[] for _ in needs.from_input]
                fields, lines = [], []
                yield chunk
    except UsageError as exc:
        error = exc
    if lines:
        yield build()
    if error is not None:
        raise error


# ---------------------------------------------------------------------------------------------
# --points
# ---------------------------------------------------------------------------------------------
def _format_by_extension(path: str) -> str | None:
    lower = path.lower()
    if lower.endswith(_CSV_SUFFIXES):
        return "csv"
    if lower.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    return None


class _FileSource(PointSource):
    """A regular file: validated whole by the constructor, read again by every ``chunks()``."""

    def __init__(self, path: str, where: _Where, needs: _Needs, chunk_size: int, f):
        self.label = where.label
        self.variable_names = list(needs.names)
        self._path = path
        self._where = where
        self._needs = needs
        self._chunk_size = chunk_size
        by_extension = _format_by_extension(path)
        lines = _Lines.from_binary(f, where)
        self._format = by_extension or _sniff(lines)
        self._by_extension = by_extension is not None
        reader = _reader(self._format, lines, where, needs, by_extension=self._by_extension)
        count = 0
        for _ in reader.rows():
            count += 1
        self.total = count
        self.field_names = reader.field_names
        self.format = reader.format

    def chunks(self) -> Iterator[PointChunk]:
        try:
            f = open(self._path, "rb")
        except OSError as exc:
            raise self._where.at(None, _os_reason(exc)) from None
        with f:
            lines = _Lines.from_binary(f, self._where)
            reader = _reader(self._format, lines, self._where, self._needs, by_extension=self._by_extension)
            yield from _chunked(reader.rows(), self._needs, self._chunk_size)


class _StreamSource(PointSource):
    """Stdin or a pipe: read once, validated as it is read. The header (CSV) or the first record
    (JSON Lines) is read by the constructor, to know the format and the columns."""

    def __init__(self, lines: _Lines, where: _Where, needs: _Needs, chunk_size: int, *,
                 by_extension: str | None = None, close: Callable[[], None] | None = None):
        self.label = where.label
        self.variable_names = list(needs.names)
        self.total = None
        self._needs = needs
        self._chunk_size = chunk_size
        self._close = close
        self._used = False
        fmt = by_extension or _sniff(lines)
        self._reader = _reader(fmt, lines, where, needs, by_extension=by_extension is not None)
        self.format = self._reader.format

    @property
    def field_names(self) -> list[str]:
        return self._reader.field_names

    def chunks(self) -> Iterator[PointChunk]:
        if self._used:
            raise RuntimeError(f"{self.label} can be read only once")
        self._used = True
        try:
            yield from _chunked(self._reader.rows(), self._needs, self._chunk_size)
        finally:
            if self._close is not None:
                self._close()


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, not a file"
    if isinstance(exc, PermissionError):
        return "cannot be read: permission denied"
    return f"cannot be read: {exc.strerror or exc}"


def open_points(spec: str, *, variables: list[str], fixed: "Point | None" = None,
                chunk_size: int = 4096, stdin: TextIO | None = None, option: str = "--points") -> PointSource:
    """The points of a CSV or JSON Lines file, or of stdin for ``-``.

    A regular file is validated completely here (so ``total`` is known and any bad row is a
    UsageError now); stdin and pipes are validated as ``chunks()`` reads them.
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    needs = _Needs(variables, fixed)
    if spec == "-":
        where = _Where(option, "<stdin>")
        stream = sys.stdin if stdin is None else stdin
        return _StreamSource(_Lines.from_text(stream, where), where, needs, chunk_size)
    if not spec.strip():
        raise UsageError(f"{option} is empty: give a CSV or JSON Lines file, or - for stdin")
    where = _Where(option, _escape(spec))
    try:
        f = open(spec, "rb")
    except OSError as exc:
        raise where.at(None, _os_reason(exc)) from None
    try:
        mode = os.fstat(f.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise where.at(None, "is a directory, not a file")
        if not stat.S_ISREG(mode):  # a pipe (<(cmd), /dev/stdin): it cannot be read twice
            return _StreamSource(_Lines.from_binary(f, where), where, needs, chunk_size,
                                 by_extension=_format_by_extension(spec), close=f.close)
        with f:
            return _FileSource(spec, where, needs, chunk_size, f)
    except OSError as exc:
        f.close()
        raise where.at(None, _os_reason(exc)) from None
    except BaseException:
        f.close()
        raise


# ---------------------------------------------------------------------------------------------
# --grid
# ---------------------------------------------------------------------------------------------
class _GridSource(PointSource):
    format = "grid"

    def __init__(self, option: str, needs: _Needs, axes: dict[str, "np.ndarray"], chunk_size: int):
        self.label = option
        self.field_names = []
        self.variable_names = list(needs.names)
        self._needs = needs
        self._axes = axes
        self._chunk_size = chunk_size
        total = 1
        for axis in axes.values():
            total *= len(axis)
        self.total = total

    def chunks(self) -> Iterator[PointChunk]:
        import numpy as np

        names = list(self._axes)
        shape = tuple(len(a) for a in self._axes.values())
        for start in range(0, self.total, self._chunk_size):
            stop = min(start + self._chunk_size, self.total)
            index = np.unravel_index(np.arange(start, stop, dtype=np.int64), shape)  # first varies slowest
            n = stop - start
            values = {}
            for v in self._needs.names:
                if v in self._axes:
                    values[v] = self._axes[v][index[names.index(v)]]
                else:
                    values[v] = np.full(n, self._needs.fixed[v], dtype=np.float64)
            yield PointChunk(values, [{} for _ in range(n)], [None] * n)


def _grid_bound(option: str, spec: str, name: str, which: str, text: str, offset: int) -> float:
    """One bound of a range, read as --at reads a value (a number or a constant expression)."""
    stripped = text.strip()
    if not stripped:
        raise UsageError(f"{option}: {name}: the {which} is missing", source=spec, position=offset)
    if stripped.lstrip("+-").lower() in _NON_FINITE_WORDS:
        raise UsageError(f"{option}: {name}: the {which} must be a finite number, not {_show(stripped)}",
                         source=spec, position=offset)
    from gradcli.evaluate import PYTHON_FLOAT64, evaluate
    from gradcli.expr import parse

    try:
        expr = parse(text)
    except GradcliError as exc:
        pos = offset if exc.position is None else offset + exc.position
        raise UsageError(f"{option}: {name}: {which}: {exc.message}", source=spec, position=pos) from None
    if expr.variables:
        raise UsageError(f"{option}: {name}: the {which} must be a number or constant expression, "
                         f"not one using '{expr.variables[0]}'", source=spec, position=offset)
    value = float(evaluate(expr.tree, {}, PYTHON_FLOAT64))
    if not math.isfinite(value):
        raise UsageError(f"{option}: {name}: the {which} is not a finite number", source=spec, position=offset)
    return value


def grid_points(spec: str, *, variables: list[str], fixed: "Point | None" = None,
                chunk_size: int = 4096, option: str = "--grid") -> PointSource:
    """Points of ``x=-2:2:41,y=-1:3:41``: ``numpy.linspace(start, stop, count)`` per variable, the
    cartesian product in ``itertools.product`` order (the first variable varies slowest)."""
    import numpy as np

    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    needs = _Needs(variables, fixed)
    example = f"{option} x=-2:2:41,y=-1:3:41"
    if not spec.strip():
        raise UsageError(f"{option} is empty; write it as {example}")
    axes: dict[str, np.ndarray] = {}
    for offset, piece in split_top_level(spec):
        if not piece.strip():
            raise UsageError(f"{option}: empty entry; write it as {example}", source=spec, position=offset)
        raw_name, eq, range_text = piece.partition("=")
        name = raw_name.strip()
        name_offset = offset + len(raw_name) - len(raw_name.lstrip())
        if not eq:
            raise UsageError(f"{option}: {_show(piece.strip())} is not of the form name=start:stop:count",
                             source=spec, position=name_offset)
        if not _NAME.match(name):
            raise UsageError(f"{option}: {_show(name)} is not a variable name", source=spec, position=name_offset)
        if name in axes:
            raise UsageError(f"{option}: '{name}' is given twice", source=spec, position=name_offset)
        if name not in needs.needed:
            known = ", ".join(needs.names) if needs.names else "none"
            raise UsageError(f"{option}: '{name}' is not one of the variables (they are: {known})",
                             source=spec, position=name_offset)
        if name in needs.fixed:
            raise UsageError(f"{option}: '{name}' is given both by {option} and by --at (ambiguous); "
                             "give it in one place only", source=spec, position=name_offset)
        range_offset = offset + len(raw_name) + 1
        parts = range_text.split(":")
        if len(parts) != 3:
            raise UsageError(f"{option}: {name}: expected start:stop:count, got {len(parts)} part"
                             f"{'s' if len(parts) != 1 else ''}", source=spec, position=range_offset)
        offsets = [range_offset, range_offset + len(parts[0]) + 1, range_offset + len(parts[0]) + len(parts[1]) + 2]
        start = _grid_bound(option, spec, name, "start", parts[0], offsets[0])
        stop = _grid_bound(option, spec, name, "stop", parts[1], offsets[1])
        count_text = parts[2].strip(_ASCII_SPACE)
        if not _COUNT.match(count_text):
            shown = _show(count_text) if count_text else "nothing"
            raise UsageError(f"{option}: {name}: the count must be a positive whole number, not {shown}",
                             source=spec, position=offsets[2])
        if len(count_text.lstrip("0")) > len(str(MAX_GRID_POINTS)):
            count = MAX_GRID_POINTS + 1
        else:
            count = int(count_text)
        if count < 1:
            raise UsageError(f"{option}: {name}: the count must be at least 1", source=spec, position=offsets[2])
        if count > MAX_GRID_POINTS:
            raise UsageError(f"{option}: {name}: a count of {_show(count_text)} is more than the {MAX_GRID_POINTS:,} allowed",
                             source=spec, position=offsets[2])
        if count == 1 and start != stop:
            raise UsageError(f"{option}: {name}: a count of 1 is the single value start, so start and stop must "
                             f"be equal (got {start:g} and {stop:g})", source=spec, position=offsets[2])
        with np.errstate(over="ignore", invalid="ignore"):
            axis = np.linspace(start, stop, count, dtype=np.float64)
        if not np.all(np.isfinite(axis)):
            raise UsageError(f"{option}: {name}: the range {start:g} to {stop:g} is too wide for float64",
                             source=spec, position=range_offset)
        axes[name] = axis
    missing = [v for v in needs.from_input if v not in axes]
    if missing:
        listed = ", ".join(missing)
        raise UsageError(f"{option} has no values for {listed}: add "
                         f"{','.join(f'{v}=start:stop:count' for v in missing)} to {option}, "
                         f"or give --at {','.join(f'{v}=value' for v in missing)}")
    total = 1
    for axis in axes.values():
        total *= len(axis)
    if total > MAX_GRID_POINTS:
        sizes = " x ".join(str(len(a)) for a in axes.values())
        raise UsageError(f"{option} has {sizes} = {total:,} points, more than the {MAX_GRID_POINTS:,} allowed")
    return _GridSource(option, needs, axes, chunk_size)


__all__ = ["MAX_GRID_POINTS", "PointChunk", "PointSource", "grid_points", "open_points"]
