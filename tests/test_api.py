"""gradcli's Python API (gradcli.api): the same documents as the CLI's ``-f json`` for the same request, at one
point and at many (grid, a dict of arrays, a CSV path), errors as GradcliError subclasses with no output, and
the options' defaults those of the library's Requests, as the commands' are."""

from __future__ import annotations

import csv
import inspect
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import gradcli
from gradcli import api
from gradcli.cli import app

TUTORIAL = "(x1+5)*x2**2"


def cli(*args: str, code: int = 0) -> str:
    """The CLI's stdout for ``gradcli ARGS`` (run in process), checking its exit code."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result.stdout


def cli_json(*args: str, code: int = 0) -> dict:
    return json.loads(cli(*args, "-f", "json", code=code))


def cli_stderr(*args: str) -> str:
    return CliRunner().invoke(app, list(args)).stderr


def masked(doc):
    """The document with every time (a run's ``seconds``, the ``setup_seconds``: they differ between runs) set
    to None."""
    if isinstance(doc, dict):
        return {k: None if k in ("seconds", "setup_seconds") else masked(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [masked(v) for v in doc]
    return doc


@pytest.fixture(scope="module")
def points_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "pts.csv"
    path.write_text("id,x,y\na,1.0,3.0\nb,2.0,-0.5\nc,0.25,4.0\n")
    return path


COLUMNS = {"id": ["a", "b", "c"], "x": np.array([1.0, 2.0, 0.25]), "y": np.array([3.0, -0.5, 4.0])}


@pytest.fixture(scope="module")
def tutorial():
    return gradcli.grad(TUTORIAL, at={"x1": 2, "x2": 3})


# ---------------------------------------------------------------------------------------------
# grad
# ---------------------------------------------------------------------------------------------
def test_tutorial_numbers(tutorial):
    result = tutorial.to_dict()["results"][0]
    assert result["gradient"]["tape"] == {"x1": 9.0, "x2": 42.0}
    assert result["gradient"]["symbolic"] == {"x1": 9.0, "x2": 42.0}
    assert not tutorial.failed and tutorial.warnings == [] and not tutorial.many


def test_grad_one_point_is_the_cli_document(tutorial):
    assert tutorial.to_json() == cli("grad", TUTORIAL, "--at", "x1=2,x2=3", "-f", "json")
    assert list(tutorial.records()) == [json.loads(line) for line in
                                        cli("grad", TUTORIAL, "--at", "x1=2,x2=3", "-f", "jsonl").splitlines()]


def test_at_as_text_and_as_mapping_agree(tutorial):
    assert gradcli.grad(TUTORIAL, at="x1=2,x2=3", method="tape,fd").to_dict() == \
        gradcli.grad(TUTORIAL, at={"x1": 2.0, "x2": 3}, method="tape,fd").to_dict()
    # a value may be an expression, as on the command line
    assert gradcli.grad("sin(x)", at={"x": "pi/4"}, method="fd").to_dict() == \
        cli_json("grad", "sin(x)", "--at", "x=pi/4", "-m", "fd")


def test_grad_options_and_several_expressions():
    args = ("grad", "3*x", "x**2*y", "--at", "x=5,y=1", "-m", "tape,fd", "--scheme", "richardson", "--wrt", "x")
    assert gradcli.grad("3*x", "x**2*y", at="x=5,y=1", method="tape,fd", scheme="richardson", wrt="x").to_dict() \
        == cli_json(*args)
    assert gradcli.grad(["3*x", "x**2*y"], at="x=5,y=1", method=["tape", "fd"], scheme="Richardson",
                        wrt=["x"]).to_dict() == cli_json(*args)


def test_grad_grid_is_the_cli_document():
    result = gradcli.grad("x**2*y", grid="x=-1:1:3,y=0:1:2")
    assert result.many and not result.failed
    assert result.to_json() == cli("grad", "x**2*y", "--grid", "x=-1:1:3,y=0:1:2", "-f", "json")
    lines = cli("grad", "x**2*y", "--grid", "x=-1:1:3,y=0:1:2", "-f", "jsonl").splitlines()
    assert list(result.records()) == [json.loads(line) for line in lines]
    assert result.summary_text.startswith("6 points done, 0 with warnings, 0 undefined")


def test_grad_points_path_mapping_and_dataframe(points_csv):
    expected = cli_json("grad", "x**2*y", "--points", str(points_csv))
    assert gradcli.grad("x**2*y", points=str(points_csv)).to_dict() == expected
    assert gradcli.grad("x**2*y", points=points_csv).to_dict() == expected  # a Path
    # a mapping of columns is read as that CSV would be: the same records, the same pass-through column
    assert gradcli.grad("x**2*y", points=COLUMNS).to_dict() == expected

    class Frame:  # what the API needs of a pandas DataFrame
        columns = tuple(COLUMNS)

        def to_dict(self, orient):
            assert orient == "list"
            return {k: list(v) for k, v in COLUMNS.items()}

    assert gradcli.grad("x**2*y", points=Frame()).to_dict() == expected


def test_at_fixes_a_variable_for_many_points():
    args = ("grad", "x**2*y", "--grid", "x=0:1:2", "--at", "y=3", "-m", "tape")
    assert gradcli.grad("x**2*y", grid="x=0:1:2", at={"y": 3}, method="tape").to_dict() == cli_json(*args)


def test_failed_and_warnings_as_the_cli_says_them():
    result = gradcli.grad("log(x)", grid="x=-1:1:3", method="tape,fd")
    assert result.failed
    assert result.to_dict() == cli_json("grad", "log(x)", "--grid", "x=-1:1:3", "-m", "tape,fd", code=1)
    stderr = cli_stderr("grad", "log(x)", "--grid", "x=-1:1:3", "-m", "tape,fd", "-f", "json")
    assert result.warnings and all(f"gradcli: warning: {w}" in stderr for w in result.warnings)
    assert f"gradcli: summary: {result.summary_text}" in stderr


def test_table_is_the_cli_table(tutorial):
    assert str(tutorial) == cli("grad", TUTORIAL, "--at", "x1=2,x2=3")
    assert repr(tutorial) == str(tutorial).rstrip("\n")
    from rich.console import Console

    console = Console(file=io.StringIO(), width=160)
    console.print(tutorial)
    assert console.file.getvalue() == str(tutorial)
    narrow = Console(file=io.StringIO(), width=60)
    narrow.print(tutorial)
    assert narrow.file.getvalue() == tutorial.table(width=60) != str(tutorial)
    assert "<pre>" in tutorial._repr_html_() and "x2**2" in tutorial._repr_html_()
    many = gradcli.grad("x**2*y", grid="x=-1:1:3,y=0:1:2")
    assert str(many) == cli("grad", "x**2*y", "--grid", "x=-1:1:3,y=0:1:2")


# ---------------------------------------------------------------------------------------------
# hessian, derivative, descend, check, eval
# ---------------------------------------------------------------------------------------------
def test_hessian_one_and_many():
    assert gradcli.hessian("x**2*y", at={"x": 1, "y": 2}, formulas=True).to_dict() == \
        cli_json("hessian", "x**2*y", "--at", "x=1,y=2", "--formulas")
    assert gradcli.hessian("x**2*y", grid="x=-1:1:2,y=0:1:2", method="symbolic,fd").to_dict() == \
        cli_json("hessian", "x**2*y", "--grid", "x=-1:1:2,y=0:1:2", "-m", "symbolic,fd")


def test_derivative_one_and_many(points_csv):
    assert gradcli.derivative("sin(x)", at="x=1", order=3).to_dict() == \
        cli_json("derivative", "sin(x)", "--at", "x=1", "-n", "3")
    expected = cli_json("derivative", "x**3*y", "--points", str(points_csv), "--wrt", "x", "-n", "2")
    assert gradcli.derivative("x**3*y", points=COLUMNS, wrt="x", order=2).to_dict() == expected
    assert gradcli.derivative("x**3*y", points=points_csv, wrt="x", order=2).to_dict() == expected


def test_descend_one_and_many():
    result = gradcli.descend("x**2+3*y**2", start={"x": 1, "y": -1}, optimizer="manual,adam:0.05", steps=200)
    expected = cli_json("descend", "x**2+3*y**2", "--from", "x=1,y=-1", "-o", "manual,adam:0.05", "--steps", "200")
    assert all(isinstance(run["seconds"], float) for run in result.to_dict()["runs"])
    assert masked(result.to_dict()) == masked(expected)
    jsonl = cli("descend", "x**2+3*y**2", "--from", "x=1,y=-1", "-o", "manual,adam:0.05", "--steps", "200",
                "-f", "jsonl")
    assert masked(list(result.records())) == masked([json.loads(line) for line in jsonl.splitlines()])
    many = gradcli.descend("x**2+3*y**2", grid="x=-1:1:2,y=-1:1:2", steps=200)
    expected = cli_json("descend", "x**2+3*y**2", "--grid", "x=-1:1:2,y=-1:1:2", "--steps", "200")
    assert masked(many.to_dict()) == masked(expected)
    assert [r["start"] for r in many.records()] == [r["start"] for r in expected["starts"]]
    assert "where the 4 starts ended" in str(many)


def test_check_at_grid_and_random_points():
    assert gradcli.check("x**2*y", expect={"x": "2*x*y", "y": "x**2"}).to_dict() == \
        cli_json("check", "x**2*y", "-e", "x=2*x*y", "-e", "y=x**2")
    wrong = gradcli.check("sin(x)", expect="x=sin(x)", at={"x": 1})
    assert wrong.failed
    assert wrong.to_dict() == cli_json("check", "sin(x)", "-e", "x=sin(x)", "--at", "x=1", code=1)
    assert gradcli.check("x**2*y", expect=["x=2*x*y"], grid="x=-1:1:3,y=0:2:3").to_dict() == \
        cli_json("check", "x**2*y", "-e", "x=2*x*y", "--grid", "x=-1:1:3,y=0:2:3")


def test_check_points_mapping_as_csv(points_csv):
    assert gradcli.check("x**2*y", expect="x=2*x*y", points=COLUMNS).to_dict() == \
        cli_json("check", "x**2*y", "-e", "x=2*x*y", "--points", str(points_csv))


def test_eval():
    assert gradcli.eval is gradcli.evaluate
    result = gradcli.eval("x**2 + sin(y)", at={"x": 2, "y": 0})
    assert result.to_dict() == cli_json("eval", "x**2 + sin(y)", "--at", "x=2,y=0")
    assert str(result) == cli("eval", "x**2 + sin(y)", "--at", "x=2,y=0")
    f32 = gradcli.eval("exp(x)", at="x=1", dtype="float32")
    assert f32.to_dict() == cli_json("eval", "exp(x)", "--at", "x=1", "--dtype", "float32")
    undefined = gradcli.eval("log(x)", at={"x": -1})
    assert undefined.failed and undefined.to_dict()["value"] is None
    assert undefined.to_dict() == cli_json("eval", "log(x)", "--at", "x=-1", code=1)
    assert undefined.warnings == [line.removeprefix("gradcli: warning: ") for line in
                                  cli_stderr("eval", "log(x)", "--at", "x=-1").splitlines()
                                  if line.startswith("gradcli: warning: ")]


# ---------------------------------------------------------------------------------------------
# errors: GradcliError subclasses, nothing printed, no exit
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error", [
    (lambda: gradcli.grad("x**", at="x=1"), gradcli.ParseError),
    (lambda: gradcli.eval("x +* 2", at={"x": 1}), gradcli.ParseError),
    (lambda: gradcli.grad("x**2"), gradcli.UsageError),  # no point
    (lambda: gradcli.grad("x**2", at={"y": 1}), gradcli.UsageError),
    (lambda: gradcli.grad("x**2", at="x=1", scheme="sideways"), gradcli.UsageError),
    (lambda: gradcli.grad("x**2", at="x=1", method="magic"), gradcli.UsageError),
    (lambda: gradcli.grad("x**2", grid="x=0:1:2", batch_size=0), gradcli.UsageError),
    (lambda: gradcli.grad("x**2", grid="x=0:1:2", points={"x": [1.0]}), gradcli.UsageError),
    (lambda: gradcli.grad("x**2", points={"x": [1.0, "oops"]}), gradcli.UsageError),
    (lambda: gradcli.grad("x**2", at={"x": [1, 2]}), gradcli.UsageError),
    (lambda: gradcli.hessian("x*y", at="x=1,y=1", symbolic_timeout=float("nan")), gradcli.UsageError),
    (lambda: gradcli.derivative("x**2", at="x=1", order="two"), gradcli.UsageError),
    (lambda: gradcli.descend("x**2", start="x=1", grid="x=0:1:2"), gradcli.UsageError),
    (lambda: gradcli.descend("x**2", grid="x=0:1:2", every=5), gradcli.UsageError),
    (lambda: gradcli.check("x**2", at="x=1"), gradcli.UsageError),  # no --expect
    (lambda: gradcli.check("sin(cos(tan(exp(x*sin(x)))))", expect="x=1", order=10, at="x=1",
                           symbolic_timeout=0.1), gradcli.ComputeError),
    (lambda: api.grad_columns("x*y", {"x": np.array([1.0])}), gradcli.UsageError),
])
def test_errors_raise_the_right_subclass_quietly(call, error, capfd):
    with pytest.raises(error) as caught:
        call()
    assert isinstance(caught.value, gradcli.GradcliError)
    assert capfd.readouterr() == ("", "")


def test_error_exit_codes_match_the_cli():
    with pytest.raises(gradcli.UsageError) as caught:
        gradcli.grad("x**2", at="x=1", method="magic")
    assert caught.value.exit_code == 2
    assert caught.value.one_line() in cli_stderr("grad", "x**2", "--at", "x=1", "-m", "magic")


def test_nothing_printed(capfd):
    gradcli.grad("log(x)", at={"x": -1}, method="fd")
    gradcli.grad("log(x)", grid="x=-1:1:3", method="fd")
    assert capfd.readouterr() == ("", "")


# ---------------------------------------------------------------------------------------------
# a dict of arrays in, a dict of arrays out
# ---------------------------------------------------------------------------------------------
def test_grad_columns_are_the_cli_csv(points_csv):
    batch = {"id": np.array(["a", "b", "c"]), "x": COLUMNS["x"], "y": COLUMNS["y"]}
    out = api.grad_columns("x**2*y", batch)
    rows = list(csv.DictReader(io.StringIO(cli("grad", "x**2*y", "--points", str(points_csv), "-f", "csv"))))
    assert list(out) == list(rows[0])
    assert out["id"].tolist() == ["a", "b", "c"] and out["status"].tolist() == ["ok"] * 3
    for name, column in out.items():
        if column.dtype == np.float64:
            assert column.tolist() == [float(r[name]) if r[name] else None for r in rows], name


def test_columns_of_hessian_and_derivative_and_several_expressions():
    batch = {"x": np.linspace(0.5, 1.5, 3), "y": np.full(3, 2.0)}
    h = api.hessian_columns("x**2*y", batch, method="symbolic")
    assert h["symbolic_dxdx"].tolist() == [4.0, 4.0, 4.0] and h["symbolic_dxdy"].tolist() == [1.0, 2.0, 3.0]
    d = api.derivative_columns("x**3", {"x": np.array([1.0, 2.0])}, order=2, method="symbolic")
    assert d["symbolic_d2"].tolist() == [6.0, 12.0]
    j = api.grad_columns(["x*y", "x+y"], batch, method="symbolic", at=None)
    assert j["expression"].tolist() == ["x*y", "x + y"] * 3 and j["x"].tolist() == np.repeat(batch["x"], 2).tolist()
    fixed = api.grad_columns("x*y", {"x": np.array([1.0, 2.0])}, at={"y": 5}, method="symbolic")
    assert fixed["symbolic_dx"].tolist() == [5.0, 5.0]


# ---------------------------------------------------------------------------------------------
# the options are the CLI's; importing stays cheap
# ---------------------------------------------------------------------------------------------
API_REQUESTS = [
    ("grad", "GradRequest", "gradcli.commands.grad:grad"),
    ("hessian", "HessianRequest", "gradcli.commands.hessian:hessian"),
    ("derivative", "DerivativeRequest", "gradcli.commands.derivative:derivative"),
    ("descend", "DescendRequest", "gradcli.commands.descend:descend"),
    ("check", "CheckRequest", "gradcli.commands.check:check"),
    ("eval", "EvalRequest", "gradcli.commands.eval:eval_value"),
    ("grad_columns", "GradRequest", "gradcli.commands.grad:grad"),
    ("hessian_columns", "HessianRequest", "gradcli.commands.hessian:hessian"),
    ("derivative_columns", "DerivativeRequest", "gradcli.commands.derivative:derivative"),
]


@pytest.mark.parametrize("name, request_name, command", API_REQUESTS)
def test_the_api_defaults_are_the_librarys_and_so_are_the_commands(name, request_name, command):
    """A default is written once, in the library's Request: the API function's keyword and the Typer command's
    option have that very value."""
    import dataclasses
    import importlib

    import gradcli.library.requests as requests

    request = getattr(requests, request_name)
    library = {f.name: f.default for f in dataclasses.fields(request) if f.default is not dataclasses.MISSING}
    ours = {k: p.default for k, p in inspect.signature(getattr(gradcli, name)).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(ours) <= set(library), set(ours) - set(library)  # every keyword is an option of the Request
    for keyword, default in ours.items():
        assert default is library[keyword], keyword
    module, function = command.split(":")
    typer_defaults = {n: p.default for n, p in inspect.signature(getattr(importlib.import_module(module),
                                                                         function)).parameters.items()}
    shared = [k for k in library if k in typer_defaults]
    assert len(shared) >= 3, shared
    for option in shared:
        value = typer_defaults[option]
        assert getattr(value, "value", value) == library[option], option  # an enum member: its value
        assert type(getattr(value, "value", value)) is type(library[option]), option
    if "method" in library:
        assert library["method"] == "symbolic,tape,fd" and ours["method"] is library["method"]


def test_the_library_checks_what_click_checks():
    from gradcli.library.requests import GradRequest

    with pytest.raises(gradcli.UsageError, match=r"'--batch-size': 0 is not in the range 1<=x<=1000000"):
        GradRequest(expressions=["x"], at=["x=1"], batch_size=0)
    with pytest.raises(gradcli.UsageError, match=r"'--scheme': 'sideways' is not one of 'central'"):
        GradRequest(expressions=["x"], at=["x=1"], scheme="sideways")
    request = GradRequest(expressions=["x*y"], at={"x": 1, "y": 0.5}, method=["tape", "fd"], scheme="Richardson",
                          wrt=["x"])
    assert (request.at, request.method, request.scheme, request.wrt) == (["x=1,y=0.5"], "tape,fd", "richardson", "x")


def test_import_is_cheap_and_typer_free():
    code = ("import sys, gradcli; gradcli.grad; gradcli.eval; gradcli.GradcliError; "
            "print(sorted(m for m in ('numpy', 'sympy', 'tensorflow', 'typer', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    code = ("import sys, gradcli; gradcli.eval('x**2', at={'x': 3}); gradcli.grad('x*y', grid='x=0:1:2', "
            "at={'y': 1}, method='symbolic,fd'); print('typer' in sys.modules, 'click' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"
    with pytest.raises(AttributeError):
        gradcli.no_such_thing  # noqa: B018


def test_strict_marks_a_result_with_warnings_failed():
    assert not gradcli.derivative("abs(x)", at="x=0").failed  # a kink: warned, computed
    assert gradcli.derivative("abs(x)", at="x=0", strict=True).failed
    assert gradcli.grad("abs(x)", grid="x=-1:1:3", strict=True).failed
    assert not gradcli.hessian("x**2*y", at="x=1,y=1", strict=True).failed


LOG1PEXP_RULE = "log1pexp(x) = log(1 + exp(x)); d/dx = 1 - 1/(1 + exp(x))"


def test_rules_are_options_of_one_call_and_end_with_it():
    doc = gradcli.grad("log1pexp(x)", at={"x": 100}, dtype="float32", method="symbolic,tape",
                       rule=LOG1PEXP_RULE).to_dict()
    assert doc["results"][0]["gradient"]["tape"] == {"x": 1.0}  # the rule's tf.custom_gradient
    assert doc["results"][0]["gradient"]["symbolic"] == {"x": 1.0}
    assert any("changes the tape's numerics" in n for n in doc["notes"])
    with pytest.raises(gradcli.ParseError):  # the rule was this call's only
        gradcli.grad("log1pexp(x)", at={"x": 1})
    sq = "sq(u) = u**2; d/du = 2*u"
    assert gradcli.hessian("sq(x)*y", at="x=1,y=2", rule=[sq, LOG1PEXP_RULE], method="tape").to_dict()[
        "hessian"]["tape"] == [[4.0, 2.0], [2.0, 0.0]]
    assert gradcli.derivative("sq(x)**2", at="x=1", order=3, rule=sq, method="symbolic").to_dict()[
        "derivatives"]["symbolic"] == [4.0, 12.0, 24.0]
    columns = api.grad_columns("sq(x)", {"x": [1.0, 3.0]}, method="symbolic", rule=sq)
    assert list(columns["symbolic_dx"]) == [2.0, 6.0]


def test_a_wrong_rule_raises_a_compute_error_with_its_counterexample():
    with pytest.raises(gradcli.ComputeError, match=r"rule g is wrong: .* at u="):
        gradcli.grad("g(x)", at="x=1", rule="g(u) = u**3; d/du = 3*u")
    assert gradcli.eval("x**2", at="x=3").to_dict()["value"] == 9.0  # nothing of the wrong rule stays


def test_check_takes_dtype_and_rule():
    sq = "sq(u) = u**2; d/du = 2*u"
    result = gradcli.check("sq(x)*y", expect={"x": "2*x*y", "y": "x**2"}, rule=sq)
    assert not result.failed and result.to_dict()["passed"]
    wrong = gradcli.check("sq(x)", expect="x=3*x", rule=sq)
    assert wrong.failed and wrong.to_dict()["counterexample"] is not None
    single = gradcli.check("exp(x)", expect="x=exp(x)", dtype="float32", at="x=1")
    assert single.to_dict()["dtype"] == "float32" and not single.failed


def test_an_unknown_keyword_is_a_usage_error_naming_it():
    with pytest.raises(gradcli.UsageError, match=r"grad\(\) has no option 'methd' \(did you mean method\?\)"):
        gradcli.grad("x**2", at="x=1", methd="fd")
    with pytest.raises(gradcli.UsageError, match=r"hessian\(\) has no option 'zzz' \(its options: expression, at,"):
        gradcli.hessian("x**2", at="x=1", zzz=1)
    with pytest.raises(gradcli.UsageError, match=r"derivative\(\): missing a required argument"):
        gradcli.derivative()


def test_gradcli_api_is_importable_as_written_in_a_fresh_interpreter():
    code = "import gradcli; print(gradcli.api.grad_columns.__name__, gradcli.api is __import__('gradcli.api').api)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["grad_columns", "True"], out.stderr


def test_a_call_leaves_the_environment_as_it_found_it_and_forks_nothing():
    code = ("import os, multiprocessing, gradcli; from gradcli.methods import worker\n"
            "forks = []\n"
            "start = worker.BoundedJob._start_process\n"
            "worker.BoundedJob._start_process = lambda self, *a: (forks.append(1), start(self, *a))[1]\n"
            "before = {k: os.environ.get(k) for k in ('TF_CPP_MIN_LOG_LEVEL', 'TF_ENABLE_ONEDNN_OPTS', "
            "'ABSL_MIN_LOG_LEVEL')}\n"
            "r = gradcli.grad('sin(x)*y', at='x=1,y=2', method='symbolic,fd')\n"
            "r = gradcli.grad('sin(x)*y', at='x=1,y=2', method='tape')\n"
            "after = {k: os.environ.get(k) for k in before}\n"
            "print(before == after, after, len(forks), r.gradient['tape']['y'])")
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS",
                                                             "ABSL_MIN_LOG_LEVEL")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.stdout.split(None, 1)[0] == "True", out.stdout + out.stderr
    assert out.stdout.rstrip().endswith("0 0.8414709848078965"), out.stdout  # SymPy in a thread: no fork
    assert out.stderr == "", out.stderr  # and TensorFlow's start said nothing


def test_jvp_and_hvp_are_the_cli_documents_with_values_one_level_deep(points_csv):
    r = gradcli.jvp("x**2 + 1e20", at={"x": 1}, along="x=1", method="symbolic,fd")
    assert masked(r.to_dict()) == masked(cli_json("jvp", "x**2 + 1e20", "--at", "x=1", "--along", "x=1",
                                                  "-m", "symbolic,fd"))
    assert r.jvp == {"symbolic": 2.0, "fd": 0.0} and "cannot be resolved" in r.warnings[0]  # judged: fd flagged
    two = gradcli.jvp("sin(x)*y", "x*y**2", at="x=1,y=2", along={"x": 1})
    assert [j["tape"] for j in two.jvps] == [pytest.approx(2 * np.cos(1.0)), 4.0]
    h = gradcli.hvp(TUTORIAL, at={"x1": 2, "x2": 3}, along={"x1": 1, "x2": 2})
    assert masked(h.to_dict()) == masked(cli_json("hvp", TUTORIAL, "--at", "x1=2,x2=3", "--along", "x1=1,x2=2"))
    assert h.hvp["symbolic"].tolist() == [12.0, 34.0] and h.hvp["forward-over-reverse"].tolist() == [12.0, 34.0]
    many = gradcli.jvp("x**2*y", points=str(points_csv), along="x=1", method="symbolic,fd")
    csv_text = cli("jvp", "x**2*y", "--points", str(points_csv), "--along", "x=1", "-m", "symbolic,fd", "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert list(many.columns()) == list(rows[0])
    assert many.columns()["fd_jvp"].tolist() == [float(r["fd_jvp"]) for r in rows]
    with pytest.raises(gradcli.UsageError, match="--along is required"):
        gradcli.jvp("x**2", at="x=1")


def test_trace_and_steps_are_the_cli_documents():
    r = gradcli.trace(TUTORIAL, at={"x1": 2, "x2": 3}, along="x1=1,x2=2")
    assert masked(r.to_dict()) == masked(cli_json("trace", TUTORIAL, "--at", "x1=2,x2=3", "--along", "x1=1,x2=2"))
    assert not r.failed and "adjoint" in str(r)  # the trace's own tables
    bad = gradcli.trace("log(1 + exp(x))", at="x=100", dtype="float32")
    assert bad.to_dict()["where_it_went_wrong"] and bad.warnings == bad.to_dict()["warnings"]
    s = gradcli.steps("sin(x)", at="x=1", formulas="central,complex", dtype="float64,float32")
    assert masked(s.to_dict()) == masked(cli_json("steps", "sin(x)", "--at", "x=1", "--formulas", "central,complex",
                                                  "--dtype", "float64,float32"))
    assert [sweep["dtype"] for sweep in s.to_dict()["sweeps"]] == ["float64", "float32"]
    with pytest.raises(gradcli.UsageError, match=r"trace\(\) has no option 'points'"):  # one point's tables
        gradcli.api.trace("x", at="x=1", points="p.csv")
