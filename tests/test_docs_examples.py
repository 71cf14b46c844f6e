"""Every ```console block of README.md and docs/**/*.md is run, and its output compared with the real one.

The conventions (fully described in tests/docs_tools.py's docstring):

* ``$ gradcli ARGS`` lines run in process through the console script's path; stdout is compared, stdout
  and stderr together when the line ends with ``2>&1``; ``; echo $?`` appends the exit code, and without
  it the command must exit 0; ``< FILE`` is standard input; ``$ cat FILE`` plus its lines defines FILE.
* Each block runs at COLUMNS=100, or at N where the line before the fence is ``<!-- width: N -->``.
* An output line ending in ``  # varies`` (a run's seconds) matches any one line; nothing else is skipped.

When gradcli's output changes on purpose, regenerate the blocks from the real commands:
``UPDATE_DOCS=1 pytest tests/test_docs_examples.py`` (or ``python -m tests.docs_tools --write``).
"""

from __future__ import annotations

import os

import pytest

import docs_tools

BLOCKS = [block for path in docs_tools.doc_files() for block in docs_tools.parse_blocks(path)]
UPDATE = os.environ.get("UPDATE_DOCS") == "1"


def test_there_are_examples_everywhere_they_are_promised():
    files = {block.path.relative_to(docs_tools.ROOT).as_posix() for block in BLOCKS}
    pages = [f"docs/commands/{c}.md" for c in docs_tools.COMMANDS if c != "daemon"]  # docs/daemon.md: prose
    for page in ["README.md", *pages, "docs/formats.md", "docs/numerics.md"]:
        assert page in files, f"{page} has no ```console example"
    commands = sum(1 for b in BLOCKS for c in b.commands if not c.text.startswith("cat "))
    assert 25 <= commands <= 160, f"{commands} example commands: keep the doc tests quick (about 30-150)"


def test_digits_below_a_stated_error_may_differ_and_nothing_else():
    row = "│     3 │  -5999999999999.979 │  -5999999999459.758 │ 5.40e+02 │    ± 8.79e+03 │    9.22e-06 (11) │"
    same = docs_tools.matches
    assert same([row], [row.replace("459.758", "459.759")])  # another CPU's SIMD path, well within ± 8.79e+03
    assert same([row], [row.replace("459.758", "459.75 ")])  # a digit fewer: the column's padding follows
    assert same([row], [row.replace("9459.758", "9359.758")])  # 100 off: within the estimate, 8.79e+03
    assert not same([row], [row.replace("9459.758", "0459.758")])  # 9,000 off is not
    assert not same([row], [row.replace("(11)", "(13)")])  # a count is exact: no error is stated for it
    assert not same([row], [row.replace("│     3", "│     4")])
    assert not same([row], [row.replace("fd", "tape").replace("± 8.79e+03", "8.79e+03")])
    exact = '"symbolic": 2.718281828459045,'
    assert same([exact], [exact.replace("045", "046")])  # the last ulp: a libm's rounding
    assert not same([exact], [exact.replace("045", "145")])


@pytest.mark.skipif(not UPDATE, reason="UPDATE_DOCS=1 rewrites the examples' outputs")
def test_update_the_examples():
    for path in docs_tools.doc_files():
        if path != docs_tools.REFERENCE:
            docs_tools.update_file(path)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_example_output_is_real(block):
    if UPDATE:
        pytest.skip("updated by test_update_the_examples")
    for command, actual, stderr in docs_tools.run_block(block):
        if not docs_tools.matches(command.expected, actual):
            pytest.fail(
                f"{block.path.relative_to(docs_tools.ROOT)}:{command.line + 1}: the output of\n"
                f"  $ {command.text}\n"
                f"differs from the example (run at COLUMNS={block.width}):\n"
                f"{docs_tools.diff(command.expected, actual)}\n"
                + (f"(its stderr, not part of the example:\n{stderr})\n" if stderr else "")
                + "If gradcli's output changed on purpose, regenerate the examples from the real commands:\n"
                f"  {docs_tools.REGENERATE}\n"
                "and review the diff (prose that quotes these numbers may need the same change).",
                pytrace=False)


# ---------------------------------------------------------------------------------------------
# The site: mkdocs.yml's nav and every relative link (what `mkdocs build --strict` checks)
# ---------------------------------------------------------------------------------------------
def test_mkdocs_nav_lists_every_page_and_only_existing_ones():
    nav = docs_tools.nav_pages()
    docs = docs_tools.ROOT / "docs"
    assert nav, "mkdocs.yml has no nav"
    missing = [p for p in nav if not (docs / p).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist: {missing}"
    unlisted = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md")
                      if p.relative_to(docs).as_posix() not in nav)
    assert not unlisted, f"pages missing from mkdocs.yml's nav: {unlisted}"


def test_every_relative_link_and_anchor_resolves():
    broken = docs_tools.broken_links([*docs_tools.doc_files(), docs_tools.ROOT / "CHANGELOG.md"])
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_mkdocs_build_strict_when_mkdocs_is_installed(tmp_path):
    """The real build, where mkdocs is installed (it is not a test dependency; the two tests above stand in)."""
    import shutil
    import subprocess

    mkdocs = shutil.which("mkdocs") or str(docs_tools.ROOT / ".venv" / "bin" / "mkdocs")
    if not os.path.exists(mkdocs):
        pytest.skip("mkdocs is not installed (pip install mkdocs)")
    # Not -q: that hides the warnings; every one (a broken link or anchor) fails the test, strict or not.
    run = subprocess.run([mkdocs, "build", "--strict", "-f", str(docs_tools.ROOT / "mkdocs.yml"),
                          "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=120)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    warnings = [line for line in output.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not warnings, "\n".join(warnings)
