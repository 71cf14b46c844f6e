"""A number the prose of the docs states as a result comes from a ```console block or from a bench table.

The rule of the docs: a claim in prose that names a number (a derivative, an error, an estimate, a time, a
ratio...) is read off a ```console block of the same page, whose output tests/test_docs_examples.py runs and
compares, or off docs/benchmarks.md, whose tables the bench/*.py scripts print. When a command's output
changes and its block is regenerated, a sentence that still quotes the old number is stale: this test finds it.

Pure text, no gradcli run: every decimal number of a prose line (one with a fraction or an exponent: 0.5003,
1.38e-08, 2.4e299, 13.0; integers are not checked) must equal, rounded or cut to the digits the prose gives, a
number of the page's console blocks (their commands and outputs) or of the sections of docs/benchmarks.md the
page links to. Inline code that is a command, an option or an expression (`--eps 1e-3`, `exp(x)*1e100`) is
input and skipped; inline code that is only numbers (`0.33333334`, `[9.0, 42.0]`) is a result and checked.

What is neither is listed below, each number with its reason: a definition this test computes itself
(machine epsilon and its powers), a number another page's block shows, a result of a command that is not a
block (the command is listed, and ``PROSE_NUMBERS_RUN=1`` runs it and checks the number against its output),
an input the reader types, a version, or a past output quoted as such.
"""

from __future__ import annotations

import os
import re
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, Decimal
from pathlib import Path

import numpy as np
import pytest

import docs_tools

ROOT = docs_tools.ROOT
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
PAGES = ["README.md", "docs/index.md",
         *[f"docs/commands/{c}.md" for c in ("grad", "hessian", "derivative", "descend", "shell", "trace", "jvp",
                                              "hvp")],
         "docs/numerics.md", "docs/formats.md", "docs/api.md", "docs/shell.md", "docs/daemon.md",
         "docs/functions.md", "docs/design.md"]

# A decimal with a fraction or an exponent, not part of a word or of a longer number (x1, 2x, v3, 1.2.3).
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+(?:[eE][-+]?\d+)?|[eE][-+]?\d+)(?![\w.]*\d)")
# Inline code that is only numbers and their punctuation: a result written as code (`[9.0, 42.0]`).
ONLY_NUMBERS = re.compile(r"^[\s\d.eE+\-,()\[\]]*$")

F64, F32 = float(np.finfo(np.float64).eps), float(np.finfo(np.float32).eps)

# Definitions: computed here, so that the page's rounding of them is checked too. page -> {as written: value}.
COMPUTED: dict[str, dict[str, float | Decimal]] = {
    "docs/numerics.md": {
        "2.22e-16": F64,                                  # float64's machine epsilon
        "1.19e-7": F32,                                   # float32's
        "1.49e-8": F64 ** 0.5, "3.45e-4": F32 ** 0.5,     # the default steps: √eps (forward/backward)
        "6.06e-6": F64 ** (1 / 3), "4.92e-3": F32 ** (1 / 3),   # eps^(1/3) (central)
        "7.4e-4": F64 ** 0.2, "4.1e-2": F32 ** 0.2,       # eps^(1/5) (Richardson)
        "1.22e-4": F64 ** 0.25, "1.86e-2": F32 ** 0.25,   # eps^(1/4) (second differences)
        "4.9e-324": float(np.nextafter(0.0, 1.0)),        # float64's smallest subnormal
        "0.1000000000000000055": Decimal(0.1),  # noqa: RUF032 - the float64 number `0.1` is read as, exactly
        "2e6": float(np.spacing(1e22)),                   # the float spacing at 1e22
        "3e84": F64 / 2 * np.e * 1e100,                   # the rounding of exp(1)*1e100, half an ulp
        # the false alarms' rates: of the counts on their lines (tests/test_contract.py's measure() counts them)
        "2.1": Decimal(100 * 6) / 292,                    # now: 6 of 292
        "8.2": Decimal(100 * 19) / 233, "3.5": Decimal(100 * 10) / 282, "3.2": Decimal(100 * 9) / 278,  # before
    },
}

# Numbers that another page's console block shows: (page, as written) -> the page whose blocks must hold it.
ELSEWHERE: dict[tuple[str, str], str] = {
    ("README.md", "7.999999999999119"): "docs/numerics.md",   # the tutorial's --eps 1e-3 derivative
    ("docs/formats.md", "0.33333334"): "README.md",           # float32's digits: `gradcli eval "x/3" ...`
}

# Results of commands that are not console blocks (the doc examples keep to about 70 commands): page ->
# {the command, as a console line: {number as written: what it is}}. PROSE_NUMBERS_RUN=1 runs each command and
# checks every number against its output; without it only the text is checked.
VERIFIED: dict[str, dict[str, dict[str, str]]] = {
    "docs/commands/hvp.md": {
        'gradcli hvp "(x1+5)*x2**2" --grid x1=2:2:1,x2=3:4:2 --along x1=1,x2=2': {
            "16.0": "H·v at (2, 4), first entry", "36.0": "H·v at (2, 4), second entry"},
    },
    "docs/numerics.md": {
        'gradcli hessian "exp(x)*1e100 + y**2" --at x=1,y=1 -m symbolic,fd 2>&1': {
            "9.3e93": "the (y, y) entry's estimate"},
        'gradcli grad "(exp(x) - 1)/x" --at x=1e-8 -m symbolic,tape,fd 2>&1': {
            "1.1": "the tape's error"},
        'gradcli grad "(x - sin(x))/x**3" --at x=1e-5 -m symbolic,tape,fd 2>&1': {
            "0.207": "the tape's value", "1.7e-7": "the exact value"},
        'gradcli grad "sqrt(x**2 + y**2)" --at x=1e-200,y=1e-200 -m symbolic,tape,fd 2>&1; echo $?': {
            "0.7071": "the exact value", "0.0": "fd's value"},
        'gradcli grad "(exp(x) - 1)/x" --at x=1e-3 -m symbolic,tape,fd,complex 2>&1': {
            "0.50033345832389": "the tape's value", "0.50033345836667": "the exact value",
            "8.9e-10": "the complex step's estimate"},
        'gradcli grad "(1 - cos(x))/x**2" --at x=0.01 -m symbolic,tape,fd,complex 2>&1': {
            "1.8e-9": "the complex step's estimate"},
        'gradcli grad "cosh(x)**2 - sinh(x)**2" --at x=20 -m symbolic,fd 2>&1': {
            "6.6e4": "fd's estimate"},
        'gradcli grad "x/y" --at x=1e-200,y=1e-200 -m fd': {
            "1e200": "fd's d/dy, -1.00000000000474e200 (1e200 is also a point of the page)"},
        'gradcli hessian "x/y" --at x=1e-200,y=1e-200 -m symbolic,fd -f json 2>&1; echo $?': {
            "6e189": "fd's estimate of the entry (x, x)"},
    },
}

# Neither a result of a command nor a bench figure. page -> {as written: why}.
ALLOWED: dict[str, dict[str, str]] = {
    "README.md": {
        "3.11": "the Python version",
    },
    "docs/index.md": {
        "1e-3": "the syntax of numbers, an input",
    },
    "docs/commands/descend.md": {
        "1e-6": "--tol's default in float32, an option value",
    },
    "docs/commands/trace.md": {
        "2.21": "the TensorFlow version",
    },
    "docs/numerics.md": {
        # exponents of the functions the prose names (x^2.5 converges like h^0.5; x^2.01 like h^0.01)
        "2.5": "an exponent of x^2.5", "0.5": "h^0.5, x^2.5's rate", "2.01": "an exponent of x^2.01",
        "0.01": "h^0.01, x^2.01's rate; the point 0.01", "1.5": "an exponent of x^1.5",
        # points and constants of the expressions the prose names
        "1e-8": "a point", "1e-5": "a point", "1e-200": "a point",
        "1e-300": "a point", "1e22": "a point", "5e-324": "a point", "1e-3": "a point", "0.999": "a point",
        "1e5": "the tape's errors in roundings of max(1, |value|): 4.28e-11 and 2.88e-11 over 2.2e-16",
        # past outputs, quoted as such ("said ...", "before ...")
        "2.7e-190": "what fd said at x/y's d/dy before its stencil kept clear of the pole",
        "7e-11": "the estimate it said then", "6e-6": "the default stencil's step then",
        "240465.8": "1/(x - 1)'s second derivative at 0.999, what fd said before a step needed a smaller one to agree",
        "3.6e6": "the estimate it said then", "2e9": "the answer (-2e9) the block beside it shows in full",
        "1e16": "the periods cos's stencil spans, 2h/2π with the h = 6.06e16 its header shows",
    },
    "docs/commands/grad.md": {
        "0.1": "a point as typed",
    },
    "docs/functions.md": {
        "1e-8": "a point beside a tie (an input)",
        "2.21": "the TensorFlow version",
    },
    "docs/daemon.md": {
        "0.1": "the target of a warm call (docs/benchmarks.md#daemon states it as such)",
    },
    "docs/shell.md": {
        "0.5": "a check line's forks before the fork server: twenty lines took 10.1-17.4 s (benchmarks.md#shell)",
        "2.4": "the slowdown of a line beside a thread importing TensorFlow, measured when the background load "
               "came (not a bench table)",
    },
    "docs/design.md": {
        "0.29": "the Typer version gradcli is pinned below",
    },
}


def _is_input_code(span: str) -> bool:
    return not ONLY_NUMBERS.match(span)


def prose_numbers(path: Path) -> list[tuple[int, str, str]]:
    """(line number, number as written, the line) for each decimal of a prose line, outside code that is input."""
    found = []
    for i, line in docs_tools._prose_lines(path):
        text = re.sub(r"<!--.*?-->", "", line)
        text = re.sub(r"\]\([^)]*\)", "]", text)  # a link's target is no claim
        text = re.sub(r"``.*?``|`[^`]*`", lambda m: " " if _is_input_code(m.group(0).strip("`")) else
                      m.group(0).strip("`"), text)
        found += [(i + 1, m.group(0), line) for m in NUMBER.finditer(text)]
    return found


def _numbers_of_text(text: str) -> set[Decimal]:
    return {Decimal(m.group(0)) for m in re.finditer(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+", text)}


def block_numbers(path: Path) -> set[Decimal]:
    texts = [line for block in docs_tools.parse_blocks(path) for command in block.commands
             for line in [command.text, *command.expected]]
    return _numbers_of_text("\n".join(texts))


def agrees(written: str, candidate: Decimal | float) -> bool:
    """Whether ``candidate``, rounded or cut to as many significant digits as ``written`` has, is ``written``
    (signs aside): 2.7e43 is 2.6881171418161356e+43, 13.0 is 13.0 or 13.04, 1e-5 is not 6.06e-6."""
    value, exact = Decimal(written), abs(Decimal(candidate))
    if exact == 0 or value == 0:
        return exact == value
    digits = len(value.as_tuple().digits)
    place = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return any((exact / place).to_integral_value(rounding) * place == value
               for rounding in (ROUND_HALF_EVEN, ROUND_DOWN))


def found_in(written: str, numbers: set[Decimal]) -> bool:
    return any(agrees(written, n) for n in numbers)


def bench_sections() -> dict[str, str]:
    """docs/benchmarks.md by section: the anchor of each ``## `` heading -> its text ("" -> the whole page)."""
    text = BENCHMARKS.read_text(encoding="utf-8")
    sections = {"": text}
    for part in re.split(r"^(?=## )", text, flags=re.MULTILINE)[1:]:
        sections[docs_tools.slug(part.split("\n", 1)[0][3:])] = part
    return sections


BENCH = bench_sections()
LINK_TO_BENCH = re.compile(r"\]\((?:\.\./)?(?:docs/)?benchmarks\.md(?:#([^)\s]*))?\)")


def bench_numbers(path: Path) -> set[Decimal]:
    """The numbers of the sections of docs/benchmarks.md that the page links to (the tables it points at)."""
    text = path.read_text(encoding="utf-8")
    return _numbers_of_text("\n".join(BENCH.get(anchor, "") for anchor in LINK_TO_BENCH.findall(text)))


def stale_numbers(page: str, text_of_page: Path | None = None) -> list[str]:
    """Every prose number of ``page`` that no block, bench table or list entry accounts for."""
    path = text_of_page or ROOT / page
    blocks, bench = block_numbers(path), bench_numbers(path)
    verified = {w for numbers in VERIFIED.get(page, {}).values() for w in numbers}
    stale = []
    for line, written, text in prose_numbers(path):
        if found_in(written, blocks) or found_in(written, bench) or written in verified:
            continue
        if written in COMPUTED.get(page, {}) and agrees(written, COMPUTED[page][written]):
            continue
        if (page, written) in ELSEWHERE and found_in(written, block_numbers(ROOT / ELSEWHERE[page, written])):
            continue
        if written in ALLOWED.get(page, {}):
            continue
        stale.append(f"{page}:{line}: {written}   in: {text.strip()}")
    return stale


@pytest.mark.parametrize("page", PAGES)
def test_every_number_in_prose_comes_from_a_block_or_a_bench_table(page):
    stale = stale_numbers(page)
    assert not stale, (
        "numbers in prose that no ```console block of the page and no table of docs/benchmarks.md shows "
        "(a stale number, or an input or definition to list in this test with its reason):\n" + "\n".join(stale))


def test_every_list_entry_is_still_on_its_page():
    """An entry whose number left the page would let a later stale number of the same digits through."""
    unused = []
    checked = {page: [w for numbers in commands.values() for w in numbers] for page, commands in VERIFIED.items()}
    for page, entries in [*ALLOWED.items(), *COMPUTED.items(), *checked.items()]:
        written = {w for _, w, _ in prose_numbers(ROOT / page)}
        unused += [f"{page}: {w}" for w in entries if w not in written]
    unused += [f"{page}: {w}" for page, w in ELSEWHERE if w not in {x for _, x, _ in prose_numbers(ROOT / page)}]
    assert not unused, "list entries whose number is no longer in the page's prose:\n" + "\n".join(unused)


def test_definitions_are_what_they_say():
    wrong = [f"{page}: {w} is not {v}" for page, entries in COMPUTED.items() for w, v in entries.items()
             if not agrees(w, v)]
    assert not wrong, "\n".join(wrong)


RUN = os.environ.get("PROSE_NUMBERS_RUN") == "1"
VERIFIED_COMMANDS = [(page, command) for page, commands in VERIFIED.items() for command in commands]


@pytest.mark.skipif(not RUN, reason="PROSE_NUMBERS_RUN=1 runs the commands behind the prose's other results")
@pytest.mark.parametrize("page, command", VERIFIED_COMMANDS, ids=[c for _, c in VERIFIED_COMMANDS])
def test_a_result_that_is_no_block_is_what_its_command_prints(page, command, tmp_path):
    lines, stderr = docs_tools.run_gradcli(docs_tools.parse_command(command), width=200, cwd=str(tmp_path))
    printed = _numbers_of_text("\n".join(lines) + "\n" + stderr)
    wrong = [f"{written} ({what})" for written, what in VERIFIED[page][command].items()
             if not found_in(written, printed)]
    assert not wrong, f"{page}: `{command}` no longer prints " + ", ".join(wrong) + "\n" + "\n".join(lines)


def test_a_stale_number_in_prose_is_found(tmp_path):
    """The check itself: a derivative the block no longer prints, written into a copy of a page, is reported."""
    page = ROOT / "docs" / "commands" / "jvp.md"
    text = page.read_text(encoding="utf-8")
    copy = tmp_path / "jvp.md"
    copy.write_text(text + "\nAlong (1, 2) fd gives 93.00000000231041, within its estimate.\n", encoding="utf-8")
    assert [s for s in stale_numbers("docs/commands/jvp.md", copy) if "93.00000000231041" in s]
    copy.write_text(text + "\nAlong (1, 2) fd gives 93.00000000131041, within its estimate.\n", encoding="utf-8")
    assert not stale_numbers("docs/commands/jvp.md", copy)


@pytest.mark.parametrize("written, candidate, expected", [
    ("2.7e43", "2.6881171418161356e+43", True),    # rounded
    ("0.50033345832389", "0.5003334583238939", True),
    ("1.6", "1.6077470928430557", True),          # cut
    ("13.0", "13.0", True),
    ("13.0", "13.1", False),
    ("2.4e299", "2.4e298", False),                # the same digits, another magnitude
    ("0.0", "0", True),
    ("1e-5", "6.06e-6", False),                   # one digit is not an order of magnitude
    ("10.0", "9.996", True),                      # rounding up into the next decade
])
def test_agrees(written, candidate, expected):
    assert agrees(written, Decimal(candidate)) is expected
