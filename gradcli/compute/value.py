"""``eval``: the value of an expression at a point, alone, for scripts (no SymPy, no TensorFlow)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gradcli.compute.request import check_dtype
from gradcli.expression import parse
from gradcli.expression.evaluate import PYTHON_FLOAT64, compile_expression, numpy_backend
from gradcli.expression.points import check_covers, check_point_fits, parse_point, unused_variables_note
from gradcli.results import clean, shortest, value_warning


@dataclass
class ValueReport:
    expression: str
    point: dict[str, float]
    dtype: str
    value: float | None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "eval"

    def to_dict(self) -> dict:
        return clean({"command": self.command, "expression": self.expression, "point": self.point,
                      "dtype": self.dtype, "value": self.value, "warnings": self.warnings})


def compute_value(expression: str, *, at: list[str] | str, dtype: str = "float64") -> ValueReport:
    """The value in ``dtype``, operation by operation as Python (float64) or NumPy (float32) computes it;
    an undefined or infinite value is a warning and ``failed`` (exit 1), never a number."""
    expr = parse(expression)
    point = parse_point(at, required=bool(expr.variables))  # a constant needs no point
    check_covers(point, expr.variables)
    dtype = check_dtype(dtype)
    check_point_fits(point, dtype)
    if dtype == "float64":
        value = float(compile_expression(expr.tree, PYTHON_FLOAT64)(point.values))
    else:
        import numpy as np

        t = np.dtype(dtype).type
        with np.errstate(all="ignore"):  # inf and NaN are reported below
            value = float(compile_expression(expr.tree, numpy_backend(dtype))({k: t(v) for k, v in point.values.items()}))
    report = ValueReport(expr.text, dict(point.values), dtype, shortest(value, dtype))
    if note := unused_variables_note(point, expr.variables, derivatives=False):
        report.notes.append(note)
    warning = value_warning(expr.text, value, point.values)
    if warning or not math.isfinite(value):
        report.warnings.append((warning or f"{expr.text} is not a finite number").split(";")[0])
        report.value = None
        report.failed = True
    return report
