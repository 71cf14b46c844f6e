"""Shell completion for options that take a comma-separated list (``-m tape,fd``, ``-o sgd:0.1,adam``).

A candidate is built only from names gradcli knows (and, after an optimizer, a learning rate that is a
plain decimal number): never from the text on the command line. zsh evaluates the candidates it is
given, and Typer's zsh formatter does not escape every character zsh treats specially, so an echo of
typed text (``-m '" *(e{touch f}) "',<TAB>``) would run as code. An earlier item that is not a known
name gives no candidate at all.

Completion runs the whole program once per key press (``_GRADCLI_COMPLETE`` set): it must stay as light as
``--help``, so the names come from modules that import nothing heavy.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

# A learning rate as the -o option reads it (0.1, .5, 1e-3, 2.); nothing else is ever echoed back.
_RATE = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
# Every candidate is made of these characters, whatever the shell (a last line of defence).
_SAFE_CANDIDATE = re.compile(r"[a-z0-9.:,+-]*")


def complete_comma_list(names: Callable[[], Iterable[str]], *,
                        with_rates: bool = False) -> Callable[[str], list[str]]:
    """A Typer ``autocompletion`` that completes the last item of ``a,b,c``.

    The earlier items are rewritten from the known names (``SGD:1e-2`` as ``sgd:1e-2``); with
    ``with_rates`` an item may carry ``:RATE``. (bash splits the word at ``:``: gradcli's bash script
    reads it whole from the line, see :mod:`gradcli.commands.bash_completion`.)"""

    def complete(incomplete: str) -> list[str]:
        known = tuple(names())
        *done, last = incomplete.lower().split(",")
        kept: list[str] = []
        for item in done:
            name, colon, rate = item.strip().partition(":")
            if name in known and (not colon or (with_rates and _RATE.fullmatch(rate))):
                kept.append(f"{name}:{rate}" if colon else name)
            else:
                return []
        already = {item.split(":", 1)[0] for item in kept}
        prefix = "".join(item + "," for item in kept)
        candidates = [prefix + name for name in known if name.startswith(last.strip()) and name not in already]
        return [c for c in candidates if _SAFE_CANDIDATE.fullmatch(c)]

    return complete


def _method_names() -> tuple[str, ...]:
    from gradcli.results import FIRST_ORDER_METHODS  # symbolic, tape, fd and complex (grad, derivative)

    return FIRST_ORDER_METHODS


def _optimizer_names() -> tuple[str, ...]:
    from gradcli.compute.descend.options import OPTIMIZERS

    return (*OPTIMIZERS, "all")


def _dtype_names() -> tuple[str, ...]:
    return ("float64", "float32")  # steps --dtype takes both: float32,float64


complete_methods = complete_comma_list(_method_names)
complete_dtypes = complete_comma_list(_dtype_names)
complete_optimizers = complete_comma_list(_optimizer_names, with_rates=True)


# Every command that completes a list imports this module, so gradcli's bash script (which reads the word
# from the line: bash splits `sgd:0.1,ada` at ':') is in place before Typer prints or installs one.
from gradcli.commands.bash_completion import use_for_bash  # noqa: E402

use_for_bash()
