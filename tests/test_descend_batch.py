"""gradcli descend --points/--grid: many starts in one compiled loop, their records and their basins."""

from __future__ import annotations

import csv
import io
import json

import pytest

from gradcli.cli import app

HIMMELBLAU = "(x**2+y-11)**2+(x+y**2-7)**2"
HIMMELBLAU_MINIMA = [(3.0, 2.0), (-2.805118, 3.131313), (-3.779310, -3.283186), (3.584428, -1.848127)]
DOUBLE_WELL = "(x**2-1)**2+(y**2-1)**2"  # minima at (+-1, +-1), saddles at (0, +-1) and (+-1, 0), maximum at 0
NO_SYMPY = ("--stationary-timeout", "0")


def run(runner, *args, input=None, env=None):
    return runner.invoke(app, ["descend", *args], input=input, env=env, catch_exceptions=False)


def lines(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def single(runner, expression, start: dict, *extra) -> dict:
    """The --from record of one start (-f jsonl): the record --points/--grid writes for it."""
    at = ",".join(f"{k}={v!r}" for k, v in start.items())
    result = run(runner, expression, "--from", at, *extra, *NO_SYMPY, "-f", "jsonl")
    assert result.exit_code in (0, 1), result.stderr
    (one,) = lines(result)
    return one


def timeless(record: dict) -> dict:
    """A record without its runs' seconds (they vary from one call to the next)."""
    return {**record, "runs": [{k: v for k, v in run.items() if k != "seconds"} for run in record["runs"]]}


def unbasined(record: dict) -> dict:
    """A record without its runs' basins of end points."""
    return {**record, "runs": [{k: v for k, v in run.items() if k != "basin"} for run in record["runs"]]}


def only_run(record: dict) -> dict:
    (one,) = record["runs"]
    return one


@pytest.fixture(scope="module")
def himmelblau(runner):
    """36 starts on a grid, the hand-written loop at lr 0.01, SymPy given time to solve grad f = 0 (~10 s)."""
    result = run(runner, HIMMELBLAU, "--grid", "x=-5:5:6,y=-5:5:6", "--lr", "0.01", "--stationary-timeout", "120",
                 "-f", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_himmelblau_basins_are_its_four_minima(himmelblau):
    doc, stderr = himmelblau
    assert doc["command"] == "descend" and len(doc["starts"]) == 36 and doc["summary"]["starts"] == 36
    basin = doc["basins"]["manual"]
    assert basin["starts"] == 36
    assert sum(s["starts"] for s in basin["stationary_points"]) + basin["elsewhere"] + basin["diverged"] == 36
    found = [(s["point"]["x"], s["point"]["y"]) for s in basin["stationary_points"]]
    assert len(found) == 4 and all(s["kind"] == "minimum" for s in basin["stationary_points"])
    for x, y in HIMMELBLAU_MINIMA:
        assert any(abs(x - a) < 1e-5 and abs(y - b) < 1e-5 for a, b in found)
    # every start here converges, each to the minimum its record names
    assert doc["summary"]["statuses"] == {"manual": {"converged": 36}}
    for r in map(only_run, doc["starts"]):
        s = r["stationary_point"]
        assert s["kind"] == "minimum" and s["distance"] < 1e-6
        assert abs(r["final"]["x"] - s["point"]["x"]) < 1e-6
    assert "gradcli: summary: 36 starts done; manual: 36 converged (36 at 4 stationary points)" in stderr


def test_himmelblau_basins_from_end_points_when_sympy_runs_out_of_time(runner):
    """SymPy needs ~9 s for Himmelblau's grad f = 0 here (past the default 2 s; 0.2 s keeps that true on a much
    faster machine): the converged end points give the basins, each classified by the tape Hessian, and no
    record claims a SymPy stationary point."""
    result = run(runner, HIMMELBLAU, "--grid", "x=-5:5:6,y=-5:5:6", "-o", "adam", "--lr", "0.01", "-f", "json",
                 "--stationary-timeout", "0.2")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["stationary_points"] is None and doc["basins_from"] == "end points"
    converged = doc["summary"]["statuses"]["adam"]["converged"]
    assert 4 <= converged < 36  # some of adam's starts use up their 1000 steps
    basin = doc["basins"]["adam"]
    assert basin["stationary_points"] == [] and len(basin["basins"]) == 4
    assert sum(b["starts"] for b in basin["basins"]) == converged and basin["elsewhere"] == 36 - converged
    assert all(b["kind"] == "minimum" for b in basin["basins"])
    for x, y in HIMMELBLAU_MINIMA:
        assert any(abs(x - b["point"]["x"]) < 1e-5 and abs(y - b["point"]["y"]) < 1e-5 for b in basin["basins"])
    points = {b["index"]: b["point"] for b in basin["basins"]}
    for r in map(only_run, doc["starts"]):
        assert r["stationary_point"] is None
        if r["status"] != "converged":
            assert r["basin"] is None
            continue
        assert r["basin"]["kind"] == "minimum" and r["basin"]["point"] == points[r["basin"]["index"]]
        assert abs(r["final"]["x"] - r["basin"]["point"]["x"]) < 1e-6
    assert "within 0.2 s (--stationary-timeout): the basins come from the end points" in result.stderr
    assert "not SymPy's stationary points" in result.stderr
    assert f"adam: {converged} converged, {36 - converged} max_steps ({converged} in 4 basins of end points)" \
        in result.stderr


def test_end_point_basins_group_across_batches_and_stop_at_the_limit():
    from gradcli.compute.descend.end_basins import EndPointBasins
    from gradcli.expression.parser import parse

    basins = EndPointBasins(parse(DOUBLE_WELL).tree, ["x", "y"], max_basins=2)

    def ended(x, y, status="converged"):
        return {"status": status, "final": {"x": x, "y": y}, "value": 0.0, "basin": None}

    first = [ended(1.0, 1.0), ended(1.0 + 5e-4, 1.0), ended(0.0, 0.0, "max_steps"), ended(0.0, 1.0)]
    basins.assign(first)
    assert [r["basin"] and r["basin"]["index"] for r in first] == [0, 0, None, 1]
    assert first[0]["basin"]["kind"] == "minimum" and first[3]["basin"]["kind"] == "saddle"
    later = [ended(0.0, 1.0 + 1e-4), ended(-1.0, -1.0), ended(1.0, 1.01)]
    basins.assign(later)
    assert [r["basin"] and r["basin"]["index"] for r in later] == [1, None, None]
    assert basins.ungrouped == 2 and "grouping stopped at 2 basins" in " ".join(basins.notes())


def test_table_and_plot_without_sympy_show_the_basins_of_the_end_points(runner):
    result = run(runner, DOUBLE_WELL, "--grid", "x=-2:2:5,y=-2:2:5", "--lr", "0.05", "--plot", *NO_SYMPY,
                 env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "manual: where the 25 starts ended (basins of the end points" in out
    basins = out[:out.index("the first 20 starts")]
    assert basins.count("minimum") == 4 and basins.count("saddle") == 4 and basins.count("maximum") == 1
    assert "minimum at (1, 1): 4 starts" in out and "maximum at (0, 0): 1 start" in out
    assert "25 converged (25 in 9 basins of end points)" in result.stderr


def test_batch_equals_single_starts(runner, himmelblau):
    doc, _ = himmelblau
    by_start = {(r["start"]["x"], r["start"]["y"]): r for r in doc["starts"]}
    for start in [(-5.0, -5.0), (5.0, 5.0)]:
        mine = only_run(by_start[start])
        one = only_run(single(runner, HIMMELBLAU, {"x": start[0], "y": start[1]}, "--lr", "0.01"))
        assert (mine["final"], mine["steps"], mine["status"], mine["value"], mine["gradient_norm"]) == \
               (one["final"], one["steps"], one["status"], one["value"], one["gradient_norm"])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_start_of_many_has_the_record_of_that_start_alone(runner, dtype):
    """--from ... -f jsonl writes exactly the record --grid writes for that start (one loop, one record)."""
    options = ("-o", "manual:0.005,adam:0.05", "--steps", "150", "--dtype", dtype)
    result = run(runner, HIMMELBLAU, "--grid", "x=-4:4:3,y=-4:4:2", *options, *NO_SYMPY, "-f", "jsonl")
    assert result.exit_code == 0, result.stderr
    recs = lines(result)
    assert len(recs) == 6
    for r in (recs[0], recs[3]):
        # (the basins of end points are numbered over every start, and named by the first end point in each)
        assert unbasined(timeless(single(runner, HIMMELBLAU, r["start"], *options))) == unbasined(timeless(r))


def test_table_shows_the_basins_and_the_plot_marks_them(runner):
    result = run(runner, DOUBLE_WELL, "--grid", "x=-2:2:5,y=-2:2:5", "--lr", "0.05", "--plot",
                 "--stationary-timeout", "60", env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "manual: where the 25 starts ended" in out
    # from the grid's 0s the gradient is 0 already: starts on the saddles and the maximum stay there
    basins = out[:out.index("the first 20 starts")]
    assert basins.count("minimum") == 4 and basins.count("saddle") == 4 and basins.count("maximum") == 1
    assert "the first 20 starts" in out
    assert "first 20 of 25 starts" in result.stderr and "jsonl" in result.stderr
    assert "\x1b[" not in out  # NO_COLOR (and not a terminal)
    assert "manual: the starts, marked by where they ended" in out
    assert "minimum at (1, 1): 4 starts" in out and "maximum at (0, 0): 1 start" in out


def test_plot_needs_two_variables(runner):
    result = run(runner, "x**2+y**2+z**2", "--grid", "x=0:1:2,y=0:1:2,z=0:1:2", "--plot", *NO_SYMPY)
    assert result.exit_code == 2
    assert "--plot" in result.stderr and "two variables" in result.stderr and "has 3 (x, y, z)" in result.stderr


@pytest.fixture()
def starts_csv(tmp_path):
    path = tmp_path / "starts.csv"
    path.write_text("id,x,y,label\na,-5,-5,far\nb,1,-3,near\nc,0.5,0.5,middle\n")
    return str(path)


def test_pass_through_columns_and_lines_from_a_csv(runner, starts_csv):
    result = run(runner, HIMMELBLAU, "--points", starts_csv, "-o", "manual,adam", "--lr", "0.01", *NO_SYMPY,
                 "-f", "jsonl")
    assert result.exit_code == 0, result.stderr
    recs = lines(result)
    assert [(r["fields"]["id"], r["line"], [run["optimizer"] for run in r["runs"]]) for r in recs] == [
        ("a", 2, ["manual", "adam"]), ("b", 3, ["manual", "adam"]), ("c", 4, ["manual", "adam"])]
    assert recs[0]["fields"] == {"id": "a", "label": "far"} and recs[0]["start"] == {"x": -5.0, "y": -5.0}
    assert all(run["stationary_point"] is None for r in recs for run in r["runs"])  # SymPy skipped
    result = run(runner, HIMMELBLAU, "--points", starts_csv, "--lr", "0.01", *NO_SYMPY, "-f", "csv")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("final_x") == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["id"] for r in rows] == ["a", "b", "c"] and rows[1]["label"] == "near"
    assert rows[0]["x"] == "-5.0" and rows[0]["status"] == "converged" and rows[0]["line"] == "2"
    assert float(rows[0]["final_x"]) == pytest.approx(-3.77931, abs=1e-5)
    assert "3 starts done; manual: 3 converged" in result.stderr


def test_stdin_streams_in_batches_and_padding_changes_nothing(runner):
    data = "x,y,tag\n-5,-5,p\n1,-3,q\n0.5,0.5,r\n"
    args = (HIMMELBLAU, "--points", "-", "-o", "adam", "--lr", "0.01", *NO_SYMPY, "-f", "jsonl")
    whole = run(runner, *args, input=data)
    batched = run(runner, *args, "--batch-size", "2", input=data)  # 2 starts, then 1 (padded to 2)
    assert whole.exit_code == batched.exit_code == 0, batched.stderr
    assert list(map(timeless, lines(whole))) == list(map(timeless, lines(batched)))
    assert [r["fields"]["tag"] for r in lines(batched)] == ["p", "q", "r"]


def test_a_bad_line_on_stdin_comes_after_the_good_records(runner):
    result = run(runner, "x**2", "--points", "-", *NO_SYMPY, "-f", "jsonl", "--batch-size", "1",
                 input="x\n1\n2\nnope\n")
    assert result.exit_code == 2
    assert [r["start"]["x"] for r in lines(result)] == [1.0, 2.0]
    assert "<stdin>:4" in result.stderr


def test_divergence_in_some_starts_exits_1_and_is_counted(runner):
    result = run(runner, "x**4", "--grid", "x=-3:3:7", "--lr", "0.1", *NO_SYMPY, "-f", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    by_x = {r["start"]["x"]: only_run(r) for r in doc["starts"]}
    assert by_x[3.0]["status"] == "diverged" and by_x[-3.0]["status"] == "diverged"
    assert by_x[1.0]["status"] in ("converged", "max_steps") and by_x[0.0]["status"] == "converged"
    assert doc["basins"]["manual"]["diverged"] == doc["summary"]["statuses"]["manual"]["diverged"] >= 2
    assert "diverged or went unbounded" in result.stderr


def test_not_finite_at_a_start_is_that_start_only(runner):
    result = run(runner, "sqrt(x)+(x-2)**2", "--grid", "x=-1:1:3", *NO_SYMPY, "-f", "jsonl")
    assert result.exit_code == 1
    recs = [only_run(r) for r in lines(result)]
    assert recs[0]["status"] == "diverged" and recs[0]["steps"] == 0 and recs[0]["value"] is None
    assert recs[1]["status"] == "diverged" and recs[1]["gradient_norm"] is None  # sqrt's slope at 0
    assert recs[0]["message"] == "f or its gradient is not finite at the start point: choose another start"
    assert recs[2]["status"] == "converged" and recs[2]["final"]["x"] == pytest.approx(1.8144020185, abs=1e-9)
    assert "not finite at 2 of 3 start points (e.g. at x=-1)" in result.stderr
    assert "1 converged, 2 diverged" in result.stderr


@pytest.mark.parametrize("args, message", [
    (("--grid", "x=0:1:2", "--every", "10"), "--every"),
    (("--grid", "x=0:1:2", "--show-code"), "--show-code prints the program for one point"),
    (("--points", "-", "--show-code"), "give --from"),
    (("--grid", "x=0:1:2", "--from", "x=1"), "--from gives one start"),
    (("--grid", "x=0:1:2", "--points", "-"), "not both"),
    (("--grid", "x=0:1:2", "--lr", "-1"), "--lr"),
])
def test_usage_errors_exit_2(runner, args, message):
    result = run(runner, "x**2", *args, input="x\n1\n")
    assert result.exit_code == 2, result.stdout
    assert message in result.stderr
    assert result.stdout == ""


def test_missing_variable_names_no_at_option(runner, tmp_path):
    result = run(runner, "x**2+y**2", "--grid", "x=0:1:2", *NO_SYMPY)
    assert result.exit_code == 2 and "y" in result.stderr and "--at" not in result.stderr
    path = tmp_path / "p.csv"
    path.write_text("x\n1\n")
    result = run(runner, "x**2+y**2", "--points", str(path), *NO_SYMPY)
    assert result.exit_code == 2 and "no column for y" in result.stderr and "--at" not in result.stderr


def test_no_starts_still_report_sympys_stationary_points(runner, tmp_path):
    # the search was stopped before it was collected, and the note blamed SymPy's time limit
    empty = tmp_path / "starts.csv"
    empty.write_text("x\n")
    result = runner.invoke(app, ["descend", "x**2", "--points", str(empty), "-f", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["stationary_points"][0]["point"] == {"x": 0.0} and doc["starts"] == []
    assert "did not solve" not in result.stderr and "no starts were read" in result.stderr
