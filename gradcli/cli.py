"""The ``gradcli`` command line: a Typer app whose commands forward to the core.

Importing this module must stay cheap: ``gradcli --help`` imports neither SymPy nor TensorFlow.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer
import typer.core

from gradcli import __version__
from gradcli.commands.grad import grad
from gradcli.commands.hessian import hessian
from gradcli.commands.derivative import derivative
from gradcli.commands.descend import descend
from gradcli.commands.eval import eval_value
from gradcli.commands.check import check
from gradcli.commands.steps import steps
from gradcli.commands.shell import shell
from gradcli.commands.daemon import daemon_app
from gradcli.commands.trace import trace
from gradcli.commands.jvp import jvp
from gradcli.commands.hvp import hvp


class _WholeHelpGroup(typer.core.TyperGroup):
    """The command list with every command's short help whole (Click cuts it to fit one line, with '...')."""

    def format_commands(self, ctx, formatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


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


# Short help written out: a docstring's first sentence is too long for one line at 80 columns.
app.command("grad", short_help="The gradient: SymPy, GradientTape and fd, side by side.")(grad)
app.command("hessian", short_help="The Hessian three ways, and what it says at the point.")(hessian)
app.command("derivative", short_help="The first N derivatives of a one-variable function.")(derivative)
app.command("descend", short_help="Gradient descent: the guide's loop and Keras optimizers.")(descend)
app.command("eval", short_help="The value alone, for scripts.")(eval_value)
app.command("check", short_help="Check hand-derived derivatives against exact ones.")(check)
app.command("steps", short_help="The error of each fd formula against the step h.")(steps)
app.command("shell", short_help="Many commands in one process: TensorFlow and SymPy load once.")(shell)
app.command("trace", short_help="The tape's nodes: values, adjoints, tangents, each checked.")(trace)
app.command("jvp", short_help="J·v along a direction: ForwardAccumulator, exact, fd, complex step.")(jvp)
app.command("hvp", short_help="H·v three ways (forward/reverse compositions), fd and exact, timed.")(hvp)
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


def _read_typed_expressions(typer_app: typer.Typer) -> None:
    for command in typer_app.registered_commands:
        base = command.cls or typer.core.TyperCommand
        if not issubclass(base, _TypedExpressions):
            command.cls = type(f"TypedExpressions{base.__name__}", (_TypedExpressions, base), {})


_read_typed_expressions(app)
