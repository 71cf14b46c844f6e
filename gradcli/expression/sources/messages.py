"""How errors about ``--points`` / ``--grid`` input are worded.

Every error is a :class:`gradcli.errors.UsageError` worded ``"{option} {label}:{line}: what is wrong"``;
text echoed from the input is shortened and has its non-printable characters escaped, so a hostile
file cannot rewrite the terminal (bidi overrides, control characters) through an error message.
"""

from __future__ import annotations

import json

from gradcli.errors import UsageError

#: how much of an offending value an error message echoes
SHOW_CHARS = 40


def escape(text: str) -> str:
    """``text`` with every non-printable character (controls, bidi overrides, zero-width) escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def show(text: str, limit: int = SHOW_CHARS) -> str:
    """A short, quoted, escaped rendering of ``text`` for an error message."""
    if len(text) > limit:
        text = text[:limit] + "..."
    return repr(text)  # repr escapes exactly the non-printable characters


def show_json(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = "?"
    if len(text) > SHOW_CHARS:
        text = text[:SHOW_CHARS] + "..."
    return text


def short_detail(message: str, limit: int = 100) -> str:
    message = escape(message)
    return message if len(message) <= limit else message[:limit] + "..."


class Where:
    """Words errors about one input: ``{option} {label}:{line}: ...``."""

    def __init__(self, option: str, label: str):
        self.option = option
        self.label = label

    def at(self, line: int | None, what: str) -> UsageError:
        if line is None:
            return UsageError(f"{self.option} {self.label}: {what}")
        return UsageError(f"{self.option} {self.label}:{line}: {what}")


def missing_message(kind: str, missing: list[str], fixed_option: str | None = "--at") -> str:
    """``fixed_option``: the option that fixes a variable's value, suggested as the other way to give it
    (None: the command has none, so only adding the column or key is suggested)."""
    listed = ", ".join(missing)
    message = f"no {kind} for {listed}: add {'it' if len(missing) == 1 else 'them'}"
    if fixed_option is None:
        return message
    return f"{message} or give {fixed_option} {','.join(f'{v}=value' for v in missing)}"


def both_message(name: str, kind: str, fixed_option: str = "--at") -> str:
    return (f"{name} is given both by the {kind} {name!r} and by {fixed_option} (ambiguous); "
            "give it in one place only")
