"""The library under the CLI and the API (gradcli.library): a Request run by the engine gives a Run; the API's
values one level deep and its columns are the CLI's documents read another way; calls in threads run at
once, each with its own rules, without a lock and without touching the process's streams."""

from __future__ import annotations

import csv
import io
import json
import sys
import threading

import numpy as np
import pytest
from typer.testing import CliRunner

import gradcli
from gradcli.cli import app
from gradcli.library.requests import EvalRequest, GradRequest, HessianRequest
from gradcli.library.run import Collect, Run


def cli(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result.stdout


def masked(doc):
    """The document with its times (which differ between runs) set to None."""
    if isinstance(doc, dict):
        return {k: None if k in ("seconds", "setup_seconds") else masked(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [masked(v) for v in doc]
    return doc


# ---------------------------------------------------------------------------------------------
# a Request, a Run
# ---------------------------------------------------------------------------------------------
def test_a_request_runs_into_a_run_whose_document_is_the_clis():
    run = GradRequest(expressions=["(x1+5)*x2**2"], at=["x1=2,x2=3"]).run()
    assert isinstance(run, Run) and run.one_point and not run.failed
    assert run.header["command"] == "grad" and run.header["methods"] == ["symbolic", "tape", "fd"]
    assert run.record["results"][0]["gradient"]["tape"] == {"x1": 9.0, "x2": 42.0}
    assert run.document_text() == cli("grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "-f", "json")
    many = HessianRequest(expression="x**2*y", grid="x=-1:1:3,y=0:1:2", method="symbolic,fd").run()
    assert not many.one_point and len(many.records) == 6 and many.summary["points"] == 6
    assert many.document_text() == cli("hessian", "x**2*y", "--grid", "x=-1:1:3,y=0:1:2", "-m", "symbolic,fd",
                                       "-f", "json")
    assert list(many.record_lines()) == cli("hessian", "x**2*y", "--grid", "x=-1:1:3,y=0:1:2", "-m", "symbolic,fd",
                                      "-f", "jsonl").splitlines()


def test_a_run_into_another_sink_keeps_no_records_but_its_end():
    class Counting:
        def __init__(self):
            self.points = 0

        def start(self, header):
            self.header = header

        def write(self, batch):
            self.points += batch.size

        def finish(self, summary, summary_text, warnings, notes):
            self.summary_text = summary_text

    sink = Counting()
    run = EvalRequest(expression="log(x)", grid="x=-1:1:5").run(sink)
    assert sink.points == 5 and run.records is None and run.failed
    assert run.summary_text == sink.summary_text and run.summary["undefined"] == 3
    with pytest.raises(ValueError, match="not collected"):
        run.document_text()


# ---------------------------------------------------------------------------------------------
# values one level deep, columns
# ---------------------------------------------------------------------------------------------
def test_values_one_level_deep():
    r = gradcli.grad("(x1+5)*x2**2", at={"x1": 2, "x2": 3}, method="symbolic,tape")
    assert r.gradient == {"symbolic": {"x1": 9.0, "x2": 42.0}, "tape": {"x1": 9.0, "x2": 42.0}}
    assert r.value == 63.0
    two = gradcli.grad("3*x", "x**2", at="x=5", method="tape")
    assert [g["tape"]["x"] for g in two.gradients] == [3.0, 10.0]
    with pytest.raises(ValueError, match="gradients"):
        two.gradient  # noqa: B018
    h = gradcli.hessian("x**2*y", at="x=1,y=2", method="symbolic,tape").hessian
    assert set(h) == {"symbolic", "tape"} and h["tape"].shape == (2, 2)
    assert h["symbolic"].tolist() == [[4.0, 2.0], [2.0, 0.0]]
    d = gradcli.derivative("sin(x)", at="x=0", order=4, method="symbolic").derivatives["symbolic"]
    assert d.tolist() == [1.0, 0.0, -1.0, 0.0]
    assert gradcli.eval("x/3", at="x=1", dtype="float32").value == 0.33333334
    assert gradcli.eval("log(x)", at="x=-1").value is None
    with pytest.raises(ValueError, match="columns"):
        gradcli.grad("x**2", grid="x=0:1:2").gradient  # noqa: B018
    with pytest.raises(AttributeError):
        gradcli.eval("x", at="x=1").hessian  # noqa: B018


def _csv_columns(text: str) -> dict[str, list]:
    rows = list(csv.DictReader(io.StringIO(text)))
    return {k: [r[k] for r in rows] for k in rows[0]}


@pytest.mark.parametrize("call, argv", [
    (lambda: gradcli.grad("x**2*y", "x+y", grid="x=-1:1:3,y=0:1:2", method="symbolic,fd"),
     ["grad", "x**2*y", "x+y", "--grid", "x=-1:1:3,y=0:1:2", "-m", "symbolic,fd"]),
    (lambda: gradcli.grad("log(x)", grid="x=-1:1:3", method="tape,fd"), ["grad", "log(x)", "--grid", "x=-1:1:3",
                                                                       "-m", "tape,fd"]),
    (lambda: gradcli.hessian("x**3*y", grid="x=0:1:2,y=1:2:2"), ["hessian", "x**3*y", "--grid", "x=0:1:2,y=1:2:2"]),
    (lambda: gradcli.derivative("sin(x)", grid="x=0:1:3", order=2), ["derivative", "sin(x)", "--grid", "x=0:1:3",
                                                                     "-n", "2"]),
    (lambda: gradcli.eval("sqrt(x)", grid="x=-1:1:3"), ["eval", "sqrt(x)", "--grid", "x=-1:1:3"]),
    (lambda: gradcli.grad("x*y", at="x=1,y=2"), ["grad", "x*y", "--at", "x=1,y=2"]),
])
def test_columns_are_the_cli_csv(call, argv):
    result = call()
    failed = result.failed
    expected = _csv_columns(cli(*argv, "-f", "csv", code=1 if failed else 0))
    columns = result.columns()
    assert list(columns) == list(expected)
    for name, column in columns.items():
        assert isinstance(column, np.ndarray) and len(column) == len(expected[name]), name
        if column.dtype == np.float64:
            want = [float(v) if v else float("nan") for v in expected[name]]
            assert np.array_equal(column, np.array(want), equal_nan=True), name
        else:
            assert ["" if v is None else str(v) for v in column.tolist()] == expected[name], name  # None: empty


def test_points_as_columns_are_the_csv_they_would_be(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,x\n7,0.5\n8,2\n")
    via_file = gradcli.grad("x**3", points=path, method="symbolic")
    via_columns = gradcli.grad("x**3", points={"id": np.array([7, 8]), "x": np.array([0.5, 2.0])}, method="symbolic")
    assert via_columns.to_dict()["points"] == via_file.to_dict()["points"]
    assert [r["fields"] for r in via_columns.records()] == [{"id": "7"}, {"id": "8"}]
    with pytest.raises(gradcli.UsageError, match=r"--points columns:3: x: 'oops'"):
        gradcli.grad("x**3", points={"x": [1.0, "oops"]})
    with pytest.raises(gradcli.UsageError, match="no column for y"):
        gradcli.grad("x*y", points={"x": [1.0]})


# ---------------------------------------------------------------------------------------------
# the display: the table, then the warnings
# ---------------------------------------------------------------------------------------------
def test_the_display_says_the_warnings():
    r = gradcli.grad("abs(x)", at="x=0")
    (warning,) = r.warnings
    assert "kink" in warning
    line = f"gradcli: warning: {warning}"
    assert r.table() == cli("grad", "abs(x)", "--at", "x=0")  # the table alone, as the CLI's stdout
    assert str(r) == r.table() + line + "\n"
    assert repr(r).endswith(line)
    assert line in r._repr_markdown_() and r._repr_markdown_().startswith("```text\n")
    assert "gradcli: warning: fd: d(abs(x))/dx is at a kink" in r._repr_html_()
    from rich.console import Console

    console = Console(file=io.StringIO(), width=160)
    console.print(r)
    assert console.file.getvalue() == str(r)
    quiet = gradcli.grad("x**2", at="x=1")
    assert str(quiet) == quiet.table() and "warning" not in quiet._repr_markdown_()


# ---------------------------------------------------------------------------------------------
# threads: each call its own rules, no lock, no stream touched
# ---------------------------------------------------------------------------------------------
RULES = ["f(u) = u**2; d/du = 2*u", "f(u) = u**9; d/du = 9*u**8", "f(u) = sin(u); d/du = cos(u)",
         "f(u) = exp(u)/2; d/du = exp(u)/2"]


def _calls():
    """Eight calls: grad and hessian of the same f(...) at different points, each with another rule of f."""
    out = []
    for i in range(8):
        rule, x = RULES[i % 4], 0.5 + i / 4
        if i < 4:
            out.append(lambda rule=rule, x=x: gradcli.grad("f(x)*y", at={"x": x, "y": 2.0}, rule=rule))
        else:
            out.append(lambda rule=rule, x=x: gradcli.hessian("f(x)*y", at={"x": x, "y": 3.0}, rule=rule,
                                                              method="symbolic,tape"))
    return out


def test_eight_threads_with_their_own_rules_give_what_one_thread_gives():
    calls = _calls()
    alone = [masked(call().to_dict()) for call in calls]
    assert len({json.dumps(a["results"][0]["gradient"]) for a in alone[:4]}) == 4  # four rules, four answers
    barrier = threading.Barrier(len(calls))
    together: list = [None] * len(calls)
    errors: list = []

    def run(i):
        try:
            barrier.wait(timeout=60)
            together[i] = masked(calls[i]().to_dict())
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert together == alone
    with pytest.raises(gradcli.ParseError):  # no rule stays in force after the calls
        gradcli.grad("f(x)", at="x=1")


def test_a_call_runs_while_another_is_in_the_middle_of_its_own(monkeypatch):
    """No lock around a call: a grad finishes while another thread's grad is held inside its run, and neither
    sees a stream of the process swapped."""
    from gradcli.compute.batch import engine

    real = engine.run_batch
    inside, other_done = threading.Event(), threading.Event()
    streams = (sys.stdout, sys.stderr, sys.stdin)
    seen = []

    def held(computation, chunks, sink, summary=None):
        seen.append((sys.stdout, sys.stderr, sys.stdin) == streams)
        if threading.current_thread().name == "held":
            inside.set()
            assert other_done.wait(timeout=120), "the other call could not run meanwhile"
        return real(computation, chunks, sink, summary)

    monkeypatch.setattr(engine, "run_batch", held)
    results = {}
    held_thread = threading.Thread(name="held", target=lambda: results.setdefault(
        "held", gradcli.grad("x**2", at="x=3", method="tape,fd")))
    held_thread.start()
    assert inside.wait(timeout=120)
    results["other"] = gradcli.hessian("x**2*y", at="x=1,y=2", method="symbolic")
    other_done.set()
    held_thread.join(timeout=120)
    assert results["held"].gradient["tape"] == {"x": 6.0}
    assert results["other"].hessian["symbolic"].tolist() == [[4.0, 2.0], [2.0, 0.0]]
    assert seen == [True, True]


def test_the_cli_reads_its_rules_for_the_whole_run():
    out = cli("grad", "f(x)", "--at", "x=2", "--rule", RULES[1], "-m", "symbolic,tape", "-f", "json")
    assert json.loads(out)["results"][0]["gradient"]["tape"] == {"x": 2304.0}


def test_collect_keeps_every_record():
    sink = Collect()
    run = GradRequest(expressions=["x*y"], grid="x=0:1:3,y=1:1:1", method="symbolic").run(sink)
    assert run.records == sink.records and [r["point"]["x"] for r in sink.records] == [0.0, 0.5, 1.0]


def test_the_library_and_the_api_load_no_command_line_module():
    import subprocess

    code = ("import sys\n"
            "from gradcli.library.requests import GradRequest, EvalRequest, CheckRequest\n"
            "GradRequest(expressions=['x*y'], grid='x=0:1:2,y=1:1:1', method='symbolic,fd').run().document_text()\n"
            "EvalRequest(expression='x', points={'x': [1, 2]}).run()\n"
            "CheckRequest(expression='x**2', expect=['x=2*x']).run()\n"
            "library = sorted(m for m in sys.modules if m.startswith(('gradcli.render', 'gradcli.commands', "
            "'gradcli.cli', 'typer', 'click', 'rich')))\n"
            "import gradcli\n"
            "r = gradcli.grad('abs(x)', at='x=0', method='symbolic,fd'); repr(r); r._repr_html_(); r.columns()\n"
            "repr(gradcli.descend('x**2', grid='x=0:1:2', steps=5)); repr(gradcli.check('x**2', expect='x=2*x'))\n"
            "api = sorted(m for m in sys.modules if m.startswith(('gradcli.commands', 'gradcli.cli', 'typer', "
            "'click')))\n"
            "print(library, api)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] []"
