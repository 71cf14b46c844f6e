"""The exact reference of a batch core: SymPy's formulas and the function itself at every point, float64
where a running rounding bound vouches for the value, else at 30 digits (:mod:`gradcli.methods.symbolic_values`),
within one budget per run; at a lone --at point, the exact values SymPy's bounded job evaluated ahead
(:func:`gradcli.methods.symbolic_values.differentiate_at`), so that no exact evaluation outlives
``--symbolic-timeout``. Mixed into :class:`gradcli.compute.batch.engine.BatchCore`, whose state it reads
(``trees``, ``variables``, ``dtype``, ``notes``, ``at_point``, ``_formulas``, ``_known``)."""

from __future__ import annotations


class ExactColumns:
    def exact_points(self) -> list[dict[str, float]]:
        """At one point, where the exact values are wanted: the point, and in float32 its rounding."""
        import numpy as np

        point = {v: float(self.at_point.values[v]) for v in self.variables}
        if self.dtype == "float64":
            return [point]
        with np.errstate(over="ignore"):
            return [point, {k: float(np.float64(x).astype(self.dtype)) for k, x in point.items()}]

    def exact_column(self, i: int, key: tuple[str, ...], points, size: int):
        """SymPy's derivative ``key`` of tree ``i`` at every point (NaN where it has no numeric form): float64
        where its rounding bound vouches for it, else at 30 digits, within one budget for the whole run
        (:mod:`gradcli.methods.symbolic_values`); values left in float64 past that budget get one note."""
        import numpy as np

        from gradcli.methods.symbolic import evaluate
        from gradcli.methods.symbolic_values import ExactValues

        tree = self._formulas[i].trees.get(key) if self._formulas is not None else None
        if tree is None:
            return np.full(size, np.nan)
        exact = self.__dict__.setdefault("_exact_values", ExactValues(known=self._known))  # one per run
        # where f itself is not finite the cores leave its derivatives out: no exact work there (kept per tree
        # for the chunk's other columns, which come with the same points object: with several trees their
        # value columns all come first, and f's exact value, not its float64 overflow, says where f is finite)
        undefined = self.__dict__.setdefault("_f_undefined", {})
        seen = undefined.get(i)
        if seen is None or seen[0] is not points:
            seen = undefined[i] = (points, ~np.isfinite(evaluate(self.trees[i], points, size)))
        column = exact.column((i, key), tree, points, size, skip=seen[1])
        self._keep_note("_exact_note_at", exact.note())
        if self.at_point is not False and size == 1 and points is not None:
            self._typed_point_note(i, key, tree, float(column[0]))
        return column

    def _typed_point_note(self, i: int, key: tuple[str, ...], tree, value: float) -> None:
        """At the --at point typed as a number float64 cannot hold (x=1-1e-9): every column is at its float64
        rounding; where the exact derivative at the typed point differs from the one printed by more than the
        column's own accuracy (2^-40 of it), a note says so with both (atanh's derivative at 1-1e-9 is
        500000000.25, at its float64 rounding 500000014.39)."""
        import math

        import sympy as sp

        from gradcli.methods import symbolic
        from gradcli.methods.exact_evaluation import EXACT_POINT_SECONDS, TRUSTED
        from gradcli.methods.symbolic_values import bounded_value_at

        exact = getattr(self.at_point, "exact", None)
        if not exact or not math.isfinite(value):
            return
        symbols = symbolic.symbols_for(self.variables)
        subs = symbolic.exact_point({k: v for k, v in exact.items() if k in symbols}, symbols)
        moved = {k: v for k, v in subs.items()
                 if v != sp.Rational(*float(self.at_point.values[k.name]).as_integer_ratio())}
        if not moved:
            return
        expr = symbolic.to_sympy(tree, symbols)
        if not any(s in expr.free_symbols for s in moved):
            return
        typed = bounded_value_at(expr, subs, EXACT_POINT_SECONDS)
        if typed is None or not math.isfinite(typed) or abs(typed - value) <= TRUSTED * abs(typed):
            return
        name = f"d/d{key[0]}" if len(key) == 1 else f"d{len(key)}/d{'d'.join(key)}"
        text = self.exprs[i].text if hasattr(self, "exprs") else self.expr.text
        moved_text = ", ".join(f"{k.name}={float(self.at_point.values[k.name]):.17g}" for k in moved)
        said = self.__dict__.setdefault("_typed_point_said", [])
        said.append(f"{name}({text}) is {value!r} there, {typed!r} at the typed point")
        self._keep_note("_typed_point_note_at", (f"the point as typed ({self.at_point.text()}) is not a float64 number: "
                                                 f"every column is at its float64 rounding ({moved_text}), and the "
                                                 f"derivatives move: " + "; ".join(said)))

    def value_column(self, i: int, points, size: int):
        """Tree ``i`` itself at every point: float64 where its rounding bound vouches for it, else exact (30
        digits), as one point gives it: a value that overflows or cancels in float64 (cosh(x)**2 - sinh(x)**2
        at 20, sqrt(x**2 + y**2) at 1e200) is not a wrong reference for the methods. A NaN (outside the
        domain) stays NaN without exact work: the points of a grid across a domain's edge are many."""
        from gradcli.methods.symbolic import evaluate
        from gradcli.methods.symbolic_values import ExactValues

        import numpy as np

        plain = evaluate(self.trees[i], points, size)
        exact = self.__dict__.setdefault("_exact_f_values", ExactValues(known=self._known))  # its own budget
        column = exact.column((i, "value"), self.trees[i], points, size, skip=np.isnan(plain))
        self.__dict__.setdefault("_f_undefined", {})[i] = (points, ~np.isfinite(column))  # for its derivatives
        note = exact.note()
        self._keep_note("_value_note_at", None if note is None else note.replace("symbolic:", "value:", 1))
        return column

    def _keep_note(self, slot: str, note: str | None) -> None:
        """One note per column kind, its count kept current (the notes are written after the last chunk)."""
        if note is None:
            return
        at = self.__dict__.setdefault(slot, len(self.notes))
        if at == len(self.notes):
            self.notes.append(note)
        else:
            self.notes[at] = note
