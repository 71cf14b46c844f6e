"""Tooling for the documentation: run its examples, and render the CLI reference from ``--help``.

The examples
============
Every fenced block whose info string is ``console`` in README.md and docs/**/*.md is an example that
the tests run (tests/test_docs_examples.py). Such a block holds one or more commands, each a line
starting with ``$ ``, followed by the command's exact output:

* ``$ gradcli ARGS...`` runs ``ARGS`` in process through :func:`gradcli.launcher.run_command` (the
  console script's own path), split as a POSIX shell splits it (``$'...'`` strings with ``\\e``,
  ``\\a``, ``\\xNN`` escapes are understood). What is compared is **stdout** only, unless the line
  ends with ``2>&1``: then stdout and stderr are captured together, in the order they were written.
* A trailing ``; echo $?`` adds the exit code as the last output line. Without it the command must
  exit 0 (a failing command is never silently accepted).
* ``< FILE`` (before ``2>&1``/``; echo $?``) gives the command FILE as its standard input.
* ``$ cat FILE`` followed by lines defines FILE: the lines are written to FILE in the block's own
  temporary working directory (so they are, by construction, what ``cat`` prints), for the later
  commands of the same block (``--points FILE``, ``--file FILE``, ``shell < FILE``).

Every block runs at ``COLUMNS=100`` (gradcli's tables follow ``COLUMNS``), unless the line before the
fence is an HTML comment ``<!-- width: N -->``; then at N columns.

Lines that vary by nature (a run's seconds) end with the marker ``  # varies``: such a line matches any
one line of output (the number of lines must still agree), and the marker is kept on that line when the
block is regenerated. Nothing else is skipped.

Update mode: ``UPDATE_DOCS=1 pytest tests/test_docs_examples.py tests/test_cli_reference.py`` (or
``python -m tests.docs_tools --write``) rewrites every block's outputs, and docs/reference.md, from the
real commands.

The reference
=============
docs/reference.md is ``gradcli --help`` and ``gradcli COMMAND --help`` for every command, rendered at
``COLUMNS=100`` by :func:`render_reference`; tests/test_cli_reference.py fails when the file differs.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_WIDTH = 100
VARIES = "  # varies"
REGENERATE = ("UPDATE_DOCS=1 pytest tests/test_docs_examples.py tests/test_cli_reference.py"
              "   (or: python -m tests.docs_tools --write)")
COMMANDS = ("grad", "hessian", "derivative", "descend", "check", "eval", "steps", "shell", "trace", "jvp", "hvp",
            "propagate", "implicit", "daemon")
REFERENCE = ROOT / "docs" / "reference.md"

_WIDTH = re.compile(r"^<!--\s*width:\s*(\d+)\s*-->\s*$")
_FENCE = re.compile(r"^(```+|~~~+)\s*(\S*)")


# ---------------------------------------------------------------------------------------------
# Parsing the blocks
# ---------------------------------------------------------------------------------------------
@dataclass
class Command:
    text: str                      # the line after "$ "
    line: int                      # 0-based index of the "$ " line in the file
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    path: Path
    fence: int                     # 0-based index of the opening fence
    end: int                       # 0-based index of the closing fence
    width: int
    commands: list[Command]

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.fence + 1}"


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def parse_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        if j == len(lines):
            raise ValueError(f"{path}:{i + 1}: unclosed code block")
        if info == "console":
            width = DEFAULT_WIDTH
            if i > 0 and (w := _WIDTH.match(lines[i - 1].strip())):
                width = int(w.group(1))
            commands: list[Command] = []
            for k in range(i + 1, j):
                if lines[k].startswith("$ "):
                    commands.append(Command(lines[k][2:], k))
                elif not commands:
                    raise ValueError(f"{path}:{k + 1}: a console block must start with a '$ ' line")
                else:
                    commands[-1].expected.append(lines[k])
            if not commands:
                raise ValueError(f"{path}:{i + 1}: an empty console block")
            blocks.append(Block(path, i, j, width, commands))
        i = j + 1
    return blocks


# ---------------------------------------------------------------------------------------------
# Running one command
# ---------------------------------------------------------------------------------------------
@dataclass
class Parsed:
    kind: str                      # "gradcli" or "cat"
    argv: list[str]
    stdin: str | None = None
    with_stderr: bool = False
    echo_status: bool = False


def _ansi_c(match: re.Match) -> str:
    body = match.group(1).replace(r"\e", r"\x1b")
    return shlex.quote(body.encode("latin-1", "backslashreplace").decode("unicode_escape"))


def parse_command(text: str) -> Parsed:
    rest = text.strip()
    echo = bool(re.search(r";\s*echo \$\?$", rest))
    rest = re.sub(r";\s*echo \$\?$", "", rest).rstrip()
    with_stderr = rest.endswith("2>&1")
    rest = rest.removesuffix("2>&1").rstrip()
    stdin = None
    if m := re.search(r"\s<\s*(\S+)$", rest):
        stdin, rest = m.group(1), rest[:m.start()].rstrip()
    words = shlex.split(re.sub(r"\$'((?:[^'\\]|\\.)*)'", _ansi_c, rest))
    if not words or words[0] not in ("gradcli", "cat"):
        raise ValueError(f"only 'gradcli ...' and 'cat FILE' lines are run in a console block: {text!r}")
    if words[0] == "cat" and (len(words) != 2 or echo or with_stderr or stdin):
        raise ValueError(f"'cat' takes one file name here: {text!r}")
    return Parsed(words[0], words[1:], stdin, with_stderr, echo)


@contextlib.contextmanager
def _environment(width: int, cwd: str):
    saved_env = os.environ.get("COLUMNS")
    saved_cwd = os.getcwd()
    saved_stdin = sys.stdin
    os.environ["COLUMNS"] = str(width)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        sys.stdin = saved_stdin
        if saved_env is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved_env


def run_gradcli(parsed: Parsed, *, width: int, cwd: str) -> tuple[list[str], str]:
    """Run one ``gradcli`` line: (its output lines as the block shows them, its stderr when not shown)."""
    from gradcli.launcher import run_command

    out = io.StringIO()
    err = out if parsed.with_stderr else io.StringIO()
    with _environment(width, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if parsed.stdin is not None:
            sys.stdin = open(os.path.join(cwd, parsed.stdin), encoding="utf-8")
        try:
            code = run_command(list(parsed.argv))
        finally:
            if parsed.stdin is not None:
                sys.stdin.close()
        sys.stdout.flush()
    text = out.getvalue()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if parsed.echo_status:
        lines.append(str(code))
    elif code != 0:
        raise AssertionError(f"exit code {code}, and the block does not show it (end the line with '; echo $?')\n"
                             f"stderr:\n{'' if parsed.with_stderr else err.getvalue()}")
    return lines, ("" if parsed.with_stderr else err.getvalue())


def run_block(block: Block) -> list[tuple[Command, list[str], str]]:
    """Run every command of the block in a fresh temporary directory: (command, output lines, stderr)."""
    results = []
    # The directory outlives the block (removed at exit): `gradcli shell` starts multiprocessing's fork
    # server, which remembers the working directory it started in and enters it again for later workers.
    cwd = tempfile.mkdtemp(prefix="gradcli-docs-")
    atexit.register(shutil.rmtree, cwd, ignore_errors=True)
    for command in block.commands:
        parsed = parse_command(command.text)
        if parsed.kind == "cat":
            Path(cwd, parsed.argv[0]).write_text("".join(l + "\n" for l in command.expected), encoding="utf-8")
            results.append((command, list(command.expected), ""))
            continue
        lines, err = run_gradcli(parsed, width=block.width, cwd=cwd)
        results.append((command, lines, err))
    return results


def matches(expected: list[str], actual: list[str]) -> bool:
    if len(expected) != len(actual):
        return False
    return all(e.endswith(VARIES) or e == a or _within_stated_error(expected, i, a)
               for i, (e, a) in enumerate(zip(expected, actual)))


# A number as gradcli prints it (not the digits of a name such as x1 or h(x2)).
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
# What a column's width changes when a number gains or loses a digit: spaces and the table's rules.
_PADDING = re.compile(r"[ ─━═]+")
# Where a line states no error, numbers may still differ in their last two bits (a libm's last ulp).
_ULPS = 4 * 2.0 ** -52


def _within_stated_error(expected: list[str], i: int, actual: str) -> bool:
    """Whether line ``i`` differs from ``actual`` only in digits below the error the output states for them.

    An ill-conditioned value's last digits depend on the CPU's SIMD paths (numpy's dispatch of exp, log and
    sums differs between AVX2 and AVX-512): ``-5999999999459.758`` on one machine is ``.759`` on another, where
    its stated estimate is ``± 8.79e+03``. Such digits are not the example's claim, so two lines agree when
    their text matches outside the numbers (and column padding), and each pair of numbers is within the
    largest ``± estimate`` the row states (on its line or, when a narrow table stacks it, the next), or
    within a few ulps where it states none. Integers (counts, orders, a step's points) are exact."""
    line = expected[i]
    if _PADDING.sub(" ", _NUMBER.sub("#", line)) != _PADDING.sub(" ", _NUMBER.sub("#", actual)):
        return False
    row = [line] + expected[i + 1:i + 2]
    stated = [abs(float(m)) for text in row for m in re.findall(r"±\s*(" + _NUMBER.pattern + ")", text)]
    allowed = max(stated, default=0.0)
    for e, a in zip(_NUMBER.findall(line), _NUMBER.findall(actual)):
        x, y = float(e), float(a)
        if x == y:
            continue
        if re.fullmatch(r"[-+]?\d+", e) or re.fullmatch(r"[-+]?\d+", a):
            return False  # a count, an order, a point's number: exact
        if abs(x - y) > max(allowed, _ULPS * max(abs(x), abs(y))):
            return False
    return True


def with_markers(expected: list[str], actual: list[str]) -> list[str]:
    """The new output, with the ``# varies`` lines (by position) kept as they were, so that regenerating
    does not rewrite a timing each time (when the number of lines changed, the marked line takes the
    new text, still marked)."""
    out = list(actual)
    for i, e in enumerate(expected):
        if e.endswith(VARIES) and i < len(out):
            out[i] = e if len(expected) == len(actual) else out[i] + VARIES
    return out


def diff(expected: list[str], actual: list[str]) -> str:
    import difflib

    return "\n".join(difflib.unified_diff(expected, actual, "in the docs", "real output", lineterm=""))


def update_file(path: Path) -> int:
    """Rewrite every console block's outputs in ``path`` from the real commands; the number of changed ones."""
    lines = path.read_text(encoding="utf-8").split("\n")
    changed = 0
    # Last block first, so that earlier line numbers stay valid while later blocks change length.
    for block in reversed(parse_blocks(path)):
        new_body = []
        for command, actual, _err in run_block(block):
            new = with_markers(command.expected, actual)
            changed += new != command.expected
            new_body += ["$ " + command.text, *new]
        lines[block.fence + 1:block.end] = new_body
    path.write_text("\n".join(lines), encoding="utf-8")
    return changed


# ---------------------------------------------------------------------------------------------
# The CLI reference
# ---------------------------------------------------------------------------------------------
def help_text(argv: list[str]) -> str:
    lines, _ = run_gradcli(Parsed("gradcli", [*argv, "--help"]), width=DEFAULT_WIDTH, cwd=os.getcwd())
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def render_reference() -> str:
    parts = [
        "# CLI reference",
        "",
        "<!-- Generated from `gradcli --help` and `gradcli COMMAND --help` at COLUMNS=100 by",
        "     tests/docs_tools.py; do not edit by hand. Regenerate with: python -m tests.docs_tools --write -->",
        "",
        "Every command's `--help`, exactly as gradcli prints it. The pages under [commands/](commands/grad.md)",
        "explain the options by task, with examples.",
        "",
        "- [gradcli](#gradcli)",
        *[f"- [gradcli {c}](#gradcli-{c})" for c in COMMANDS],
        "",
    ]
    for argv in ([], *([c] for c in COMMANDS)):
        title = " ".join(["gradcli", *argv])
        parts += [f"## {title}", "", "```text", help_text(argv), "```", ""]
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print("usage: python -m tests.docs_tools --write   (regenerates every console block and docs/reference.md)",
              file=sys.stderr)
        return 2
    REFERENCE.write_text(render_reference(), encoding="utf-8")
    print(f"wrote {REFERENCE.relative_to(ROOT)}")
    for path in doc_files():
        if path == REFERENCE:
            continue
        n = update_file(path)
        print(f"{path.relative_to(ROOT)}: {n} example output(s) changed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


# ---------------------------------------------------------------------------------------------
# Links and the mkdocs nav
# ---------------------------------------------------------------------------------------------
def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav names, relative to docs/."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:", 1)[1] if "\nnav:" in text else ""
    pages = []
    for line in nav.split("\n")[1:]:
        if line and not line.startswith(" "):
            break  # the next top-level key
        if m := re.match(r"\s*-\s*(?:[^:]+:\s*)?(\S+\.md)\s*$", line):
            pages.append(m.group(1))
    return pages


def slug(heading: str) -> str:
    """The anchor GitHub and mkdocs' toc give a heading: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _prose_lines(path: Path) -> list[tuple[int, str]]:
    out, fence = [], None
    for i, line in enumerate(path.read_text(encoding="utf-8").split("\n")):
        m = _FENCE.match(line)
        if m and fence is None:
            fence = m.group(1)
        elif fence is not None and line.startswith(fence):
            fence = None
        elif fence is None:
            out.append((i, line))
    return out


def anchors(path: Path) -> set[str]:
    found = set()
    for _, line in _prose_lines(path):
        if m := re.match(r"#{1,6}\s+(.*)", line):
            found.add(slug(m.group(1)))
    return found


def broken_links(paths: list[Path]) -> list[str]:
    broken = []
    for path in paths:
        for i, line in _prose_lines(path):
            line = re.sub(r"``.*?``|`[^`]*`", "", line)  # inline code is not a link
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"[a-z]+:", target):
                    continue
                file, _, anchor = target.partition("#")
                dest = (path.parent / file).resolve() if file else path
                where = f"{path.relative_to(ROOT)}:{i + 1}: {target}"
                if not dest.exists():
                    broken.append(f"{where} (no such file)")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    broken.append(f"{where} (no heading '#{anchor}' in {dest.relative_to(ROOT)})")
    return broken
