"""Each command's options as ``gradcli/commands/*.py`` declares them for the CLI: the default, the type and
Click's range (``min=``/``max=``), so that the API takes the same values with the same defaults.

They are read from the command modules' source with :mod:`ast`, not imported: those modules import Typer,
which the API never loads. A default or a range is thus written once, in the command's signature (or in
the ``Annotated`` alias it uses from ``gradcli/commands/common.py``). The enums' defaults (``Scheme.central``,
``DType.float64``) are read as the member's name, which is its value in every gradcli enum.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import numbers
from dataclasses import dataclass
from pathlib import Path

from gradcli.errors import UsageError

_COMMANDS = Path(__file__).resolve().parent.parent / "commands"
_SCALARS = {"int", "float", "str", "bool"}


@dataclass(frozen=True)
class CliOption:
    """One parameter of a command function."""

    name: str  # the parameter's name, which is the API's keyword
    flag: str  # how errors name it: the CLI's long option (``--from`` for descend's ``start``)
    default: object
    kind: str | None  # int, float, str, bool, list, choice (an enum's value), or None: passed as given
    min: float | None = None
    max: float | None = None

    def check(self, value):
        """``value`` as the command takes it (None: the default), or a UsageError worded like Click's."""
        if value is None:
            return self.default
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise self._invalid(value, "is not a bool (True or False)")
            return value
        if self.kind in ("int", "float"):
            value = self._number(value)
            if (self.min is not None and not value >= self.min) or (self.max is not None and not value <= self.max):
                raise self._invalid(value, f"is not in the range {self._range()}")
            return value
        if self.kind in ("str", "choice"):
            value = getattr(value, "value", value)  # an enum member, e.g. gradcli.methods.fd.Scheme.central
            if not isinstance(value, str):
                raise self._invalid(value, "is not a string")
            return value.lower() if self.kind == "choice" else value  # Click: case_sensitive=False
        if self.kind == "list":
            values = [value] if isinstance(value, str) else list(value)
            if not all(isinstance(v, str) for v in values):
                raise self._invalid(value, "is not a string or a list of strings")
            return values
        return value

    def _number(self, value):
        wanted = int if self.kind == "int" else float
        if isinstance(value, bool):
            raise self._invalid(value, f"is not a valid {'integer' if wanted is int else 'float'}")
        if isinstance(value, numbers.Integral) or (wanted is float and isinstance(value, numbers.Real)):
            return wanted(value)
        if isinstance(value, str):
            try:
                return wanted(value.strip())
            except ValueError:
                pass
        raise self._invalid(value, f"is not a valid {'integer' if wanted is int else 'float'}")

    def _range(self) -> str:
        if self.min is not None and self.max is not None:
            return f"{self.min}<=x<={self.max}"
        return f"x>={self.min}" if self.min is not None else f"x<={self.max}"

    def _invalid(self, value, why: str) -> UsageError:
        shown = repr(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
        return UsageError(f"Invalid value for '{self.flag}': {shown} {why}.")


@functools.cache
def cli_options(module: str, function: str | None = None) -> dict[str, CliOption]:
    """The parameters of ``function`` (default: ``module``) in ``gradcli/commands/{module}.py`` that have a
    default, by name."""
    tree = _parse(module)
    aliases = {**_aliases(_parse("common")), **_aliases(tree)}
    name = function or module
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        raise LookupError(f"gradcli/commands/{module}.py has no function {name}")
    args = fn.args
    pairs = list(zip(args.args[len(args.args) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    out = {}
    for arg, default in pairs:
        kind, flag, bounds = _declared(arg.annotation, aliases)
        out[arg.arg] = CliOption(arg.arg, flag or "--" + arg.arg.replace("_", "-"), _default(default), kind, *bounds)
    return out


@functools.cache
def _parse(module: str) -> ast.Module:
    return ast.parse((_COMMANDS / f"{module}.py").read_text(encoding="utf-8"))


def _aliases(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level ``Name = Annotated[...]`` (and ``Name = at_option(...)``) assignments."""
    return {node.targets[0].id: node.value for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, (ast.Subscript, ast.Call))}


def _declared(annotation: ast.expr | None, aliases: dict) -> tuple[str | None, str | None, tuple]:
    """(kind, long option, (min, max)) of a parameter's annotation."""
    while isinstance(annotation, ast.Name) and annotation.id in aliases:
        annotation = aliases[annotation.id]
    if isinstance(annotation, ast.Call):  # e.g. at_option("..."): a list of X=V texts
        return "list", None, (None, None)
    if not (isinstance(annotation, ast.Subscript) and _name(annotation.value) == "Annotated"):
        return None, None, (None, None)
    declared, option = annotation.slice.elts[:2]
    kind = _kind(declared)
    flag = None
    bounds = [None, None]
    if isinstance(option, ast.Call):
        flags = [a.value for a in option.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        flag = next((f for f in flags if f.startswith("--")), None)
        for keyword in option.keywords:
            if keyword.arg in ("min", "max"):
                bounds[keyword.arg == "max"] = ast.literal_eval(keyword.value)
            elif keyword.arg == "callback" and isinstance(keyword.value, ast.Call) \
                    and _name(keyword.value.func) == "in_range":  # the range the callback checks
                bounds = [ast.literal_eval(a) for a in keyword.value.args]
    return kind, flag, tuple(bounds)


def _kind(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript) and _name(node.value) == "Optional":
        node = node.slice
    if isinstance(node, ast.Subscript):
        return "list" if _name(node.value) == "list" else None
    name = _name(node)
    if name in _SCALARS:
        return name
    return "choice" if name is not None else None


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _default(node: ast.expr):
    if isinstance(node, ast.Attribute):  # an enum member: Scheme.central -> "central"
        return node.attr
    return ast.literal_eval(node)


class _CliDefault:
    def __repr__(self) -> str:
        return "<the CLI's default>"


CLI_DEFAULT = _CliDefault()
# Converted by the API itself (a mapping or text for a point, a path, mapping or DataFrame for points; a rule
# text or a list of them, read by gradcli's own rule parser).
_OWN = frozenset({"at", "start", "points", "expressions", "expect", "batch", "rule"})
# Options that are comma-separated lists on the command line: a list of names is joined.
_COMMA_LISTS = frozenset({"wrt", "method", "optimizer"})


def cli_command(module: str, function: str | None = None):
    """Give the API function the options of ``gradcli/commands/{module}.py``'s command: each keyword whose
    default is CLI_DEFAULT gets the CLI's default (also in its signature, for help()), and every value is
    checked as Click checks it on the command line (type, range). RecursionError (an expression nested too
    deeply) is a UsageError, as the CLI's exit 2."""
    options = cli_options(module, function)

    def decorate(fn):
        signature = inspect.signature(fn)
        checked = [name for name in signature.parameters if name in options and name not in _OWN]

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for name in checked:
                value = bound.arguments[name]
                if name in _COMMA_LISTS and isinstance(value, (list, tuple)):
                    value = ",".join(value)
                bound.arguments[name] = options[name].check(None if value is CLI_DEFAULT else value)
            if bound.arguments.get("expression", "") is None:
                raise UsageError("give an expression, e.g. \"x**2\"")
            try:
                return fn(*bound.args, **bound.kwargs)
            except RecursionError:
                raise UsageError("expression too deeply nested to compute") from None

        wrapper.__signature__ = signature.replace(parameters=[
            p.replace(default=options[p.name].default) if p.default is CLI_DEFAULT else p
            for p in signature.parameters.values()])
        return wrapper

    return decorate
