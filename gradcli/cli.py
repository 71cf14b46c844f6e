"""The ``gradcli`` command line: a Typer app whose commands forward to the core.

Importing this module must stay cheap: ``gradcli --help`` imports neither SymPy nor TensorFlow.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer
import typer.core

from gradcli import __version__
from gradcli.commands import completion  # noqa: F401 (gradcli's bash completion, registered with Click)
from gradcli.commands.daemon import daemon_app

# The commands, each in its module (daemon aside: a group), imported when the command is run, asked for its --help,
# or looked into (completion, an unknown option's hints): `gradcli --help` lists them from here, so that it
# imports none of them (nor does the shell, whose lines run through gradcli.launcher, import this module
# back). name: (module, function, short help; written out: a docstring's first sentence is
# too long for one line at 80 columns).
LAZY_COMMANDS = {
    "grad": ("gradcli.commands.grad", "grad", "The gradient: SymPy, GradientTape and fd, side by side."),
    "hessian": ("gradcli.commands.hessian", "hessian", "The Hessian three ways, and what it says at the point."),
    "derivative": ("gradcli.commands.derivative", "derivative", "The first N derivatives of a one-variable function."),
    "descend": ("gradcli.commands.descend", "descend", "Gradient descent: the guide's loop and Keras optimizers."),
    "eval": ("gradcli.commands.eval", "eval_value", "The value alone, for scripts."),
    "check": ("gradcli.commands.check", "check", "Check hand-derived derivatives against exact ones."),
    "steps": ("gradcli.commands.steps", "steps", "The error of each fd formula against the step h."),
    "trace": ("gradcli.commands.trace", "trace", "The tape's nodes: values, adjoints, tangents, each checked."),
    "jvp": ("gradcli.commands.jvp", "jvp", "J·v along a direction: ForwardAccumulator, exact, fd, complex step."),
    "hvp": ("gradcli.commands.hvp", "hvp", "H·v three ways (forward/reverse compositions), fd and exact, timed."),
    "shell": ("gradcli.commands.shell", "shell", "Many commands in one process: TensorFlow and SymPy load once."),
    "propagate": ("gradcli.commands.propagate", "propagate", "Input uncertainties through f: linear, MC, interval."),
    "implicit": ("gradcli.commands.implicit", "implicit", "dy/dx of a curve F = G: idiff, -F_x/F_y by tape, fd."),
}
# The order --help lists them in.
ORDER = ("grad", "hessian", "derivative", "descend", "eval", "check", "steps", "shell", "trace", "jvp", "hvp",
         "propagate", "implicit", "daemon")


class _WholeHelpGroup(typer.core.TyperGroup):
    """The commands of LAZY_COMMANDS made when first asked for; the command list with every command's
    short help whole (Click cuts it to fit one line, with '...')."""

    def list_commands(self, ctx) -> list[str]:
        return [n for n in ORDER if n in LAZY_COMMANDS or n in self.commands] + \
            [n for n in super().list_commands(ctx) if n not in ORDER]

    def get_command(self, ctx, name: str):
        if name not in self.commands and name in LAZY_COMMANDS:
            self.add_command(_make_command(name), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx, formatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in LAZY_COMMANDS and name not in self.commands:
                rows.append((name, LAZY_COMMANDS[name][2]))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _make_command(name: str):
    """The Click command of a command of LAZY_COMMANDS, as Typer makes it, with gradcli's checks of numbers
    and typed expressions."""
    import importlib

    import typer.main
    import typer.models

    from gradcli.commands.numbers import ascii_numbers

    module, function, short_help = LAZY_COMMANDS[name]
    callback = getattr(importlib.import_module(module), function)
    info = typer.models.CommandInfo(name, callback=callback, short_help=short_help,
                                    cls=_typed_expressions(ascii_numbers(None)))
    return typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)


app = typer.Typer(
    cls=_WholeHelpGroup,
    name="gradcli",
    help="Differentiate a function at a point three ways (finite differences, TensorFlow's GradientTape, "
    "SymPy) and see the error of each.",
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,  # plain help: compact at 80 columns, examples kept as written, rich not imported
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"gradcli {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
) -> None:
    """gradcli: derivatives three ways, side by side."""


app.add_typer(daemon_app, name="daemon", short_help="A warm gradcli for GRADCLI_DAEMON=1: start, stop, status.")

# Every command's int and float options read ASCII digits only (see gradcli.commands.numbers).
from gradcli.commands.numbers import read_ascii_numbers  # noqa: E402

read_ascii_numbers(app)


class _TypedExpressions:
    """Mixed into a command's class: an expression typed as an argument is at most
    COMMAND_LINE_EXPRESSION_MAX_CHARS characters (the parser takes the longer ones --file reads)."""

    def parse_args(self, ctx, args):
        rest = super().parse_args(ctx, args)
        from gradcli.limits import COMMAND_LINE_EXPRESSION_MAX_CHARS as limit

        for param in self.params:
            if not type(param).__name__.endswith("Argument"):
                continue
            given = ctx.params.get(param.name)
            for text in given if isinstance(given, (list, tuple)) else [given]:
                if isinstance(text, str) and len(text) > limit:
                    usage_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
                    instead = ("; a longer one goes in --file PATH" if any("--file" in p.opts for p in self.params)
                               else "")
                    raise usage_error(f"expression of {len(text):,} characters: the command line takes at most "
                                      f"{limit:,}{instead}", ctx)
        return rest


def _typed_expressions(base):
    from gradcli.commands.numbers import mixed_in

    return mixed_in(_TypedExpressions, base)


def _read_typed_expressions(typer_app: typer.Typer) -> None:
    for command in typer_app.registered_commands:
        command.cls = _typed_expressions(command.cls)


_read_typed_expressions(app)
