"""``-f latex`` of check, eval and steps: every number of the ``-f json`` document as the table writes it (values
with every digit, errors and steps in three), the same exit code, well-formed tabulars, LaTeX's specials in
names escaped."""

from __future__ import annotations

import json
import re

import pytest
from test_slides import appears_whole, latex_forms, numbers, one_line_error, run

RULE = "soft_plus(u) = log(1+exp(u)); d/du = 1/(1+exp(-u))"
CASES = {
    "check proved": ["check", "x**2*y", "--expect", "x=2*x*y", "--expect", "y=x**2"],
    "check sampled": ["check", "abs(x)*x", "-e", "x=2*abs(x)", "--box", "0.5:2", "--samples", "5"],
    "check counterexample": ["check", "x**2*y", "--expect", "x=2*x*y+0.001", "--at", "x=1.5,y=-2.25"],
    "check order 2": ["check", "sin(x)", "-e", "x=-sin(x)", "-n", "2", "--at", "x=1"],
    "check grid": ["check", "x**3", "-e", "x=3*x**2", "--grid", "x=-1:1:5"],
    "eval": ["eval", "log(x)", "--at", "x=2"],
    "eval undefined": ["eval", "log(x)", "--at", "x=-2"],
    "eval float32": ["eval", "exp(x)", "--at", "x=1", "--dtype", "float32"],
    "eval constant": ["eval", "2*pi"],
    "steps": ["steps", "sin(x)", "--at", "x=1", "--formulas", "central,complex"],
    "steps both dtypes": ["steps", "exp(x)*y", "--at", "x=1,y=2", "--wrt", "x", "-n", "2", "--dtype",
                          "float32,float64", "--formulas", "central,stencil4"],
}


def without_arrays(text: str) -> str:
    """A formula's case distinctions (arrays, nested) taken out: their & are no tabular's."""
    inner = re.compile(r"\\begin\{array\}(?:(?!\\begin\{array\}).)*?\\end\{array\}", re.DOTALL)
    while inner.search(text):
        text = inner.sub("ARRAY", text)
    return text


def well_formed(text: str) -> None:
    """Tabulars whose every row has its number of cells, balanced groups and math, plain LaTeX (no amsmath)."""
    assert r"\operatorname" not in text and r"\text{" not in text and "cases}" not in text
    text = without_arrays(text)
    tabulars = re.findall(r"\\begin\{tabular\}\{([lr]+)\}\n(.*?)\\end\{tabular\}", text, re.DOTALL)
    assert len(tabulars) == text.count(r"\begin{tabular}") == text.count(r"\end{tabular}") >= 1
    for align, body in tabulars:  # every row has its tabular's number of cells
        rows = [row for row in body.splitlines() if row.endswith(r" \\")]
        assert rows and all(len(re.findall(r"(?<!\\)&", row)) == len(align) - 1 for row in rows), (align, rows)
    assert text.count("{") - text.count(r"\{") == text.count("}") - text.count(r"\}")  # balanced groups
    assert (text.count("$") - text.count(r"\$")) % 2 == 0  # math mode closed
    # past the comment line no stray specials: a % only ends a line (its newline no space in the output)
    assert not re.search(r"(?<!\\)#|(?<!\\)%(?!\n)", text.split("\n", 1)[1])


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    args = CASES[request.param]
    return request.param, json.loads(run(*args, "-f", "json").stdout), run(*args, "-f", "json"), \
        run(*args, "-f", "latex")


def test_latex_has_every_number_as_the_table_writes_it(case):
    name, doc, as_json, latex = case
    assert latex.exit_code == as_json.exit_code, (name, latex.stderr)
    text = latex.stdout
    assert text.startswith(f"% gradcli {doc['command']} -f latex")
    assert [(k, x) for k, x in numbers(doc) if not any(appears_whole(text, f) for f in latex_forms(x))] == [], name
    well_formed(text)
    for warning in doc["warnings"]:
        assert r"\textbf{warning:}" in text, name


def test_the_counterexample_is_a_tabular_of_its_own():
    text = run(*CASES["check counterexample"], "-f", "latex").stdout
    block = text.split("counterexample:", 1)[1]
    assert r"$x$ = 1.5, $y$ = -2.25" in block.split("\n")[0]
    for cell in ("-6.749", "-6.75", "0.001000000000000334", "7.75e-09"):
        assert re.search(rf"& {re.escape(cell)} \\\\$", block, re.MULTILINE), cell
    assert r"$2 x y$" in block  # SymPy's latex of the exact derivative


def test_the_steps_sweep_has_a_row_per_step():
    doc = json.loads(run(*CASES["steps both dtypes"], "-f", "json").stdout)
    text = run(*CASES["steps both dtypes"], "-f", "latex").stdout
    assert r"$d^{2}/dx^{2}$" in text
    for sweep in doc["sweeps"]:
        for i, h in enumerate(sweep["steps"]):
            errors = [f"{f['errors'][i]:.2e}" if f["errors"][i] else "--" if f["errors"][i] is None else "0"
                      for f in sweep["formulas"]]
            assert " & ".join([f"{h:.3g}", *errors]) + r" \\" in text, (sweep["dtype"], h)


def test_the_plot_of_steps_goes_to_stderr_beside_latex():
    args = [*CASES["steps"], "--plot"]
    result = run(*args, "-f", "latex")
    assert result.exit_code == 0
    assert result.stdout == run(*CASES["steps"], "-f", "latex").stdout
    assert "log-log" in result.stderr


@pytest.mark.parametrize("args", [
    ["check", "x__y*a_b_c + _x", "-e", "x__y=a_b_c", "-e", "a_b_c=x__y", "-e", "_x=1", "--at", "x__y=1,a_b_c=2,_x=3"],
    ["eval", "x__y*a_b_c + _x", "--at", "x__y=1,a_b_c=2,_x=3"],
    ["steps", "x__y*a_b_c + _x", "--at", "x__y=1,a_b_c=2,_x=3", "--wrt", "x__y", "--formulas", "central"],
])
def test_latex_escapes_underscores_sympy_would_read_as_indices(args):
    text = run(*args, "-f", "latex").stdout
    for name in ("x__y", "a_b_c", "_x"):  # SymPy alone writes x^{y}, a_{b c} and a bare _x
        assert rf"\mathit{{{name.replace('_', chr(92) + '_')}}}" in text, name
    assert "x^{y}" not in text and "a_{b c}" not in text
    assert not re.search(r"(?<![\\])_(?!\{)", text)  # every underscore escaped or a subscript's
    well_formed(text)


def test_a_rule_function_name_is_escaped_whole():
    text = run("check", "soft_plus(x)*x", "--rule", RULE, "-e", "x=soft_plus(x)+x/(1+exp(-x))", "-f", "latex").stdout
    assert r"\mathrm{soft\_plus}" in text and "soft}_{plus" not in text
    well_formed(text)


def test_an_export_of_latex_is_refused(tmp_path, capsys):
    for argv in (CASES["check counterexample"], CASES["eval"], CASES["steps"]):
        err = one_line_error([*argv, "-f", "latex", "--svg", str(tmp_path / "t.svg")], capsys)
        assert "drop -f latex" in err and not (tmp_path / "t.svg").exists()


def test_a_command_without_a_latex_view_still_refuses_it():
    from gradcli.commands.common import OutputFormat, refuse_latex
    from gradcli.errors import UsageError

    def unmarked():
        pass

    with pytest.raises(UsageError, match="-f latex is not available for unmarked yet"):
        refuse_latex(unmarked, {"output": OutputFormat.latex})
