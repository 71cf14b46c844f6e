"""Numeric options read ASCII digits only, as the expression language and the points files do.

Click converts ``--lr``, ``--steps``, ``--eps``, ... with Python's ``int()``/``float()``, which also take
fullwidth (``１``) and Arabic-Indic (``١``) digits, digits of every other script, and ``1_000``. Every
command (see :func:`read_ascii_numbers`) gets an ASCII check in front of each int and float option
it has (present and future alike), so no option can forget it.
"""

from __future__ import annotations

import copy
import re

import typer.core

from gradcli.errors import printable

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
# float() words: passed on, so that each option's own check says why a non-finite value is refused.
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)\Z", re.IGNORECASE)
# Click's names for its int and float types, ranges included.
_NUMBER_TYPES = {"int": "integer", "int range": "integer", "integer": "integer", "integer range": "integer",
                 "float": "float", "float range": "float"}
_ASCII_SPACE = " \t\r\n\f\v"


def number_text_problem(text: str, *, integer: bool) -> str | None:
    """Why ``text`` is not a number gradcli reads for an option (None when it is)."""
    s = text.strip(_ASCII_SPACE)
    if (_INTEGER if integer else _DECIMAL).match(s) or (not integer and _NON_FINITE.match(s)):
        return None
    kind = "a whole number" if integer else "a number"
    example = "e.g. 100" if integer else "e.g. 0.01 or 1e-3"
    if not s.isascii():
        return f"{printable(text)!r} is not {kind} written with ASCII digits 0-9 ({example})"
    return f"{printable(text)!r} is not {kind} ({example})"


def _ascii_only(number_type, integer: bool):
    """A copy of Click's ``number_type`` that checks the text before converting it (ranges keep their
    checks and their help text: the copy is still the same class)."""
    checked = copy.copy(number_type)
    convert = checked.convert

    def convert_ascii(value, param, ctx):
        if isinstance(value, str):
            problem = number_text_problem(value, integer=integer)
            if problem:
                checked.fail(problem, param, ctx)
        return convert(value, param, ctx)

    checked.convert = convert_ascii
    return checked


class _AsciiNumbers:
    """Mixed into a Click command class: its int and float options read ASCII digits only."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for param in self.params:
            kind = _NUMBER_TYPES.get(getattr(param.type, "name", ""))
            if kind:
                param.type = _ascii_only(param.type, integer=kind == "integer")


def mixed_in(mixin: type, command_class: type | None) -> type:
    """``command_class`` (Typer's TyperCommand when None) with ``mixin``'s methods first (once)."""
    base = command_class or typer.core.TyperCommand
    if issubclass(base, mixin):
        return base
    return type(f"{mixin.__name__.lstrip('_')}{base.__name__}", (mixin, base), {})


def ascii_numbers(command_class: type | None) -> type:
    """``command_class`` (Typer's TyperCommand when None) with ASCII-only numeric options."""
    return mixed_in(_AsciiNumbers, command_class)


def read_ascii_numbers(app: typer.Typer) -> None:
    """Every command of ``app`` (registered so far) reads ASCII digits only in its numeric options."""
    for command in app.registered_commands:
        command.cls = ascii_numbers(command.cls)
