"""``hvp``: H·v of one expression along a direction v at every point of a batch (the --at point: a batch of
one), by three compositions of TensorFlow's modes, fd of the tape gradient and SymPy
(:mod:`gradcli.compute.hvp`), a chunk of points at a time on one tensor (:mod:`gradcli.compute.hvp_batch`),
judged as hessian's entries are (:func:`gradcli.compute.judge.judge_hvp_entries`)."""

from __future__ import annotations

import math
import time

from gradcli.compute import hvp_batch
from gradcli.compute.batch import engine
from gradcli.compute.hvp import FD_METHOD, HVP_METHODS, TAPE_METHODS, hvp_formulas, hvp_formulas_at, \
    parse_hvp_methods
from gradcli.compute.jvp import parse_direction
from gradcli.compute.tape_origin import origin_note
from gradcli.compute.judge import (cross_check_hvp, cross_disagreement, disagreement, judge_hvp_entries,
                                   unchecked_tape)
from gradcli.errors import UsageError
from gradcli.expression import Expression, parse
from gradcli.methods.fd_error import cannot_resolve
from gradcli.methods.fd_notes import fd_line_notes
from gradcli.results import clean as json_safe

# The summary's largest errors are per kind of method: the worst of the three tape compositions, and fd.
SUMMARY_KIND = {**{m: "tape" for m in TAPE_METHODS}, FD_METHOD: "fd"}


class HvpBatch(engine.BatchCore):
    command = "hvp"
    allowed_methods = HVP_METHODS

    def __init__(self, expression: str | Expression, *, along, methods: str | None = None, dtype: str = "float64",
                 symbolic_time_limit: float = 10.0):
        super().__init__(methods=",".join(parse_hvp_methods(methods)), dtype=dtype, eps=None,
                         symbolic_time_limit=symbolic_time_limit)
        self.expr = expression if isinstance(expression, Expression) else parse(expression)
        self.trees = [self.expr.tree]
        self.exprs = [self.expr]  # what gradcli.compute.tape_origin.origin_note reads of a core
        self.origins: dict = {}  # the tape's first wrong node (None: none), traced once a run
        self.variables = list(self.expr.variables)
        if not self.variables:
            raise UsageError(f"{self.expr.text} has no variable: its Hessian is empty")
        self.along_option = along  # --along as given, read again at one point
        self._refused = None  # a direction --at may still make sense of (at_one_point), else refused in check()
        try:
            self.direction = parse_direction(along, self.variables, dtype=self.dtype,
                                             unknown_why="which the expression does not use")
        except UsageError as exc:
            self.direction, self._refused = {v: 0.0 for v in self.variables}, exc
        self.wrt = list(self.variables)  # the H·v entries, in this order
        self._function = None
        self._symbolic_seconds = 0.0

    def at_one_point(self, point) -> None:
        """At the --at point alone: the entries in the order the point gives them (--along may name any of its
        variables; one the expression does not use has no entry)."""
        super().at_one_point(point)
        used = list(self.expr.variables)
        self.variables = list(point.names) + [v for v in used if v not in point.values]
        self.direction = parse_direction(self.along_option, self.variables, dtype=self.dtype,
                                         unknown_why="which --at does not give a value")
        self._refused = None
        self.wrt = [v for v in self.variables if v in used]

    def chunk_size(self, requested: int) -> int:
        """Points per chunk: one tensor of points x variables stays a few MiB (hvp_batch.chunk_size)."""
        return min(requested, hvp_batch.chunk_size(len(self.wrt)))

    def check(self, chunk) -> None:
        if self._refused is not None:
            raise self._refused
        super().check(chunk)

    def start(self) -> None:
        v = {k: self.direction[k] for k in self.wrt}
        self._started = time.monotonic()
        if self.at_point is not False:
            self._job = engine.start_symbolic(hvp_formulas_at, self.time_limit, self.expr.tree, list(self.variables),
                                              self.wrt, v, self.exact_points(), "symbolic" in self.methods)
        elif "symbolic" in self.methods:
            self._job = engine.start_symbolic(hvp_formulas, self.time_limit, self.expr.tree, list(self.variables),
                                              self.wrt, v)

    def header(self) -> dict:
        doc = super().header()
        self._symbolic_seconds = time.monotonic() - self._started  # SymPy's work, in its worker beside the tape
        return doc

    def describe(self) -> dict:
        return {"expression": self.expr.text, "wrt": list(self.wrt), "along": dict(self.direction)}

    # -----------------------------------------------------------------------------------------
    def compute(self, chunk) -> engine.RecordBatch:
        import numpy as np

        from gradcli.methods.tape_vectorise import vectorised_function

        size, pts = len(chunk), chunk.values
        if self._function is None:  # built once, called on every chunk
            self._function = vectorised_function(self.expr.tree, self.wrt, self.dtype)
        values = self.value_column(0, pts, size)  # [P]
        X = np.stack([np.asarray(pts[k], dtype=np.float64) for k in self.wrt], axis=1)
        padded = -(-size // hvp_batch.PAD) * hvp_batch.PAD  # whole SIMD lanes (hvp_batch.PAD)
        if padded > size:
            X = np.concatenate([X, np.repeat(X[-1:], padded - size, axis=0)])
        v = [self.direction[k] for k in self.wrt]
        results, fd = hvp_batch.tape_hvps_batch(self._function, X, v, self.dtype, self.methods)
        columns = {m: hv[:size] for m, (hv, _) in results.items()}  # method -> [P, n]
        seconds = {m: s / size for m, (_, s) in results.items()}
        estimates = steps = None
        if fd is not None:
            estimates, steps = fd[0][:size], fd[1][:size]
        if self._formulas is not None:
            start = time.perf_counter()
            columns["symbolic"] = np.stack([self.exact_column(0, (k,), pts, size) for k in self.wrt], axis=1)
            seconds["symbolic"] = (time.perf_counter() - start) / size + (
                self._symbolic_seconds if self.at_point is not False else 0.0)
        columns = {m: columns[m] for m in self.methods if m in columns}
        undefined = ~np.isfinite(values)
        for c in columns.values():  # derivatives of an undefined value are no numbers either
            c[undefined] = np.nan
        judged = self._judge(columns, estimates)
        errors = judged[0]
        records, issues = [], []
        points = engine.point_dicts(chunk, self.variables)
        for k in range(size):
            warnings: list[str] = []
            bad = self._warn(warnings, k, points[k], float(values[k]), columns, judged, estimates, steps)
            record = engine.base_record(chunk, k, points[k])
            record.update({
                "value": float(values[k]), "hvp": {m: c[k].tolist() for m, c in columns.items()},
                "max_error": {m: _largest(e[k]) for m, e in errors.items()},
                "fd_error_estimate": None if estimates is None else estimates[k].tolist(),
                "fd_step": None if steps is None else float(steps[k]), "seconds": dict(seconds)})
            records.append(json_safe(engine.close_record(record, warnings, bad)))
            if warnings:
                issues.append((points[k], warnings, bad))
        for m, e in errors.items():
            finite = e[np.isfinite(e)]
            engine.note_error(self, SUMMARY_KIND[m], float(finite.max()) if finite.size else None)
        return engine.RecordBatch(size, issues, lambda: records)

    def _judge(self, columns, estimates):
        """(error per method [P, n], where past its tolerance, the tolerances, without the exact column: each
        composition against fd {method: (gap, apart, tol)}, fd's unresolved entries or None)."""
        errors, disagree, tols = ({}, {}, {}) if "symbolic" not in columns else judge_hvp_entries(
            columns, columns["symbolic"], dtype=self.dtype, fd_method=FD_METHOD, fd_estimates=estimates)
        cross = {}
        if "symbolic" not in columns and FD_METHOD in columns:
            cross = {m: cross_check_hvp(columns[m], columns[FD_METHOD], estimates, dtype=self.dtype)
                     for m in TAPE_METHODS if m in columns}
        unresolved = None if estimates is None else cannot_resolve(columns[FD_METHOD], estimates, self.dtype)
        return errors, disagree, tols, cross, unresolved

    def _warn(self, warnings, k: int, point: dict, value: float, columns, judged, estimates, steps) -> bool:
        """One point's warnings: an undefined value or entry; each method past its tolerance of the exact
        entries (the entry furthest past it named); without them, a composition against fd; fd's own."""
        import numpy as np

        errors, disagree, tols, cross, unresolved = judged
        text = self.expr.text
        if engine.undefined_value(warnings, text, value):
            return True
        undefined = False
        bad = {m: [v for v, x in zip(self.wrt, c[k]) if not math.isfinite(x)] for m, c in columns.items()}
        bad = {m: names for m, names in bad.items() if names}
        if bad:
            said = "; ".join(f"{m}: {_names(names)}" for m, names in bad.items())
            warnings.append(f"H·v of {text} is not finite in its entries for {said}")
            undefined = True
        for m, d in disagree.items():
            if m in bad or not d[k].any():
                continue
            j = int(np.nanargmax(np.where(d[k], errors[m][k] / tols[m][k], -np.inf)))
            warnings.append(disagreement(m, f"H·v's entry for {self.wrt[j]}", float(errors[m][k, j]),
                                         dtype=self.dtype, tol=float(tols[m][k, j]),
                                         judged_as="fd" if m == FD_METHOD else "tape"))
            if m in TAPE_METHODS:  # where the tape's own computation went wrong, as a note
                origin_note(self, 0, point=point)
        apart = [m for m, (_, a, _) in cross.items() if m not in bad and FD_METHOD not in bad and a[k].any()]
        if apart:  # one warning: the compositions are tapes alike
            gap, a, tol = cross[apart[0]]
            j = int(np.nanargmax(np.where(a[k], gap[k] / tol[k], -np.inf)))
            warnings.append(cross_disagreement(f"H·v's entry for {self.wrt[j]} ({', '.join(apart)})",
                                               float(gap[k, j]), float(tol[k, j]), False, dtype=self.dtype))
        elif cross and unresolved is not None and FD_METHOD not in bad and unresolved[k].any():
            j = int(np.argmax(unresolved[k]))
            m = next(iter(cross))
            if m not in bad:
                warnings.append(unchecked_tape(f"H·v's entry for {self.wrt[j]} ({m})", float(columns[m][k, j]),
                                               float(estimates[k, j])))
        if estimates is not None and FD_METHOD not in bad:
            for j, v in enumerate(self.wrt):
                said, _, _ = fd_line_notes(f"H·v's entry for {v} ({FD_METHOD})", "", dtype=self.dtype,
                                           value=float(columns[FD_METHOD][k, j]), estimate=float(estimates[k, j]),
                                           step=float(steps[k]), how=0)
                if said:
                    warnings += said
                    break  # the first such entry: the others say the same of the same step
        if warnings and "symbolic" not in columns and any(m in columns for m in TAPE_METHODS):
            # no exact column to judge the tapes by: where their own computation went wrong is the evidence
            origin_note(self, 0, into=warnings, point=point)
        return undefined


def _largest(errors) -> float | None:
    import numpy as np

    finite = np.asarray(errors)[np.isfinite(errors)]
    return float(finite.max()) if finite.size else None


def _names(names: list[str]) -> str:
    return ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
