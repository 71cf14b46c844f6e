"""The ``gradcli`` command line: a Typer app whose commands forward to the core.

Importing this module must stay cheap: ``gradcli --help`` imports neither SymPy nor TensorFlow.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gradcli import __version__
from gradcli.commands.grad import grad
from gradcli.commands.hessian import hessian
from gradcli.commands.derivative import derivative
from gradcli.commands.descend import descend
from gradcli.commands.eval import eval_value
from gradcli.commands.check import check

app = typer.Typer(
    name="gradcli",
    help="Differentiate a function at a point three ways (finite differences, TensorFlow's GradientTape, "
    "SymPy) and see the error of each.",
    no_args_is_help=True,
    add_completion=False,
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


app.command("grad")(grad)
app.command("hessian")(hessian)
app.command("derivative")(derivative)
app.command("descend")(descend)
app.command("eval")(eval_value)
app.command("check")(check)
