"""Every document and record gradcli writes matches its JSON Schema in docs/schemas/ (the contract for
scripts, field by field: a key added, dropped or retyped fails here until the schema says so)."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from record_schemas import REQUESTS, SCHEMAS, outputs


def _registry() -> Registry:
    resources = [(p.name, Resource.from_contents(json.loads(p.read_text()))) for p in SCHEMAS.glob("*.json")]
    return Registry().with_resources(resources)


@pytest.mark.parametrize("request_", REQUESTS, ids=[f"{r[0]}:{' '.join(r[1][:2])}" for r in REQUESTS])
def test_output_matches_its_schema(runner, request_):
    registry = _registry()
    schema = json.loads((SCHEMAS / f"{request_[0]}.json").read_text())
    validator = Draft202012Validator(schema, registry=registry)
    for value in outputs(runner, request_):
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_every_schema_is_valid_and_used():
    used = {r[0] for r in REQUESTS}
    for path in SCHEMAS.glob("*.json"):
        Draft202012Validator.check_schema(json.loads(path.read_text()))
        assert path.stem in used, f"{path.name} is validated by no request"


def test_a_record_at_one_point_is_the_record_of_many(runner):
    """--at ... -f jsonl writes the record --grid writes for the same point (one schema, one record)."""
    (at,) = outputs(runner, ("", ["grad", "x**2*y", "--at", "x=2,y=3"], "jsonl"))
    (grid,) = outputs(runner, ("", ["grad", "x**2*y", "--grid", "x=2:2:1,y=3:3:1"], "jsonl"))
    assert at == grid


@pytest.mark.parametrize("argv", [["grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3"],
                                  ["grad", "3*x", "x**2", "--at", "x=5", "-m", "tape,fd,complex"],
                                  ["grad", "log(x)*y", "--at", "x=-1,y=2"],
                                  ["grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--constants", "x1"],
                                  ["derivative", "sin(x)", "--at", "x=1", "-n", "3", "--formulas"],
                                  ["derivative", "abs(x)", "--at", "x=0", "-m", "symbolic,tape,fd,complex"],
                                  ["derivative", "x**3*y", "--at", "x=2,y=5", "--wrt", "x", "-n", "4"],
                                  ["derivative", "log(x)", "--at", "x=-1", "-n", "2"],
                                  ["hessian", "x1**2*x2 + x2**3", "--at", "x1=1,x2=2"],
                                  ["hessian", "abs(x)*y", "--at", "x=0,y=1", "--formulas"],
                                  ["hessian", "x**2.5 + y**2", "--at", "x=0,y=1", "-m", "symbolic,fd"],
                                  ["hessian", "sqrt(x)*y", "--at", "x=0,y=1", "-m", "tape,fd"],
                                  ["jvp", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2"],
                                  ["jvp", "x**2 + 1e20", "--at", "x=1", "--along", "x=1", "-m", "symbolic,fd"],
                                  ["hvp", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2",
                                   "-m", "tape,symbolic"]])
def test_the_one_point_document_is_the_run_and_the_record(runner, argv):
    """The one-point -f json document holds, key for key, the record -f jsonl (and --points) writes for the
    point; what it adds are the run's keys, the ones a many-point document has above its points."""
    (document,) = outputs(runner, ("", argv, "json"))
    (record,) = outputs(runner, ("", argv, "jsonl"))
    if argv[0] == "hvp":  # the seconds each method took vary from one call to the next
        document, record = ({k: v for k, v in d.items() if k != "seconds"} for d in (document, record))
    assert {k: document[k] for k in record} == record
    many = json.loads((SCHEMAS / f"{argv[0]}-batch.json").read_text())
    many = many["properties"] if "properties" in many else many["$defs"]["header"]["properties"]
    assert set(document) - set(record) <= set(many) | {"tape_sources", "notes"}


def _timeless(record: dict) -> dict:
    """A descend record without its runs' seconds (they vary from one call to the next)."""
    return {**record, "runs": [{k: v for k, v in run.items() if k != "seconds"} for run in record["runs"]]}


@pytest.mark.parametrize("argv", [["descend", "3*x**2+2*x-1", "--from", "x=1", "--steps", "30"],
                                  ["descend", "x**2+3*y**2", "--from", "y=1", "-o", "sgd,adam:0.05", "--steps",
                                   "20", "--every", "10", "--stationary-timeout", "0"],
                                  ["descend", "log(x)", "--from", "x=0", "--stationary-timeout", "0"]])
def test_the_one_start_document_is_the_run_and_the_record(runner, argv):
    """descend at one start: the -f json document holds, key for key, the record -f jsonl (and --points) writes
    for that start; it adds the run's keys (those above a many-start document's starts), --every and the kept
    trajectory, and TensorFlow's one-time setup."""
    (document,) = outputs(runner, ("", argv, "json"))
    (record,) = outputs(runner, ("", argv, "jsonl"))
    assert _timeless({k: document[k] for k in record}) == _timeless(record)
    many = json.loads((SCHEMAS / "descend-batch.json").read_text())["properties"]
    assert set(document) - set(record) <= set(many) | {"every", "trajectory", "setup_seconds"}
    one_point_grid = ",".join(f"{k}={v!r}:{v!r}:1" for k, v in record["start"].items())
    options = [a for a in argv[4:] if a not in ("--every", "10")]  # many starts keep no trajectory
    (grid,) = outputs(runner, ("", [*argv[:2], "--grid", one_point_grid, *options], "jsonl"))
    assert _timeless(grid) == _timeless(record)


@pytest.mark.parametrize("schema, argv", [
    ("grad-record", ["grad", "x**2*y"]),
    ("hessian-record", ["hessian", "x**2*y"]),
    ("derivative-record", ["derivative", "x**2*y", "--wrt", "x"]),
    ("descend-record", ["descend", "x**2 + y**2", "--steps", "50", "--stationary-timeout", "0"]),
    ("jvp-record", ["jvp", "x**2*y", "--along", "x=1,y=2"]),
    ("hvp-record", ["hvp", "x**2*y", "--along", "x=1,y=2"]),
])
def test_records_from_a_points_file_carry_its_line_and_fields_as_their_schema_says(runner, tmp_path, schema, argv):
    """A --points file's records carry the file's line and its other columns (fields), every command alike."""
    points = tmp_path / "points.csv"
    points.write_text("id,x,y\na,1,2\nb,0.5,1\n")
    validator = Draft202012Validator(json.loads((SCHEMAS / f"{schema}.json").read_text()), registry=_registry())
    records = outputs(runner, ("", [*argv, "--points", str(points)], "jsonl"))
    assert [r["fields"] for r in records] == [{"id": "a"}, {"id": "b"}] and [r["line"] for r in records] == [2, 3]
    for record in records:
        assert not [e.message for e in validator.iter_errors(record)]


def test_eval_records_from_a_points_file_match_their_schema(runner, tmp_path):
    """eval's --points records carry the file's line and its other columns (fields): the schema says so."""
    points = tmp_path / "points.csv"
    points.write_text("id,x\na,1\nb,-1\n")
    validator = Draft202012Validator(json.loads((SCHEMAS / "eval-record.json").read_text()), registry=_registry())
    records = outputs(runner, ("", ["eval", "log(x)", "--points", str(points)], "jsonl"))
    assert [r["fields"] for r in records] == [{"id": "a"}, {"id": "b"}] and [r["line"] for r in records] == [2, 3]
    for record in records:
        assert not list(validator.iter_errors(record))
    assert list(validator.iter_errors({**records[0], "status": "ok"}))  # a key the contract lacks fails


def test_eval_one_point_document_is_the_run_and_the_record(runner):
    """eval at one point: the -f json document is the record -f jsonl writes plus the run's keys."""
    for argv in (["eval", "log(x)", "--at", "x=-1,y=2"], ["eval", "x/3", "--at", "x=1", "--dtype", "float32"],
                 ["eval", "2**10"]):
        (document,) = outputs(runner, ("", argv, "json"))
        (record,) = outputs(runner, ("", argv, "jsonl"))
        assert {k: document[k] for k in record} == record
        many = json.loads((SCHEMAS / "eval-batch.json").read_text())["properties"]
        assert set(document) - set(record) <= set(many)


@pytest.mark.parametrize("name", ["jvp-record", "hvp-record"])
def test_a_record_key_the_contract_lacks_fails(runner, name):
    """jvp's and hvp's schemas close their records (unevaluatedProperties): a key added fails validation."""
    request = next(r for r in REQUESTS if r[0] == name)
    (record, *_) = outputs(runner, request)
    validator = Draft202012Validator(json.loads((SCHEMAS / f"{name}.json").read_text()), registry=_registry())
    assert not list(validator.iter_errors(record))
    assert list(validator.iter_errors({**record, "extra": 1}))
    assert list(validator.iter_errors({**record, "status": "fine"}))
