"""``gradcli implicit "F = G"``'s Request: every option with its default (written here once), checked once, as
gradcli.library.requests does for the other commands; :meth:`ImplicitRequest.run` computes it
(gradcli.curves.report) and returns the report, whose ``to_dict()`` is the ``-f json`` document.

Imported by ``gradcli --help`` (the command's defaults): the standard library only, at the top.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradcli.errors import UsageError
from gradcli.library.requests import (METHODS, SYMBOLIC_TIMEOUT, SYMBOLIC_TIMEOUTS, check_at, check_flag, check_number,
                                      check_text, check_texts)

IMPLICIT_ORDERS = (1, 4)
DEPENDENT = "y"


@dataclass(kw_only=True)
class ImplicitRequest:
    """``gradcli implicit "x**2 + y**2 = 1" --at x=0.6,y=0.8``: the derivatives of the dependent variable
    (``dependent``, default y) along the curve, by each other variable, orders 1 to ``order``, three ways
    (``method``: any of symbolic,tape,fd); ``at``: the point, on the curve; ``rule``: --rule texts."""

    command = "implicit"

    equation: str
    at: list[str] | None = None
    dependent: str = DEPENDENT
    order: int = 1
    method: str = METHODS
    symbolic_timeout: float = SYMBOLIC_TIMEOUT
    rule: list[str] | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        self.equation = check_text("EQUATION", self.equation, optional=False)
        self.at = check_at(self.at)
        if not self.at:
            raise UsageError("--at is required: a point on the curve, e.g. --at x=0.6,y=0.8")
        self.dependent = check_text("--dependent", self.dependent, optional=False).strip()
        self.order = check_number("--order", self.order, int, IMPLICIT_ORDERS)
        self.method = check_text("--method", self.method, optional=False)
        from gradcli.compute.request import parse_methods

        parse_methods(self.method)
        self.symbolic_timeout = check_number("--symbolic-timeout", self.symbolic_timeout, float, SYMBOLIC_TIMEOUTS)
        self.rule = check_texts("--rule", self.rule)
        self.strict = check_flag("--strict", self.strict)

    @property
    def one_point(self) -> bool:
        return True

    def run(self):
        """The report (gradcli.curves.report.ImplicitReport), the request's rules in force for the call."""
        from gradcli.compute.request import parse_methods
        from gradcli.expression.points import parse_point
        from gradcli.expression.rules import rules_in_force
        from gradcli.curves.equation import read_equation
        from gradcli.curves.report import implicit_derivatives

        with rules_in_force(self.rule, time_limit=self.symbolic_timeout) as checked:
            report = implicit_derivatives(read_equation(self.equation), self.dependent, parse_point(self.at),
                                          order=self.order, methods=parse_methods(self.method),
                                          symbolic_timeout=self.symbolic_timeout)
            report.notes[:0] = [n for n in checked.notes if n not in report.notes]
        report.failed = report.failed or (self.strict and bool(report.warnings))
        return report


__all__ = ["ImplicitRequest"]
