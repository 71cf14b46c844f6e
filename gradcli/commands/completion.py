"""Shell completion for options that take a comma-separated list (``-m tape,fd``, ``-o sgd,adam``).

Completion runs the whole program once per key press (``_GRADCLI_COMPLETE`` set): it must stay as light as
``--help``, so the names come from modules that import nothing heavy.
"""

from __future__ import annotations

from typing import Callable, Iterable


def complete_comma_list(names: Callable[[], Iterable[str]]) -> Callable[[str], list[str]]:
    """A Typer ``autocompletion`` that completes the last item of ``a,b,c`` (earlier items kept)."""

    def complete(incomplete: str) -> list[str]:
        done, _, last = incomplete.rpartition(",")
        prefix = f"{done}," if done else ""
        already = {part.split(":", 1)[0].strip().lower() for part in done.split(",") if part}
        return [prefix + name for name in names() if name.startswith(last.lower()) and name not in already]

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
complete_optimizers = complete_comma_list(_optimizer_names)
