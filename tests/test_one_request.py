"""One request, one verdict: the same options at the same point are refused (or computed) alike whether
the point comes from --at (table, JSON, JSON Lines, CSV), a one-row --points file or a one-point --grid.

Each option is checked once (gradcli.compute.request, and fd's step check on every chunk), so a refusal
has one exit code and one message on every path."""

from __future__ import annotations

import json

import pytest

from gradcli.cli import app


def _paths(tmp_path, point: dict[str, float]) -> dict[str, list[str]]:
    """The point as each input path gives it (the option words that replace ``--at``)."""
    csv = tmp_path / "point.csv"
    csv.write_text(",".join(point) + "\n" + ",".join(repr(v) for v in point.values()) + "\n")
    jsonl = tmp_path / "point.jsonl"
    jsonl.write_text(json.dumps(point) + "\n")
    at = ",".join(f"{k}={v!r}" for k, v in point.items())
    grid = ",".join(f"{k}={v!r}:{v!r}:1" for k, v in point.items())
    return {
        "at table": ["--at", at],
        "at json": ["--at", at, "-f", "json"],
        "at jsonl": ["--at", at, "-f", "jsonl"],
        "at csv": ["--at", at, "-f", "csv"],
        "points csv": ["--points", str(csv), "-f", "jsonl"],
        "points jsonl": ["--points", str(jsonl), "-f", "json"],
        "grid": ["--grid", grid, "-f", "csv"],
        "grid table": ["--grid", grid],
    }


def _run(runner, command: list[str]):
    result = runner.invoke(app, command)
    errors = [line for line in result.stderr.splitlines() if line.startswith("gradcli: error")]
    return result.exit_code, errors, result


REFUSED = [
    # a fixed step that vanishes next to the coordinate (x + h == x), first and higher orders
    ("grad", ["x**2"], {"x": 1.0}, ["-m", "symbolic,fd", "--eps", "1e-30"]),
    ("hessian", ["x**2*y"], {"x": 1.0, "y": 1e20}, ["-m", "fd", "--eps", "1e-6"]),
    ("derivative", ["x**2"], {"x": 1.0}, ["-m", "symbolic,fd", "--eps", "1e-30"]),
    ("derivative", ["x**4"], {"x": 1.0}, ["-m", "fd", "--order", "4", "--eps", "1e-90"]),
    ("grad", ["x**2"], {"x": 1.0}, ["--dtype", "float32", "-m", "fd", "--eps", "1e-9"]),
    # an empty --wrt is not "all variables"
    ("grad", ["x*y"], {"x": 1.0, "y": 2.0}, ["--wrt", ""]),
    ("hessian", ["x*y"], {"x": 1.0, "y": 2.0}, ["--wrt", " "]),
    ("derivative", ["x*y"], {"x": 1.0, "y": 2.0}, ["--wrt", ""]),
    ("grad", ["x*y"], {"x": 1.0, "y": 2.0}, ["--wrt", "x,,y"]),
    ("grad", ["x*y"], {"x": 1.0, "y": 2.0}, ["--wrt", "x,x"]),
    ("derivative", ["x*y"], {"x": 1.0, "y": 2.0}, []),
    ("derivative", ["x*y"], {"x": 1.0, "y": 2.0}, ["--wrt", "x,y"]),
    # methods and steps
    ("grad", ["x**2"], {"x": 1.0}, ["-m", "tape,newton"]),
    ("grad", ["x**2"], {"x": 1.0}, ["-m", " "]),
    ("hessian", ["x**2"], {"x": 1.0}, ["-m", "complex"]),
    ("derivative", ["x**3"], {"x": 1.0}, ["-m", "complex", "--order", "2"]),
    ("grad", ["x**2"], {"x": 1.0}, ["--eps", "-1e-3"]),
    ("derivative", ["x**2"], {"x": 1.0}, ["--order", "0"]),
]


@pytest.mark.parametrize("command, expressions, point, options", REFUSED,
                         ids=[f"{c}-{' '.join(o) or 'none'}" for c, _, _, o in REFUSED])
def test_a_refusal_is_the_same_on_every_path(runner, tmp_path, command, expressions, point, options):
    seen = {}
    for path, words in _paths(tmp_path, point).items():
        code, errors, result = _run(runner, [command, *expressions, *words, *options])
        assert code == 2, (path, result.stdout, result.stderr)
        assert result.stdout == "", (path, result.stdout)  # refused before anything is written
        assert len(errors) == 1, (path, result.stderr)
        seen[path] = errors[0]
    assert len(set(seen.values())) == 1, seen


COMPUTED = [
    ("grad", ["log(x)"], {"x": -1.0}, [], 1),  # undefined at the point
    ("grad", ["sqrt(x)"], {"x": 0.0}, [], 1),  # a domain edge where the derivative is infinite
    ("derivative", ["abs(x - 1)"], {"x": 1.0}, [], 0),  # a kink: warned, computed
    ("grad", ["sqrt(x)*y"], {"x": 1e-20, "y": 2.0}, ["-m", "symbolic,fd"], 0),  # fd's steps shrink
    ("hessian", ["x**2.5 + y**2"], {"x": 0.0, "y": 1.0}, ["-m", "symbolic,fd"], 0),  # one-sided at an edge
    ("grad", ["exp(x)*y"], {"x": 1.5, "y": -2.0}, ["--dtype", "float32"], 0),
    ("hessian", ["x**3*y"], {"x": 1.0, "y": 2.0}, ["-m", "tape,fd"], 0),
    ("derivative", ["sin(x)"], {"x": 1.0}, ["--order", "3", "-m", "symbolic,fd"], 0),
    ("grad", ["x**2"], {"x": 1.0}, ["-m", "fd", "--eps", "1e-3"], 0),
]


@pytest.mark.parametrize("command, expressions, point, options, code", COMPUTED,
                         ids=[f"{c}-{e[0]}-{' '.join(o)}" for c, e, _, o, _ in COMPUTED])
def test_a_computed_request_has_the_same_exit_code_on_every_path(runner, tmp_path, command, expressions, point,
                                                                  options, code):
    for path, words in _paths(tmp_path, point).items():
        got, errors, result = _run(runner, [command, *expressions, *words, *options])
        assert (got, errors) == (code, []), (path, result.stderr)


def test_a_vanishing_step_at_a_later_point_is_refused_before_any_output(runner, tmp_path):
    code, errors, result = _run(runner, ["grad", "x**2", "--grid", "x=1:1e20:3", "-m", "fd", "--eps", "1e-3"])
    assert code == 2 and errors == [
        "gradcli: error: --eps 0.001 vanishes next to x=5e+19 in float64 (x + h == x): use a larger step"]
    assert result.stdout == ""


_KEYWORDS = {"-m": ("method", str), "--eps": ("eps", float), "--wrt": ("wrt", str), "--dtype": ("dtype", str),
             "--order": ("order", int)}


@pytest.mark.parametrize("command, expressions, point, options", REFUSED,
                         ids=[f"{c}-{' '.join(o) or 'none'}" for c, _, _, o in REFUSED])
def test_the_python_api_refuses_with_the_same_message(runner, tmp_path, command, expressions, point, options):
    """The API builds the same Request as the command line: the same refusal, word for word."""
    import gradcli

    _, errors, _ = _run(runner, [command, *expressions, *_paths(tmp_path, point)["at json"], *options])
    kwargs = {}
    for flag, value in zip(options[::2], options[1::2]):
        name, kind = _KEYWORDS[flag]
        kwargs[name] = kind(value)
    with pytest.raises(gradcli.UsageError) as refused:
        getattr(gradcli, command)(*expressions, at=point, **kwargs)
    assert f"gradcli: error: {refused.value.one_line()}" == errors[0]
