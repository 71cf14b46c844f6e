"""The Python examples of the docs (```pycon blocks) run as doctests: the API page cannot drift either."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"^```pycon\n(.*?)^```", re.M | re.S)


def pycon_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "```pycon" in p.read_text())


@pytest.mark.parametrize("page", pycon_pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_python_examples_in_the_docs_run(page):
    blocks = "\n".join(BLOCK.findall(page.read_text()))  # one doctest per page: blocks build on each other
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(parser.get_doctest(blocks, {}, page.name, str(page), 0))
    assert runner.failures == 0, f"{runner.failures} example(s) in {page} differ from what gradcli returns"
