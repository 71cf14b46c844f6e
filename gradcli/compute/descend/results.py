"""What ``descend`` reports: each optimizer's run, its trajectory, the stationary points SymPy found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gradcli.results import clean

STATUSES = ("converged", "max_steps", "diverged", "unbounded", "oscillating")


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
    nearest_stationary: StationaryPoint | None = None
    history: list[HistoryRow] = field(default_factory=list)
    compiled: str = "tf.function"  # or "tf.function+XLA"
    seconds: float = 0.0

    def to_dict(self, with_history: bool) -> dict:
        doc: dict[str, Any] = {
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
            "compiled": self.compiled,
            "seconds": self.seconds,
        }
        if with_history:
            doc["history"] = [h.to_dict() for h in self.history]
        return doc


@dataclass
class DescentReport:
    """``gradcli descend``: one or more optimizers racing from the same start."""

    expression: str
    variables: list[str]
    start: dict[str, float]
    dtype: str
    maximize: bool
    learning_rate: float
    max_steps: int
    tol: float
    momentum: float
    every: int | None  # --every as given: JSON carries the history only then
    runs: list[DescentRun]
    stationary_points: list[StationaryPoint] | None = None  # None: SymPy gave no answer in time
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "descend"
    setup_seconds: float = 0.0  # TensorFlow's one-time start, before the first run (not billed to it)

    def to_dict(self) -> dict:
        return clean({
            "command": self.command,
            "expression": self.expression,
            "start": self.start,
            "dtype": self.dtype,
            "maximize": self.maximize,
            "learning_rate": self.learning_rate,
            "max_steps": self.max_steps,
            "tol": self.tol,
            "momentum": self.momentum,
            "every": self.every,
            "setup_seconds": self.setup_seconds,
            "runs": [r.to_dict(self.every is not None) for r in self.runs],
            "stationary_points": None if self.stationary_points is None
            else [s.to_dict() for s in self.stationary_points],
            "warnings": self.warnings,
            "notes": self.notes,
        })
