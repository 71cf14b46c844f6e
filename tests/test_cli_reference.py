"""docs/reference.md is every command's ``--help`` as gradcli prints it (COLUMNS=100), never edited by hand.

Regenerate it with ``python -m tests.docs_tools --write`` or ``UPDATE_DOCS=1 pytest tests/test_cli_reference.py``.
"""

from __future__ import annotations

import difflib
import os
import re

import docs_tools


def test_reference_matches_help():
    fresh = docs_tools.render_reference()
    if os.environ.get("UPDATE_DOCS") == "1":
        docs_tools.REFERENCE.write_text(fresh, encoding="utf-8")
    current = docs_tools.REFERENCE.read_text(encoding="utf-8") if docs_tools.REFERENCE.exists() else ""
    if current != fresh:
        delta = "\n".join(difflib.unified_diff(current.split("\n"), fresh.split("\n"), "docs/reference.md",
                                               "gradcli --help", lineterm=""))
        raise AssertionError("docs/reference.md differs from what `gradcli COMMAND --help` prints now:\n"
                             f"{delta}\nRegenerate it: {docs_tools.REGENERATE}")


def test_reference_covers_every_command():
    text = docs_tools.render_reference()
    listed = re.findall(r"^  (\w+)\s{2,}", text.split("## gradcli grad")[0], flags=re.M)
    assert set(docs_tools.COMMANDS) <= set(listed), listed
    for command in docs_tools.COMMANDS:
        assert f"## gradcli {command}\n" in text
        assert f"Usage: gradcli {command}" in text
