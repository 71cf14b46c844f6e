"""What ``descend`` says about one run (one optimizer from one start), its trajectory, SymPy's stationary points."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STATUSES = ("converged", "max_steps", "diverged", "unbounded", "oscillating")
# Statuses that make the command exit 1.
FAILED_STATUSES = ("diverged", "unbounded")


@dataclass
class HistoryRow:
    step: int
    point: dict[str, float]
    value: float | None
    gradient_norm: float | None

    def to_dict(self) -> dict:
        return {"step": self.step, "point": self.point, "value": self.value, "gradient_norm": self.gradient_norm}


@dataclass
class StationaryPoint:
    point: dict[str, float]
    value: float | None
    kind: str | None  # minimum | maximum | saddle | degenerate | None (Hessian undefined there)
    distance: float | None = None  # from where the run ended

    def to_dict(self) -> dict:
        return {"point": self.point, "value": self.value, "kind": self.kind, "distance": self.distance}


@dataclass
class DescentRun:
    """One optimizer's run from one start: a row of the compiled loop, judged."""

    optimizer: str
    learning_rate: float
    status: str
    steps: int  # updates made
    final: dict[str, float]
    value: float | None
    gradient_norm: float | None
    message: str
    stopped_at: int | None = None  # the step that diverged or went unbounded
    suggested_learning_rate: float | None = None
    end_kind: str | None = None  # what the Hessian says about the end point, when it is stationary
    nearest_stationary: StationaryPoint | None = None  # SymPy's, at any distance
    reached: StationaryPoint | None = None  # SymPy's, when the run ended within the tolerance of it
    compiled: str = "tf.function"  # or "tf.function+XLA"
    seconds: float = 0.0  # the optimizer's compiled run over the batch of starts this start was in

    def to_dict(self) -> dict[str, Any]:
        return {
            "optimizer": self.optimizer,
            "learning_rate": self.learning_rate,
            "steps": self.steps,
            "status": self.status,
            "final": self.final,
            "value": self.value,
            "gradient_norm": self.gradient_norm,
            "message": self.message,
            "stopped_at": self.stopped_at,
            "suggested_learning_rate": self.suggested_learning_rate,
            "end_point_kind": self.end_kind,
            "nearest_stationary_point": None if self.nearest_stationary is None else self.nearest_stationary.to_dict(),
            "stationary_point": None if self.reached is None else self.reached.to_dict(),
            "basin": None,  # set by EndPointBasins.assign, when the basins come from the end points
            "compiled": self.compiled,
            "seconds": self.seconds,
        }
