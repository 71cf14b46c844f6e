"""What a Hessian says about a point: eigenvalues, definiteness, the kind of critical point,
the condition number, and the largest stable learning rate for plain gradient descent (2/λmax)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradcli.methods.fd import MACHINE_EPSILON


@dataclass
class HessianAnalysis:
    eigenvalues: list[float]
    definiteness: str  # positive-definite | negative-definite | indefinite | positive-semidefinite | negative-semidefinite
    critical_point: str | None  # minimum | maximum | saddle | degenerate, where the gradient vanishes
    condition_number: float | None  # |λ|max / |λ|min; None (infinite) when an eigenvalue is zero
    max_stable_learning_rate: float | None  # 2/λmax when λmax > 0

    def to_dict(self) -> dict:
        return {
            "eigenvalues": self.eigenvalues,
            "definiteness": self.definiteness,
            "critical_point": self.critical_point,
            "condition_number": self.condition_number,
            "max_stable_learning_rate": self.max_stable_learning_rate,
        }


def zero_tolerance(matrix: list[list[float]], dtype: str = "float64") -> float:
    """Eigenvalues smaller than this are zero: rounding in the entries, scaled by the matrix's size."""
    n = max(1, len(matrix))
    norm = max((abs(x) for row in matrix for x in row), default=0.0)
    return 100 * n * MACHINE_EPSILON[dtype] * max(1.0, norm)


def analyse_hessian(matrix: list[list[float]], gradient: list[float] | None = None, *,
                    dtype: str = "float64", gradient_tolerance: float | None = None,
                    eigenvalue_tolerance: float | None = None) -> HessianAnalysis:
    """Classify a symmetric matrix (symmetrised first) and, with the gradient, the critical point.

    ``eigenvalue_tolerance``: eigenvalues within it count as zero (default :func:`zero_tolerance`, which
    is tuned for rounding; a finite-difference matrix needs its larger truncation error here)."""
    import numpy as np

    h = np.array(matrix, dtype=np.float64)
    h = (h + h.T) / 2
    eig = [float(x) for x in np.linalg.eigvalsh(h)] if h.size else []
    tol = eigenvalue_tolerance if eigenvalue_tolerance is not None else zero_tolerance(matrix, dtype)
    pos = sum(1 for x in eig if x > tol)
    neg = sum(1 for x in eig if x < -tol)
    zero = len(eig) - pos - neg
    if pos and neg:
        definiteness = "indefinite"
    elif pos and not zero:
        definiteness = "positive-definite"
    elif neg and not zero:
        definiteness = "negative-definite"
    elif neg:
        definiteness = "negative-semidefinite"
    else:
        definiteness = "positive-semidefinite"  # includes the zero matrix
    critical = None
    if gradient is not None:
        gtol = gradient_tolerance if gradient_tolerance is not None else 1e3 * MACHINE_EPSILON[dtype]
        gnorm = math.sqrt(sum(g * g for g in gradient))
        if gnorm <= gtol * max(1.0, max((abs(x) for row in matrix for x in row), default=0.0)):
            critical = {"positive-definite": "minimum", "negative-definite": "maximum",
                        "indefinite": "saddle"}.get(definiteness, "degenerate")
    abs_eig = [abs(x) for x in eig]
    condition = None
    if abs_eig and min(abs_eig) > tol:
        condition = max(abs_eig) / min(abs_eig)
    lam_max = max(eig) if eig else 0.0
    max_lr = 2.0 / lam_max if lam_max > tol else None
    return HessianAnalysis(eig, definiteness, critical, condition, max_lr)
