"""``-f latex`` fits a slide and a page: each command's output, compiled by pdflatex inside a 16:9 beamer frame
and on an A4 article page, has no overfull line (the log's "Overfull \\hbox"), and no table is scaled below
0.7 of its size. Skipped where pdflatex (or beamer) is not installed: the suite runs on machines without TeX."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from test_slides import run

PAGES = {  # name: (the document up to the output, after it, the class it needs)
    "beamer 16:9": (r"\documentclass[aspectratio=169]{beamer}\usepackage{graphicx}\begin{document}"
                    r"\begin{frame}{gradcli}", r"\end{frame}\end{document}", "beamer.cls"),
    "A4": (r"\documentclass[a4paper]{article}\usepackage{graphicx}\begin{document}", r"\end{document}",
           "article.cls"),
}

COMMANDS = {
    "grad": ["grad", "(x1+5)*x2**2", "x1*sin(x2)", "--at", "x1=2,x2=3", "-m", "symbolic,tape,fd,complex"],
    "hessian": ["hessian", "x**2*y*z - sin(y)", "--at", "x=0.5,y=2,z=1", "-m", "symbolic,tape,fd", "--formulas"],
    "derivative": ["derivative", "sin(x)*exp(x)", "--at", "x=1", "-n", "3", "-m", "symbolic,tape,fd", "--formulas"],
    "jvp": ["jvp", "(x1+5)*x2**2", "x1*x2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2",
            "-m", "symbolic,tape,fd,complex"],
    "hvp": ["hvp", "x**2*y + sin(x*y)", "--at", "x=1,y=2", "--along", "x=1,y=-1"],
    "trace": ["trace", "(x1+5)*x2**2", "--at", "x1=2,x2=3", "--along", "x1=1,x2=2"],
    "steps": ["steps", "sin(x)", "--at", "x=1"],
}


def installed(cls: str) -> bool:
    if shutil.which("pdflatex") is None or shutil.which("kpsewhich") is None:
        return False
    found = subprocess.run(["kpsewhich", cls], capture_output=True, text=True)
    return found.returncode == 0 and bool(found.stdout.strip())


def compile_log(tmp_path, page: str, body: str) -> str:
    """pdflatex's log of ``body`` on ``page``, each fitted box's width and the line's typed out into it."""
    begin, end, _ = PAGES[page]
    measured = body.replace(r"\ifdim\wd\gradclibox>",
                            r"\typeout{BOX \the\wd\gradclibox\space\the\linewidth}\ifdim\wd\gradclibox>")
    (tmp_path / "t.tex").write_text(f"{begin}\n{measured}\n{end}\n")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    return log


@pytest.mark.parametrize("page", list(PAGES))
@pytest.mark.parametrize("name", list(COMMANDS))
def test_latex_fits_the_frame_and_the_page(tmp_path, name, page):
    if not installed(PAGES[page][2]):
        pytest.skip(f"pdflatex with {PAGES[page][2]} is not installed")
    result = run(*COMMANDS[name], "-f", "latex")
    assert result.exit_code == 0, result.stderr
    log = compile_log(tmp_path, page, result.stdout)
    overfull = re.findall(r"Overfull \\hbox \(([\d.]+pt) too wide\)", log)
    assert overfull == [], (name, page, overfull)
    boxes = [(float(wide), float(line)) for wide, line in re.findall(r"BOX ([\d.]+)pt ([\d.]+)pt", log)]
    assert len(boxes) == result.stdout.count(r"\begin{tabular}")  # every tabular measured
    assert all(line / wide >= 0.7 for wide, line in boxes if wide > line), (name, page, boxes)  # readable


def test_an_unfitted_table_would_overflow(tmp_path):
    """The check is real: the same steps sweep, its box and split taken out, is wider than the frame."""
    if not installed("beamer.cls"):
        pytest.skip("pdflatex with beamer.cls is not installed")
    text = run("steps", "sin(x)", "--at", "x=1", "-f", "latex").stdout
    first = re.search(r"\\begin\{tabular\}.*?\\end\{tabular\}", text, re.DOTALL).group(0)
    wide = first.replace("rrrrr}", "rrrrr" + "r" * 10 + "}").replace(r" \\", " & 1.23e-45" * 10 + r" \\")
    log = compile_log(tmp_path, "beamer 16:9", r"\noindent" + wide)
    assert "Overfull \\hbox" in log
