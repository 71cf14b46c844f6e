"""``grad --reduce sum|mean``: the gradient of a loss summed (or averaged) over the rows of a dataset, each
method's, with the per-example variance and the largest per-example gradient norm.

The sums are exact: every row's float64 value is added as an integer multiple of 2^-1126 (a float64 is
m × 2^e with an integer m below 2^53, and e - 53 >= -1126 even for subnormals) and the total is rounded once,
correctly (:class:`ExactSum`). So the result does not depend on the order or grouping of the rows: the same
bits for one file or four, one partition or sixty-four, the local engine or a Dask cluster. The variance is
(S2 - S1²/n)/(n - 1) in exact rational arithmetic from the exact sums S1 of the values and S2 of their
float64 squares (each square rounded as the row computes it: the same bits whatever the grouping), rounded
once. NumPy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

UNIT_EXPONENT = 1126  # a float64 is an integer number of 2^-1126
GROUP = 1024  # mantissas summed in int64 per slice: 1024 * 2^53 < 2^63


class ExactSum:
    """The exact sum of float64 values, added in any order and grouping; :meth:`value` rounds it once."""

    def __init__(self):
        self.total = 0  # in units of 2^-1126
        self.count = 0
        self.missing = 0  # values that were None, NaN or infinite: the sum is undefined then

    def add(self, values) -> None:
        v = np.asarray(values, dtype=np.float64)
        self.count += v.size
        finite = np.isfinite(v)
        self.missing += int(v.size - finite.sum())
        v = v[finite & (v != 0)]
        if not v.size:
            return
        m, e = np.frexp(v)
        mantissas = (m * 2.0 ** 53).astype(np.int64)
        order = np.argsort(e, kind="stable")
        mantissas, e = mantissas[order], e[order]
        starts = np.flatnonzero(np.r_[True, e[1:] != e[:-1]])
        for a, b in zip(starts, [*starts[1:], e.size]):
            shift = int(e[a]) - 53 + UNIT_EXPONENT
            group = sum(int(mantissas[i:min(i + GROUP, b)].sum()) for i in range(a, b, GROUP))
            self.total += group << shift

    def exact(self) -> Fraction | None:
        return None if self.missing else Fraction(self.total, 1 << UNIT_EXPONENT)

    def value(self) -> float | None:
        """The sum correctly rounded to float64 (Python's int / int division rounds correctly)."""
        return None if self.missing else _float(self.exact())


def _float(q: Fraction) -> float:
    try:
        return q.numerator / q.denominator
    except OverflowError:
        return math.inf if q > 0 else -math.inf


@dataclass
class Reduction:
    """One method's sums over the rows: per variable the values' and their squares' exact sums, and the
    largest per-row gradient norm."""

    variables: list[str]
    sums: dict = field(default_factory=dict)
    squares: dict = field(default_factory=dict)
    largest_norm: float = 0.0
    norm_missing: bool = False

    def add(self, columns: dict) -> None:
        squares_total = 0.0
        for v in self.variables:
            values = columns[v]
            self.sums.setdefault(v, ExactSum()).add(values)
            sq = values * values
            self.squares.setdefault(v, ExactSum()).add(sq)
            squares_total = squares_total + sq
        norms = np.sqrt(squares_total)
        if np.isnan(norms).any():
            self.norm_missing = True
        finite = norms[np.isfinite(norms)]
        if finite.size:
            self.largest_norm = max(self.largest_norm, float(finite.max()))

    def result(self, kind: str, rows: int) -> dict:
        gradient, variance = {}, {}
        for v in self.variables:
            s1, s2 = self.sums[v].exact(), self.squares[v].exact()
            if s1 is None:
                gradient[v] = variance[v] = None
                continue
            gradient[v] = _float(s1 / rows if kind == "mean" else s1)
            variance[v] = _float(max(Fraction(0), (s2 - s1 * s1 / rows) / (rows - 1))) \
                if rows > 1 and s2 is not None else None
        return {"gradient": gradient, "variance": variance,
                "largest_norm": None if self.norm_missing else self.largest_norm}


class GradientReduction:
    """The batch engine's sink for ``grad --reduce``: each chunk's per-row gradients added to every method's
    :class:`Reduction` (nothing kept per row); :meth:`document` the reduced result."""

    takes_lines = False

    def __init__(self, kind: str):
        self.kind = kind
        self.header: dict = {}
        self.rows = 0
        self.reductions: dict[str, Reduction] = {}
        self.fd_estimates: dict[str, ExactSum] = {}  # the sum of the rows' |estimate| bounds the sum's error
        self.end: tuple = ({}, "", [], [])

    def start(self, header: dict) -> None:
        self.header = header

    def write(self, batch) -> None:
        records = batch if isinstance(batch, list) else batch.records()
        if not records:
            return
        self.rows += len(records)
        variables = list(self.header.get("wrt") or self.header["variables"])
        for method in self.header["methods"]:
            columns = {v: np.array([_value(r, method, v) for r in records], dtype=np.float64) for v in variables}
            self.reductions.setdefault(method, Reduction(variables)).add(columns)
        if "fd" in self.header["methods"]:
            for v in variables:
                estimates = np.abs([_estimate(r, v) for r in records])
                self.fd_estimates.setdefault(v, ExactSum()).add(estimates)

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        self.end = (summary, summary_text, list(warnings), list(notes))

    def document(self, parameters: dict) -> dict:
        summary, _, warnings, notes = self.end
        warnings = list(warnings)
        results = {m: r.result(self.kind, self.rows) for m, r in self.reductions.items()}
        for method, result in results.items():
            missing = [v for v, g in result["gradient"].items() if g is None]
            if missing and self.rows:
                warnings.append(f"{method}: some rows have no value of d/d{missing[0]} (undefined there), so its "
                                f"{self.kind} is undefined")
        errors = self._errors(results)
        estimate = self._fd_estimate()
        warnings += self._outside_estimate(errors.get("fd", {}), estimate)
        if self.rows == 1:
            notes.append("one row: no per-example variance")
        h = self.header
        document = {"command": "grad", "reduce": self.kind, "expression": h["expressions"][0],
                    "wrt": list(h.get("wrt") or h["variables"]), "parameters": parameters, "rows": self.rows,
                    "dtype": h["dtype"], "methods": list(h["methods"]),
                    "gradient": {m: r["gradient"] for m, r in results.items()},
                    "error": errors,
                    "variance": {m: r["variance"] for m, r in results.items()},
                    "largest_norm": {m: r["largest_norm"] for m, r in results.items()},
                    "summation": "exact: every row's value added exactly, the total rounded once",
                    "rows_with_warnings": summary.get("with_warnings", 0), "warnings": warnings, "notes": notes}
        if estimate is not None:
            document["fd_error_estimate"] = estimate
        return document

    def _errors(self, results: dict) -> dict:
        """Each method's distance from symbolic's reduced gradient (none without symbolic)."""
        reference = results.get("symbolic")
        if reference is None:
            return {}
        errors = {}
        for method, result in results.items():
            if method == "symbolic":
                continue
            errors[method] = {v: None if g is None or reference["gradient"][v] is None
                              else abs(g - reference["gradient"][v]) for v, g in result["gradient"].items()}
        return errors

    def _fd_estimate(self) -> dict | None:
        """fd's error bound for the reduced gradient: the sum (or mean) of the rows' own estimates, since the
        reduction itself is exact but for its one final rounding."""
        if not self.fd_estimates:
            return None
        out = {}
        for v, total in self.fd_estimates.items():
            exact = total.exact()
            out[v] = None if exact is None else _float(exact / self.rows if self.kind == "mean" else exact)
        return out

    def _outside_estimate(self, fd_errors: dict, estimate: dict | None) -> list[str]:
        if not estimate:
            return []
        gradient = self.reductions["fd"].result(self.kind, self.rows)["gradient"] if "fd" in self.reductions else {}
        outside = [v for v, e in fd_errors.items()
                   if e is not None and estimate.get(v) is not None
                   and e > estimate[v] + 4 * 2.0 ** -53 * abs(gradient.get(v) or 0.0)]
        return [f"fd: the {self.kind} of d/d{v} is {fd_errors[v]:.2g} from symbolic's, outside fd's own "
                f"estimate {estimate[v]:.2g}" for v in outside]


def _estimate(record: dict, variable: str) -> float:
    value = (record["results"][0].get("fd_error_estimate") or {}).get(variable)
    return math.nan if value is None else value


def _value(record: dict, method: str, variable: str) -> float:
    gradient = record["results"][0]["gradient"].get(method) or {}
    value = gradient.get(variable)
    return math.nan if value is None else value


@dataclass
class ReductionReport:
    """``grad --reduce``'s result: ``to_dict()`` is its ``-f json`` document; ``failed``: a sum undefined."""

    document: dict

    @property
    def warnings(self) -> list[str]:
        return self.document["warnings"]

    @property
    def notes(self) -> list[str]:
        return self.document["notes"]

    @property
    def failed(self) -> bool:
        return any(g is None for grads in self.document["gradient"].values() for g in grads.values())

    def to_dict(self) -> dict:
        return self.document
