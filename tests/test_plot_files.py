"""steps --plot-file: the plot as a PNG or SVG picture (matplotlib, the optional extra), its points the JSON
document's numbers, its name and the library checked before anything is computed."""

from __future__ import annotations

import builtins
import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from gradcli.cli import app
from gradcli.compute.steps import compute_steps
from gradcli.errors import UsageError
from gradcli.render import plot_file
from gradcli.render.steps import plot_panels, steps_json

SVG = "{http://www.w3.org/2000/svg}"
STUDY = ["steps", "sin(x)", "--at", "x=1", "--formulas", "central,forward,complex", "--dtype", "float32,float64"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def run_line(capsys, *args: str) -> tuple[int, str, str]:
    """A command line as the console script runs it (its usage errors in one line): code, stdout, stderr."""
    from gradcli.launcher import run_command

    capsys.readouterr()
    code = run_command(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """The study's JSON document and its SVG picture, from one in-process run."""
    path = tmp_path_factory.mktemp("pictures") / "steps.svg"
    result = run(*STUDY, "-f", "json", "--plot-file", str(path))
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), ET.parse(path).getroot(), path


def texts(root) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def group(root, gid: str):
    (found,) = [g for g in root.iter(f"{SVG}g") if g.get("id") == gid]
    return found


def marker_positions(root, gid: str) -> list[tuple[float, float]]:
    """Where the series' markers are drawn (the line's own path may be simplified; the markers never are)."""
    return [(float(u.get("x")), float(u.get("y"))) for u in group(root, gid).iter(f"{SVG}use")]


def test_the_svg_names_every_formula_and_marked_step(drawn):
    document, root, _ = drawn
    shown = texts(root)
    for sweep in document["sweeps"]:
        title = [t for t in shown if t.startswith(f"{sweep['dtype']}: |error| of d/dx sin(x) at x = 1.0")]
        assert len(title) == 1 and "(log-log)" in title[0]
        for f in sweep["formulas"]:
            assert f"{f['formula']} (error ~ h^{f['accuracy']})" in shown
        central = next(f for f in sweep["formulas"] if f["formula"] == "central")
        for letter, kind in (("D", "default"), ("B", "best"), ("T", "theory")):
            h = central[kind]["step"]
            assert any(t.startswith(f"{letter}: {kind} step of central: h = {h:.2g}, error ") for t in shown), kind
    float64 = document["sweeps"][1]
    assert any(e == 0 for f in float64["formulas"] for e in f["errors"])  # the complex step's floor
    assert any(t.startswith("an error of exactly 0 is drawn at the bottom") for t in shown)
    assert {"step h", "|error|"} <= set(shown)


def test_the_points_drawn_are_the_documents_numbers(drawn):
    """Each marker sits where log10(h) and log10(error) put it: one affine map per panel, found from two points
    and holding for every other point and for the D, B, T marks."""
    document, root, _ = drawn
    for sweep in document["sweeps"]:
        dtype = sweep["dtype"]
        data, pixels = [], []
        for f in sweep["formulas"]:
            drawn_points = marker_positions(root, f"{dtype}-{f['formula']}")
            finite = [(h, e) for h, e in zip(sweep["steps"], f["errors"]) if e is not None]
            assert len(drawn_points) == len(finite), f["formula"]
            data += finite
            pixels += drawn_points
        nonzero = [(d, p) for d, p in zip(data, pixels) if d[1] > 0]
        (h0, e0), (x0, y0) = nonzero[0]
        (h1, e1), (x1, y1) = max(nonzero, key=lambda t: abs(math.log10(t[0][0] / h0)) + abs(math.log10(t[0][1] / e0)))
        x_scale = (x1 - x0) / math.log10(h1 / h0)
        y_scale = (y1 - y0) / math.log10(e1 / e0)
        assert x_scale > 0 > y_scale  # h grows to the right, the error upwards

        def at(h, e):
            return x0 + x_scale * math.log10(h / h0), y0 + y_scale * math.log10(e / e0)

        for (h, e), (x, y) in nonzero:
            assert (x, y) == pytest.approx(at(h, e), abs=0.01)
        zeros = [p for d, p in zip(data, pixels) if d[1] == 0]
        lowest = max(p[1] for _, p in nonzero)
        assert zeros if dtype == "float64" else not zeros
        assert all(y > lowest and y == pytest.approx(zeros[0][1], abs=1e-6) for _, y in zeros)
        central = next(f for f in sweep["formulas"] if f["formula"] == "central")
        for kind in ("default", "best", "theory"):
            (mark,) = marker_positions(root, f"{dtype}-{kind}")
            assert mark == pytest.approx(at(central[kind]["step"], central[kind]["error"]), abs=0.01), kind


def test_the_panels_are_the_documents_numbers():
    report = compute_steps("sin(x)", at="x=1", dtypes="float64", formula_names="central,complex")
    document = json.loads(steps_json(report))
    (panel,) = plot_panels(report)
    (sweep,) = document["sweeps"]
    assert [s.label for s in panel.series] == ["central (error ~ h^2)", "complex (error ~ h^2)"]
    floor = None
    for series, f in zip(panel.series, sweep["formulas"]):
        assert series.x == sweep["steps"]
        for y, e in zip(series.y, f["errors"]):
            if e == 0:
                floor = floor or y
                assert y == floor
            else:
                assert y == e
    assert 0 < floor < min(e for f in sweep["formulas"] for e in f["errors"] if e)
    assert [(m.letter, m.x, m.y) for m in panel.marks] == [
        (letter, sweep["formulas"][0][kind]["step"], sweep["formulas"][0][kind]["error"])
        for letter, kind in (("D", "default"), ("B", "best"), ("T", "theory"))]


def test_png_and_svg_are_the_same_bytes_every_time(drawn, tmp_path):
    _, _, svg = drawn
    assert b"<dc:date>" not in svg.read_bytes()
    report = compute_steps("sin(x)", at="x=1", formula_names="central,forward")
    for name in ("a.png", "b.png", "a.svg", "b.svg"):
        plot_file.write_plot_file(plot_panels(report), str(tmp_path / name))
    assert (tmp_path / "a.png").read_bytes().startswith(PNG_MAGIC)
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    ET.parse(tmp_path / "a.svg")


def test_the_extension_picks_the_format(tmp_path):
    path = tmp_path / "STEPS.PNG"
    result = run("steps", "exp(x)", "--at", "x=0", "--formulas", "central", "--plot-file", str(path))
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize("name, problem", [
    ("steps.pdf", "'steps.pdf' is not a picture file name: end it in .png or .svg"),
    ("steps", "'steps' is not a picture file name: end it in .png or .svg"),
    ("no-such-folder/steps.png", "no folder"),
])
def test_a_bad_name_is_refused_before_anything_is_computed(tmp_path, capsys, name, problem):
    path = tmp_path / name
    code, out, err = run_line(capsys, *STUDY, "--plot-file", str(path))
    assert code == 2
    assert out == ""  # no table: nothing was computed
    (line,) = err.splitlines()
    assert line.startswith("gradcli: error: Invalid value for '--plot-file'") and problem in line
    assert not path.exists()


def test_the_same_file_as_the_svg_export_is_refused(tmp_path):
    path = str(tmp_path / "steps.svg")
    result = run(*STUDY, "--svg", path, "--plot-file", path)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == ["gradcli: error: --plot-file and --svg name the same file: give each its own"]


def test_without_matplotlib_the_message_names_the_extra(tmp_path, capsys, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    path = tmp_path / "steps.png"
    code, out, err = run_line(capsys, *STUDY, "--plot-file", str(path))
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert 'matplotlib, which is not installed: pip install "gradcli[plot]"' in line
    with pytest.raises(UsageError, match=r'pip install "gradcli\[plot\]"'):
        plot_file.write_plot_file([], str(path))
    assert not path.exists()


def test_help_shows_the_option_within_one_screen():
    result = CliRunner().invoke(app, ["steps", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    lines = result.stdout.splitlines()
    assert result.exit_code == 0 and len(lines) <= 48 and max(map(len, lines)) <= 80
    assert any("--plot-file FILE" in line and "FILE.png or" in line for line in lines)


def test_matplotlib_is_imported_only_for_a_picture():
    """--help and a plain run (its table and terminal plot) never load matplotlib (~0.3 s)."""
    code = ("import sys; from gradcli.launcher import run_command\n"
            "run_command(['steps', '--help'])\n"
            "run_command(['steps', 'exp(x)', '--at', 'x=0', '--formulas', 'central', '--plot'])\n"
            "print('LOADED', 'matplotlib' in sys.modules, file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "(log-log)" in result.stdout and "LOADED False" in result.stderr, result.stderr
