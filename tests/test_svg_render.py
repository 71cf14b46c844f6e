"""The --svg export renders outside a browser: rasterised by rsvg-convert (and cairosvg, where installed), the
image is the size its viewBox says, and each line of the terminal's text is drawn in its own band, from its
first character's cell to its last one's (rich's own SVG, whose spaces and widths only a browser honours,
drew right-aligned numbers cells to the left and merged words). Skipped where neither renderer is installed."""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import pytest
from test_slides import run

from gradcli.render.common import SVG_CELL_WIDTH, SVG_LEFT, SVG_LINE_HEIGHT, SVG_TOP

Image = pytest.importorskip("PIL.Image")

COMMANDS = {
    "grad": ["grad", "(x1+5)*x2**2", "x1*sin(x2)", "--at", "x1=2,x2=3", "-m", "symbolic,fd,complex"],
    "hessian": ["hessian", "x**2*y - sin(y)", "--at", "x=0.5,y=2", "-m", "symbolic,tape,fd"],
    "warning": ["derivative", "abs(x-1)", "--at", "x=1", "-m", "symbolic,fd"],
}
INK = 110  # brighter than the background (#292929) and the frame's stroke: text


def rsvg(path) -> bytes:
    return subprocess.run(["rsvg-convert", str(path)], capture_output=True, check=True, timeout=60).stdout


def cairo(path) -> bytes:
    import cairosvg

    return cairosvg.svg2png(url=str(path))


def renderers():
    found = []
    if shutil.which("rsvg-convert"):
        found.append(pytest.param(rsvg, id="rsvg-convert"))
    try:
        import cairosvg  # noqa: F401

        found.append(pytest.param(cairo, id="cairosvg"))
    except (ImportError, OSError):  # OSError: cairosvg without the cairo library
        pass
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no rsvg-convert or cairosvg installed"))]


def ink_columns(image, row: int) -> list[int]:
    """The x of each pixel of text in the middle half of line ``row``'s band."""
    top = SVG_TOP + row * SVG_LINE_HEIGHT
    gray = image.convert("L")
    xs = []
    for y in range(int(top + SVG_LINE_HEIGHT * 0.25), int(top + SVG_LINE_HEIGHT * 0.75)):
        xs += [x for x in range(3, image.width - 3) if gray.getpixel((x, y)) > INK]
    return xs


@pytest.mark.parametrize("render", renderers())
@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_svg_renders_each_line_in_its_cells(tmp_path, render, name):
    svg = tmp_path / "t.svg"
    result = run(*COMMANDS[name], "--svg", str(svg), columns=100)
    assert result.exit_code == 0, result.stderr
    image = Image.open(io.BytesIO(render(svg)))
    width, height = map(float, re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg.read_text()).groups())
    assert abs(image.width - width) <= 1 and abs(image.height - height) <= 1
    shown = result.stdout.splitlines()  # what the terminal showed: the export's first lines
    assert shown
    for row, line in enumerate(shown):
        xs = ink_columns(image, row)
        if not line.strip():
            assert not xs, (row, line)
            continue
        first = len(line) - len(line.lstrip())
        last = len(line.rstrip())
        assert xs, (row, line)
        left, right = SVG_LEFT + first * SVG_CELL_WIDTH, SVG_LEFT + last * SVG_CELL_WIDTH
        # its ink starts in its first character's cell and ends in its last one's
        assert left - 1 <= min(xs) <= left + SVG_CELL_WIDTH, (row, line, min(xs), left)
        assert right - SVG_CELL_WIDTH <= max(xs) <= right + 1, (row, line, max(xs), right)
