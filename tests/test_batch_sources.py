"""gradcli.expression.sources: the points of --points FILE (CSV, JSON Lines, stdin) and --grid SPEC."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradcli.expression.sources import MAX_GRID_POINTS, PointChunk, PointSource, grid_points, open_points
from gradcli.errors import UsageError
from gradcli.expression.points import parse_point


def write(tmp_path, name: str, text: str | bytes):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_bytes(text.encode("utf-8"))
    return str(path)


def collect(source: PointSource) -> tuple[dict[str, list[float]], list[dict], list]:
    """All chunks joined: values per variable, fields, lines."""
    values: dict[str, list[float]] = {v: [] for v in source.variable_names}
    fields: list[dict] = []
    lines: list = []
    for chunk in source.chunks():
        assert isinstance(chunk, PointChunk)
        assert list(chunk.values) == source.variable_names
        for v, arr in chunk.values.items():
            assert arr.dtype == np.float64 and arr.shape == (len(chunk),)
            values[v].extend(arr.tolist())
        assert len(chunk.fields) == len(chunk.lines) == len(chunk)
        fields.extend(chunk.fields)
        lines.extend(chunk.lines)
    return values, fields, lines


def stdin_source(text: str, **kw) -> PointSource:
    return open_points("-", stdin=io.StringIO(text), **kw)


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------
def test_csv_values_fields_lines(tmp_path):
    path = write(tmp_path, "pts.csv", "label,y,x, note \n a b ,2,1,first\n\nc,-3.5e1,.5,\"x,y\"\n")
    src = open_points(path, variables=["x", "y"])
    assert src.label == path and src.format == "csv"
    assert src.total == 2
    assert src.variable_names == ["x", "y"]
    assert src.field_names == ["label", "note"]
    values, fields, lines = collect(src)
    assert values == {"x": [1.0, 0.5], "y": [2.0, -35.0]}
    # pass-through strings are unchanged (not stripped, commas kept)
    assert fields == [{"label": " a b ", "note": "first"}, {"label": "c", "note": "x,y"}]
    assert lines == [2, 4]


def test_csv_chunks_can_be_read_twice(tmp_path):
    path = write(tmp_path, "pts.csv", "x\n1\n2\n")
    src = open_points(path, variables=["x"])
    assert collect(src)[0] == collect(src)[0] == {"x": [1.0, 2.0]}


def test_csv_constant_expressions_and_spacing(tmp_path):
    path = write(tmp_path, "pts.csv", 'x\npi/4\n"atan2(1,2)"\n 2 e \n+3\n 1.5 \n1e3\n-.25\n2^10\n')
    values, _, _ = collect(open_points(path, variables=["x"]))
    assert values["x"] == [math.pi / 4, math.atan2(1, 2), 2 * math.e, 3.0, 1.5, 1000.0, -0.25, 1024.0]


def test_csv_multiline_quoted_field_and_crlf_line_numbers(tmp_path):
    path = write(tmp_path, "pts.csv", 'x,note\r\n1,"two\r\nlines"\r\n\r\n2,z\r\n3,"a\nb\nc"\r\n4,q\r\n')
    values, fields, lines = collect(open_points(path, variables=["x"]))
    assert values["x"] == [1.0, 2.0, 3.0, 4.0]
    assert lines == [2, 5, 6, 9]
    assert fields[0] == {"note": "two\r\nlines"} and fields[2] == {"note": "a\nb\nc"}


def test_csv_utf8_bom_is_not_part_of_the_first_name(tmp_path):
    path = write(tmp_path, "pts.csv", b"\xef\xbb\xbfx,y\n1,2\n")
    assert collect(open_points(path, variables=["x", "y"]))[0] == {"x": [1.0], "y": [2.0]}


def test_values_follow_variable_order_not_column_order(tmp_path):
    path = write(tmp_path, "pts.csv", "b,a,c\n1,2,3\n")
    src = open_points(path, variables=["c", "a", "b"])
    assert collect(src)[0] == {"c": [3.0], "a": [2.0], "b": [1.0]}
    assert src.field_names == []


def test_duplicate_variables_are_listed_once(tmp_path):
    path = write(tmp_path, "pts.csv", "x\n1\n")
    src = open_points(path, variables=["x", "x"])
    assert src.variable_names == ["x"]


def test_csv_column_of_an_unneeded_variable_passes_through(tmp_path):
    path = write(tmp_path, "pts.csv", "x,z\n1,7\n")
    src = open_points(path, variables=["x"])
    assert collect(src)[1] == [{"z": "7"}]


def test_at_fixes_a_missing_variable(tmp_path):
    path = write(tmp_path, "pts.csv", "x\n1\n2\n3\n")
    src = open_points(path, variables=["x", "y"], fixed=parse_point("y=pi/2"), chunk_size=2)
    values, _, _ = collect(src)
    assert values == {"x": [1.0, 2.0, 3.0], "y": [math.pi / 2] * 3}


def test_at_values_of_unneeded_variables_are_ignored(tmp_path):
    path = write(tmp_path, "pts.csv", "x,w\n1,u\n")
    src = open_points(path, variables=["x"], fixed=parse_point("w=5"))
    assert collect(src)[:2] == ({"x": [1.0]}, [{"w": "u"}])


def test_header_only_csv_has_no_points(tmp_path):
    src = open_points(write(tmp_path, "pts.csv", "x,y\n"), variables=["x"])
    assert src.total == 0 and list(src.chunks()) == []


def test_variables_may_be_empty(tmp_path):
    src = open_points(write(tmp_path, "pts.csv", "a\nq\nr\n"), variables=[])
    chunks = list(src.chunks())
    assert src.total == 2 and chunks[0].values == {} and chunks[0].fields == [{"a": "q"}, {"a": "r"}]


# ---------------------------------------------------------------------------------------------
# JSON Lines
# ---------------------------------------------------------------------------------------------
def test_jsonl_values_and_pass_through_of_any_json(tmp_path):
    text = ('{"id": "p1", "x": 1, "meta": {"k": [1, 2]}, "y": "pi"}\n'
            "\n"
            '{"y": 2.5, "x": -1e-3, "ok": true, "id": null, "n": "7"}\n')
    src = open_points(write(tmp_path, "pts.jsonl", text), variables=["x", "y"])
    assert src.format == "jsonl" and src.total == 2
    values, fields, lines = collect(src)
    assert values == {"x": [1.0, -0.001], "y": [math.pi, 2.5]}
    assert fields == [{"id": "p1", "meta": {"k": [1, 2]}}, {"ok": True, "id": None, "n": "7"}]
    assert lines == [1, 3]
    # union of the names, in order of first appearance
    assert src.field_names == ["id", "meta", "ok", "n"]


def test_ndjson_extension_and_at(tmp_path):
    src = open_points(write(tmp_path, "p.ndjson", '{"x": 2}\n{"x": 3}\n'), variables=["x", "t"],
                      fixed=parse_point("t=0.5"))
    assert collect(src)[0] == {"x": [2.0, 3.0], "t": [0.5, 0.5]}


def test_jsonl_big_integer_is_a_number(tmp_path):
    src = open_points(write(tmp_path, "p.jsonl", '{"x": 12345678901234567890}\n'), variables=["x"])
    assert collect(src)[0] == {"x": [1.2345678901234567e19]}


def test_empty_jsonl_has_no_points(tmp_path):
    src = open_points(write(tmp_path, "p.jsonl", "\n\n"), variables=["x"])
    assert src.total == 0 and list(src.chunks()) == []


# ---------------------------------------------------------------------------------------------
# Sniffing
# ---------------------------------------------------------------------------------------------
def test_sniff_jsonl_without_extension(tmp_path):
    src = open_points(write(tmp_path, "points.txt", '\n  \n  {"x": 4}\n'), variables=["x"])
    assert src.format == "jsonl"
    assert collect(src)[0::2] == ({"x": [4.0]}, [3])


def test_sniff_csv_without_extension(tmp_path):
    src = open_points(write(tmp_path, "points", "\nx\n4\n"), variables=["x"])
    assert src.format == "csv"
    assert collect(src)[0::2] == ({"x": [4.0]}, [3])


def test_extension_wins_over_content(tmp_path):
    # a .csv whose first character is '{' is still CSV (then it has no column x)
    with pytest.raises(UsageError, match=r"p\.csv:1: no column for x"):
        open_points(write(tmp_path, "p.csv", '{"x": 1}\n'), variables=["x"])


def test_empty_unknown_format_file_has_no_points(tmp_path):
    src = open_points(write(tmp_path, "p.txt", ""), variables=["x"])
    assert src.total == 0 and list(src.chunks()) == []


def test_stdin_sniffs_both_formats():
    src = stdin_source('\n{"x": 1, "s": "a"}\n{"x": 2}\n', variables=["x"])
    assert src.label == "<stdin>" and src.format == "jsonl" and src.total is None
    assert src.field_names == ["s"]  # known from the first record on
    assert collect(src) == ({"x": [1.0, 2.0]}, [{"s": "a"}, {}], [2, 3])
    src = stdin_source("x,s\n1,a\n", variables=["x"])
    assert src.format == "csv" and src.field_names == ["s"]
    assert collect(src) == ({"x": [1.0]}, [{"s": "a"}], [2])


def test_empty_stdin_has_no_points():
    src = stdin_source("", variables=["x"])
    assert list(src.chunks()) == []


def test_stdin_is_read_once():
    src = stdin_source("x\n1\n", variables=["x"])
    list(src.chunks())
    with pytest.raises(RuntimeError):
        list(src.chunks())


def test_stdin_defaults_to_sys_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("x\n9\n"))
    assert collect(open_points("-", variables=["x"]))[0] == {"x": [9.0]}


# ---------------------------------------------------------------------------------------------
# Chunking and streaming
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["csv", "jsonl", "stdin-csv", "stdin-jsonl"])
def test_chunk_sizes(tmp_path, kind):
    if kind.endswith("csv"):
        text = "x\n" + "".join(f"{i}\n" for i in range(5))
    else:
        text = "".join(f'{{"x": {i}}}\n' for i in range(5))
    if kind.startswith("stdin"):
        src = stdin_source(text, variables=["x"], chunk_size=2)
    else:
        src = open_points(write(tmp_path, f"p.{kind}", text), variables=["x"], chunk_size=2)
    chunks = list(src.chunks())
    assert [len(c) for c in chunks] == [2, 2, 1]
    assert np.concatenate([c.values["x"] for c in chunks]).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_chunk_size_must_be_positive():
    with pytest.raises(ValueError):
        stdin_source("x\n1\n", variables=["x"], chunk_size=0)
    with pytest.raises(ValueError):
        grid_points("x=0:1:2", variables=["x"], chunk_size=0)


class GuardedStdin:
    """A file-like stdin whose lines after the first ``limit`` may be read only once ``released``."""

    def __init__(self, lines: list[str], limit: int):
        self._lines = lines
        self._i = 0
        self.limit = limit
        self.released = False

    def readline(self, size: int = -1) -> str:
        if self._i >= self.limit and not self.released:
            raise AssertionError(f"read line {self._i + 1} before the first chunk was handed out")
        if self._i >= len(self._lines):
            return ""
        self._i += 1
        return self._lines[self._i - 1]


def guarded_iterator(lines: list[str], limit: int, state: dict):
    """The same as a bare iterator of lines (no readline)."""
    for i, line in enumerate(lines):
        if i >= limit and not state["released"]:
            raise AssertionError(f"read line {i + 1} before the first chunk was handed out")
        yield line


@pytest.mark.parametrize("use_readline", [True, False])
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_stdin_chunk_comes_before_more_input_is_read(fmt, use_readline):
    if fmt == "csv":
        lines = ["x\n"] + [f"{i}\n" for i in range(6)]
        limit = 3  # the header and 2 rows
    else:
        lines = [f'{{"x": {i}}}\n' for i in range(6)]
        limit = 2
    state = {"released": False}
    if use_readline:
        stream = GuardedStdin(lines, limit)
    else:
        stream = guarded_iterator(lines, limit, state)
    src = open_points("-", variables=["x"], chunk_size=2, stdin=stream)
    chunks = src.chunks()
    first = next(chunks)
    assert first.values["x"].tolist() == [0.0, 1.0]
    state["released"] = True
    if use_readline:
        stream.released = True
    assert [len(c) for c in chunks] == [2, 2]


def test_stdin_guard_really_guards():
    src = open_points("-", variables=["x"], chunk_size=5, stdin=GuardedStdin(["x\n", "1\n", "2\n", "3\n"], 2))
    with pytest.raises(AssertionError):
        next(src.chunks())


def test_stdin_good_rows_come_out_before_the_error():
    text = "x,y\n1,2\n3,4\n5,6\n7,oops\n9,10\n"
    src = stdin_source(text, variables=["x", "y"], chunk_size=2)
    chunks = src.chunks()
    assert next(chunks).values["x"].tolist() == [1.0, 3.0]
    last = next(chunks)
    assert last.values["x"].tolist() == [5.0] and last.lines == [4]
    with pytest.raises(UsageError, match=r"^--points <stdin>:5: y: 'oops' is not a number$"):
        next(chunks)


def test_stdin_bad_first_row_raises_without_a_chunk():
    src = stdin_source('{"x": 1}\n{"x": true}\n', variables=["x"], chunk_size=10)
    chunks = src.chunks()
    assert next(chunks).lines == [1]
    with pytest.raises(UsageError, match=r"<stdin>:2: x: true is not a number"):
        next(chunks)


def test_stdin_header_errors_come_from_open_points():
    with pytest.raises(UsageError, match=r"^--points <stdin>:1: no column for y"):
        stdin_source("x\n1\n", variables=["x", "y"])


def test_file_is_validated_before_any_chunk(tmp_path):
    rows = "".join(f"{i}\n" for i in range(5000))
    path = write(tmp_path, "pts.csv", "x\n" + rows + "nan\n")
    with pytest.raises(UsageError, match=r"pts\.csv:5002: x: 'nan' is not a finite number"):
        open_points(path, variables=["x"], chunk_size=10)


def test_fifo_is_streamed_not_read_twice(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "w") as f:
            f.write("x\n1\n2\n")

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        src = open_points(str(fifo), variables=["x"])
        assert src.total is None and src.format == "csv"
        assert collect(src)[0] == {"x": [1.0, 2.0]}
    finally:
        thread.join(timeout=10)


# ---------------------------------------------------------------------------------------------
# Bad input: every error names FILE:LINE
# ---------------------------------------------------------------------------------------------
CSV_ERRORS = [
    ("x,y\n1,2\n3\n", ["x", "y"], None, r":3: missing field"),
    ("x,y\n1,2,3\n", ["x", "y"], None, r":2: extra field"),
    ("x\n1\nabc\n", ["x"], None, r":3: x: 'abc' is not a number$"),
    ("x\n1\n2 x\n", ["x"], None, r":3: x: '2 x' is not a number$"),
    ("x,y\n,1\n", ["x", "y"], None, r":2: x: '' is not a number"),
    ("x\nnan\n", ["x"], None, r":2: x: 'nan' is not a finite number"),
    ("x\n-inf\n", ["x"], None, r":2: x: '-inf' is not a finite number"),
    ("x\nInfinity\n", ["x"], None, r":2: x: 'Infinity' is not a finite number"),
    ("x\n1e999\n", ["x"], None, r":2: x: '1e999' is not a finite number"),
    ("x\n1/0\n", ["x"], None, r":2: x: '1/0' is not a number \(division by zero"),
    ("x\n1_000\n", ["x"], None, r":2: x: '1_000' is not a number"),
    ("x\n\uff11\n", ["x"], None, r":2: x: '\uff11' is not a number \(non-ASCII"),
    ("x\n\u0663\n", ["x"], None, r":2: x: '\u0663' is not a number"),
    ("x\nsin(\n", ["x"], None, r":2: x: 'sin\(' is not a number \("),
    ("x,x\n1,2\n", ["x"], None, r":1: column 'x' appears twice in the header"),
    ("x, y ,y\n", ["x"], None, r":1: column 'y' appears twice"),
    ("x,,y\n", ["x"], None, r":1: column 2 of the header has no name"),
    ("x\n1\n", ["x", "y"], None, r":1: no column for y: add it or give --at y=value"),
    ("a\n1\n", ["x", "y"], None, r":1: no column for x, y: add them or give --at x=value,y=value"),
    ("x,y\n1,2\n", ["x", "y"], "y=3", r":1: y is given both by the column 'y' and by --at \(ambiguous\)"),
    ('x\n"1\n2\n', ["x"], None, r":2: malformed CSV"),
    ("", ["x"], None, r"pts\.csv: is empty: a CSV file needs a header row"),
]


@pytest.mark.parametrize("text, variables, at, message", CSV_ERRORS)
def test_csv_errors(tmp_path, text, variables, at, message):
    path = write(tmp_path, "pts.csv", text)
    fixed = parse_point(at) if at else None
    with pytest.raises(UsageError) as info:
        open_points(path, variables=variables, fixed=fixed)
    assert info.value.exit_code == 2
    assert info.value.message.startswith(f"--points {path}")
    assert re.search(message, info.value.message), info.value.message


JSONL_ERRORS = [
    ('{"x": 1}\n{"x": \n', ["x"], None, r":2: invalid JSON: "),
    ('{"x": 1}\n\n[1, 2]\n', ["x"], None, r":3: expected a JSON object \{...\} on each line, got an array"),
    ('{"x": 1}\n3\n', ["x"], None, r":2: expected a JSON object .* got a number"),
    ('{"x": true}\n', ["x"], None, r":1: x: true is not a number"),
    ('{"x": 1}\n{"x": false}\n', ["x"], None, r":2: x: false is not a number"),
    ('{"x": null}\n', ["x"], None, r":1: x: null is not a number"),
    ('{"x": [1]}\n', ["x"], None, r":1: x: \[1\] is not a number"),
    ('{"x": {"v": 1}}\n', ["x"], None, r":1: x: \{\"v\": 1\} is not a number \(an object\)"),
    ('{"x": "abc"}\n', ["x"], None, r":1: x: 'abc' is not a number"),
    ('{"x": "\uff11"}\n', ["x"], None, r":1: x: '\uff11' is not a number"),
    ('{"x": NaN}\n', ["x"], None, r":1: x: NaN is not a finite number"),
    ('{"x": -Infinity}\n', ["x"], None, r":1: x: -Infinity is not a finite number"),
    ('{"x": "nan"}\n', ["x"], None, r":1: x: 'nan' is not a finite number"),
    ('{"x": 1e999}\n', ["x"], None, r":1: x: .* is not a finite number"),
    ('{"x": 1' + "0" * 400 + "}\n", ["x"], None, r":1: x: 1000.*\.\.\. is not a finite number"),
    ('{"x": 1, "t": [NaN]}\n', ["x"], None, r":1: invalid JSON: NaN is not a JSON value"),
    ('{"x": 1, "x": 2}\n', ["x"], None, r":1: invalid JSON: duplicate key 'x'"),
    ('{"y": 1}\n', ["x"], None, r":1: no key for x: add it or give --at x=value"),
    ('\n{"x": 1}\n{"y": 1}\n', ["x"], None, r":3: no key for x"),
    ('{"x": 1, "y": 2}\n', ["x", "y"], "y=1", r":1: y is given both by the key 'y' and by --at \(ambiguous\)"),
    ('{"x": 1}\n{"x": 1, "y": 2}\n', ["x", "y"], "y=1", r":2: y is given both"),
]


@pytest.mark.parametrize("text, variables, at, message", JSONL_ERRORS)
def test_jsonl_errors(tmp_path, text, variables, at, message):
    path = write(tmp_path, "pts.jsonl", text)
    fixed = parse_point(at) if at else None
    with pytest.raises(UsageError) as info:
        open_points(path, variables=variables, fixed=fixed)
    assert info.value.message.startswith(f"--points {path}:")
    assert re.search(message, info.value.message), info.value.message


def test_bool_is_refused_even_as_a_pass_through_of_a_needed_name(tmp_path):
    path = write(tmp_path, "pts.jsonl", '{"x": 1, "b": true}\n')
    assert collect(open_points(path, variables=["x"]))[1] == [{"b": True}]


def test_errors_name_the_option(tmp_path):
    path = write(tmp_path, "pts.csv", "x\nq\n")
    with pytest.raises(UsageError, match=r"^--input .*pts\.csv:2: x: 'q' is not a number$"):
        open_points(path, variables=["x"], option="--input")


def test_echoed_text_is_escaped_and_short(tmp_path):
    path = write(tmp_path, "pts.csv", "x\n\x1b[31mred\u202e\n")
    with pytest.raises(UsageError) as info:
        open_points(path, variables=["x"])
    message = info.value.message
    assert "\x1b" not in message and "\u202e" not in message
    assert "\\x1b[31mred\\u202e" in message
    path = write(tmp_path, "long.csv", "x\n" + "7" * 30 + "a" * 200 + "\n")
    with pytest.raises(UsageError) as info:
        open_points(path, variables=["x"])
    assert "..." in info.value.message and len(info.value.message) < len(path) + 120


def test_header_names_are_escaped_in_errors(tmp_path):
    path = write(tmp_path, "pts.csv", "x,\x1b,\x1b\n")
    with pytest.raises(UsageError) as info:
        open_points(path, variables=["x"])
    assert "\x1b" not in info.value.message and "\\x1b" in info.value.message


def test_bad_utf8_is_an_error_at_its_line(tmp_path):
    path = write(tmp_path, "pts.csv", b"x\n1\n\xff\xfe\n")
    with pytest.raises(UsageError, match=r"pts\.csv:3: not valid UTF-8"):
        open_points(path, variables=["x"])


def test_missing_file_and_directory(tmp_path):
    missing = str(tmp_path / "nope.csv")
    with pytest.raises(UsageError, match=r"nope\.csv: no such file") as info:
        open_points(missing, variables=["x"])
    assert info.value.exit_code == 2
    with pytest.raises(UsageError, match=r"is a directory"):
        open_points(str(tmp_path), variables=["x"])
    with pytest.raises(UsageError, match=r"--points is empty"):
        open_points("", variables=["x"])


def test_unreadable_file(tmp_path, monkeypatch):
    import gradcli.expression.sources as sources

    path = write(tmp_path, "pts.csv", "x\n1\n")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sources, "open", refuse, raising=False)
    with pytest.raises(UsageError, match=r"pts\.csv: cannot be read: permission denied"):
        open_points(path, variables=["x"])


def test_overlong_line_is_an_error(tmp_path, monkeypatch):
    import gradcli.expression.sources as sources

    monkeypatch.setattr(sources, "MAX_LINE_LENGTH", 16)
    path = write(tmp_path, "pts.csv", "x,note\n1,short\n2," + "n" * 40 + "\n")
    with pytest.raises(UsageError, match=r"pts\.csv:3: line longer than 16 bytes"):
        open_points(path, variables=["x"])
    src = stdin_source("x,note\n1,short\n2," + "n" * 40 + "\n", variables=["x"])
    chunks = src.chunks()
    assert next(chunks).lines == [2]
    with pytest.raises(UsageError, match=r"<stdin>:3: line longer than 16 characters"):
        next(chunks)


# ---------------------------------------------------------------------------------------------
# --grid
# ---------------------------------------------------------------------------------------------
def test_grid_values_and_order():
    src = grid_points("x=-2:2:5,y=-1:3:3", variables=["x", "y"])
    assert src.label == "--grid" and src.format == "grid" and src.total == 15
    assert src.field_names == [] and src.variable_names == ["x", "y"]
    values, fields, lines = collect(src)
    expected = list(itertools.product(np.linspace(-2, 2, 5), np.linspace(-1, 3, 3)))
    assert list(zip(values["x"], values["y"])) == expected  # first variable varies slowest
    assert fields == [{}] * 15 and lines == [None] * 15


def test_grid_order_follows_the_spec_values_follow_variables():
    src = grid_points("y=0:1:2,x=5:6:2", variables=["x", "y"], chunk_size=3)
    values, _, _ = collect(src)
    assert list(values) == ["x", "y"]
    assert list(zip(values["y"], values["x"])) == [(0, 5), (0, 6), (1, 5), (1, 6)]


def test_grid_endpoints_are_exact_and_chunks_cover_everything():
    src = grid_points("x=0:1:7,y=-3:0.1:11", variables=["x", "y"], chunk_size=4)
    chunks = list(src.chunks())
    assert [len(c) for c in chunks] == [4] * 19 + [1]
    xs = np.concatenate([c.values["x"] for c in chunks])
    ys = np.concatenate([c.values["y"] for c in chunks])
    assert xs[0] == 0.0 and xs[-1] == 1.0 and ys[0] == -3.0 and ys[-1] == 0.1


def test_grid_count_one():
    src = grid_points("x=2:2:1,y=0:1:3", variables=["x", "y"])
    assert collect(src)[0] == {"x": [2.0, 2.0, 2.0], "y": [0.0, 0.5, 1.0]}


def test_grid_constant_expression_bounds():
    src = grid_points("x=-pi:pi:9,y=atan2(1,2):1:3", variables=["x", "y"])
    values, _, _ = collect(src)
    assert values["x"][0] == -math.pi and values["x"][-1] == math.pi
    assert values["y"][:3] == np.linspace(math.atan2(1, 2), 1, 3).tolist()


def test_grid_with_at():
    src = grid_points("x=0:1:3", variables=["x", "k"], fixed=parse_point("k=e,unused=4"))
    assert collect(src)[0] == {"x": [0.0, 0.5, 1.0], "k": [math.e] * 3}


def test_grid_is_lazy():
    import tracemalloc

    # 1e8 points of two float64 columns would be 1.6 GB: the first chunk must cost only its own few
    tracemalloc.start()
    try:
        src = grid_points("x=0:1:10000,y=0:1:10000", variables=["x", "y"], chunk_size=10)
        first = next(src.chunks())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 << 20, peak
    assert src.total == MAX_GRID_POINTS
    assert len(first) == 10 and first.values["x"].tolist() == [0.0] * 10
    assert first.values["y"].tolist() == np.linspace(0, 1, 10000)[:10].tolist()


def test_grid_cap():
    with pytest.raises(UsageError, match=r"10001 x 10000 = 100,010,000 points, more than the 100,000,000"):
        grid_points("x=0:1:10001,y=0:1:10000", variables=["x", "y"])
    with pytest.raises(UsageError, match=r"more than the 100,000,000 allowed"):
        grid_points("x=0:1:100000001", variables=["x"])
    with pytest.raises(UsageError, match=r"more than the 100,000,000 allowed"):
        grid_points("x=0:1:" + "9" * 5000, variables=["x"])


GRID_ERRORS = [
    ("", None, r"--grid is empty"),
    ("   ", None, r"--grid is empty"),
    ("x=0:1:2,", 8, r"empty entry"),
    ("x=0:1:2,,y=0:1:2", 8, r"empty entry"),
    ("x", 0, r"'x' is not of the form name=start:stop:count"),
    ("x=0:1:2, y0:1:2", 9, r"'y0:1:2' is not of the form"),
    ("x=0:1", 2, r"x: expected start:stop:count, got 2 parts"),
    ("x=0:1:2:3", 2, r"x: expected start:stop:count, got 4 parts"),
    ("x=0:1:", 6, r"x: the count must be a positive whole number, not nothing"),
    ("x=0:1:2.5", 6, r"the count must be a positive whole number, not '2.5'"),
    ("x=0:1:-3", 6, r"the count must be a positive whole number"),
    ("x=0:1:\uff13", 6, r"the count must be a positive whole number"),
    ("x=0:1:0", 6, r"the count must be at least 1"),
    ("x=0:1:1", 6, r"a count of 1 .* start and stop must be equal"),
    ("x=:1:3", 2, r"x: the start is missing"),
    ("x=0::3", 4, r"x: the stop is missing"),
    ("x=nan:1:3", 2, r"the start must be a finite number"),
    ("x=0:inf:3", 4, r"the stop must be a finite number"),
    ("x=0:1/0:3", 4, r"x: stop: division by zero"),
    ("x=0:y:3", 4, r"must be a number or constant expression, not one using 'y'"),
    ("x=0:sin(:3", 8, r"x: stop: "),
    ("x=-1e308:1e308:3", 2, r"too wide for float64"),
    ("x=0:1:2,x=0:1:3", 8, r"'x' is given twice"),
    ("1x=0:1:2", 0, r"'1x' is not a variable name"),
    ("x=0:1:2,q=0:1:2", 8, r"'q' is not one of the variables \(they are: x, y\)"),
]


@pytest.mark.parametrize("spec, position, message", GRID_ERRORS)
def test_grid_errors(spec, position, message):
    with pytest.raises(UsageError) as info:
        grid_points(spec, variables=["x", "y"], fixed=parse_point("y=1"))
    err = info.value
    assert err.exit_code == 2
    assert re.search(message, err.message), err.message
    assert err.position == position
    if position is not None:
        assert err.source == spec


def test_grid_missing_and_ambiguous_variables():
    with pytest.raises(UsageError, match=r"--grid has no values for y: add y=start:stop:count to --grid, "
                                         r"or give --at y=value"):
        grid_points("x=0:1:2", variables=["x", "y"])
    with pytest.raises(UsageError, match=r"'y' is given both by --grid and by --at") as info:
        grid_points("x=0:1:2,y=0:1:2", variables=["x", "y"], fixed=parse_point("y=1"))
    assert info.value.position == 8


def test_without_a_fixing_option_errors_suggest_none(tmp_path):
    """fixed_option=None (descend): the input must give every variable, and no --at is suggested."""
    with pytest.raises(UsageError) as info:
        grid_points("x=0:1:2", variables=["x", "y"], fixed_option=None)
    assert info.value.message == "--grid has no values for y: add y=start:stop:count to --grid"
    for name, text, message in [("p.csv", "x\n1\n", "no column for y: add it"),
                                ("p.jsonl", '{"x": 1}\n', "no key for y: add it"),
                                ("q.jsonl", '{"x": 1, "y": 1}\n{"x": 1}\n', "no key for y: add it")]:
        path = write(tmp_path, name, text)
        with pytest.raises(UsageError) as info:
            collect(open_points(path, variables=["x", "y"], fixed_option=None))
        assert info.value.message.endswith(message) and "--at" not in info.value.message
    with pytest.raises(ValueError, match="fixed_option"):
        grid_points("x=0:1:2", variables=["x", "y"], fixed=parse_point("y=1"), fixed_option=None)


# ---------------------------------------------------------------------------------------------
# Purity and a round-trip property
# ---------------------------------------------------------------------------------------------
def test_module_imports_no_cli_or_heavy_library():
    code = ("import sys, gradcli.expression.sources as s; "
            "bad = [m for m in ('typer', 'rich', 'sympy', 'tensorflow') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


FORMATS = [repr, lambda v: f"{v:.17g}", lambda v: f"{v:.16e}"]


@st.composite
def tables(draw):
    n_vars = draw(st.integers(1, 3))
    n_pass = draw(st.integers(0, 3))
    variables = [f"v{i}" for i in range(n_vars)]
    passing = [f"p{i}" for i in range(n_pass)]
    columns = draw(st.permutations(variables + passing))
    n_rows = draw(st.integers(0, 8))
    finite = st.floats(allow_nan=False, allow_infinity=False)
    rows = []
    for _ in range(n_rows):
        row = {v: draw(finite) for v in variables}
        row.update({p: draw(st.text(max_size=12)) for p in passing})
        rows.append(row)
    fmt = draw(st.sampled_from(FORMATS))
    return variables, passing, columns, rows, fmt


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4))
def test_csv_round_trip(table, chunk_size):
    variables, passing, columns, rows, fmt = table
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([fmt(row[c]) if c in variables else row[c] for c in columns])
    text = buffer.getvalue()
    expected_values = {v: [r[v] for r in rows] for v in variables}
    expected_fields = [{c: r[c] for c in columns if c in passing} for r in rows]

    src = open_points("-", variables=variables, stdin=io.StringIO(text, newline=""), chunk_size=chunk_size)
    values, fields, _ = collect(src)
    assert values == expected_values and fields == expected_fields
    assert src.field_names == [c for c in columns if c in passing]

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.csv")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        src = open_points(path, variables=variables, chunk_size=chunk_size)
        assert src.total == len(rows)
        values, fields, _ = collect(src)
        assert values == expected_values and fields == expected_fields


@settings(max_examples=40, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5).filter(lambda k: k != "x"),
                                st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8)
                                             | st.floats(allow_nan=False, allow_infinity=False),
                                             lambda inner: st.lists(inner, max_size=3)
                                             | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                                             max_leaves=6), max_size=3),
                max_size=6),
       st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=6, max_size=6))
def test_jsonl_round_trip(records, xs):
    lines = []
    for record, x in zip(records, xs):
        lines.append(json.dumps({"x": x, **record}))
    src = stdin_source("\n".join(lines) + "\n", variables=["x"], chunk_size=3)
    values, fields, line_numbers = collect(src)
    assert values == {"x": xs[:len(records)]}
    assert fields == records
    assert line_numbers == list(range(1, len(records) + 1))


# ---- values the dtype cannot hold are refused as --at refuses them (issue 10 follow-up, item 3) ----------------
@pytest.mark.parametrize("name, text, why", [
    ("p.csv", "x\n2\n1e39\n", "p.csv:3: x=1e+39 does not fit in float32 (largest 3.4e+38)"),
    ("p.csv", "x\n2\n-1e-300\n", "p.csv:3: x=-1e-300 rounds to 0 in float32"),
    ("p.jsonl", '{"x": 2}\n{"x": 1e-46}\n', "p.jsonl:2: x=1e-46 rounds to 0 in float32"),
])
def test_points_that_do_not_fit_float32_are_refused_with_their_line(tmp_path, name, text, why):
    path = write(tmp_path, name, text)
    with pytest.raises(UsageError, match=re.escape(why)):
        open_points(path, variables=["x"], dtype="float32")
    got, _, _ = collect(open_points(path, variables=["x"], dtype="float64"))  # float64 holds them
    assert len(got["x"]) == 2


def test_subnormal_float32_points_and_zero_are_accepted(tmp_path):
    path = write(tmp_path, "p.csv", "x\n0\n1.5e-45\n-3.4e38\n")
    got, _, _ = collect(open_points(path, variables=["x"], dtype="float32"))
    assert got["x"] == [0.0, 1.5e-45, -3.4e38]


@pytest.mark.parametrize("spec, why", [
    ("x=0:1e39:3", "--grid: x=5e+38 does not fit in float32"),  # the first value past the largest
    ("x=-1e-46:1e-46:3", "--grid: x=-1e-46 rounds to 0 in float32"),
])
def test_grid_values_that_do_not_fit_float32_are_refused(spec, why):
    with pytest.raises(UsageError, match=re.escape(why)):
        grid_points(spec, variables=["x"], dtype="float32")
    assert grid_points(spec, variables=["x"]).total == 3


def test_a_fixed_value_that_does_not_fit_is_refused_for_a_batch(tmp_path):
    path = write(tmp_path, "p.csv", "y\n2\n")
    with pytest.raises(UsageError, match=re.escape("--at: x=1e+39 does not fit in float32")):
        open_points(path, variables=["x", "y"], fixed={"x": 1e39}, dtype="float32")


def test_float32_points_on_the_command_line_exit_2(invoke, tmp_path):
    path = write(tmp_path, "p.csv", "x\n1\n1e39\n")
    result = invoke("grad", "x**2", "-m", "symbolic,fd", "--dtype", "float32", "--points", path, "-f", "csv")
    assert result.exit_code == 2 and result.stdout == ""
    assert "p.csv:3: x=1e+39 does not fit in float32" in result.stderr and "not finite" not in result.stderr
    result = invoke("descend", "x**2", "--dtype", "float32", "--grid", "x=-1e-46:1e-46:3", "--steps", "2")
    assert result.exit_code == 2 and "rounds to 0 in float32" in result.stderr


# ---- an input with a header and no rows (issue 10 follow-up, item 6) -------------------------------------------
@pytest.mark.parametrize("output", ["json", "jsonl", "csv", "table"])
def test_a_header_without_rows_is_an_empty_result_with_a_note(invoke, tmp_path, output):
    path = write(tmp_path, "p.csv", "x,label\n")
    result = invoke("grad", "x**2", "-m", "symbolic,fd", "--points", path, "-f", output)
    assert result.exit_code == 0, result.stderr
    assert "gradcli: note: no points were read: " in result.stderr and "p.csv has no rows" in result.stderr
    if output == "json":
        doc = json.loads(result.stdout)
        assert doc["points"] == [] and doc["summary"]["points"] == 0
        assert any("no points were read" in n for n in doc["notes"])
    elif output == "table":
        assert result.stdout.strip() == "gradient of x**2 at each point"
    else:
        assert result.stdout == ""
