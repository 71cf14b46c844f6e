"""``check``'s comparison at points: the expected formula against SymPy's derivative, both as exact values.

Each formula is evaluated in float64 with its running rounding bound (:func:`gradcli.methods.symbolic_values.bounded`,
the bound the batches' exact column trusts). Where both bounds vouch for their values and the difference
plus both bounds is within the tolerance, the point agrees without more work. Everywhere else (a float64
mismatch, or a value the bound does not vouch for: ``1e20*(1 - cos(x))`` near 0 loses every digit) both
formulas are evaluated at 30 digits (:func:`gradcli.methods.symbolic_values.exact_value`) at the point's
coordinates taken exactly, and that decides: a counterexample is always an exact one. Exact evaluations
cost about a millisecond each; a run spends at most :data:`EXACT_POINTS` of them and :data:`EXACT_SECONDS`,
and points left undecided past that are not counted as checked.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

# Points (times expectations) evaluated at 30 digits per run, and the seconds spent on them.
EXACT_POINTS = 600
EXACT_SECONDS = 5.0


def allowed(exact, rtol: float, atol: float):
    """How far a formula may be from the exact value ``exact`` (a number or an array) and still agree."""
    return atol + rtol * abs(exact)


@dataclass
class Outcome:
    """One batch of points compared: how many agree (``checked``; ``exact`` of them at 30 digits), how many
    were left undecided past the budget, the first counterexample, and each point's closeness (the largest
    |expected - exact| / tolerance over the expectations; NaN where nothing was decided there)."""

    checked: int = 0
    exact: int = 0
    left: int = 0
    counterexample: dict | None = None
    closeness: object = None
    differing: set = field(default_factory=set)


class ExactComparison:
    """The expectations (variable, expected tree, text) against SymPy's derivative trees, in one budget."""

    def __init__(self, expression_tree, expectations, exact_trees: dict, variables: list[str], order: int,
                 rtol: float, atol: float):
        self.expression_tree = expression_tree
        self.expectations = expectations
        self.exact_trees = exact_trees
        self.variables = variables
        self.order = order
        self.rtol, self.atol = rtol, atol
        self.spent_points = 0
        self.spent_seconds = 0.0
        self._sympy = None
        from gradcli.compute.check_points import kink_functions

        self.kinks = kink_functions(expression_tree)

    def budget_left(self) -> int:
        if self.spent_seconds > EXACT_SECONDS:
            return 0
        return max(0, EXACT_POINTS - self.spent_points)

    def compare(self, points: dict, size: int, share: float = 1.0) -> Outcome:
        """Compare at ``points`` (float64 arrays by variable); at most ``share`` of the budget left is spent."""
        import numpy as np

        from gradcli.methods import symbolic
        from gradcli.methods.symbolic_values import bounded, untrusted

        outcome = Outcome(closeness=np.full(size, np.nan))
        if size == 0:
            return outcome
        env = {v: np.asarray(points[v], dtype=np.float64) for v in self.variables}
        defined = ~np.isnan(symbolic.evaluate(self.expression_tree, env, size))
        for g in self.kinks:  # no derivative there to compare with, where the kink's argument is certainly 0
            value, bound, _ = bounded(g, env)
            defined &= ~np.broadcast_to((value == 0) & (bound == 0), (size,))
        agree = defined.copy()
        undecided = np.zeros(size, dtype=bool)
        q = np.zeros(size)
        kept = {}  # per expectation: the expected formula's float64 values where their bound vouches for them
        for e in self.expectations:
            want, want_bound, want_under = (np.broadcast_to(a, (size,)) for a in bounded(self.exact_trees[e.variable], env))
            got, got_bound, got_under = (np.broadcast_to(a, (size,)) for a in bounded(e.formula.tree, env))
            defined &= ~np.isnan(want)  # a NaN is outside the domain: no exact work there
            with np.errstate(all="ignore"):
                trusted = ~untrusted(want, want_bound, want_under) & ~untrusted(got, got_bound, got_under)
                gap = np.abs(got - want)
                sure = trusted & (gap + got_bound + want_bound
                                  <= allowed(np.maximum(np.abs(want) - want_bound, 0.0), self.rtol, self.atol))
                ratio = np.where(np.isfinite(got), gap / allowed(want, self.rtol, self.atol), np.inf)
            kept[e.variable] = (got, np.where(~untrusted(got, got_bound, got_under), got_bound, np.nan))
            q = np.fmax(q, np.where(np.isnan(ratio), np.inf, ratio))
            undecided |= ~sure
        agree &= ~undecided
        undecided &= defined
        q[~defined] = np.nan
        outcome.closeness = np.where(agree, q, np.nan)
        rows = np.flatnonzero(undecided)
        if rows.size:
            # float64 mismatches first, largest first; then the rest spread evenly over the batch
            suspects = rows[q[rows] > 1.0]
            suspects = suspects[np.argsort(-q[suspects], kind="stable")]
            rest = rows[~(q[rows] > 1.0)]
            cap = int(self.budget_left() * share)
            if rest.size > max(cap - suspects.size, 0):
                keep = max(cap - suspects.size, 0)
                rest = rest[np.linspace(0, rest.size - 1, keep).astype(int)] if keep else rest[:0]
            tried = 0
            for k in np.concatenate([suspects, rest]).astype(int).tolist():
                if self.budget_left() == 0:
                    break
                tried += 1
                verdict, ratio = self._exactly(k, env, kept)
                if verdict == "differs":
                    outcome.counterexample = ratio
                    outcome.differing.add(ratio["variable"])
                    break
                if verdict == "agrees":
                    outcome.exact += 1
                    agree[k] = True
                    outcome.closeness[k] = ratio
            if outcome.counterexample is None:  # else the check stops here: nothing is left for later
                outcome.left = int(rows.size - tried)
        outcome.checked = int(agree.sum())
        return outcome

    def _exactly(self, k: int, env: dict, kept: dict):
        """("agrees", closeness) / ("differs", counterexample) / ("undefined", None) at point ``k``, from the
        exact derivative's 30-digit value and the expected formula's, which is at 30 digits too unless its
        float64 value and bound (in ``kept``) agree whatever the rounding."""
        point = {v: float(env[v][k]) for v in self.variables}
        start = time.monotonic()
        try:
            worst = 0.0
            for e in self.expectations:
                self.spent_points += 1
                value, bound = (float(a[k]) for a in kept[e.variable])
                want = self.exact_at(e.variable, point)
                if want is None:
                    return "undefined", None
                limit = allowed(want, self.rtol, self.atol)
                # the float64 value stands where it agrees whatever its rounding; anywhere else (and for a
                # counterexample's numbers) the expected formula is evaluated at 30 digits too
                certain = math.isfinite(bound) and abs(value - want) + bound <= limit
                got = value if certain else self.expected_at(e.variable, point)
                # beyond float64's range (an exact value of 1e400 is +inf) only the same infinity agrees
                same = got == want if not math.isfinite(want) else got is not None and math.isfinite(got) \
                    and abs(got - want) <= limit
                if not same:
                    if self.at_kink(point):  # exp(x) - 1 at 0: a zero float64's bound could not vouch for
                        return "undefined", None
                    return "differs", self.counterexample(e, point, got, want)
                worst = max(worst, 0.0 if got == want else abs(got - want) / limit if limit > 0 else math.inf)
            return "agrees", worst
        finally:
            self.spent_seconds += time.monotonic() - start

    def values_at(self, variable: str, point: dict[str, float]) -> tuple[float | None, float] | None:
        """(expected, exact) at 30 digits at ``point``; None where the exact derivative is undefined."""
        want = self.exact_at(variable, point)
        return None if want is None else (self.expected_at(variable, point), want)

    def exact_at(self, variable: str, point: dict[str, float]) -> float | None:
        from gradcli.methods.symbolic_values import exact_value

        symbols, exact, _ = self.sympy_forms()
        want = exact_value(exact[variable], symbols, point)
        return None if want is None or math.isnan(want) else want

    def expected_at(self, variable: str, point: dict[str, float]) -> float | None:
        from gradcli.methods.symbolic_values import exact_value

        symbols, _, expected = self.sympy_forms()
        return exact_value(expected[variable], symbols, point)

    def at_kink(self, point: dict[str, float]) -> bool:
        """Whether the argument of one of the expression's kinks is exactly 0 at ``point``."""
        from gradcli.methods.symbolic import to_sympy
        from gradcli.methods.symbolic_values import exact_value

        symbols = self.sympy_forms()[0]
        return any(exact_value(to_sympy(g, symbols), symbols, point) == 0 for g in self.kinks)

    def sympy_forms(self):
        if self._sympy is None:
            from gradcli.methods.symbolic import symbols_for, to_sympy

            symbols = symbols_for(self.variables)
            self._sympy = (symbols,
                           {v: to_sympy(t, symbols) for v, t in self.exact_trees.items()},
                           {e.variable: to_sympy(e.formula.tree, symbols) for e in self.expectations})
        return self._sympy

    def counterexample(self, e, point: dict[str, float], got: float | None, want: float) -> dict:
        finite = got is not None and math.isfinite(got)
        both = finite and math.isfinite(want)
        return {"point": point, "variable": e.variable, "order": self.order, "expected_formula": e.text,
                "expected": got if finite else None, "exact": want,
                "difference": abs(got - want) if both else None,
                "allowed": allowed(want, self.rtol, self.atol) if both else None}
