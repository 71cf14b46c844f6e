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
