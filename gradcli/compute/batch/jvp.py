"""``jvp``: J·v of one or more expressions along a direction v at every point of a batch (the --at point: a
batch of one), four ways (:mod:`gradcli.compute.jvp`), judged as grad's gradient is
(:mod:`gradcli.compute.judge`): each method within its own tolerance of the exact value, and without it the
methods against each other and fd's and the complex step's own warnings."""

from __future__ import annotations

import math

from gradcli.compute import jvp as directional
from gradcli.compute.batch import engine
from gradcli.compute.complex_column import complex_columns, complex_cross_warnings, cross_check_complex
from gradcli.compute.judge import (cross_check, cross_disagreement, disagreement, judge_gradients,
                                   unchecked_beside_a_broken_tape, unchecked_tape)
from gradcli.compute.tape_origin import origin_note
from gradcli.compute.request import parse_expressions
from gradcli.errors import UsageError
from gradcli.methods.complex_step import sensitive_pieces
from gradcli.methods.fd import fd_gradients
from gradcli.methods.fd_error import cannot_resolve
from gradcli.methods.fd_notes import fd_line_notes
from gradcli.results import FIRST_ORDER_METHODS
from gradcli.results import clean as json_safe


class JvpBatch(engine.BatchCore):
    command = "jvp"
    allowed_methods = FIRST_ORDER_METHODS

    def __init__(self, expressions: list[str], *, along, methods: str | None = "symbolic,tape,fd,complex",
                 dtype: str = "float64", symbolic_time_limit: float = 10.0):
        super().__init__(methods=methods, dtype=dtype, eps=None, symbolic_time_limit=symbolic_time_limit)
        self.exprs = parse_expressions(expressions)
        self.trees = [e.tree for e in self.exprs]
        self.variables = list(dict.fromkeys(v for e in self.exprs for v in e.variables))
        self.along_option = along  # --along as given, read again at one point
        self._refused = None  # a direction --at may still make sense of (at_one_point), else refused in check()
        try:
            self.direction = directional.parse_direction(along, self.variables, dtype=self.dtype,
                                                         unknown_why="which the expressions do not use")
        except UsageError as exc:
            self.direction, self._refused = {v: 0.0 for v in self.variables}, exc
        self.origins: dict = {}  # expression -> the tape's first wrong node (None: none), traced once a run
        self._line_trees()

    def _line_trees(self) -> None:
        self.t = directional.free_name("t", self.variables)
        self.s = directional.free_name("s", [*self.variables, self.t])
        self.lines = [directional.line_tree(tree, self.direction, self.t, self.s) for tree in self.trees]

    def at_one_point(self, point) -> None:
        """At the --at point alone the variables are the point's, in the order typed (--along may name any)."""
        super().at_one_point(point)
        used = [v for e in self.exprs for v in e.variables]
        self.variables = list(point.names) + [v for v in dict.fromkeys(used) if v not in point.values]
        self.direction = directional.parse_direction(self.along_option, self.variables, dtype=self.dtype,
                                               unknown_why="which --at does not give a value")
        self._refused = None
        self._line_trees()

    def check(self, chunk) -> None:
        if self._refused is not None:
            raise self._refused
        super().check(chunk)

    def start(self) -> None:
        names = list(self.variables)
        if self.at_point is not False:
            self._job = engine.start_symbolic(directional.jvp_formulas_at, self.time_limit, self.trees, names,
                                              self.direction, self.exact_points(), "symbolic" in self.methods)
        elif "symbolic" in self.methods:
            self._job = engine.start_symbolic(directional.jvp_formulas, self.time_limit, self.trees, names,
                                              self.direction)

    def describe(self) -> dict:
        return {"expressions": [e.text for e in self.exprs], "along": dict(self.direction)}

    # -----------------------------------------------------------------------------------------
    def compute(self, chunk) -> engine.RecordBatch:
        import numpy as np

        size, pts = len(chunk), chunk.values
        values = np.stack([self.value_column(i, pts, size) for i in range(len(self.trees))])  # [T, P]
        columns: dict[str, np.ndarray] = {}  # method -> [T, P, 1]
        fd = cc = None
        if "tape" in self.methods:
            tape = directional.tape_jvps(self.trees, pts, self.variables, self.direction, self.dtype)
            columns["tape"] = tape[..., None]
        if "fd" in self.methods:
            s = directional.fd_scales(pts, self.direction)
            fd = _Fd([fd_gradients(t, {**pts, self.t: np.zeros(size), self.s: s}, [self.t], scheme="central",
                                   dtype=self.dtype) for t in self.lines], s)
            columns["fd"] = fd.values
            self.count_adapted(np.stack([r.how for r in fd.results], axis=1))
        if "complex" in self.methods:
            cc = self._complex(pts, size)
            columns["complex"] = cc.values
        if self._formulas is not None:
            columns["symbolic"] = np.stack([self.exact_column(i, directional.JV, pts, size)
                                            for i in range(len(self.trees))])[..., None]
        columns = {m: columns[m] for m in self.methods if m in columns}
        undefined = ~np.isfinite(values)
        for c in columns.values():  # derivatives of an undefined value are no numbers either
            c[undefined] = np.nan
        judged = self._judge(values, columns, pts, fd, cc)
        records, issues = [], []
        points = engine.point_dicts(chunk, self.variables)
        for k in range(size):
            warnings: list[str] = []
            bad = self._warn(warnings, points[k], k, values, columns, judged, fd, cc)
            record = engine.base_record(chunk, k, points[k])
            record.update(self._results(k, values, columns, judged[0], fd, cc))
            records.append(json_safe(engine.close_record(record, warnings, bad)))
            if warnings:
                issues.append((points[k], warnings, bad))
        for m, e in judged[0].items():
            finite = e[np.isfinite(e)]
            engine.note_error(self, m, float(finite.max()) if finite.size else None)
        return engine.RecordBatch(size, issues, lambda: records)

    def _complex(self, pts, size: int):
        """The complex step along v, [T, P, 1], in J·v's units. Along one coordinate it is grad's complex step
        by that variable times v_k (the point's real parts are then the typed ones, no addition rounds them);
        else on the line tree, v scaled to about unit length (directional.complex_scales)."""
        import numpy as np

        moved = [k for k, v in self.direction.items() if v != 0]
        if len(moved) == 1:
            v = self.direction[moved[0]]
            cc = complex_columns(self.trees, pts, moved, self.dtype)
            cc.values, cc.estimates, cc.steps = cc.values * v, cc.estimates * abs(v), cc.steps / abs(v)
            return cc
        s = directional.complex_scales(size, self.direction)
        cc = complex_columns(self.lines, {**pts, self.t: np.zeros(size), self.s: s}, [self.t], self.dtype)
        cc.values, cc.estimates, cc.steps = cc.values / s[:, None], cc.estimates / s[:, None], cc.steps * s[:, None]
        return cc

    def _scale(self, pts):
        """[P, 1]: the coordinate scale the tape's roundings are counted at: the largest |x_i| v moves, times
        the longest |v_i| (J·v is a sum of v_i df/dx_i)."""
        import numpy as np

        size = len(next(iter(pts.values()))) if pts else 1
        x = np.zeros(size)
        big = max((abs(v) for v in self.direction.values()), default=0.0)
        for k, v in self.direction.items():
            if v != 0:
                x = np.maximum(x, np.abs(np.asarray(pts[k], dtype=np.float64)))
        return (x * big)[:, None]

    def _judge(self, values, columns, pts, fd, cc):
        """(error per method [T, P, 1], where past its tolerance, the tolerances, the tape-fd cross-check
        without the exact column or None, the complex step's or None, fd's unresolved values or None)."""
        x = self._scale(pts)
        estimates = None if fd is None else fd.estimates
        complex_estimates = None if cc is None else cc.estimates
        errors, disagree, tols = judge_gradients(values, columns, x, dtype=self.dtype, estimates=estimates,
                                                 shift=self._point_shift(columns, pts),
                                                 complex_estimates=complex_estimates)
        doubted = None if fd is None else fd.kinks
        cross = cross_check(values, columns, x, estimates, dtype=self.dtype, doubted=doubted)
        cross_complex = cross_check_complex(values, columns, x, {"fd": estimates, "complex": complex_estimates},
                                            dtype=self.dtype, fd_doubted=False if doubted is None else doubted)
        unresolved = None if fd is None else cannot_resolve(fd.values, fd.estimates, self.dtype)
        return errors, disagree, tols, cross, cross_complex, unresolved

    def _point_shift(self, columns, pts):
        """[T, P, 1]: how far the exact J·v moves from the point as read (float64) to the dtype's (float32):
        the point's rounding is no method's error. None in float64."""
        import numpy as np

        if self.dtype == "float64" or "symbolic" not in columns:
            return None
        with np.errstate(over="ignore"):
            rounded = {k: np.asarray(v, dtype=np.float64).astype(self.dtype).astype(np.float64)
                       for k, v in pts.items()}
        size = len(next(iter(pts.values()))) if pts else 1
        there = np.stack([self.exact_column(i, directional.JV, rounded, size)
                          for i in range(len(self.trees))])[..., None]
        with np.errstate(invalid="ignore"):
            shift = np.abs(there - columns["symbolic"])
        return np.where(np.isnan(shift), np.inf, shift)

    def _warn(self, warnings, point, k, values, columns, judged, fd, cc) -> bool:
        """One point's warnings, grad's rules for J·v; True when a value or a J·v is undefined."""
        errors, disagree, tols, cross, cross_complex, unresolved = judged
        undefined = False
        for i, text in enumerate(e.text for e in self.exprs):
            if engine.undefined_value(warnings, text, float(values[i, k])):
                undefined = True
                continue
            subject = f"J·v of {text}"
            index = (i, k, 0)
            before = len(warnings)
            bad = {m: float(c[index]) for m, c in columns.items() if not math.isfinite(c[index])}
            if cc is not None and cc.not_analytic[index]:
                bad.pop("complex", None)
                pieces = sensitive_pieces(self.trees[i])
                warnings.append(f"complex step: {subject} has no value: the expression is not analytic along v "
                                f"there{' (' + ', '.join(pieces) + ')' if pieces else ''}")
            if bad:
                said = ", ".join(f"{m}: {'undefined' if math.isnan(x) else x}" for m, x in bad.items())
                warnings.append(f"{subject} is not finite ({said})")
                undefined = True
                if "tape" in bad and "symbolic" not in columns:
                    warnings += [unchecked_beside_a_broken_tape(m, subject, float(c[index]))
                                 for m, c in columns.items() if m not in bad and m != "tape"]
            kink = fd is not None and bool(fd.kinks[index])
            for m, d in disagree.items():
                if d[index] and m not in bad and not (m == "fd" and kink):
                    warnings.append(disagreement(m, subject, float(errors[m][index]), dtype=self.dtype,
                                                 tol=float(tols[m][index])))
                    if m == "tape":
                        origin_note(self, i, point=point)
            if not bad:  # the methods against each other, where all are finite (at a kink fd's warning says why)
                checked = cross is not None and not kink
                if checked and cross[1][index]:
                    warnings.append(cross_disagreement(subject, float(cross[0][index]), float(cross[2][index]),
                                                       bool(cross[3][index]), dtype=self.dtype))
                elif checked and unresolved[index]:
                    warnings.append(unchecked_tape(subject, float(columns["tape"][index]),
                                                   float(fd.estimates[index])))
                warnings += complex_cross_warnings(cross_complex, index, subject, dtype=self.dtype)
            if cc is not None and "complex" not in bad and cc.unresolved[index]:
                estimate = float(cc.estimates[index])
                shown = (f"{float(cc.values[index]):.6g} +- {estimate:.2g}" if math.isfinite(estimate)
                         else f"{float(cc.values[index]):.6g}, with no error estimate")
                warnings.append(f"complex step: {subject} cannot be resolved ({shown}): {cc.unresolved[index]}")
            if fd is not None and "fd" not in bad:
                warnings += fd.warnings(index, subject, self.dtype)
            if len(warnings) > before and "symbolic" not in columns and "tape" in columns:
                # no exact column to judge the tape by: where its own computation went wrong is the evidence
                origin_note(self, i, into=warnings, point=point)
        return undefined

    def _results(self, k: int, values, columns, errors, fd, cc) -> dict:
        results = []
        for i, e in enumerate(self.exprs):
            estimate = {}
            if fd is not None:
                estimate["fd"] = float(fd.estimates[i, k, 0])
            if cc is not None:
                estimate["complex"] = float(cc.estimates[i, k, 0])
            results.append({"expression": e.text, "value": float(values[i, k]),
                            "jvp": {m: float(c[i, k, 0]) for m, c in columns.items()},
                            "error": {m: float(err[i, k, 0]) for m, err in errors.items()},
                            "error_estimate": estimate})
        return {"results": results, "fd_step": None if fd is None else float(fd.steps[k]),
                "complex_step": None if cc is None else float(cc.steps[0, k, 0])}


class _Fd:
    """fd along v for a chunk, over the expressions, in J·v's units (divided by the scale s): [T, P, 1]."""

    def __init__(self, results, s):
        import numpy as np

        self.results = results
        per = s[None, :, None]
        self.values = np.stack([r.values for r in results]) / per
        self.estimates = np.stack([r.estimates for r in results]) / per
        self.kinks = np.stack([r.kinks for r in results])
        self.left = np.stack([r.left for r in results]) / per
        self.right = np.stack([r.right for r in results]) / per
        self.steps = results[0].steps[:, 0] * s  # the step along v, in x's units per unit of v

    def warnings(self, index: tuple, subject: str, dtype: str) -> list[str]:
        """fd's own warnings of one value: a kink, a value no step resolves."""
        warnings, _, _ = fd_line_notes(subject, "", dtype=dtype, value=float(self.values[index]),
                                       estimate=float(self.estimates[index]), step=float(self.steps[index[1]]),
                                       how=0, kink=bool(self.kinks[index]), left=float(self.left[index]),
                                       right=float(self.right[index]))
        return warnings
