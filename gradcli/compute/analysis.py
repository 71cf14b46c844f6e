"""What a Hessian says about a point: eigenvalues, definiteness, the kind of critical point,
the condition number, and the largest stable learning rate for plain gradient descent (2/λmax)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradcli.dtypes import MACHINE_EPSILON


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


def zero_eigenvalues(h, entry_errors) -> tuple[int, int, int]:
    """(positive, negative, zero) eigenvalue counts of the symmetric ``h``, each entry judged on its own error.

    By Sylvester's law of inertia D H D has H's signs for any nonsingular diagonal D, so the counts come
    from H scaled by D = diag(1/sqrt|H_ii|): its entries are O(1) whatever H's scales (diagonal 2e8 and 2e-4
    alike). Each eigenvalue of the scaled matrix is zero when within its own first-order error bound
    |v|^T |E| |v| (v its eigenvector, E the scaled errors; twice, for safety): an error in one row does not
    blur the eigenvalues that do not involve it."""
    import numpy as np

    errors = np.abs(np.asarray(entry_errors, dtype=np.float64))
    diag = np.abs(np.diag(h))
    rows = np.max(np.abs(h), axis=1)
    # a diagonal lost in its error scales its row by the larger of the two (1 for an empty row)
    size = np.maximum(diag, np.diag(errors))
    size = np.where(size > 0, size, np.where(rows > 0, rows, 1.0))
    d = 1.0 / np.sqrt(size)
    scaled = h * d[:, None] * d[None, :]
    scaled_errors = errors * d[:, None] * d[None, :]
    eig, vectors = np.linalg.eigh(scaled)
    v = np.abs(vectors)
    tol = 2.0 * np.einsum("ik,ij,jk->k", v, scaled_errors, v) + 8 * len(eig) * MACHINE_EPSILON["float64"]
    pos, neg = int(np.sum(eig > tol)), int(np.sum(eig < -tol))
    return pos, neg, len(eig) - pos - neg


def analyse_hessian(matrix: list[list[float]], gradient: list[float] | None = None, *,
                    dtype: str = "float64", gradient_tolerance: float | None = None,
                    eigenvalue_tolerance: float | None = None, entry_errors=None) -> HessianAnalysis:
    """Classify a symmetric matrix (symmetrised first) and, with the gradient, the critical point.

    ``entry_errors`` (n x n): each entry's own error; definiteness then comes from :func:`zero_eigenvalues`
    (scale-aware). Without it, ``eigenvalue_tolerance`` (default :func:`zero_tolerance`, tuned for rounding)
    is one tolerance for every eigenvalue. ``gradient_tolerance``: the gradient's norm, relative to the matrix's
    scale, that counts as vanishing; it depends on where the gradient comes from, so the caller gives it
    (:func:`gradcli.compute.judge.best_analysis`); without it only an exact 0 does."""
    import numpy as np

    h = np.array(matrix, dtype=np.float64)
    h = (h + h.T) / 2
    eig = [float(x) for x in np.linalg.eigvalsh(h)] if h.size else []
    tol = eigenvalue_tolerance if eigenvalue_tolerance is not None else zero_tolerance(matrix, dtype)
    if entry_errors is not None and h.size:
        pos, neg, zero = zero_eigenvalues(h, entry_errors)
    else:
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
        gtol = gradient_tolerance if gradient_tolerance is not None else 0.0
        gnorm = math.sqrt(sum(g * g for g in gradient))
        if gnorm <= gtol * max(1.0, max((abs(x) for row in matrix for x in row), default=0.0)):
            critical = {"positive-definite": "minimum", "negative-definite": "maximum",
                        "indefinite": "saddle"}.get(definiteness, "degenerate")
    abs_eig = [abs(x) for x in eig]
    condition = None
    if abs_eig and not zero and min(abs_eig) > 0:
        condition = max(abs_eig) / min(abs_eig)
    lam_max = max(eig) if eig else 0.0
    max_lr = 2.0 / lam_max if pos and lam_max > 0 else None
    return HessianAnalysis(eig, definiteness, critical, condition, max_lr)
