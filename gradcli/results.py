"""Result objects: what a command computed, independent of how it is shown.

Each report has ``to_dict()`` (the JSON document; non-finite floats become ``null``) and a
``failed`` flag: a result that could not be computed everywhere makes the CLI exit 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

METHODS = ("symbolic", "tape", "fd")
# grad and derivative --order 1 also take the complex step (gradcli.methods.complex_step)
FIRST_ORDER_METHODS = (*METHODS, "complex")


def finite_or_none(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def clean(obj: Any) -> Any:
    """Recursively replace NaN/inf by None so that the JSON is strict."""
    if isinstance(obj, float):
        return finite_or_none(obj)
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


def point_text(point: dict[str, float]) -> str:
    """A point in a message: every coordinate with the digits that tell it apart (``x=1.0000001``)."""
    from gradcli.errors import number_text

    return ", ".join(f"{k}={number_text(v)}" for k, v in point.items())


def value_warning(expression: str, value: float | None, point: dict[str, float]) -> str | None:
    """The warning for a function value that is not a finite real number (None when it is)."""
    if value is not None and math.isfinite(value):
        return None
    why = "is infinite or overflows float64" if value is not None and math.isinf(value) else \
        "is undefined (not a real number)"
    return f"{expression} {why} at {point_text(point)}; its derivatives there mean nothing"


def flag_undefined_value(report) -> None:
    """On a report with expression/value/point/warnings/failed: warn, null the value, mark it failed."""
    warning = value_warning(report.expression, report.value, report.point)
    if warning:
        report.warnings.append(warning)
        report.value = None
        report.failed = True


def shortest(x: float | None, dtype: str) -> float | None:
    """A float32 result written with the digits float32 needs (9.0, -0.33333334), not float64's."""
    if x is None or not math.isfinite(x) or dtype == "float64":
        return x
    import numpy as np

    return float(repr(np.float32(x)).replace("np.float32(", "").rstrip(")"))


@dataclass
class ExpressionGradient:
    """The gradient of one expression by each method that ran."""

    expression: str
    value: float | None
    formula: dict[str, str] = field(default_factory=dict)
    gradient: dict[str, dict[str, float | None]] = field(default_factory=dict)
    error: dict[str, dict[str, float | None]] = field(default_factory=dict)
    unconnected: list[str] = field(default_factory=list)
    fd_error_estimate: dict[str, float | None] = field(default_factory=dict)  # fd's own error estimate
    one_sided: dict[str, dict[str, float]] = field(default_factory=dict)  # kinks: {var: {"left", "right"}}
    point_shift: dict[str, float] = field(default_factory=dict)  # exact derivative's move, typed -> dtype point
    complex_error_estimate: dict[str, float | None] = field(default_factory=dict)  # the complex step's estimate
    not_analytic: list[str] = field(default_factory=list)  # variables the complex step has no value for (a note)

    def to_dict(self) -> dict:
        doc = {
            "expression": self.expression,
            "value": self.value,
            "formula": self.formula,
            "gradient": self.gradient,
            "error": self.error,
            "unconnected": self.unconnected,
        }
        if "fd" in self.gradient:
            doc["fd_error_estimate"] = self.fd_error_estimate
        if self.one_sided:
            doc["one_sided"] = self.one_sided
        if "complex" in self.gradient:
            doc["complex_error_estimate"] = self.complex_error_estimate
        return doc


@dataclass
class GradientReport:
    """``gradcli grad``: gradients of one or more expressions at one point."""

    expressions: list[str]
    point: dict[str, float]
    dtype: str
    wrt: list[str]
    methods: list[str]
    results: list[ExpressionGradient]
    fd_scheme: str | None = None
    fd_steps: dict[str, float] = field(default_factory=dict)
    complex_step: float | None = None  # h in Im f(x + ih) / h, when the complex step ran
    sum: dict[str, dict[str, float | None]] | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "grad"
    # --constants: variables entered on the tape as tf.constant (still rows: symbolic and fd differentiate by
    # them); --watch: those of them tape.watch()ed. Both in wrt order.
    constants: list[str] = field(default_factory=list)
    watched: list[str] = field(default_factory=list)

    @property
    def unwatched(self) -> list[str]:
        """The constants the tape did not watch: its gradient is None (JSON null) for them, by TF's design."""
        return [v for v in self.constants if v not in self.watched]

    def to_dict(self) -> dict:
        doc: dict[str, Any] = {
            "command": self.command,
            "expressions": self.expressions,
            "point": self.point,
            "dtype": self.dtype,
            "wrt": self.wrt,
            "methods": self.methods,
            "fd": None if self.fd_scheme is None else {"scheme": self.fd_scheme, "step": self.fd_steps},
            **({} if self.complex_step is None else {"complex": {"step": self.complex_step}}),
            "results": [r.to_dict() for r in self.results],
        }
        if self.constants:  # only with --constants: other documents keep their shape
            doc["tape_sources"] = {"constants": self.constants, "watched": self.watched,
                                   "unwatched": self.unwatched}
        if self.sum is not None:
            doc["sum"] = self.sum
        doc["warnings"] = self.warnings
        doc["notes"] = self.notes
        return clean(doc)
