"""Linear and second-order propagation from a gradient g and a Hessian H (gradcli's exact, tape and fd values).

With x = μ + L u (gradcli.uncertainty.inputs), g' = Lᵀg and H' = LᵀHL:

- linear: mean f(μ), variance gᵀΣg = |g'|²;
- second order: mean f(μ) + ½tr(HΣ), variance gᵀΣg + Var(½uᵀH'u) = gᵀΣg + c Σ_i H'_ii² + Σ_{i<j} H'_ij², where
  c = (E[u⁴] - 1)/4: ½ for normal inputs (the term is then ½tr((HΣ)²)), 1/5 for uniform ones. (The cross term
  Cov(g'ᵀu, ½uᵀH'u) is 0: u's distribution is symmetric.)

An input's share of a variance is that of its coordinate u_i: g'_i² of the linear one; c H'_ii² + ½ Σ_{j≠i}
H'_ij² of the second-order term (each pair split between its two inputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradcli.uncertainty.inputs import FOURTH_MOMENT


@dataclass
class SecondOrder:
    mean: float
    sd: float
    mean_shift: float  # ½tr(HΣ)
    variance_term: float  # what the second order adds to the linear variance
    shares: list[float]  # each input's share of variance_term (0s when it is 0)


def linear_sd(gradient: list[float], lower) -> float:
    """sqrt(gᵀΣg), as |Lᵀg| (never the root of a rounding-negative number)."""
    import numpy as np

    return float(math.sqrt(float(np.sum((lower.T @ np.asarray(gradient, dtype=np.float64)) ** 2))))


def linear_shares(gradient: list[float], lower) -> list[float]:
    """Each input's share of gᵀΣg (0s when it is 0)."""
    import numpy as np

    parts = (lower.T @ np.asarray(gradient, dtype=np.float64)) ** 2
    total = float(parts.sum())
    return [float(p / total) if total > 0 else 0.0 for p in parts]


def second_order(value: float, gradient: list[float], hessian: list[list[float]], lower,
                 distribution: str = "normal") -> SecondOrder:
    """The second-order mean and standard deviation, the mean shift, the variance term and its shares."""
    import numpy as np

    g = np.asarray(gradient, dtype=np.float64)
    h = np.asarray(hessian, dtype=np.float64)
    hp = lower.T @ h @ lower
    shift = 0.5 * float(np.trace(hp))  # ½tr(HΣ) = ½tr(LᵀHL)
    c = (FOURTH_MOMENT[distribution] - 1.0) / 4.0
    diagonal = c * np.diag(hp) ** 2
    off = hp ** 2 - np.diag(np.diag(hp) ** 2)
    per_input = diagonal + 0.5 * off.sum(axis=1)
    term = float(per_input.sum())
    linear = float(np.sum((lower.T @ g) ** 2))
    shares = [float(p / term) if term > 0 else 0.0 for p in per_input]
    return SecondOrder(value + shift, math.sqrt(linear + term), shift, term, shares)


def linear_covariance(jacobian: list[list[float]], lower) -> list[list[float]]:
    """J Σ Jᵀ for several expressions (J: a row per expression), as (JL)(JL)ᵀ."""
    import numpy as np

    jl = np.asarray(jacobian, dtype=np.float64) @ lower
    return (jl @ jl.T).tolist()
