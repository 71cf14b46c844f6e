"""gradcli eval at many points (--points FILE|-, --grid): one point is a batch of one, every value is the one
--at computes for that point (bit for bit), and the formats, warnings and refusals are the batch commands'."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import gradcli

EXPRESSIONS = ["sin(x)*exp(y)", "log(x) + atan(y)", "x**0.3*cos(y) - tanh(x*y)", "exp(-x**2)/(1 + y**2)"]
POINTS = [{"x": 0.7, "y": -1.3}, {"x": 2.5, "y": 0.1}, {"x": 1e-3, "y": 7.25}]


def _records(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def _point_files(tmp_path, point: dict[str, float]):
    csv = tmp_path / "point.csv"
    csv.write_text(",".join(point) + "\n" + ",".join(repr(v) for v in point.values()) + "\n")
    jsonl = tmp_path / "point.jsonl"
    jsonl.write_text(json.dumps(point) + "\n")
    return csv, jsonl


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_one_point_is_the_same_value_on_every_path(invoke, tmp_path, expression, dtype):
    for point in POINTS:
        at = ",".join(f"{k}={v!r}" for k, v in point.items())
        grid = ",".join(f"{k}={v!r}:{v!r}:1" for k, v in point.items())
        csv, jsonl = _point_files(tmp_path, point)
        plain = invoke("eval", expression, "--at", at, "--dtype", dtype)
        document = json.loads(invoke("eval", expression, "--at", at, "--dtype", dtype, "-f", "json").stdout)
        (at_record,) = _records(invoke("eval", expression, "--at", at, "--dtype", dtype, "-f", "jsonl"))
        (grid_record,) = _records(invoke("eval", expression, "--grid", grid, "--dtype", dtype, "-f", "jsonl"))
        (csv_record,) = _records(invoke("eval", expression, "--points", str(csv), "--dtype", dtype, "-f", "jsonl"))
        (jsonl_record,) = _records(invoke("eval", expression, "--points", str(jsonl), "--dtype", dtype,
                                          "-f", "jsonl"))
        assert plain.exit_code == 0 and plain.stdout == f"{document['value']!r}\n"
        assert at_record == grid_record == {k: document[k] for k in at_record}
        assert set(document) - set(at_record) == {"command", "expression", "dtype"}
        for record in (csv_record, jsonl_record):  # a file's record also says where the point came from
            assert record.pop("line") in (1, 2) and record == at_record


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_point_of_a_grid_is_its_own_at_value(invoke, dtype):
    """A value does not depend on its chunk (nor on its neighbours): each is the --at value, bit for bit."""
    expression = "sin(x)*exp(y) + log(1 + x**2)"
    records = _records(invoke("eval", expression, "--grid", "x=-3:3:7,y=-1:1:3", "--dtype", dtype, "-f", "jsonl",
                              "--batch-size", "4"))
    assert len(records) == 21
    for record in records:
        at = ",".join(f"{k}={v!r}" for k, v in record["point"].items())
        one = json.loads(invoke("eval", expression, "--at", at, "--dtype", dtype, "-f", "json").stdout)
        assert one["value"] == record["value"] and one["point"] == record["point"]


def test_float64_is_pythons_math_and_float32_numpys(invoke):
    xs = np.linspace(0.1, 3.0, 11).tolist()
    got = [r["value"] for r in _records(invoke("eval", "exp(x)*sin(x)", "--grid", "x=0.1:3:11", "-f", "jsonl"))]
    assert got == [math.exp(x) * math.sin(x) for x in xs]
    got32 = [r["value"] for r in _records(invoke("eval", "exp(x)*sin(x)", "--grid", "x=0.1:3:11", "--dtype",
                                                 "float32", "-f", "jsonl"))]
    want32 = [np.exp(np.float32(x)) * np.sin(np.float32(x)) for x in xs]
    assert got32 == [float(repr(v).removeprefix("np.float32(").rstrip(")")) for v in want32]
    assert all(len(repr(v)) <= 12 for v in got32)  # float32's digits, not float64's


def test_plain_writes_one_value_a_line_in_order_empty_where_undefined(invoke):
    result = invoke("eval", "log(x)", "--grid", "x=-1:3:5")
    assert result.exit_code == 1
    assert result.stdout.split("\n") == ["", "", "0.0", repr(math.log(2.0)), repr(math.log(3.0)), ""]
    assert "gradcli: warning: log(x) is undefined (not a real number) (at x=-1)" in result.stderr
    assert "gradcli: summary: 5 points done, 2 with warnings, 2 undefined" in result.stderr
    one = invoke("eval", "log(x)", "--at", "x=-1")  # the --at point alone: nothing, as eval always did
    assert one.exit_code == 1 and one.stdout == ""


def test_an_undefined_value_is_a_warning_in_its_record_and_exit_1(invoke):
    result = invoke("eval", "sqrt(x)*y", "--grid", "x=-1:1:3", "--at", "y=2", "-f", "jsonl")
    assert result.exit_code == 1
    records = _records(result)
    assert records[0] == {"point": {"x": -1.0, "y": 2.0}, "value": None,
                          "warnings": ["sqrt(x)*y is undefined (not a real number) at x=-1, y=2"]}
    assert [r["value"] for r in records[1:]] == [0.0, 2.0] and all(not r["warnings"] for r in records[1:])
    assert invoke("eval", "sqrt(x)", "--grid", "x=0:1:3", "-f", "jsonl").exit_code == 0


def test_json_csv_and_table(invoke):
    doc = json.loads(invoke("eval", "x*y", "--grid", "x=1:2:2,y=3:3:1", "-f", "json").stdout)
    assert {k: doc[k] for k in ("command", "expression", "variables", "dtype")} == \
        {"command": "eval", "expression": "x*y", "variables": ["x", "y"], "dtype": "float64"}
    assert [p["value"] for p in doc["points"]] == [3.0, 6.0]
    assert doc["summary"] == {"points": 2, "with_warnings": 0, "undefined": 0, "largest_error": {}}
    csv = invoke("eval", "1/x", "--grid", "x=0:1:2", "-f", "csv")
    assert csv.exit_code == 1
    assert csv.stdout == "x,value,warnings\n0.0,,1/x is infinite or overflows float64 at x=0\n1.0,1.0,\n"
    table = invoke("eval", "1/x", "--grid", "x=0:1:2", "-f", "table")
    lines = table.stdout.splitlines()
    assert lines[0] == "1/x at each point (float64)"
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert rows == [["0.0", "undefined", "undefined"], ["1.0", "1.0", "ok"]]


def test_one_point_formats_of_a_batch_of_one(invoke):
    assert invoke("eval", "x*2", "--at", "x=3", "-f", "csv").stdout == "x,value,warnings\n3.0,6.0,\n"
    assert invoke("eval", "2**10", "-f", "jsonl").stdout == '{"point":{},"value":1024.0,"warnings":[]}\n'
    assert invoke("eval", "x*2", "--at", "x=3", "-f", "table").stdout.splitlines()[0] == "x*2 at each point (float64)"
    latex = invoke("eval", "x*2", "--at", "x=3", "-f", "latex")
    assert latex.exit_code == 0 and "6.0" in latex.stdout


def test_points_from_stdin_keep_their_other_columns(invoke, runner):
    from gradcli.cli import app

    result = runner.invoke(app, ["eval", "x**2", "--points", "-", "-f", "jsonl"], input="name,x\na,1.5\nb,-2\n")
    assert result.exit_code == 0, result.stderr
    assert _records(result) == [{"point": {"x": 1.5}, "line": 2, "fields": {"name": "a"}, "value": 2.25,
                                 "warnings": []},
                                {"point": {"x": -2.0}, "line": 3, "fields": {"name": "b"}, "value": 4.0,
                                 "warnings": []}]
    csv = runner.invoke(app, ["eval", "x**2", "--points", "-", "-f", "csv"], input='{"x": 3, "id": 7}\n')
    assert csv.stdout == "id,x,value,warnings\n7,3.0,9.0,\n"  # a file's other columns first, as read
    plain = runner.invoke(app, ["eval", "x + 1", "--points", "-"], input="x\n1\n2\n")
    assert plain.stdout == "2.0\n3.0\n"


def _error(result) -> tuple[int, list[str]]:
    """The exit code and the error lines (gradcli's own, or Click's for an option's value in process)."""
    return result.exit_code, [line for line in result.stderr.splitlines()
                              if line.startswith(("gradcli: error", "Error: "))]


@pytest.mark.parametrize("inputs", [
    ["--points", "{tmp}/missing.csv"],  # no such file
    ["--points", "{tmp}/x_only.csv"],  # no column for y
    ["--points", "{tmp}/not_a_number.csv"],
    ["--grid", "x=0:1"],  # not start:stop:count
    ["--grid", "x=0:1:2"],  # no values for y
    ["--grid", "x=0:1:2,y=0:1:2,z=1:1:1"],  # not a variable
    ["--at", "x=1"],  # no value for y
    ["--points", "{tmp}/x_only.csv", "--at", "x=1,y=2"],  # x twice
    ["--points", "{tmp}/x_only.csv", "--grid", "y=0:1:2"],
    ["--at", "x=1e39,y=1", "--dtype", "float32"],
])
def test_an_input_is_refused_as_the_other_batch_commands_refuse_it(invoke, tmp_path, inputs):
    (tmp_path / "x_only.csv").write_text("x\n1\n")
    (tmp_path / "not_a_number.csv").write_text("x,y\n1,zz\n")
    words = [w.replace("{tmp}", str(tmp_path)) for w in inputs]
    ours = invoke("eval", "x*y", *words, "-f", "jsonl")
    code, errors = _error(ours)
    assert code == 2 and ours.stdout == "" and len(errors) == 1, (ours.stdout, ours.stderr)
    assert _error(invoke("grad", "x*y", *words, "-f", "jsonl")) == (code, errors)
    assert _error(invoke("derivative", "x*y", "--wrt", "x", *words, "-f", "jsonl")) == (code, errors)


def test_a_request_past_the_work_limit_is_refused_before_any_point_is_computed(invoke):
    # 1,401 nodes at 10 million grid points: over an hour of eval's point-by-point Python, refused up front
    # (exit 2, nothing on stdout) as grad, hessian and derivative refuse theirs; a tenth of the points runs.
    from gradcli.compute.batch.value import ValueBatch
    from gradcli.compute.work import estimate

    expression = "+".join(["sin(x)"] * 700)
    work = estimate(ValueBatch(expression))
    assert work.nodes == 1401 and work.evaluations_per_point == 1401
    assert work.seconds(10_000_000) > 3600 > work.seconds(1_000_000)
    refused = invoke("eval", expression, "--grid", "x=0:1:10000000", "-f", "jsonl")
    code, errors = _error(refused)
    assert code == 2 and refused.stdout == "" and len(errors) == 1
    assert "1,401 nodes x 10,000,000 points" in errors[0] and "split the points" in errors[0]


@pytest.mark.parametrize("expression, options", [
    ("x +* 2", []),  # a parse error
    ("log(-1) + x", []),  # an undefined constant
    ("nosuch(x)", []),  # an unknown function
    ("x", ["--batch-size", "0"]),
])
def test_a_refusal_is_the_same_on_every_path(invoke, tmp_path, expression, options):
    csv, jsonl = _point_files(tmp_path, {"x": 1.0})
    paths = [["--at", "x=1"], ["--at", "x=1", "-f", "json"], ["--at", "x=1", "-f", "jsonl"],
             ["--points", str(csv)], ["--points", str(jsonl), "-f", "csv"], ["--grid", "x=1:1:1", "-f", "table"]]
    seen = set()
    for words in paths:
        result = invoke("eval", expression, *words, *options)
        code, errors = _error(result)
        assert code == 2 and result.stdout == "" and len(errors) == 1, (words, result.stderr)
        seen.add(errors[0])
    assert len(seen) == 1, seen


def test_latex_is_for_one_point():
    from typer.testing import CliRunner

    from gradcli.cli import app

    result = CliRunner().invoke(app, ["eval", "x", "--grid", "x=0:1:2", "-f", "latex"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "gradcli: error: -f latex writes one point's tables: give --at alone (for many points: -f csv)" in \
        result.stderr


def test_an_empty_file_is_no_points_and_no_error(invoke, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("x\n")
    result = invoke("eval", "x", "--points", str(empty))
    assert result.exit_code == 0 and result.stdout == ""
    assert "no points were read" in result.stderr


# ---------------------------------------------------------------------------------------------
# the API: gradcli.eval takes points and grid as gradcli.grad does
# ---------------------------------------------------------------------------------------------
def test_api_many_points_are_the_cli_document_and_records(invoke, tmp_path):
    points = tmp_path / "points.csv"
    points.write_text("x,y\n0.5,1\n-1,2\n3,0\n")
    cli = json.loads(invoke("eval", "log(x)*y", "--points", str(points), "-f", "json").stdout)
    for source in (str(points), {"x": [0.5, -1, 3], "y": [1, 2, 0]},
                   {"x": np.array([0.5, -1.0, 3.0]), "y": np.array([1.0, 2.0, 0.0])}):
        result = gradcli.eval("log(x)*y", points=source)
        assert result.many and result.failed
        assert result.to_dict() == cli
        assert list(result.records()) == cli["points"]
        assert result.warnings == cli["warnings"]


def test_api_points_from_a_dataframe():
    pandas = pytest.importorskip("pandas")
    frame = gradcli.eval("log(x)*y", points=pandas.DataFrame({"x": [0.5, -1, 3], "y": [1, 2, 0]}))
    assert [r["value"] for r in frame.records()] == [math.log(0.5), None, 0.0]


def test_api_grid_and_one_point(invoke):
    grid = gradcli.eval("exp(x)", grid="x=0:1:3", dtype="float32")
    assert grid.to_dict() == json.loads(invoke("eval", "exp(x)", "--grid", "x=0:1:3", "--dtype", "float32",
                                               "-f", "json").stdout)
    assert not grid.failed and "exp(x) at each point (float32)" in str(grid)
    one = gradcli.eval("exp(x)", at={"x": 1})
    (record,) = one.records()
    assert record == _records(invoke("eval", "exp(x)", "--at", "x=1", "-f", "jsonl"))[0]
    assert {k: one.to_dict()[k] for k in record} == record
    assert str(one) == "2.718281828459045\n" and not one.many
    fixed = gradcli.eval("x*y", grid="x=0:1:2", at={"y": 3})
    assert [r["value"] for r in fixed.records()] == [0.0, 3.0]
    with pytest.raises(gradcli.UsageError):
        gradcli.eval("x", points={"x": [1]}, grid="x=0:1:2")
