"""--points from Parquet (a file, a folder of part files, a glob), written by pyarrow as a data tool would:
the same records as the same points from CSV, typed pass-through columns, and errors naming the row."""

from __future__ import annotations

import json

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from gradcli.errors import UsageError  # noqa: E402
from gradcli.expression.sources import open_points  # noqa: E402


def records(result) -> list[dict]:
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def without_line(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("line", "fields")} for r in rows]


@pytest.fixture
def data(tmp_path):
    xs, ys = [0.5, 1.0, 2.0, -3.0, 1e-3], [1, 2, 3, 4, 5]
    pq.write_table(pa.table({"x": xs, "y": ys, "run": ["a", "b", "c", "d", "e"], "weight": [0.1] * 5}),
                   tmp_path / "p.parquet")
    (tmp_path / "ds").mkdir()
    pq.write_table(pa.table({"x": xs[:2], "y": ys[:2], "run": ["a", "b"], "weight": [0.1] * 2}),
                   tmp_path / "ds" / "part-0.parquet")
    pq.write_table(pa.table({"y": ys[2:], "x": xs[2:], "run": ["c", "d", "e"], "weight": [0.1] * 3}),
                   tmp_path / "ds" / "part-1.parquet")
    (tmp_path / "ds" / "_SUCCESS").write_text("")
    (tmp_path / "p.csv").write_text("x,y\n" + "".join(f"{x!r},{y}\n" for x, y in zip(xs, ys)))
    return tmp_path


@pytest.mark.parametrize("command", [["grad", "sin(x)*y**2", "-m", "symbolic,fd"],
                                     ["hessian", "x**3*y", "-m", "symbolic,fd"],
                                     ["eval", "log(y) + x"]])
def test_parquet_points_are_the_csv_points(data, invoke, command):
    from_csv = records(invoke(*command, "--points", str(data / "p.csv"), "-f", "jsonl"))
    for spec in ("p.parquet", "ds", "ds/part-*.parquet"):
        from_parquet = records(invoke(*command, "--points", str(data / spec), "-f", "jsonl"))
        assert without_line(from_parquet) == without_line(from_csv), spec
    assert [r["line"] for r in from_parquet] == [1, 2, 3, 4, 5]  # the row's number, across the part files


def test_pass_through_columns_keep_their_types(data, invoke):
    rows = records(invoke("grad", "x*y", "--points", str(data / "p.parquet"), "-m", "fd", "-f", "jsonl"))
    assert rows[0]["fields"] == {"run": "a", "weight": 0.1}


def test_bad_parquet_points_are_refused_with_their_row(tmp_path):
    pq.write_table(pa.table({"x": [1.0, None, 3.0]}), tmp_path / "null.parquet")
    pq.write_table(pa.table({"x": [1.0, float("inf")]}), tmp_path / "inf.parquet")
    pq.write_table(pa.table({"x": ["1.0"]}), tmp_path / "text.parquet")
    pq.write_table(pa.table({"y": [1.0]}), tmp_path / "no_x.parquet")
    pq.write_table(pa.table({"x": [2**60 + 1]}), tmp_path / "big.parquet")
    (tmp_path / "junk.parquet").write_text("not parquet")
    (tmp_path / "empty").mkdir()
    for name, message in [("null.parquet", "null.parquet:2: x: null is not a number"),
                          ("inf.parquet", "inf.parquet:2: x: inf is not a finite number"),
                          ("text.parquet", "column 'x' holds string, not numbers"),
                          ("no_x.parquet", "no column for x: add it or give --at x=value"),
                          ("big.parquet", "big.parquet:1: x: 1152921504606846977 has more digits than float64"),
                          ("junk.parquet", "is not a Parquet file"),
                          ("missing.parquet", "missing.parquet: no such file"),
                          ("none-*.parquet", "matches no file"),
                          ("empty", "is a directory with no Parquet file")]:
        with pytest.raises(UsageError, match=message):
            open_points(str(tmp_path / name), variables=["x"])


def test_parquet_points_come_in_chunks_and_total_is_known(tmp_path):
    pq.write_table(pa.table({"x": [float(i) for i in range(10)]}), tmp_path / "ten.parquet", row_group_size=3)
    source = open_points(str(tmp_path / "ten.parquet"), variables=["x", "y"], fixed={"y": 2.0}, chunk_size=4)
    assert source.total == 10
    chunks = list(source.chunks())
    assert max(len(c) for c in chunks) <= 4 and sum(len(c) for c in chunks) == 10
    assert [float(v) for c in chunks for v in c.values["x"]] == [float(i) for i in range(10)]
    assert all(float(v) == 2.0 for c in chunks for v in c.values["y"])


# ---- -f parquet --output, and --output for the text formats ------------------------------------------------

def _csv_columns(text: str) -> dict[str, list[str]]:
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    return {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}


@pytest.mark.parametrize("command", [["grad", "sin(x)*y**2", "log(x)", "-m", "symbolic,fd"],
                                     ["hessian", "x**3*y", "-m", "symbolic,fd"],
                                     ["derivative", "exp(x)/x", "-n", "2", "-m", "symbolic,fd"],
                                     ["eval", "log(x) + y"]])
def test_parquet_output_is_the_csv_typed(data, invoke, command, monkeypatch):
    monkeypatch.chdir(data)
    grid = ["--grid", "x=-1:2:4"] + (["--at", "y=2"] if command[0] != "derivative" else [])  # one variable
    csv_result = invoke(*command, *grid, "-f", "csv")
    parquet_result = invoke(*command, *grid, "-f", "parquet", "--output", "out.parquet")
    assert parquet_result.exit_code == csv_result.exit_code, parquet_result.stderr
    assert parquet_result.stdout == "" and parquet_result.stderr == csv_result.stderr
    table = pq.read_table(data / "out.parquet")
    expected = _csv_columns(csv_result.stdout)
    assert table.column_names == list(expected)
    for name, cells in expected.items():
        column = table.column(name)
        values = column.to_pylist()
        if pa.types.is_floating(column.type):
            assert [repr(v) if v is not None else "" for v in values] == cells, name
        elif pa.types.is_integer(column.type):
            assert [str(v) for v in values] == cells, name
        else:
            assert pa.types.is_string(column.type), (name, column.type)
            assert [v or "" for v in values] == cells, name
    assert "status" not in expected or table.schema.field("status").type == pa.string()


def test_parquet_needs_output_and_only_some_commands_write_it(data, invoke, monkeypatch):
    monkeypatch.chdir(data)
    result = invoke("grad", "x**2", "--at", "x=1", "-f", "parquet")
    assert result.exit_code == 2 and "-f parquet writes a file: give --output FILE.parquet" in result.stderr
    result = invoke("steps", "sin(x)", "--at", "x=1", "-f", "parquet", "--output", "s.parquet")
    assert result.exit_code == 2
    result = invoke("grad", "x", "-m", "fd", "--points", "ds", "-f", "parquet", "--output", "ds/new.parquet")
    assert result.exit_code == 2 and "is among the run's input (ds)" in result.stderr
    assert not (data / "ds" / "new.parquet").exists()


def test_output_writes_text_formats_whole_and_leaves_nothing_on_failure(data, invoke, monkeypatch):
    monkeypatch.chdir(data)
    result = invoke("grad", "x**2*y", "--points", "p.parquet", "-m", "fd", "-f", "jsonl", "--output", "out.jsonl")
    assert result.exit_code == 0 and result.stdout == ""
    assert len((data / "out.jsonl").read_text().splitlines()) == 5
    (data / "old.csv").write_text("kept\n")
    result = invoke("grad", "x**2*y", "--points", "p.parquet", "--at", "y=1", "-m", "fd", "-f", "csv",
                    "--output", "old.csv")  # refused before anything is written: y given twice
    assert result.exit_code == 2
    assert (data / "old.csv").read_text() == "kept\n"
    assert sorted(p.name for p in data.iterdir() if p.name.startswith(".")) == []  # no temporary left
    result = invoke("grad", "log(x)", "--grid", "x=-1:1:3", "-m", "fd", "-f", "csv", "--output", "u.csv")
    assert result.exit_code == 1  # undefined points: the output is complete all the same, and kept
    assert len((data / "u.csv").read_text().splitlines()) == 4
