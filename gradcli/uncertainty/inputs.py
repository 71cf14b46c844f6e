"""The uncertain inputs: their means and standard deviations, correlations (``--correlation x,y=0.5``) or a
covariance file (``--covariance FILE``, a CSV matrix under a header of names), the covariance matrix Σ checked
symmetric positive semi-definite, and its lower-triangular factor L (Σ = L Lᵀ).

The inputs are x = μ + L u with u independent, mean 0 and variance 1 (normal, or uniform on ±√3): Monte Carlo
samples u; the second-order variance term is computed in u's coordinates, exactly for either distribution.
With L lower-triangular (Cholesky, in the inputs' order), u_i is input i's own part of the spread: what an
input's share of the variance counts.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass

from gradcli.errors import UsageError, number_text

DISTRIBUTIONS = ("normal", "uniform")
# E[u^4] of a standardised input: what the second-order variance term depends on besides H and Σ
FOURTH_MOMENT = {"normal": 3.0, "uniform": 9.0 / 5.0}
_CORRELATION = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\S+)\s*\Z")
# relative to the variances concerned: asymmetry, negative eigenvalues of the correlation matrix and Cholesky
# pivots below this are rounding
TOLERANCE = 1e-10


@dataclass(frozen=True)
class Correlations:
    """The ``--correlation`` pairs ({(a, b): rho}, a before b as typed) and the ``--covariance`` file's
    names and matrix (None: no file)."""

    pairs: dict
    file_names: tuple[str, ...] | None = None
    file_matrix: tuple[tuple[float, ...], ...] | None = None


def parse_correlations(texts: list[str] | None) -> dict:
    """``["x,y=0.5", ...]`` -> {("x", "y"): 0.5}; each rho in [-1, 1], each pair once, two different names."""
    pairs: dict = {}
    for text in texts or []:
        m = _CORRELATION.match(text)
        if not m:
            raise UsageError(f"--correlation: '{text}' is not of the form x,y=0.5")
        a, b, rho_text = m.groups()
        try:
            rho = float(rho_text)
        except ValueError:
            raise UsageError(f"--correlation {a},{b}: '{rho_text}' is not a number") from None
        if a == b:
            raise UsageError(f"--correlation {a},{b}: a correlation is between two different inputs")
        if not -1.0 <= rho <= 1.0:  # NaN too
            raise UsageError(f"--correlation {a},{b}: {rho_text} is not in [-1, 1]")
        if (a, b) in pairs or (b, a) in pairs:
            raise UsageError(f"--correlation: {a},{b} is given twice")
        pairs[(a, b)] = rho
    return pairs


def read_covariance_file(path: str) -> tuple[tuple[str, ...], tuple[tuple[float, ...], ...]]:
    """A CSV covariance matrix: a header of names, then a row per name (its first cell may be the name)."""
    where = f"--covariance {path}"
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = [r for r in csv.reader(f) if any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{where}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    if not rows:
        raise UsageError(f"{where}: the file is empty; write a header of names, then the matrix's rows")
    header = [c.strip() for c in rows[0]]
    if header and header[0] == "":
        header = header[1:]  # a corner cell above the row names
    n = len(header)
    if len(set(header)) != n or not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", h) for h in header):
        raise UsageError(f"{where}:1: the header must name each input once (e.g. x,y)")
    if len(rows) - 1 != n:
        raise UsageError(f"{where}: {n} names in the header but {len(rows) - 1} rows; the matrix is square")
    matrix = []
    for line, row in enumerate(rows[1:], start=2):
        cells = [c.strip() for c in row]
        if len(cells) == n + 1 and cells[0] == header[line - 2]:
            cells = cells[1:]
        if len(cells) != n:
            raise UsageError(f"{where}:{line}: {len(cells)} cells; the matrix has {n} columns")
        try:
            values = tuple(float(c) for c in cells)
        except ValueError:
            raise UsageError(f"{where}:{line}: every cell must be a number") from None
        if not all(math.isfinite(v) for v in values):
            raise UsageError(f"{where}:{line}: every cell must be a finite number")
        matrix.append(values)
    return tuple(header), tuple(matrix)


def covariance_matrix(names: list[str], sds: dict[str, float], correlations: Correlations, *,
                      option: str = "--at") -> list[list[float]]:
    """Σ over ``names``: the standard deviations (the file's variances for the inputs it names) with the
    correlations, checked symmetric positive semi-definite (exit 2 otherwise)."""
    index = {n: i for i, n in enumerate(names)}
    sd = [float(sds.get(n, 0.0)) for n in names]
    cov = [[0.0] * len(names) for _ in names]
    if correlations.file_names is not None:
        _place_file(cov, sd, index, correlations, sds)
    for i in range(len(names)):
        cov[i][i] = cov[i][i] if correlations.file_names and names[i] in correlations.file_names else sd[i] ** 2
    for (a, b), rho in correlations.pairs.items():
        for name in (a, b):
            if name not in index:
                raise UsageError(f"--correlation {a},{b}: {name} is not an input (the inputs: {', '.join(names)})")
        i, j = index[a], index[b]
        if correlations.file_names and a in correlations.file_names and b in correlations.file_names:
            raise UsageError(f"--correlation {a},{b}: the --covariance file already gives their covariance")
        cov[i][j] = cov[j][i] = rho * math.sqrt(cov[i][i]) * math.sqrt(cov[j][j])
    check_positive_semidefinite(cov, names)
    return cov


def _place_file(cov, sd, index, correlations: Correlations, sds: dict[str, float]) -> None:
    names = correlations.file_names
    for name in names:
        if name not in index:
            raise UsageError(f"--covariance: {name} is not an input (the inputs: {', '.join(index)})")
    for a, row in zip(names, correlations.file_matrix):
        for b, value in zip(names, row):
            cov[index[a]][index[b]] = value
    for name in names:
        variance = cov[index[name]][index[name]]
        if variance < 0:
            raise UsageError(f"--covariance: the variance of {name} is negative ({number_text(variance)})")
        given = sds.get(name)
        if given is not None and not math.isclose(given, math.sqrt(variance), rel_tol=1e-9, abs_tol=0.0):
            raise UsageError(f"--at gives {name} a standard deviation of {number_text(given)} but the --covariance "
                             f"file {number_text(math.sqrt(variance))}; give it in one place")


def check_positive_semidefinite(cov: list[list[float]], names: list[str]) -> None:
    """Exit 2 unless ``cov`` is symmetric and positive semi-definite, judged on the correlation matrix (the
    inputs' units apart: an sd of 1e-7 beside one of 2 is no rounding error), to TOLERANCE; an input without
    spread has no covariance with any other."""
    import numpy as np

    a = np.array(cov, dtype=np.float64)
    d = np.sqrt(np.clip(np.diag(a), 0.0, None)) if a.size else np.zeros(0)
    scale = np.outer(d, d)
    asym = np.abs(a - a.T) / np.where(scale > 0, scale, 1.0)
    if a.size and float(asym.max()) > TOLERANCE:
        i, j = np.unravel_index(int(np.argmax(asym)), asym.shape)
        raise UsageError(f"the covariance matrix is not symmetric: ({names[i]}, {names[j]}) is "
                         f"{number_text(a[i, j])} but ({names[j]}, {names[i]}) {number_text(a[j, i])}")
    fixed = d == 0
    for i in np.flatnonzero(fixed):
        j = int(np.argmax(np.abs(a[i])))
        if a[i, j] != 0:
            raise UsageError(f"the covariance matrix is not positive semi-definite: {names[i]} has no spread but a "
                             f"covariance of {number_text(a[i, j])} with {names[j]}")
    spread = ~fixed
    if spread.any():
        r = a[np.ix_(spread, spread)] / scale[np.ix_(spread, spread)]
        lowest = float(np.linalg.eigvalsh((r + r.T) / 2)[0])
        if lowest < -TOLERANCE:
            raise UsageError(f"the covariance matrix is not positive semi-definite (an eigenvalue of the "
                             f"correlation matrix is {lowest:.3g}): the correlations contradict each other")


def factor(cov: list[list[float]]):
    """L, lower-triangular with Σ = L Lᵀ: Cholesky, a pivot of (rounding) zero, relative to the input's own
    variance, giving a zero column (a semi-definite Σ: an input fixed, or perfectly correlated with earlier
    ones)."""
    import numpy as np

    a = np.array(cov, dtype=np.float64)
    n = a.shape[0]
    lower = np.zeros_like(a)
    for j in range(n):
        pivot = a[j, j] - float(lower[j, :j] @ lower[j, :j])
        if pivot <= TOLERANCE * a[j, j] or a[j, j] <= 0:
            continue  # no spread of its own: its column stays 0
        lower[j, j] = math.sqrt(pivot)
        for i in range(j + 1, n):
            lower[i, j] = (a[i, j] - float(lower[i, :j] @ lower[j, :j])) / lower[j, j]
    return lower


def check_distribution(value) -> str:
    text = str(getattr(value, "value", value)).lower()
    if text not in DISTRIBUTIONS:
        raise UsageError(f"Invalid value for '--distribution': '{value}' is not one of 'normal', 'uniform'.")
    return text
