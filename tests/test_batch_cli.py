"""Many points: --points / --grid on grad, hessian and derivative, through the CLI in process."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from gradcli.cli import app


def run(runner, *args, input=None):
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def records(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


@pytest.fixture()
def points_csv(tmp_path):
    path = tmp_path / "pts.csv"
    path.write_text("id,x1,x2,label\na,2,3,first\nb,1,1,second\nc,0,pi,third\n")
    return str(path)


def single(runner, command, expression, at, *extra):
    result = run(runner, command, expression, "--at", at, *extra, "-f", "json")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_grad_points_equal_single_point_results(runner, points_csv):
    result = run(runner, "grad", "(x1+5)*x2**2", "--points", points_csv, "-f", "jsonl")
    assert result.exit_code == 0, result.stderr
    recs = records(result)
    assert [r["fields"] for r in recs] == [{"id": "a", "label": "first"}, {"id": "b", "label": "second"},
                                          {"id": "c", "label": "third"}]
    assert [r["line"] for r in recs] == [2, 3, 4]
    assert recs[0]["results"][0]["gradient"]["symbolic"] == {"x1": 9.0, "x2": 42.0}
    assert recs[0]["results"][0]["gradient"]["tape"] == {"x1": 9.0, "x2": 42.0}
    for r in recs:
        at = ",".join(f"{k}={v!r}" for k, v in r["point"].items())
        one = single(runner, "grad", "(x1+5)*x2**2", at)["results"][0]
        mine = r["results"][0]
        assert mine["gradient"]["fd"] == one["gradient"]["fd"]  # one engine: the same digits
        assert mine["gradient"]["tape"] == one["gradient"]["tape"]
        for v, exact in one["gradient"]["symbolic"].items():
            assert mine["gradient"]["symbolic"][v] == pytest.approx(exact, rel=1e-14, abs=1e-300)
    assert "3 points done, 0 with warnings, 0 undefined" in result.stderr


def test_guide_numbers_in_a_batch(runner, tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text('{"x": 1}\n')
    recs = records(run(runner, "grad", "3*x**2+2*x-1", "--points", str(path), "-m", "fd", "--eps", "1e-3",
                       "-f", "jsonl"))
    assert recs[0]["results"][0]["gradient"]["fd"]["x"] == 7.999999999999119


def test_grid_is_inclusive_and_first_variable_slowest(runner):
    result = run(runner, "grad", "x*y", "--grid", "x=-1:1:3,y=0:1:2", "-m", "symbolic,fd", "-f", "jsonl")
    assert result.exit_code == 0, result.stderr
    pts = [(r["point"]["x"], r["point"]["y"]) for r in records(result)]
    assert pts == [(-1.0, 0.0), (-1.0, 1.0), (0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)]
    assert all("line" not in r for r in records(result))


def test_at_fixes_what_the_grid_lacks(runner):
    recs = records(run(runner, "grad", "a*x**2", "--grid", "x=1:2:2", "--at", "a=3", "-m", "symbolic,fd",
                       "-f", "jsonl"))
    assert [r["results"][0]["gradient"]["symbolic"] for r in recs] == [{"x": 6.0, "a": 1.0}, {"x": 12.0, "a": 4.0}]


def test_csv_has_one_header_and_pass_through_columns(runner, points_csv):
    result = run(runner, "grad", "(x1+5)*x2**2", "--points", points_csv, "-m", "symbolic,fd", "-f", "csv",
                 "--batch-size", "1")
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 3 and result.stdout.count("symbolic_dx1") == 1
    assert [r["id"] for r in rows] == ["a", "b", "c"] and rows[0]["label"] == "first"
    assert float(rows[0]["symbolic_dx2"]) == 42.0 and rows[0]["status"] == "ok"


def test_json_document_has_points_and_summary(runner, points_csv):
    result = run(runner, "grad", "(x1+5)*x2**2", "--points", points_csv, "-m", "symbolic,fd", "-f", "json")
    doc = json.loads(result.stdout)
    assert doc["command"] == "grad" and len(doc["points"]) == 3
    assert doc["summary"]["points"] == 3 and doc["symbolic_values"].startswith("float64")
    assert doc["formulas"] == [{"x1": "x2**2", "x2": "2*x2*(x1 + 5)"}]


def test_table_stops_at_its_limit_and_points_to_jsonl(runner):
    result = run(runner, "grad", "x**2", "--grid", "x=0:1:50", "-m", "symbolic,fd")
    assert result.exit_code == 0
    assert "first 40 of 50 points" in result.stderr and "jsonl" in result.stderr


def test_stdin_streams_and_passes_columns(runner):
    data = "x,tag\n1,p\n2,q\n"
    result = run(runner, "derivative", "x**3", "-n", "2", "--points", "-", "-m", "symbolic,fd", "-f", "jsonl",
                 input=data)
    assert result.exit_code == 0, result.stderr
    recs = records(result)
    assert [r["fields"]["tag"] for r in recs] == ["p", "q"]
    assert [r["derivatives"]["symbolic"] for r in recs] == [[3.0, 6.0], [12.0, 12.0]]


def test_undefined_points_get_nulls_and_exit_1_others_unaffected(runner):
    result = run(runner, "grad", "log(x)", "--grid", "x=-1:1:3", "-f", "jsonl")
    assert result.exit_code == 1
    recs = records(result)
    assert recs[0]["status"] == "undefined" and recs[0]["results"][0]["value"] is None
    assert all(v is None for g in recs[0]["results"][0]["gradient"].values() for v in g.values())
    assert recs[2]["status"] == "ok" and recs[2]["results"][0]["gradient"]["symbolic"]["x"] == 1.0
    assert "3 points done" in result.stderr and "2 undefined" in result.stderr


@pytest.mark.parametrize("content, where", [
    ("x\n1\nabc\n", ":3:"),
    ("x,y\n1\n", ":2:"),
    ("x,x\n1,2\n", ":1:"),
    ("y\n1\n", ":1:"),
    ("x\nnan\n", ":2:"),
])
def test_bad_rows_in_a_file_stop_before_anything_is_computed(runner, tmp_path, content, where):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    result = run(runner, "grad", "x**2", "--points", str(path), "-m", "fd", "-f", "jsonl")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"bad.csv{where}" in result.stderr and "Traceback" not in result.stderr


def test_bad_line_on_stdin_keeps_the_records_written(runner):
    result = run(runner, "grad", "x**2", "--points", "-", "-m", "fd", "-f", "jsonl", "--batch-size", "2",
                 input="x\n1\n2\n3\noops\n5\n")
    assert result.exit_code == 2
    recs = records(result)
    assert [r["point"]["x"] for r in recs] == [1.0, 2.0, 3.0]
    assert "<stdin>:5" in result.stderr


@pytest.mark.parametrize("args", [
    ["--points", "x.csv", "--grid", "x=0:1:2"],
    ["--grid", "x=0:1"],
    ["--grid", "x=0:1:2", "--show-code"],
])
def test_usage_errors_for_many_points(runner, args):
    result = run(runner, "grad", "x**2", *args)
    assert result.exit_code == 2, result.stdout
    assert result.stderr.startswith("gradcli: error:")


def test_hessian_grid_classifies_each_point(runner):
    result = run(runner, "hessian", "x**2 - y**2", "--grid", "x=0:1:2,y=0:1:2", "-f", "jsonl")
    assert result.exit_code == 0, result.stderr
    recs = records(result)
    assert recs[0]["critical_point"] == "saddle"
    assert all(r["hessian"]["tape"] == [[2.0, 0.0], [0.0, -2.0]] for r in recs)
    one = single(runner, "hessian", "x**2 - y**2", "x=1,y=1")
    assert recs[3]["hessian"]["fd"] == one["hessian"]["fd"]


def test_hessian_batch_analysis_uses_the_exact_matrix(runner):
    # entries 2e8 and 2e-4 on the diagonal: positive definite, however small the second one is
    result = run(runner, "hessian", "1e8*x**2 + 1e-4*y**2", "--grid", "x=1:1:1,y=1:1:1", "-m", "symbolic,fd",
                 "-f", "jsonl")
    rec = records(result)[0]
    assert rec["analysis_source"] == "symbolic" and rec["definiteness"] == "positive-definite"
    assert rec["error"]["fd"] == pytest.approx(abs(rec["hessian"]["fd"][1][1] - 2e-4), abs=1.0)


def test_derivative_batch_matches_single_points(runner):
    result = run(runner, "derivative", "sin(x)*exp(x)", "-n", "4", "--grid", "x=0:2:3", "-f", "jsonl")
    assert result.exit_code == 0, result.stderr
    for r in records(result):
        one = single(runner, "derivative", "sin(x)*exp(x)", f"x={r['point']['x']!r}", "-n", "4")
        assert {k: one[k] for k in r} == r  # one point is a batch of one: the same record


def test_several_expressions_sum_in_a_batch(runner):
    recs = records(run(runner, "grad", "3*x", "x**2", "--grid", "x=5:5:1", "-f", "jsonl"))
    assert recs[0]["sum"]["tape"] == {"x": 13.0} and recs[0]["sum"]["symbolic"] == {"x": 13.0}


@pytest.mark.parametrize("command, expression", [("grad", "x**2*y"), ("hessian", "x**2*y"), ("derivative", "x**3")])
def test_one_point_jsonl_is_the_record_many_points_write(runner, tmp_path, command, expression):
    point = {"x": 3.0, "y": 2.0} if "y" in expression else {"x": 3.0}
    file = tmp_path / "p.jsonl"
    file.write_text(json.dumps(point) + "\n")
    at = run(runner, command, expression, "--at", ",".join(f"{k}={v}" for k, v in point.items()), "-f", "jsonl")
    from_file = run(runner, command, expression, "--points", str(file), "-f", "jsonl")
    grid = run(runner, command, expression, "--grid", ",".join(f"{k}={v}:{v}:1" for k, v in point.items()),
               "-f", "jsonl")
    assert len(at.stdout.splitlines()) == 1
    assert json.loads(at.stdout) == json.loads(grid.stdout)
    assert json.loads(from_file.stdout) == {**json.loads(at.stdout), "line": 1}  # a file's records say their line


def test_symbolic_timeout_leaves_the_column_out_with_a_note(runner):
    result = run(runner, "derivative", "x**x**x**x", "-n", "6", "--grid", "x=1:2:2", "--symbolic-timeout", "0.1",
                 "-m", "symbolic,fd", "-f", "jsonl")
    recs = records(result)
    assert "symbolic column left out" in result.stderr
    assert all("symbolic" not in r["derivatives"] for r in recs)
    assert all(math.isfinite(v) for r in recs for v in r["derivatives"]["fd"])


def test_formulas_in_the_batch_header(runner):
    result = run(runner, "hessian", "x*y**2", "--grid", "x=1:2:2,y=1:1:1", "--formulas", "-f", "json")
    assert json.loads(result.stdout)["formulas"] == [["0", "2*y"], ["2*y", "2*x"]]
    result = run(runner, "derivative", "x**3", "-n", "2", "--grid", "x=1:2:2", "--formulas", "-f", "json")
    assert json.loads(result.stdout)["formulas"] == ["3*x**2", "6*x"]


def test_jsonl_records_arrive_while_stdin_is_still_open():
    """A real pipe: the first batch's records are written before the last rows are even sent."""
    import select
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "gradcli", "grad", "x**2", "--points", "-", "-m", "fd", "-f",
                          "jsonl", "--batch-size", "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        p.stdin.write("x\n1\n2\n")
        p.stdin.flush()
        ready, _, _ = select.select([p.stdout], [], [], 60)
        assert ready, "no record before stdin was closed"
        assert json.loads(p.stdout.readline())["point"] == {"x": 1.0}
        p.stdin.write("3\n")
        p.stdin.close()
        rest = p.stdout.read()
        assert [json.loads(line)["point"]["x"] for line in rest.splitlines()] == [2.0, 3.0]
        assert p.wait(60) == 0
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("command, expression, columns", [
    ("grad", "x**2*y", ["fd_error_estimate_dx", "fd_error_estimate_dy"]),
    ("hessian", "x**2*y", ["fd_error_estimate_dxdx", "fd_error_estimate_dxdy", "fd_error_estimate_dydy"]),
    ("derivative", "x**3", ["fd_error_estimate_d1"]),
])
def test_csv_carries_fds_error_estimate(runner, command, expression, columns):
    at = "x=1,y=2" if "y" in expression else "x=1"
    rows = run(runner, command, expression, "--at", at, "-f", "csv").stdout.splitlines()
    header, row = rows[0].split(","), rows[1].split(",")
    (record,) = records(run(runner, command, expression, "--at", at, "-f", "jsonl"))
    for name in columns:
        assert name in header
        value = float(row[header.index(name)])
        assert value > 0
    estimate = record["fd_error_estimate"] if command != "grad" else record["results"][0]["fd_error_estimate"]
    assert json.dumps(estimate).count(",") + 1 >= len(columns)


def test_many_points_name_where_the_tape_first_went_wrong_once_per_expression(runner):
    # exp(x) overflows float32 from x = 88.7: every point here is undefined on the tape, the first one is traced
    result = run(runner, "grad", "log(1+exp(x))", "x*2", "--grid", "x=90:100:3", "--dtype", "float32", "-f", "jsonl")
    assert result.exit_code == 1
    pointers = [line for line in result.stderr.splitlines() if "first goes wrong" in line]
    assert pointers == [
        "gradcli: note: log(1 + exp(x)) at x=90: the tape first goes wrong at exp(x) (trace node v1): its value is "
        "inf, exact 1.2204e+39 (v1 = exp(x) overflows float32 (largest finite 3.403e+38) from x = 90.0); gradcli "
        "trace shows every node"]
    one = run(runner, "grad", "log(1+exp(x))", "--at", "x=90", "--dtype", "float32")
    assert "log(1 + exp(x)): the tape first goes wrong at exp(x)" in one.stderr  # one point: no 'at'


@pytest.mark.parametrize("command, extra", [("hessian", ["--wrt", "x"]), ("derivative", ["-n", "2"])])
def test_hessian_and_derivative_name_where_the_tape_first_went_wrong(runner, command, extra):
    pointer = ("log(1 + exp(x)){}: the tape first goes wrong at exp(x) (trace node v1): its value is inf, exact "
               "{} (v1 = exp(x) overflows float32 (largest finite 3.403e+38) from x = {}); gradcli trace shows every node")
    one = run(runner, command, "log(1+exp(x))", "--at", "x=100", "--dtype", "float32", *extra)
    assert one.exit_code == 1
    assert f"gradcli: note: {pointer.format('', '2.68812e+43', '100.0')}" in one.stderr.splitlines()
    many = run(runner, command, "log(1+exp(x))", "--grid", "x=95:100:2", "--dtype", "float32", *extra, "-f", "jsonl")
    notes = [line for line in many.stderr.splitlines() if "first goes wrong" in line]
    assert notes == [f"gradcli: note: {pointer.format(' at x=95', '1.81124e+41', '95.0')}"]  # once, at the first
