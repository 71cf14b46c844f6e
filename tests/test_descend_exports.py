"""descend's slide-ready output: --svg/--html record what it shows (the race, the trajectories, the terminal
plot, the notes), -f latex writes its tables with every number as the table writes it, --plot-file draws f by step
(one start) or the starts' basins (many, one or two variables). In process (CliRunner); the JSON document
is the reference."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET

import pytest
from test_slides import latex_forms, numbers, run

from gradcli.launcher import run_command

SVG = "{http://www.w3.org/2000/svg}"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ONE = ["descend", "x**2+3*y**2", "--from", "x=1,y=2", "-o", "sgd:0.1,adam:0.05", "--steps", "200", "--every", "50"]
# two minima and a saddle between them
MANY = ["descend", "(x**2-1)**2+y**2", "--grid", "x=-2:2:5,y=-1:1:3", "-o", "sgd,adam", "--steps", "300"]
LINE = ["descend", "(x**2-1)**2", "--grid", "x=-2:2:9", "-o", "sgd", "--stationary-timeout", "0"]
# settings the table leaves out (momentum: these optimizers have none), and timings, which differ per run
NOT_SHOWN = {"momentum", "seconds", "setup_seconds"}


def appears_whole(text: str, piece: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(piece) + r"(?![\w.])", text) is not None


def shown_forms(x) -> set[str]:
    """How descend's table writes a number: every digit, |grad f| (.3g), a distance (.2g), settings (:g)."""
    if isinstance(x, int):
        return {str(x)}
    return {repr(x), f"{x:.3g}", f"{x:.2g}", f"{x:g}"}


def missing(text: str, doc: dict, forms, skip=NOT_SHOWN) -> list:
    return [(k, x) for k, x in numbers(doc, skip=skip) if not any(appears_whole(text, f) for f in forms(x))]


def svg_text(svg: str) -> str:
    lines: dict[str, str] = {}
    for y, text in re.findall(r'<text[^>]*\by="([\d.]+)"[^>]*>(.*?)</text>', svg):
        lines[y] = lines.get(y, "") + html.unescape(text).replace("\xa0", " ")
    return "\n".join(lines.values())


def same_lines(shown: str, text: str) -> list[str]:
    """The lines of ``shown`` that ``text`` lacks, spaces aside (an SVG positions its text and leaves out runs
    of spaces)."""
    drawn = {re.sub(r"\s", "", line) for line in text.splitlines()}
    return [line for line in shown.splitlines() if line.strip() and re.sub(r"\s", "", line) not in drawn]


def html_text(page: str) -> str:
    body = page[page.index("<pre"):page.index("</pre>")]
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def groups(root, prefix: str) -> dict:
    return {g.get("id"): g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith(prefix)}


def markers(group) -> int:
    return sum(1 for _ in group.iter(f"{SVG}use"))


@pytest.fixture(scope="module")
def one(tmp_path_factory):
    """One start: its JSON (with the f-by-step picture as SVG), its table exported (with --plot and a PNG
    picture), and its LaTeX."""
    folder = tmp_path_factory.mktemp("one")
    as_json = run(*ONE, "-f", "json", "--plot-file", str(folder / "f.svg"))
    assert as_json.exit_code == 0, as_json.stderr
    shown = run(*ONE, "--plot", "--svg", str(folder / "t.svg"), "--html", str(folder / "t.html"),
                "--plot-file", str(folder / "f.png"))
    latex = run(*ONE, "-f", "latex")
    return {"doc": json.loads(as_json.stdout), "shown": shown, "latex": latex, "folder": folder}


def test_the_svg_and_html_have_every_number_of_the_json(one):
    shown, folder = one["shown"], one["folder"]
    assert shown.exit_code == 0, shown.stderr
    for text in (svg_text((folder / "t.svg").read_text()), html_text((folder / "t.html").read_text())):
        assert not missing(text, one["doc"], shown_forms)
        assert not same_lines(shown.stdout, text)  # the table, the trajectories and the plot, whole
        assert "gradcli: warning: adam: stopped at --steps 200" in " ".join(text.split())


def test_latex_has_every_number_as_the_table_writes_it(one):
    result, doc = one["latex"], one["doc"]
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    # the timings differ from one run to the next: only their being there is checked
    assert not missing(text, doc, latex_forms, skip={"seconds", "setup_seconds"})  # as the table writes them
    assert "setup" in text and text.count(" s\\par") >= 1
    tabulars = re.findall(r"\\begin\{tabular\}\{([lr]+)\}\n(.*?)\\end\{tabular\}", text, re.DOTALL)
    # the race (in pieces, each with the optimizer: more columns than a slide's line holds readably), SymPy's
    # stationary points, a trajectory per optimizer
    race = [body for _, body in tabulars if body.split("\n")[1].startswith("optimizer &")]
    assert len(race) >= 2 and len(tabulars) == text.count(r"\begin{tabular}") == len(race) + 3
    for align, body in tabulars:
        rows = [row for row in body.splitlines() if row.endswith(r" \\")]
        assert rows and all(len(re.findall(r"(?<!\\)&", row)) == len(align) - 1 for row in rows), (align, rows)
    assert "$x^{2} + 3 y^{2}$" in text and r"max\_steps" in text and r"\textbf{warning:}" in text


def test_the_picture_draws_f_by_step_for_each_run(one):
    doc, folder = one["doc"], one["folder"]
    root = ET.parse(folder / "f.svg").getroot()
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert "sgd lr=0.1 (converged)" in texts and "adam lr=0.05 (max_steps)" in texts
    assert "f (log scale)" in texts and "step" in texts  # f spans 20 decades
    drawn = groups(root, "run-")
    for name, rows in doc["trajectory"].items():  # a marker per kept step
        assert markers(drawn[f"run-{name}"]) == len(rows)
    assert (folder / "f.png").read_bytes()[:8] == PNG_MAGIC


def test_a_diverged_run_still_draws_its_picture_then_exits_1(tmp_path):
    path = tmp_path / "diverged.png"
    result = run("descend", "x**4", "--from", "x=10", "-o", "sgd", "--stationary-timeout", "0", "--plot-file",
                 str(path))
    assert result.exit_code == 1 and path.read_bytes()[:8] == PNG_MAGIC


# ---------------------------------------------------------------------------------------------
# many starts
# ---------------------------------------------------------------------------------------------
def test_many_starts_export_the_basins_and_plot_and_picture_them(tmp_path):
    shown = run(*MANY, "--plot", "--svg", str(tmp_path / "t.svg"), "--html", str(tmp_path / "t.html"),
                "--plot-file", str(tmp_path / "b.svg"))
    assert shown.exit_code == 0, shown.stderr
    for text in (svg_text((tmp_path / "t.svg").read_text()), html_text((tmp_path / "t.html").read_text())):
        assert not same_lines(shown.stdout, text)
        assert "gradcli: summary: 15 starts done" in text
    root = ET.parse(tmp_path / "b.svg").getroot()
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    for name in ("sgd", "adam"):
        assert any(t.startswith(f"{name}: the starts, coloured by where they ended") for t in texts)
        drawn = groups(root, f"{name}-")
        assert sum(markers(g) for gid, g in drawn.items() if "-mark-" not in gid) == 15  # every start
    assert any(t.startswith("minimum at (1, 0): ") for t in texts)
    assert any(t.startswith("A: ") for t in texts)  # the places they ended, lettered


def test_one_variable_draws_each_start_against_its_end(tmp_path):
    path = tmp_path / "line.svg"
    result = run(*LINE, "-f", "json", "--plot-file", str(path))
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    root = ET.parse(path).getroot()
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert "x (start)" in texts and "x (end)" in texts
    basins = doc["basins"]["sgd"]["basins"]
    assert len(basins) == 3  # -1, 0 (the maximum, from x=0) and 1
    drawn = groups(root, "sgd-basin-")
    assert sorted(markers(g) for g in drawn.values()) == sorted(b["starts"] for b in basins)
    png = tmp_path / "line.png"
    assert run(*LINE, "--plot-file", str(png)).exit_code == 0 and png.read_bytes()[:8] == PNG_MAGIC


# ---------------------------------------------------------------------------------------------
# refusals: one line, exit 2, nothing computed or written
# ---------------------------------------------------------------------------------------------
def one_line_error(argv: list[str], capsys) -> str:
    capsys.readouterr()
    code = run_command(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    return err


@pytest.mark.parametrize("argv, words", [
    (["descend", "x**2", "--grid", "x=0:1:3", "-f", "latex"], "give --from alone"),
    (["descend", "x**2+y**2+z**2", "--grid", "x=0:1:2", "--plot-file", "{tmp}/b.png"], "one or two variables"),
    (["descend", "x**2", "--from", "x=1", "--plot-file", "{tmp}/p.svg", "--svg", "{tmp}/p.svg"], "same file"),
    (["descend", "x**2", "--from", "x=1", "--plot-file", "{tmp}/p.jpg"], ".png or .svg"),
    (["descend", "x**2", "--from", "x=1", "-f", "json", "--html", "{tmp}/t.html"], "drop -f json"),
    (["descend", "x**2", "--from", "x=1", "-f", "latex", "--svg", "{tmp}/t.svg"], "drop -f latex"),
])
def test_refusals(argv, words, tmp_path, capsys):
    err = one_line_error([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert words in err
    assert not list(tmp_path.iterdir())
