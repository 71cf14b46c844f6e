"""What a sweep of steps is: the steps themselves (1e-1 * max(1, |x|) down to the dtype's eps, every half
decade) and, per dtype and formula, its errors and its marked steps. Shared by the sweep's evaluation
(gradcli.compute.steps_eval), the command's report (gradcli.compute.steps) and its views."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradcli.dtypes import MACHINE_EPSILON

LARGEST_STEP = 0.1
STEPS_PER_DECADE = 2

COMPLEX = "complex"


@dataclass
class FormulaSweep:
    name: str
    accuracy: int
    points: int
    errors: list[float | None]  # per step of the sweep; None where the formula gives no finite number
    default_step: float | None = None
    default_error: float | None = None
    best_step: float | None = None
    best_error: float | None = None
    theory_step: float | None = None
    theory_error: float | None = None

    def to_dict(self) -> dict:
        return {"formula": self.name, "accuracy": self.accuracy, "points": self.points, "errors": self.errors,
                "default": {"step": self.default_step, "error": self.default_error},
                "best": {"step": self.best_step, "error": self.best_error},
                "theory": {"step": self.theory_step, "error": self.theory_error}}


@dataclass
class DtypeSweep:
    dtype: str
    x: float  # the point's coordinate in the dtype
    exact: float  # the exact derivative at the dtype's point
    steps: list[float]
    formulas: list[FormulaSweep]

    def to_dict(self) -> dict:
        return {"dtype": self.dtype, "x": self.x, "exact": self.exact, "steps": self.steps,
                "formulas": [f.to_dict() for f in self.formulas]}



def sweep_steps(dtype: str, x: float) -> list[float]:
    """1e-1 * max(1, |x|) down to eps * max(1, |x|), every half decade."""
    scale = max(1.0, abs(x))
    eps = MACHINE_EPSILON[dtype]
    count = int(math.floor(STEPS_PER_DECADE * math.log10(LARGEST_STEP / eps))) + 1
    return [LARGEST_STEP * 10 ** (-k / STEPS_PER_DECADE) * scale for k in range(count)]
