"""What the parser says about text it cannot read: the likely typo and its fix, not only what is wrong.

Typos seen from new users: a character from a word processor or a maths text (``2×x``, ``x²``, ``½x``,
``−1``), ``|x|`` for an absolute value, a coordinate given as a separate argument (``--at x=1 y=2``), and a
function name glued to its argument (``sinx``). Standard library only: the parser imports this on the
``gradcli --help`` path.
"""

from __future__ import annotations

import re
import unicodedata

from gradcli.expression.functions import ARITIES

# Names people try that gradcli does not take, and gradcli's name for them.
UNSUPPORTED_FUNCTIONS = {
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
    "fabs": "abs", "Abs": "abs", "logistic": "sigmoid",
}

_ASCII_HINTS = {
    "=": "assignments and keyword arguments are not allowed (a comparison is ==, inside where only)",
    "!": "negation is 'not', and a comparison is !=, inside where's condition only",
    ".": "attribute access is not allowed",
    "[": "indexing is not allowed",
    "]": "indexing is not allowed",
    "'": "strings are not allowed",
    '"': "strings are not allowed",
    "%": "use mod-free arithmetic: '%' is not an operator here",
    "&": "bitwise operators are not allowed (inside where's condition, 'and' combines comparisons)",
    "|": "bitwise operators are not allowed (inside where's condition, 'or' combines comparisons)",
    "~": "bitwise operators are not allowed (inside where's condition, 'not' negates a comparison)",
    ":": "lambdas, slices and walrus are not allowed",
    ";": "one expression only",
    "@": "matrix products are not allowed",
}

# Characters pasted from typeset maths, and what gradcli reads instead.
_UNICODE_ASCII = {
    "\u00d7": "*", "\u00b7": "*", "\u22c5": "*", "\u2219": "*", "\u2217": "*",  # x, middle dots, asterisk
    "\u2212": "-", "\u2013": "-", "\u2014": "-", "\u2010": "-", "\u2011": "-",  # minus sign, dashes
    "\u00f7": "/", "\u2215": "/", "\u2044": "/",
    "\u2264": "<=", "\u2265": ">=", "\u2260": "!=",
    "\u03c0": "pi", "\u212f": "e",
    "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2002": " ", "\u2003": " ",  # no-break and thin spaces
}
_VULGAR_FRACTIONS = {"\u00bd": "1/2", "\u2153": "1/3", "\u2154": "2/3", "\u00bc": "1/4", "\u00be": "3/4",
                     "\u2155": "1/5", "\u2159": "1/6", "\u215b": "1/8"}
_SUPERSCRIPTS = dict(zip("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b\u207a",
                         "0123456789-+"))


def _superscript_run(text: str, i: int) -> tuple[str, int]:
    """The exponent a run of superscripts starting at ``i`` stands for (x²³ is x**23, x⁻¹ is x**-1), and
    where the run ends."""
    j = i
    while j < len(text) and text[j] in _SUPERSCRIPTS:
        j += 1
    return "**" + "".join(_SUPERSCRIPTS[c] for c in text[i:j]), j


def _greek(ch: str) -> str | None:
    """α -> alpha: the letter's name, which gradcli reads as a variable (lambda, a Python keyword, as lam)."""
    name = unicodedata.name(ch, "")
    if not name.startswith(("GREEK SMALL LETTER ", "GREEK CAPITAL LETTER ")) or " WITH " in name:
        return None
    word = name.rsplit(" ", 1)[1].lower()
    return "lam" if word == "lamda" else word


def _replacement(text: str, i: int) -> tuple[str, int] | None:
    """What gradcli reads instead of the typeset character at ``i``, and where it ends; None for none."""
    ch = text[i]
    if ch in _SUPERSCRIPTS:
        return _superscript_run(text, i)
    if ch in _VULGAR_FRACTIONS:
        # ½x would read 1/2x, which is 1/(2*x): before a factor the fraction keeps parentheses and a '*'
        glued = i + 1 < len(text) and (text[i + 1].isalnum() or text[i + 1] in "(_")
        after = i > 0 and (text[i - 1].isalpha() or text[i - 1] in ")_")  # x½ is x*(1/2)
        fraction = _VULGAR_FRACTIONS[ch]
        if glued or after:
            fraction = ("*" if after else "") + f"({fraction})" + ("*" if glued else "")
        return fraction, i + 1
    if ch in _UNICODE_ASCII:
        return _UNICODE_ASCII[ch], i + 1
    greek = _greek(ch)
    if greek is None:
        return None
    # a letter glued to a name (αx, xα) is a product, not one longer name
    before = "*" if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_") and not text[i - 1].isdigit() else ""
    after = "*" if i + 1 < len(text) and (text[i + 1].isalnum() or text[i + 1] == "_") else ""
    return before + greek + after, i + 1


def _ascii_version(text: str) -> str | None:
    """``text`` with every typeset character replaced by gradcli's ASCII, or None where some have none
    (or where the replacement would be ambiguous: 1½ is 1 + 1/2, not 1*(1/2))."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i].isascii():
            out.append(text[i])
            i += 1
            continue
        found = _replacement(text, i)
        if found is None or (text[i] in _VULGAR_FRACTIONS and i > 0 and text[i - 1].isdigit()):
            return None
        out.append(found[0])
        i = found[1]
    return "".join(out)


def _absolute_value(text: str, i: int) -> str | None:
    """``|x - 1|``: abs(x - 1), when the bar at ``i`` opens a pair around something."""
    if text[i + 1:i + 2] == "|" or (i > 0 and text[i - 1] == "|"):
        return None  # '||' is an or
    end = text.find("|", i + 1)
    inner = text[i + 1:end].strip() if end > 0 else ""
    return f"abs({inner})" if inner and "|" not in inner else None


# "y=2" as an argument of its own: a coordinate (an assignment is usually typed with spaces, "y = 2")
_COORDINATE = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*=(?!=)\S*\s*\Z")


def describe_character(text: str, i: int) -> str:
    """Why the tokenizer stops at ``text[i]``, with the fix where there is a likely one."""
    ch = text[i]
    if ch == "=" and _COORDINATE.match(text) and text.index("=") == i:
        return (f"'{text.strip()}' is a coordinate, not an expression: separate the coordinates with commas: "
                f"x=1,y=2 (one --at, not --at x=1 y=2)")
    if ch == "|" and (inner := _absolute_value(text, i)):
        return f"'|' is not an absolute value here: use {inner}"
    if ch.isascii():
        extra = _ASCII_HINTS.get(ch)
        return f"unexpected character {ch!r}" + (f": {extra}" if extra else "")
    name = unicodedata.name(ch, "unknown")
    described = f"non-ASCII character {ch!r} (U+{ord(ch):04X} {name})"
    found = _replacement(text, i)
    if found is None:
        return f"{described}; only ASCII letters, digits and operators are read"
    whole = _ascii_version(text)
    shown = found[0].strip()
    if ch in _VULGAR_FRACTIONS or _greek(ch):
        shown = shown.strip("*")  # without the '*' that glues ½x or αx to its neighbour
    instead = f"write '{shown or 'a space'}' instead"
    if whole is not None and whole != text:
        return f"{described}: {instead}, e.g. {whole.strip()}"
    return f"{described}: {instead}"


def glued_call(name: str, known: tuple[str, ...] | list[str] = ()) -> str | None:
    """``sinx`` -> ``sin(x)``: a name that is a function's name glued to a variable (one in ``known``, or a
    single letter with optional digits, like ``x`` or ``x1``); None when it is not such a name."""
    for cut in range(len(name) - 1, 0, -1):  # the longest function name first: sinhx is sinh(x), not sin(hx)
        head, rest = name[:cut], name[cut:]
        if head in ARITIES and 1 in ARITIES[head] and (rest in known or re.fullmatch(r"[A-Za-z][0-9]*", rest)):
            return f"{head}({rest})"
    return None


def unknown_function(name: str, known: list[str]) -> str:
    hint = UNSUPPORTED_FUNCTIONS.get(name)
    message = f"unknown function '{name}'"
    return message + (f"; did you mean '{hint}'?" if hint else f"; known: {', '.join(sorted(known))}")
