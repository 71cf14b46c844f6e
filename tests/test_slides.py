"""Slide-ready output: --svg FILE and --html FILE record what a command shows (its tables on stdout, its
warnings and notes styled apart), -f latex writes its tables as LaTeX tabulars with every number as the
table writes it. Every command runs in process (CliRunner); the JSON document is the reference."""

from __future__ import annotations

import html
import json
import math
import re

import pytest
from typer.testing import CliRunner

from gradcli.cli import app
from gradcli.launcher import run_command
from gradcli.render.latex import MAX_COLUMNS

# JSON fields the tables leave out on purpose (as tests/test_render_widths.py lists them): settings, full
# digits of the steps, timings. -f latex has these too; the SVG and HTML have what the terminal shows.
NOT_SHOWN = {"step", "gradient", "fd_accuracy", "seconds", "fd_gradient_error_estimate", "fd_error_estimate",
             "complex_error_estimate", "order", "complex_step", "outputs", "inputs", "fd_points", "seed"}

# One point of each command with a table (TensorFlow only where the command needs it)
COMMANDS = {
    "grad": ["grad", "(x1+5)*x2**2", "x1*sin(x2)", "--at", "x1=2,x2=3", "-m", "symbolic,fd,complex"],
    "hessian": ["hessian", "x**2*y - sin(y)", "--at", "x=0.5,y=2", "-m", "symbolic,fd", "--formulas"],
    "derivative": ["derivative", "sin(x)*exp(x)", "--at", "x=1", "-n", "3", "-m", "symbolic,fd", "--formulas"],
    "jvp": ["jvp", "(x1+5)*x2**2", "x1*x2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2",
            "-m", "symbolic,fd,complex"],
    "hvp": ["hvp", "x**2*y + sin(x*y)", "--at", "x=1,y=2", "--along", "x=1,y=-1"],
    "trace": ["trace", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2"],
}


def run(*args: str, columns: int = 120):
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def numbers(doc, key: str = "", skip=frozenset()):
    """(key, number) for every number of a JSON document outside ``skip``."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k not in skip:
                yield from numbers(v, k, skip)
    elif isinstance(doc, list):
        for v in doc:
            yield from numbers(v, key, skip)
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield key, doc


def shown_forms(x) -> set[str]:
    """How gradcli's tables write a number: every digit, errors (.2e), steps (.3g), integers."""
    if isinstance(x, int):
        return {str(x)}
    return {repr(x), f"{x:.2e}", f"{x:.3g}", f"{x:.3f}", "0" if x == 0 else repr(x)}


def appears_whole(text: str, piece: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(piece) + r"(?![\w.])", text) is not None


SVG_LEFT, SVG_CELL = 9, 12.2  # the export's margin and its cell's width (gradcli.render.common.terminal_svg)


def svg_text(svg: str) -> str:
    """The lines an SVG export draws: its <text> elements (each a run of text at its own column, spaces not
    drawn) put back at their columns, line by line, unescaped."""
    lines: dict[str, list[str]] = {}
    for x, y, text in re.findall(r'<text x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        cells = lines.setdefault(y, [])
        column = max(0, round((float(x) - SVG_LEFT) / SVG_CELL))
        cells.extend(" " * (column - len(cells)))
        cells[column:column + len(html.unescape(text))] = html.unescape(text)
    return "\n".join("".join(cells) for cells in lines.values())


def html_text(page: str) -> str:
    body = page[page.index("<pre"):page.index("</pre>")]
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def timeless(text: str) -> str:
    """hvp's timings (seconds to 3 places) vary from run to run."""
    return re.sub(r"(?<![\w.])\d+\.\d{3}(?![\w.])", "T", text)


def missing(text: str, doc: dict, forms, skip=NOT_SHOWN) -> list:
    return [(k, x) for k, x in numbers(doc, skip=skip) if not any(appears_whole(text, f) for f in forms(x))]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each command's JSON, its stdout without an export and with one, and its SVG and HTML, at 120 and 30
    columns."""
    out = {}
    for name, args in COMMANDS.items():
        doc = json.loads(run(*args, "-f", "json").stdout)
        for columns in (120, 30):
            folder = tmp_path_factory.mktemp(f"{name}{columns}")
            plain = run(*args, columns=columns)
            shown = run(*args, "--svg", str(folder / "t.svg"), "--html", str(folder / "t.html"), columns=columns)
            out[name, columns] = (doc, plain, shown, (folder / "t.svg").read_text(), (folder / "t.html").read_text())
    return out


@pytest.mark.parametrize("columns", [120, 30])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_svg_and_html_have_every_number_the_table_shows(exported, name, columns):
    doc, plain, shown, svg, page = exported[name, columns]
    assert shown.exit_code == 0, shown.stderr
    assert timeless(shown.stdout) == timeless(plain.stdout)  # stdout is what it is without the export
    for text in (svg_text(svg), html_text(page)):
        assert "…" not in text
        assert not missing(text, doc, shown_forms), (name, columns)
        assert plain.stdout.split("\n")[0].strip() in text


def test_the_svg_frame_holds_its_widest_line(tmp_path):
    """rich clips an SVG's text at its console's width: the export's frame is as wide as its widest line,
    also where a number is wider than the terminal."""
    svg, page = tmp_path / "t.svg", tmp_path / "t.html"
    run("derivative", "sin(x)", "--at", "x=0.3", "-m", "symbolic,fd", "--svg", str(svg), "--html", str(page),
        columns=12)
    lines = html_text(page.read_text()).splitlines()
    widest = max(len(line) for line in lines)
    assert widest > 12 and any(appears_whole(line, repr(math.cos(0.3))) for line in lines)
    frame = re.search(r'<svg[^>]*viewBox="0 0 ([\d.]+)', svg.read_text())
    assert float(frame.group(1)) >= widest * 12.2  # rich's cell: 12.2 px wide at its default font size


def test_warnings_and_notes_are_in_the_export_styled_apart(tmp_path):
    svg = tmp_path / "kink.svg"
    result = run("derivative", "abs(x-1)", "--at", "x=1", "-m", "symbolic,fd", "--svg", str(svg))
    warnings = [line for line in result.stderr.splitlines() if line.startswith("gradcli: warning")]
    assert warnings, result.stderr
    assert "gradcli: warning" not in result.stdout
    text = svg_text(svg.read_text())
    joined = " ".join(text.split())
    for line in warnings:  # whole, wrapped at the export's width
        assert " ".join(line.split()) in joined
    # the warning's text has a style of its own (bold yellow), not the table's
    warning_style = re.search(r'<text x="[\d.]+" y="[\d.]+" ([^>]*)>gradcli: *</text>', svg.read_text())
    table_style = re.search(r'<text x="[\d.]+" y="[\d.]+" ([^>]*)>abs', svg.read_text())
    assert warning_style and (table_style is None or warning_style.group(1) != table_style.group(1))
    assert 'font-weight="bold"' in warning_style.group(1)


def test_many_points_export_the_table_and_its_summary(tmp_path):
    page = tmp_path / "grid.html"
    result = run("grad", "x**2*y", "--grid", "x=-1:1:3,y=0:1:2", "-m", "symbolic,fd", "--html", str(page))
    assert result.exit_code == 0, result.stderr
    text = html_text(page.read_text())
    assert "gradcli: summary:" in text and "gradcli: summary:" not in result.stdout
    for line in result.stdout.splitlines():
        assert line in text


def test_an_undefined_value_still_exports_its_table(tmp_path):
    svg = tmp_path / "log.svg"
    result = run("grad", "log(x)", "--at", "x=-1", "-m", "symbolic,fd", "--svg", str(svg))
    assert result.exit_code == 1
    assert "undefined" in svg_text(svg.read_text())


def test_eval_exports_its_value(tmp_path):
    svg = tmp_path / "value.svg"
    result = run("eval", "sin(x)*1e-20", "--at", "x=1.3", "--svg", str(svg))
    assert result.exit_code == 0
    assert result.stdout.strip() in svg_text(svg.read_text())


def test_show_code_exports_the_program(tmp_path):
    page = tmp_path / "program.html"
    result = run("grad", "x**2", "--at", "x=3", "--show-code", "--html", str(page))
    assert result.exit_code == 0
    assert "GradientTape" in result.stdout and html_text(page.read_text()).strip() == result.stdout.strip()


# ---------------------------------------------------------------------------------------------
# refusals: one line on stderr, exit 2, nothing written
# ---------------------------------------------------------------------------------------------
def one_line_error(argv: list[str], capsys) -> str:
    code = run_command(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    return err


def test_a_folder_or_a_missing_folder_is_refused_before_computing(tmp_path, capsys):
    err = one_line_error(["eval", "x", "--at", "x=1", "--svg", str(tmp_path)], capsys)
    assert "is a folder" in err
    err = one_line_error(["eval", "x", "--at", "x=1", "--html", str(tmp_path / "no" / "t.html")], capsys)
    assert "no folder" in err
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("output", ["json", "jsonl", "csv", "latex"])
def test_an_export_of_a_machine_format_is_refused(tmp_path, capsys, output):
    err = one_line_error(["grad", "x**2", "--at", "x=1", "-m", "fd", "-f", output, "--svg",
                          str(tmp_path / "t.svg")], capsys)
    assert f"drop -f {output}" in err and not (tmp_path / "t.svg").exists()


def test_the_same_file_twice_is_refused(tmp_path, capsys):
    path = str(tmp_path / "t")
    assert "same file" in one_line_error(["eval", "x", "--at", "x=1", "--svg", path, "--html", path], capsys)


@pytest.mark.parametrize("argv", [["derivative", "sin(x)", "--grid", "x=0:1:3"], ["grad", "x**2", "--grid", "x=0:1:3"],
                                  ["jvp", "x**2", "--grid", "x=0:1:3", "--along", "x=1"]])
def test_latex_where_it_is_not_written_is_refused(argv, capsys):
    assert "latex" in one_line_error([*argv, "-f", "latex"], capsys)


# ---------------------------------------------------------------------------------------------
# -f latex
# ---------------------------------------------------------------------------------------------
def latex_forms(x) -> set[str]:
    """How -f latex writes a number, as the table does: a value with every digit, an error or an estimate in
    three significant digits (.2e), a step in three (.3g), a count whole, what the user gave exactly."""
    if isinstance(x, int):
        return {str(x)}
    return {repr(x), json.dumps(x), f"{x:.2e}", f"{x:.3g}", "0" if x == 0 else repr(x)}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_latex_has_every_number_as_the_table_writes_it(exported, name):
    doc = exported[name, 120][0]
    result = run(*COMMANDS[name], "-f", "latex")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    # the trace's node indices are no numbers to show; hvp's timings differ from run to run
    assert not missing(text, doc, latex_forms, skip={"outputs", "seconds"}), name
    assert "graphicx" in text.split("\n")[0]  # the package it needs, said first
    tabulars = re.findall(r"\\begin\{tabular\}\{([lr]+)\}\n(.*?)\\end\{tabular\}", text, re.DOTALL)
    assert len(tabulars) == text.count(r"\begin{tabular}") == text.count(r"\end{tabular}") >= 1
    for align, body in tabulars:  # every row has its tabular's number of cells
        rows = [row for row in body.splitlines() if row.endswith(r" \\")]
        assert rows and all(len(re.findall(r"(?<!\\)&", row)) == len(align) - 1 for row in rows), (align, rows)
        assert len(align) <= MAX_COLUMNS
    assert text.count("{") == text.count("}") + text.count(r"\}") - text.count(r"\{")  # balanced groups
    # each tabular is measured in a box and scaled to the line only where it is wider
    assert text.count(r"\sbox{\gradclibox}") == len(tabulars) == text.count(r"\ifdim\wd\gradclibox>\linewidth")


def test_latex_digits_rounds_the_values_not_the_errors():
    args = ["derivative", "sin(x)", "--at", "x=0.3", "-m", "symbolic,fd"]
    doc = json.loads(run(*args, "-f", "json").stdout)
    every = run(*args, "-f", "latex").stdout
    four = run(*args, "-f", "latex", "--digits", "4")
    assert four.exit_code == 0, four.stderr
    exact, fd = doc["derivatives"]["symbolic"][0], doc["derivatives"]["fd"][0]
    assert appears_whole(every, repr(exact)) and appears_whole(every, repr(fd))
    assert appears_whole(four.stdout, f"{exact:.4g}") and not appears_whole(four.stdout, repr(exact))
    error = f"{doc['fd_error_estimate'][0]:.2e}"  # an error estimate keeps its three digits
    assert appears_whole(every, error) and appears_whole(four.stdout, error)
    assert "$x$ = 0.3" in four.stdout  # the point as given


@pytest.mark.parametrize("argv", [["eval", "x", "--at", "x=1", "--digits", "3"],
                                  ["grad", "x**2", "--at", "x=1", "-f", "json", "--digits", "3"],
                                  ["eval", "x", "--at", "x=1", "-f", "latex", "--digits", "0"],
                                  ["eval", "x", "--at", "x=1", "-f", "latex", "--digits", "18"]])
def test_latex_digits_outside_latex_or_its_range_is_refused(argv, capsys):
    assert "--digits" in one_line_error(argv, capsys)


def test_latex_keeps_the_hessians_structural_zero_mark():
    text = run("hessian", "x**2*y + z", "--at", "x=1,y=2,z=3", "-m", "symbolic,tape", "-f", "latex").stdout
    tape = text.split("tape (TF)", 1)[1].split(r"\end{tabular}", 1)[0]
    exact = text.split("exact (SymPy)", 1)[1].split(r"\end{tabular}", 1)[0]
    assert r"$z$ & 0.0$^{*}$ & 0.0$^{*}$ & 0.0$^{*}$ \\" in tape and "$^{*}$" not in exact
    assert r"$x$ & 4.0 & 2.0 & 0.0$^{*}$ \\" in tape  # d2f/dx2 is no structural zero
    assert r"$^{*}$ structural zero: the tape returned None" in text


def test_a_wide_latex_table_is_split_repeating_its_key_column():
    text = run("steps", "sin(x)", "--at", "x=1", "-f", "latex").stdout  # a step and 8 formulas: 9 columns
    sweep = text.split("float64: $|$error$|$", 1)[1].split("marked steps", 1)[0]
    tabulars = re.findall(r"\\begin\{tabular\}\{(r+)\}\n\\hline\n(.*?) \\\\", sweep)
    headers = [header.split(" & ") for _, header in tabulars]
    assert len(headers) == 2 and all(h[0] == "$h$" and len(h) <= MAX_COLUMNS for h in headers)
    assert [f for h in headers for f in h[1:]] == ["forward", "backward", "central", "stencil4", "stencil6",
                                                   "stencil8", "richardson", "complex"]


def test_latex_formulas_go_through_sympy(exported):
    text = run(*COMMANDS["derivative"], "-f", "latex").stdout
    assert r"e^{x} \sin{\left(x \right)}" in text  # sin(x)*exp(x), SymPy's latex
    text = run(*COMMANDS["grad"], "-f", "latex").stdout
    assert "$x_{1}$" in text and r"\left(x_{1} + 5\right)" in text


def test_latex_escapes_text_and_shows_warnings():
    result = run("derivative", "abs(x-1)", "--at", "x=1", "-m", "symbolic,fd", "-f", "latex")
    assert r"\textbf{warning:}" in result.stdout
    body = result.stdout.split(r"\textbf{warning:}", 1)[1]
    assert not re.search(r"(?<!\\)[_%&#]", body.split("\n")[0])  # LaTeX's specials escaped in the prose


def test_check_exports_its_counterexample(tmp_path):
    args = ["check", "x**2*y", "--expect", "x=2*x*y+0.001", "--at", "x=1.5,y=-2.25"]
    doc = json.loads(run(*args, "-f", "json").stdout)
    svg = tmp_path / "check.svg"
    result = run(*args, "--svg", str(svg))
    assert result.exit_code == 1  # the counterexample is the result: its text is exported
    text = svg_text(svg.read_text())
    c = doc["counterexample"]
    for x in (c["expected"], c["exact"], c["difference"], *c["point"].values()):
        assert appears_whole(text, repr(x)), (x, text)


def test_an_error_writes_no_file_and_the_next_command_records_nothing(tmp_path, capsys):
    """As gradcli shell runs lines: one process, one command after another."""
    import sys

    from gradcli.render import common

    stdout = sys.stdout
    svg = tmp_path / "bad.svg"
    assert run_command(["eval", "x**", "--at", "x=1", "--svg", str(svg)]) == 2
    assert not svg.exists() and sys.stdout is stdout and common.stdout_console().record is False
    page = tmp_path / "first.html"
    assert run_command(["eval", "x**2", "--at", "x=3", "--html", str(page)]) == 0
    assert run_command(["eval", "x**3", "--at", "x=2"]) == 0
    assert sys.stdout is stdout and common.stdout_console().record is False
    assert capsys.readouterr().out == "9.0\n8.0\n"
    text = html_text(page.read_text())
    assert "9.0" in text and "8.0" not in text


def test_steps_exports_its_table_and_plot(tmp_path):
    args = ["steps", "sin(x)", "--at", "x=1", "--formulas", "central,forward", "--plot"]
    plain = run(*args)
    shown = run(*args, "--svg", str(tmp_path / "s.svg"), "--html", str(tmp_path / "s.html"))
    assert shown.exit_code == 0 and shown.stdout == plain.stdout
    for text in (svg_text((tmp_path / "s.svg").read_text()), html_text((tmp_path / "s.html").read_text())):
        for line in plain.stdout.splitlines():  # every line of the table and of the plot, drawn whole
            assert line.rstrip() in text, line
