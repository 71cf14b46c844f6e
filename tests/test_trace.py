"""gradcli trace: the tape's nodes, their values, adjoints and tangents, each checked; the NaN pointer; dot; the
program of --show-code run in process."""

from __future__ import annotations

import json
import re

import pytest

from generated_programs import run_generated
from typer.testing import CliRunner

from gradcli.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def trace_json(*args):
    result = run("trace", *args, "-f", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_name(doc):
    return {n["name"]: n for n in doc["nodes"]}


def test_the_guides_g_forward_values_and_adjoints():
    doc = trace_json("(x1+5)*x2**2", "--at", "x1=2,x2=3")
    nodes = by_name(doc)
    ops = [n for n in doc["nodes"] if n["kind"] == "op"]
    assert [n["value"] for n in ops] == [7.0, 9.0, 63.0]
    assert [n["text"] for n in ops] == ["x1 + 5", "x2**2", "v1*v2"]
    assert nodes["x1"]["adjoint"] == 9.0 and nodes["x2"]["adjoint"] == 42.0
    assert nodes["v1"]["adjoint"] == 9.0 and nodes["v2"]["adjoint"] == 7.0
    for n in doc["nodes"]:
        assert n["value"] == n["exact"] and n["adjoint"] == n["exact_adjoint"] == n["tf_adjoint"]
    assert doc["where_it_went_wrong"] == [] and doc["checks_failed"] == []


def test_thirteen_is_a_visible_sum():
    result = run("trace", "3*x", "x**2", "--at", "x=5")
    assert result.exit_code == 0, result.output
    row = [line for line in result.stdout.splitlines() if line.startswith("│ x ")][1]  # the reverse table
    assert "13.0" in row and "3.0 (v1) + 10.0 (v2)" in row
    doc = trace_json("3*x", "x**2", "--at", "x=5")
    x = by_name(doc)["x"]
    assert [t["term"] for t in x["adjoint_terms"]] == [3.0, 10.0] and x["adjoint"] == 13.0 == x["tf_adjoint"]


CASES = [("sin(x)*exp(y) + x*y", "x=0.7,y=-0.3", "x=1,y=2"),
         ("log(1 + x**2)/(2 + cos(x*y))", "x=1.5,y=0.5", "x=-1,y=0.5"),
         ("sqrt(x) * tanh(x - y) + x**3", "x=2,y=1", "x=0.5,y=1"),
         ("x*x*x - 2*x + sigmoid(x)", "x=0.3", "x=1"),
         ("atan2(y, x) + abs(x - 3*y)", "x=1,y=2", "x=1,y=-1")]


@pytest.mark.parametrize("expr,at,along", CASES)
def test_adjoints_and_tangents_are_tensorflows(expr, at, along):
    doc = trace_json(expr, "--at", at, "--along", along)
    assert doc["checks_failed"] == []
    for n in doc["nodes"]:
        assert n["adjoint"] == pytest.approx(n["tf_adjoint"], rel=1e-12, abs=1e-300)
        assert n["tangent"] == pytest.approx(n["tf_tangent"], rel=1e-12, abs=1e-300)
        assert n["value"] == pytest.approx(n["exact"], rel=1e-12)
        assert n["adjoint"] == pytest.approx(n["exact_adjoint"], rel=1e-10, abs=1e-12)
        assert n["tangent"] == pytest.approx(n["exact_tangent"], rel=1e-10, abs=1e-12)


def bare(node_id: str) -> str:
    """A dot node's name without its kind ("node v1", "output z")."""
    return node_id.split(" ", 1)[1]


def test_a_variable_named_like_a_target_is_a_node_of_its_own_in_dot():
    result = run("trace", "z*2", "--at", "z=1", "-f", "dot")
    ids = re.findall(r'^  "([^"]+)" \[label=', result.stdout, re.M)
    assert "node z" in ids and "output z" in ids and len(ids) == len(set(ids))  # was one id: a cycle z -> v1 -> z
    assert '"node v1" -> "output z";' in result.stdout


def test_the_dot_output_parses():
    result = run("trace", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "-f", "dot")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("digraph trace {") and text.rstrip().endswith("}")
    nodes = {bare(k): v for k, v in re.findall(r'^  "([^"]+)" \[label="((?:[^"\\]|\\.)*)"', text, re.M)}
    edges = [(bare(a), bare(b), label)
             for a, b, label in re.findall(r'^  "([^"]+)" -> "([^"]+)"(?: \[label="([^"]*)"\])?;', text, re.M)]
    assert {"x1", "x2", "v1", "v2", "v3", "z"} <= set(nodes)
    assert "value 63.0" in nodes["v3"] and "adjoint 42.0" in nodes["x2"]
    assert ("x2", "v2", "dv2/dx2 = 6.0") in edges and ("v3", "z", "") in edges
    assert all(a in nodes and b in nodes for a, b, _ in edges)


def test_the_nan_pointer_names_exp_and_the_adjoint():
    result = run("trace", "log(1+exp(x))", "--at", "x=100", "--dtype", "float32", "-f", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    found = {o["sweep"]: o for o in doc["where_it_went_wrong"]}
    assert found["forward"]["node"] == "v1" and "exp(x) overflows float32" in found["forward"]["why"]
    assert found["forward"]["exact"] == pytest.approx(2.6881171418161356e43)
    assert found["reverse"]["node"] == "x" and found["reverse"]["value"] is None  # NaN: null in JSON
    assert found["reverse"]["exact"] == pytest.approx(1.0)
    assert "0.0 × inf = nan" in found["reverse"]["why"]
    table = run("trace", "log(1+exp(x))", "--at", "x=100", "--dtype", "float32")
    assert "where it went wrong" in table.stdout and "overflows float32" in table.stderr


def test_show_code_runs_and_prints_the_same_numbers():
    result = run("trace", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2", "--show-code")
    assert result.exit_code == 0, result.output
    lines = run_generated(result.stdout).splitlines()
    assert "x1 value 2.0 adjoint 9.0 tangent 1.0" in lines
    assert "x2 value 3.0 adjoint 42.0 tangent 2.0" in lines
    assert "v3 value 63.0 adjoint 1.0 tangent 93.0" in lines


def test_refusals_exit_2():
    assert run("trace", "x**2", "--at", "x=1", "--grid", "x=0:1:3").exit_code == 2
    assert run("trace", "x**2", "--at", "x=1", "--along", "y=1").exit_code == 2
    assert run("trace", "3", "--at", "x=1").exit_code == 2


def test_wheres_untaken_branch_is_named():
    doc = trace_json("where(x > 0, log(x), 0)", "--at", "x=0")
    (found,) = doc["where_it_went_wrong"]
    assert found["sweep"] == "reverse" and found["node"] == "x" and found["exact"] == 0.0
    assert "untaken branch" in found["why"] and "0.0 × inf = nan" in found["why"]
    x = by_name(doc)["x"]
    assert x["exact_adjoint"] == 0.0 and x["adjoint"] is None  # the exact derivative (SymPy's Piecewise) is 0


def test_sqrt_behind_a_where_is_zero_in_tensorflow_and_says_why():
    result = run("trace", "where(x > 0, sqrt(x), 0)", "--at", "x=0", "-f", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["where_it_went_wrong"] == [] and by_name(doc)["x"]["exact_adjoint"] == 0.0
    assert any("passes a zero adjoint on as zero" in n for n in doc["notes"])


def test_first_bad_node_for_a_caller_elsewhere():
    from gradcli.compute.tape_origin import first_bad_node
    from gradcli.expression import parse
    from gradcli.expression.points import parse_point

    bad = first_bad_node(parse("log(1 + exp(x))"), {"x": 100.0}, "float32")
    assert (bad.sweep, bad.node, bad.operation, bad.expression) == ("forward", "v1", "exp(x)", "exp(x)")
    assert bad.value == float("inf") and bad.exact == pytest.approx(2.6881171418161356e43)
    assert bad.pointer.startswith("the tape first goes wrong at exp(x) (trace node v1): its value is inf")
    assert "overflows float32" in bad.pointer and "\n" not in bad.pointer
    bad = first_bad_node("where(x > 0, log(x), 0)", parse_point("x=0"))
    assert bad.sweep == "reverse" and bad.node == "x" and "untaken branch" in bad.why
    assert first_bad_node(parse("x**2"), {"x": 3.0}) is None
    assert first_bad_node(parse("exp(x) - exp(x) + x"), ["x=800"]).operation == "v1 - v2 + x"
    assert first_bad_node("3", {"x": 1.0}) is None  # a constant: nothing the trace takes


def test_a_deep_chain_has_its_exact_adjoints_in_seconds():
    deep = "x"
    for _ in range(60):
        deep = f"tanh({deep})"
    doc = trace_json(deep, "--at", "x=0.5", "--along", "x=1")
    assert doc["notes"] == [] and doc["checks_failed"] == []
    x = by_name(doc)["x"]
    assert x["exact_adjoint"] == pytest.approx(x["tf_adjoint"], rel=1e-12)


def test_zero_times_undefined_stays_undefined_where_no_where_decides():
    doc = trace_json("sqrt(x**2 + y**2)", "--at", "x=0,y=0")  # not differentiable at 0: no exact adjoint
    nodes = by_name(doc)
    assert nodes["x"]["exact_adjoint"] is None and nodes["y"]["exact_adjoint"] is None
    assert doc["where_it_went_wrong"] == []


def test_below_a_stop_gradient_the_tape_records_nothing():
    doc = trace_json("stop_gradient(x**2)*x + x", "--at", "x=3", "--along", "x=1")
    nodes = by_name(doc)
    assert doc["checks_failed"] == [] and doc["where_it_went_wrong"] == []
    assert nodes["v1"]["recorded"] is False and nodes["v1"]["tf_adjoint"] is None and nodes["v1"]["adjoint"] == 0.0
    assert nodes["v2"]["recorded"] is False and nodes["v2"]["adjoint"] == 3.0 == nodes["v2"]["exact_adjoint"]
    assert nodes["x"]["adjoint"] == 10.0 == nodes["x"]["tf_adjoint"] == nodes["x"]["exact_adjoint"]
    # log(x) at 0 under the stop_gradient: no 0 × inf on the way back, as on the tape
    doc = trace_json("stop_gradient(log(x))*x", "--at", "x=0")
    assert doc["checks_failed"] == []


def _column(table_text: str, title: str, header: str) -> dict[str, str]:
    """{node: cell} of one column of one of the trace's tables, found by its title and header."""
    lines = table_text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(title))
    heads = [c.strip() for c in lines[start + 2].strip("┃").split("┃")]
    column = heads.index(header)
    cells = {}
    for line in lines[start + 4:]:
        if not line.startswith("│"):
            break
        row = [c.strip() for c in line.strip("│").split("│")]
        cells[row[0]] = row[column]
    return cells


def test_show_code_prints_not_recorded_as_the_table_does():
    args = ("stop_gradient(x**2)*x + x", "--at", "x=3", "--along", "x=1")
    table = run("trace", *args)
    assert table.exit_code == 0, table.output
    expected = _column(table.stdout, "reverse:", "tape.gradient")
    tangents = _column(table.stdout, "forward along", "ForwardAccumulator")
    assert expected["v1"] == expected["v2"] == "not recorded" and expected["x"] == "10.0"
    code = run("trace", *args, "--show-code")
    assert code.exit_code == 0, code.output
    printed = {}
    for line in run_generated(code.stdout).splitlines():
        name, rest = line.split(" value ", 1)
        adjoint, tangent = rest.split(" adjoint ", 1)[1].split(" tangent ")
        printed[name] = (adjoint, tangent)
    assert {k: a for k, (a, _) in printed.items()} == expected
    assert {k: t for k, (_, t) in printed.items()} == tangents


def test_the_dot_output_greys_what_the_tape_does_not_record():
    result = run("trace", "stop_gradient(x**2)*x + x", "--at", "x=3", "-f", "dot")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("digraph trace {") and text.rstrip().endswith("}")
    attrs = r'((?:, [a-z]+=(?:"(?:[^"\\]|\\.)*"|[a-z0-9]+))*)'
    nodes = {bare(a): (label, rest) for a, label, rest in
             re.findall(r'^  "([^"]+)" \[label="((?:[^"\\]|\\.)*)"' + attrs + r'\];$', text, re.M)}
    edges = [(bare(a), bare(b), label, style) for a, b, label, style in
             re.findall(r'^  "([^"]+)" -> "([^"]+)"(?: \[label="([^"]*)"' + attrs + r'\])?;$', text, re.M)]
    body = [line for line in text.splitlines()[3:-1]]
    assert len(body) == len(nodes) + len(edges)  # every line a node or an edge statement
    assert all(a in nodes and b in nodes for a, b, _, _ in edges)
    for name in ("v1", "v2"):
        label, style = nodes[name]
        assert "not recorded" in label and "style=dashed" in style and "color=grey50" in style
    assert "not recorded" not in nodes["x"][0] and "dashed" not in nodes["v3"][1]
    by_pair = {(a, b): (label, style) for a, b, label, style in edges}
    assert by_pair[("v1", "v2")][0] == "not recorded" and "dashed" in by_pair[("v1", "v2")][1]
    assert by_pair[("x", "v1")] == ("dv1/dx = 6.0", ", style=dashed, color=grey50, fontcolor=grey50")
    assert by_pair[("x", "v3")] == ("dv3/dx = 9.0", "")


LOG1PEXP_RULE = "log1pexp(x) = log(1 + exp(x)); d/dx = 1 - 1/(1 + exp(x))"


def test_a_rule_is_one_op_on_the_tape_its_adjoint_the_rules():
    # the guide's log(1 + exp(x)) at 100 in float32: the value overflows either way, the adjoint is the rule's
    doc = trace_json("log1pexp(x)*2", "--at", "x=100", "--dtype", "float32", "--rule", LOG1PEXP_RULE)
    nodes = by_name(doc)
    assert nodes["v1"]["op"] == "log1pexp" and nodes["v1"]["inputs"] == ["x"]
    assert nodes["x"]["adjoint"] == nodes["x"]["tf_adjoint"] == 2.0 and nodes["x"]["exact_adjoint"] == 2.0
    assert nodes["v1"]["value"] is None and nodes["v1"]["exact"] == 100.0  # inf in float32: JSON null
    code = run("trace", "log1pexp(x)*2", "--at", "x=100", "--dtype", "float32", "--rule", LOG1PEXP_RULE,
               "--show-code")
    assert code.exit_code == 0 and "@tf.custom_gradient" in code.stdout
    assert "x value 100.0 adjoint 2.0" in run_generated(code.stdout).splitlines()
    wrong = run("trace", "g(x)", "--at", "x=1", "--rule", "g(u) = u**3; d/du = 3*u")
    assert wrong.exit_code == 1 and "rule g is wrong" in wrong.output


def test_trace_runs_on_the_engine_as_a_batch_of_one():
    """trace is a core on run_batch: its -f json document is the run's header, the point's record (with its
    status) and the notes."""
    result = runner.invoke(app, ["trace", "log(1+exp(x))", "--at", "x=100", "--dtype", "float32", "-f", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert list(doc)[:5] == ["command", "expressions", "dtype", "along", "point"]
    assert doc["status"] == "warning" and doc["where_it_went_wrong"] and doc["warnings"]
    ok = json.loads(runner.invoke(app, ["trace", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "-f", "json"]).stdout)
    assert ok["status"] == "ok" and ok["warnings"] == [] and ok["nodes"][-1]["value"] == 63.0
