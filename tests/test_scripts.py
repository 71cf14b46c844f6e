"""gradcli in scripts (issue 9, item 7): a learning rate per optimizer, descend's CSV (a row per run; the
trajectory with --every), a kept trajectory bounded whatever the step count (issue 10, item 3), and the
CSV point columns of grad, hessian and derivative."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcli.compute.descend import plan_descent
from gradcli.compute.descend.options import OPTIMIZERS, parse_optimizer_rates
from gradcli.compute.descend.results import HistoryRow
from gradcli.compute.descend.trajectory import Trajectory
from gradcli.errors import UsageError

NO_SYMPY = ("--stationary-timeout", "0")


def read_csv(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


# ---------------------------------------------------------------------------------------------
# -o NAME:LR
# ---------------------------------------------------------------------------------------------
def test_optimizer_rates_parse_in_order_and_any_case():
    assert parse_optimizer_rates("SGD:0.1,adam:1e-2,Manual") == {"sgd": 0.1, "adam": 0.01, "manual": None}
    assert parse_optimizer_rates("all:0.5") == dict.fromkeys(OPTIMIZERS, 0.5)
    plan = plan_descent("x**2", optimizers="sgd:0.3,adam", lr=0.02)
    assert plan.optimizers == ["sgd", "adam"]
    assert (plan.rate("sgd"), plan.rate("adam")) == (0.3, 0.02)


@pytest.mark.parametrize("spec, message", [("sgd:", "must be a number"), ("sgd:abc", "must be a number"),
                                           ("sgd:0", "positive finite"), ("sgd:nan", "positive finite"),
                                           ("sgd:0.1,SGD:0.2", "given twice"), ("bogus:0.1", "unknown optimizer")])
def test_bad_optimizer_rates_are_usage_errors(spec, message):
    with pytest.raises(UsageError, match=message):
        parse_optimizer_rates(spec)


def test_rates_per_optimizer_reach_the_runs_the_json_and_the_program(invoke, invoke_json):
    doc = invoke_json("descend", "x**2+3*y**2", "--from", "x=1,y=1", "-o", "sgd:0.1,manual", "--lr", "0.05",
                      "--steps", "30", *NO_SYMPY)
    assert doc["learning_rate"] == 0.05
    assert [(r["optimizer"], r["learning_rate"]) for r in doc["runs"]] == [("sgd", 0.1), ("manual", 0.05)]
    # sgd at 0.1 takes the same steps as the hand-written loop at 0.1 (bit-identical in float64), not 0.05.
    again = invoke_json("descend", "x**2+3*y**2", "--from", "x=1,y=1", "-o", "manual:0.1", "--steps", "30",
                        *NO_SYMPY)
    assert again["runs"][0]["final"] == doc["runs"][0]["final"]
    program = invoke("descend", "x**2", "-o", "adam:0.003", "--show-code").stdout
    assert "learning_rate = 0.003" in program


# ---------------------------------------------------------------------------------------------
# descend -f csv
# ---------------------------------------------------------------------------------------------
def test_descend_csv_is_a_row_per_run_without_every(invoke):
    result = invoke("descend", "(x-1)**2+(y+2)**2", "--from", "x=0,y=0", "-o", "sgd:0.2,adam:0.1", "--steps",
                    "2000", "-f", "csv", *NO_SYMPY)
    assert result.exit_code == 0, result.stderr
    rows = read_csv(result.stdout)
    assert [r["optimizer"] for r in rows] == ["sgd", "adam"]
    assert list(rows[0])[:8] == ["x", "y", "optimizer", "learning_rate", "status", "steps", "final_x", "final_y"]
    assert {"value", "gradient_norm", "end_point_kind", "stationary_kind", "message", "seconds"} <= set(rows[0])
    assert [r["learning_rate"] for r in rows] == ["0.2", "0.1"]
    assert rows[0]["x"] == "0.0" and rows[0]["status"] == "converged"
    assert float(rows[0]["final_x"]) == pytest.approx(1) and float(rows[0]["final_y"]) == pytest.approx(-2)


# ---------------------------------------------------------------------------------------------
# The kept trajectory: bounded, evenly thinned, first and last step kept
# ---------------------------------------------------------------------------------------------
def _rows(steps) -> list[HistoryRow]:
    return [HistoryRow(s, {"x": float(s)}, 0.0, 0.0) for s in steps]


@settings(max_examples=60, deadline=None)
@given(every=st.integers(1, 7), chunks=st.integers(1, 40), per_chunk=st.integers(1, 50),
       max_rows=st.integers(2, 64), tail=st.integers(0, 6))
def test_trajectory_is_bounded_even_and_keeps_both_ends(every, chunks, per_chunk, max_rows, tail):
    t = Trajectory(every, max_rows=max_rows)
    step = 0
    for c in range(chunks):
        recorded = list(range(step, step + per_chunk * every, every))
        step += per_chunk * every
        last = c == chunks - 1
        t.add(_rows(recorded + ([step - every + tail] if last and tail else [])), last=last)
    kept = [r.step for r in t.rows]
    assert len(kept) <= max_rows
    assert kept[0] == 0 and kept == sorted(set(kept))
    body = kept[:-1] if len(kept) > 1 else kept
    assert all(b - a == t.spacing for a, b in zip(body, body[1:]))  # evenly spaced before the last
    assert t.spacing % every == 0
    final = step - every + tail if tail else step - every
    assert kept[-1] == final


def test_trajectory_below_the_bound_is_every_recorded_row():
    t = Trajectory(10, max_rows=100)
    t.add(_rows(range(0, 500, 10)), last=False)
    t.add(_rows([500, 503]), last=True)
    assert [r.step for r in t.rows] == [*range(0, 510, 10), 503] and t.spacing == 10


# ---------------------------------------------------------------------------------------------
# grad / hessian / derivative -f csv: a row per point, one header, at one point as at many
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command, expression, at, grid", [
    ("grad", "(x1+5)*x2**2", "x1=2,x2=3", "x1=2:2:1,x2=3:3:1"),
    ("hessian", "(x1+5)*x2**2", "x1=2,x2=3", "x1=2:2:1,x2=3:3:1"),
    ("derivative", "sin(x)", "x=1", "x=1:1:1"),
])
def test_csv_at_one_point_is_the_csv_of_many_points(invoke, command, expression, at, grid):
    one = invoke(command, expression, "--at", at, "-m", "tape,fd", "-f", "csv")
    many = invoke(command, expression, "--grid", grid, "-m", "tape,fd", "-f", "csv")
    assert one.exit_code == many.exit_code == 0, (one.stderr, many.stderr)
    assert one.stdout == many.stdout
    (row,) = read_csv(one.stdout)
    names = [kv.split("=")[0] for kv in at.split(",")]
    assert list(row)[:len(names)] == names  # the point's columns first
    assert [float(row[v]) for v in names] == [float(kv.split("=")[1]) for kv in at.split(",")]


def test_grad_csv_rows_per_expression_and_a_missing_variable(invoke):
    result = invoke("grad", "3*x", "x**2", "--at", "x=5", "-m", "tape", "-f", "csv")
    assert result.exit_code == 0, result.stderr
    rows = read_csv(result.stdout)
    assert [(r["x"], r["expression"], r["tape_dx"]) for r in rows] == [("5.0", "3*x", "3.0"), ("5.0", "x**2", "10.0")]
    result = invoke("grad", "x*y", "--at", "x=1", "-f", "csv")
    assert result.exit_code == 2 and "--at has no value for y" in result.stderr


# ---------------------------------------------------------------------------------------------
# --file PATH / --file -: the expression from a file
# ---------------------------------------------------------------------------------------------
TWO_LINES = "# a test function that starts with a minus\n-x**2 +   # the square\n  3*x\n"


@pytest.mark.parametrize("command, extra", [("eval", ()), ("grad", ("-m", "fd")), ("derivative", ("-m", "fd")),
                                            ("hessian", ("-m", "fd")), ("check", ("-e", "x=-2*x+3"))])
def test_file_lines_are_spaces_and_comments_are_left_out(invoke, tmp_path, command, extra):
    path = tmp_path / "f.txt"
    path.write_text(TWO_LINES)
    from_file = invoke(command, "--file", str(path), "--at", "x=2", *extra, "-f", "json")
    inline = invoke(command, "--at", "x=2", *extra, "-f", "json", "--", "-x**2 + 3*x")
    assert from_file.exit_code == inline.exit_code == 0, (from_file.stderr, inline.stderr)
    assert _without_text(json.loads(from_file.stdout)) == _without_text(json.loads(inline.stdout))


def _without_text(doc):
    """The numbers of a document: the expression as typed (its spaces) and timings left out."""
    if isinstance(doc, dict):
        return {k: _without_text(v) for k, v in doc.items() if "expression" not in k and "seconds" not in k}
    if isinstance(doc, list):
        return [_without_text(v) for v in doc]
    return doc


def test_file_from_stdin_for_descend(invoke, runner):
    from gradcli.cli import app

    result = runner.invoke(app, ["descend", "--file", "-", "--from", "x=1", "-o", "manual", "--steps", "5",
                                 "--show-code"], input="(x - 3)**2\n# done\n")
    assert result.exit_code == 0, result.stderr
    assert "(x - 3)**2" in result.stdout or "x - 3" in result.stdout


def test_a_parse_error_in_a_file_points_to_its_line_and_column(runner, tmp_path):
    from gradcli.cli import app

    path = tmp_path / "bad.txt"
    path.write_text("sin(x)   # fine\n  + 3*$y\n")
    result = runner.invoke(app, ["grad", "--file", str(path), "--at", "x=1"])
    assert result.exit_code == 2
    first, shown, caret = result.stderr.splitlines()
    assert first.startswith(f"gradcli: error: {path}:2:7: ")
    assert shown == "    + 3*$y" and caret.index("^") == shown.index("$")
    # The end of the expression: just after its last character, not on a blank line after it.
    path.write_text("x**2 +\n  x *\n\n")
    result = runner.invoke(app, ["eval", "--file", str(path), "--at", "x=1"])
    first, shown, caret = result.stderr.splitlines()
    assert first.startswith(f"gradcli: error: {path}:2:6: ") and caret.index("^") == len(shown)


@pytest.mark.parametrize("args, message", [
    (["eval", "x", "--file", "-", "--at", "x=1"], "not both"),
    (["eval", "--at", "x=1"], "give an expression"),
    (["eval", "--file", "/nonexistent/f.txt", "--at", "x=1"], "/nonexistent/f.txt"),
    (["grad", "--file", "-", "--at", "x=1"], "has no expression"),
])
def test_file_usage_errors(runner, args, message):
    from gradcli.cli import app

    result = runner.invoke(app, args, input="# only a comment\n")
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_csv_with_the_complex_step_has_the_batch_layout(invoke):
    # One point's CSV comes from the batch core with every method, the complex step included.
    result = invoke("grad", "x**2", "--at", "x=3", "-m", "complex,symbolic", "-f", "csv")
    assert result.exit_code == 0, result.stderr
    (row,) = read_csv(result.stdout)
    assert float(row["complex_dx"]) == 6.0 and float(row["symbolic_dx"]) == 6.0
    assert float(row["complex_error_dx"]) == 0.0 and 0 < float(row["complex_error_estimate_dx"]) < 1e-13
