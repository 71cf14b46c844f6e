"""The JSON Schemas of gradcli's documents and records (docs/schemas/): the requests whose output the tests
validate against them, and a drafting tool that infers a schema from real output (run it only to start a
new schema: ``python -m tests.record_schemas --draft [NAME...]``; the committed schemas are the contract).

A schema per shape: ``<command>.json`` the one-point ``-f json`` document, ``<command>-record.json`` one
``-f jsonl`` record (also each entry of ``points``/``starts`` in a many-point document), and
``<command>-batch.json`` the many-point ``-f json`` document. jvp's and hvp's are written as the code builds
them: the record under ``$defs/record``, the run's header under the batch schema's ``$defs/header``, and the
one-point document all of them (``allOf``) with the notes, nothing else (``unevaluatedProperties``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schemas"
VARIABLES = {"x", "y", "z", "x1", "x2", "u", "v"}
METHODS = {"symbolic", "tape", "fd", "complex"}

# (schema name, command line, format): each output of these is validated, one schema per shape.
REQUESTS = [
    ("grad", ["grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3"], "json"),
    ("grad", ["grad", "3*x", "x**2", "--at", "x=5"], "json"),
    ("grad", ["grad", "log(x)*y", "--at", "x=-1,y=2"], "json"),
    ("grad", ["grad", "abs(x)*y", "--at", "x=0,y=1", "-m", "tape,fd,complex"], "json"),
    ("grad", ["grad", "x*y", "--at", "x=1.1,y=2", "--dtype", "float32", "--wrt", "x"], "json"),
    ("grad", ["grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--constants", "x1,x2", "--watch", "x2"], "json"),
    ("grad", ["grad", "relu(x)*y", "--at", "x=0,y=2"], "json"),
    ("grad-record", ["grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3"], "jsonl"),
    ("grad-record", ["grad", "3*x", "x**2", "--grid", "x=-1:5:3"], "jsonl"),
    ("grad-record", ["grad", "log(x)", "--grid", "x=-1:1:3", "-m", "symbolic,tape,fd,complex"], "jsonl"),
    ("grad-batch", ["grad", "x**2*y", "--grid", "x=-1:1:3,y=1:2:2"], "json"),
    ("grad-batch", ["grad", "3*x", "x**2", "--grid", "x=-1:1:2", "-m", "tape,fd,complex"], "json"),
    ("grad-record", ["grad", "abs(x)*y", "--at", "x=0,y=1", "-m", "tape,fd,complex"], "jsonl"),
    ("grad-record", ["grad", "3*x", "x**2", "--at", "x=5", "-m", "symbolic,tape,fd,complex"], "jsonl"),
    ("grad-record", ["grad", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--constants", "x1,x2", "--watch", "x2"], "jsonl"),
    ("hessian", ["hessian", "x1**2*x2 + x2**3", "--at", "x1=1,x2=2"], "json"),
    ("hessian", ["hessian", "abs(x)*y", "--at", "x=0,y=1", "--formulas"], "json"),
    ("hessian", ["hessian", "x**2.5 + y**2", "--at", "x=0,y=1", "-m", "symbolic,fd"], "json"),
    ("hessian-record", ["hessian", "x**2*y", "--grid", "x=-1:1:3,y=1:1:1"], "jsonl"),
    ("hessian-record", ["hessian", "log(x)*y", "--grid", "x=-1:1:2,y=1:1:1"], "jsonl"),
    ("hessian-batch", ["hessian", "x**2*y", "--grid", "x=-1:1:2,y=1:1:1"], "json"),
    ("hessian-batch", ["hessian", "x**2*y", "--grid", "x=-1:1:2,y=1:1:1", "--formulas", "-m", "symbolic,fd"], "json"),
    ("hessian-record", ["hessian", "x**2*y", "--at", "x=1,y=2", "-m", "symbolic,fd"], "jsonl"),
    ("derivative", ["derivative", "sin(x)", "--at", "x=1", "--order", "3"], "json"),
    ("derivative", ["derivative", "abs(x-1)", "--at", "x=1"], "json"),
    ("derivative", ["derivative", "sqrt(x)", "--at", "x=0", "-m", "symbolic,fd"], "json"),
    ("derivative", ["derivative", "x**3", "--at", "x=2", "-m", "symbolic,tape,fd,complex"], "json"),
    ("derivative", ["derivative", "exp(x)*cos(x)", "--at", "x=0.5", "-n", "3", "--formulas"], "json"),
    ("derivative", ["derivative", "x*abs(x)", "--at", "x=0", "-n", "2"], "json"),
    ("derivative-record", ["derivative", "sin(x)", "--grid", "x=0:1:3", "--order", "2"], "jsonl"),
    ("derivative-record", ["derivative", "abs(x-1)", "--grid", "x=0:2:3"], "jsonl"),
    ("derivative-record", ["derivative", "abs(x)", "--at", "x=0", "-m", "symbolic,tape,fd,complex"], "jsonl"),
    ("derivative-record", ["derivative", "x**3", "--at", "x=2", "-m", "symbolic,tape,fd,complex"], "jsonl"),
    ("derivative-record", ["derivative", "x*abs(x)", "--at", "x=0", "-n", "2"], "jsonl"),
    ("derivative-record", ["derivative", "x**3", "--grid", "x=1:2:2", "-m", "symbolic,fd,complex"], "jsonl"),
    ("derivative-batch", ["derivative", "sin(x)", "--grid", "x=0:1:2", "--order", "2"], "json"),
    ("derivative-batch", ["derivative", "x**3", "--grid", "x=1:2:2", "--formulas", "-m", "symbolic,fd,complex"],
     "json"),
    ("descend", ["descend", "3*x**2+2*x-1", "--from", "x=1", "--steps", "50"], "json"),
    ("descend", ["descend", "x**2+y**2", "--from", "x=1,y=1", "-o", "sgd,adam", "--steps", "20"], "json"),
    ("descend-record", ["descend", "x**2+y**2", "--grid", "x=-1:1:2,y=1:1:1", "--steps", "20"], "jsonl"),
    ("descend-record", ["descend", "(x**2+y-11)**2+(x+y**2-7)**2", "--grid", "x=-4:4:3,y=-4:4:3", "-o", "adam",
                        "--lr", "0.05", "--steps", "300"], "jsonl"),
    ("descend-record", ["descend", "x**4-x**2", "--grid", "x=-2:2:3", "--steps", "5", "--tol", "0"], "jsonl"),
    ("descend", ["descend", "(x-1)**2", "--from", "x=3", "-o", "sgd,adam", "--steps", "20", "--every", "5",
                 "--stationary-timeout", "0"], "json"),
    ("descend-record", ["descend", "3*x**2+2*x-1", "--from", "x=1", "--steps", "50"], "jsonl"),
    ("descend-record", ["descend", "x**4", "--grid", "x=-3:3:3", "--stationary-timeout", "0"], "jsonl"),
    ("descend-batch", ["descend", "x**2+y**2", "--grid", "x=-1:1:2,y=1:1:1", "--steps", "20"], "json"),
    ("descend-batch", ["descend", "x**2+y**2", "--grid", "x=-1:1:2,y=1:1:1", "--steps", "20", "-o", "sgd,adam",
                       "--stationary-timeout", "0"], "json"),
    ("check", ["check", "x**2*y", "--expect", "x=2*x*y"], "json"),
    ("check", ["check", "x**2*y", "--expect", "x=2*x"], "json"),
    ("eval", ["eval", "x/3", "--at", "x=1"], "json"),
    ("eval", ["eval", "log(x)", "--at", "x=-1"], "json"),
    ("eval", ["eval", "2**10"], "json"),
    ("eval-record", ["eval", "log(x)*y", "--grid", "x=-1:1:3,y=2:2:1"], "jsonl"),
    ("eval-record", ["eval", "x/3", "--at", "x=1", "--dtype", "float32"], "jsonl"),
    ("eval-batch", ["eval", "log(x)*y", "--grid", "x=-1:1:3,y=2:2:1"], "json"),
    ("eval-batch", ["eval", "x**2", "--grid", "x=0:1:2", "--dtype", "float32"], "json"),
    ("steps", ["steps", "sin(x)", "--at", "x=1"], "json"),
    ("jvp", ["jvp", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2"], "json"),
    ("jvp", ["jvp", "sin(x)*y", "x*y**2", "--at", "x=1,y=2", "--along", "x=1", "-m", "tape,fd"], "json"),
    ("jvp", ["jvp", "log(x)*y", "--at", "x=-1,y=2", "--along", "x=1"], "json"),
    ("jvp", ["jvp", "x**2 + 1e20", "--at", "x=1", "--along", "x=1", "-m", "symbolic,fd"], "json"),
    ("jvp", ["jvp", "abs(x)*y", "--at", "x=0,y=1", "--along", "x=1,y=1", "-m", "tape,fd,complex"], "json"),
    ("jvp-record", ["jvp", "x**2*y", "--grid", "x=-1:1:3,y=1:2:2", "--along", "x=1"], "jsonl"),
    ("jvp-record", ["jvp", "log(x)", "--grid", "x=-1:1:3", "--along", "x=1", "-m", "tape,complex"], "jsonl"),
    ("jvp-record", ["jvp", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2"], "jsonl"),
    ("jvp-batch", ["jvp", "x**2*y", "--grid", "x=-1:1:3,y=1:2:2", "--along", "x=1"], "json"),
    ("jvp-batch", ["jvp", "3*x", "x**2", "--grid", "x=-1:1:2", "--along", "x=1", "-m", "tape,fd"], "json"),
    ("hvp", ["hvp", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2"], "json"),
    ("hvp", ["hvp", "x**2*y + sin(x*y)", "--at", "x=1,y=2", "--along", "x=1", "-m", "for,ror"], "json"),
    ("hvp", ["hvp", "log(x)*y", "--at", "x=-1,y=2", "--along", "x=1"], "json"),
    ("hvp", ["hvp", "(exp(x*y) - 1)/(x*y)", "--at", "x=1e-6,y=1e-5", "--along", "x=1,y=1"], "json"),
    ("hvp-record", ["hvp", "x**2*y", "--grid", "x=-1:1:3,y=1:2:2", "--along", "x=1"], "jsonl"),
    ("hvp-record", ["hvp", "log(x)*y", "--grid", "x=-1:1:3,y=1:1:1", "--along", "x=1", "-m", "for,fd"], "jsonl"),
    ("hvp-record", ["hvp", "x**3", "--at", "x=1,y=2", "--along", "x=1,y=1", "-m", "tape,fd"], "jsonl"),
    ("hvp-batch", ["hvp", "x**2*y", "--grid", "x=-1:1:3,y=1:2:2", "--along", "x=1"], "json"),
    ("hvp-batch", ["hvp", "x**2*y", "--grid", "x=-1:1:2,y=1:1:1", "--along", "x=1", "-m", "tape"], "json"),
    ("trace", ["trace", "(x1+5)*x2**2", "--at", "x1=2,x2=3"], "json"),
    ("trace", ["trace", "3*x", "x**2", "--at", "x=5"], "json"),
    ("trace", ["trace", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2"], "json"),
    ("trace", ["trace", "log(1+exp(x))", "--at", "x=100", "--dtype", "float32", "--along", "x=1"], "json"),
    ("trace", ["trace", "stop_gradient(x**2)*x + x", "--at", "x=3"], "json"),
    ("trace", ["trace", "where(x > 0, log(x), 0)", "--at", "x=0"], "json"),
    ("propagate", ["propagate", "x**2", "--at", "x=0±10", "--samples", "2000"], "json"),
    ("propagate", ["propagate", "x*y", "log(x)", "--at", "x=2±0.1,y=3±0.2", "--correlation", "x,y=0.5",
                   "--samples", "2000"], "json"),
    ("propagate", ["propagate", "1/x", "--at", "x=0.1±0.1", "--samples", "2000", "--distribution", "uniform"],
     "json"),
    ("implicit", ["implicit", "x**2 + y**2 = 1", "--at", "x=0.6,y=0.8", "-n", "3"], "json"),
    ("implicit", ["implicit", "x*y*z = 1", "--at", "x=1,y=2,z=0.5", "--dependent", "z", "-m", "tape,fd"], "json"),
    ("grad-reduce", ["grad", "(w0 + w1*x - 1)**2", "--grid", "x=0:1:5", "--at", "w0=0,w1=1", "--wrt", "w0,w1",
                     "--reduce", "mean"], "json"),
    ("grad-reduce", ["grad", "log(w*x)", "--grid", "x=-1:1:3", "--at", "w=1", "--reduce", "sum", "-m", "tape"],
     "json"),
]


def outputs(runner, request) -> list:
    """The JSON values a request prints: one document, or one per line for JSON Lines."""
    from gradcli.cli import app

    _, argv, fmt = request
    result = runner.invoke(app, [*argv, "-f", fmt])
    assert result.exit_code in (0, 1), (argv, result.stderr)
    text = result.stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()] if fmt == "jsonl" else [json.loads(text)]


def infer(samples: list):
    """A schema every sample satisfies: objects keyed by variables become maps, keys seen in every sample
    are required, no other key is allowed."""
    kinds = {_kind(s) for s in samples}
    if len(kinds) > 1 and "null" in kinds:  # a value that may be missing: JSON's null for NaN, undefined
        rest = infer([s for s in samples if s is not None])
        return {"anyOf": [rest, {"type": "null"}]} if rest else {}
    if len(kinds) > 1:
        return {"anyOf": [infer([s for s in samples if _kind(s) == k]) for k in sorted(kinds)]}
    kind = kinds.pop()
    if kind == "object":
        keys = set().union(*samples)
        if keys and keys <= VARIABLES:
            return {"type": "object", "additionalProperties": infer([v for s in samples for v in s.values()])}
        return {"type": "object", "properties": {k: infer([s[k] for s in samples if k in s]) for k in sorted(keys)},
                "required": sorted(k for k in keys if all(k in s for s in samples)) if not keys <= METHODS else [],
                "additionalProperties": False}
    if kind == "array":
        items = [v for s in samples for v in s]
        return {"type": "array", "items": infer(items)} if items else {"type": "array"}
    if kind == "null":  # never seen with a value: a number, a string or an object when there is one
        return {}
    if kind == "number":  # JSON has no NaN or infinity: a number that is not finite is written null
        return {"type": ["number", "null"]}
    return {"type": kind}


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def draft() -> None:
    from typer.testing import CliRunner

    runner = CliRunner()
    by_schema: dict[str, list] = {}
    only = [a for a in sys.argv[1:] if not a.startswith("-")]  # schema names to redraft (default: all)
    for request in REQUESTS:
        if not only or request[0] in only:
            by_schema.setdefault(request[0], []).extend(outputs(runner, request))
    for name, samples in by_schema.items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{name}.json",
                  "title": f"gradcli {name}", **infer(samples)}
        if name.endswith("-batch"):  # each point of a many-point document is the command's record
            key = "starts" if name.startswith("descend") else "points"
            schema["properties"][key] = {"type": "array", "items": {"$ref": name.replace("-batch", "-record.json")}}
        (SCHEMAS / f"{name}.json").write_text(json.dumps(schema, indent=1) + "\n")
        print(f"wrote {name}.json from {len(samples)} outputs")


if __name__ == "__main__" and "--draft" in sys.argv:
    draft()
