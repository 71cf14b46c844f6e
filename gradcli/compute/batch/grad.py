"""``grad --points/--grid``: the gradient of one or more expressions at every point of a batch."""

from __future__ import annotations

import math
import warnings as python_warnings

from gradcli.compute.batch import engine
from gradcli.compute.batch import grad_point_notes as point_notes
from gradcli.compute.request import needed_variables, parse_expressions
from gradcli.compute.judge import (cross_check, cross_disagreement, disagreement, judge_gradients,
                                  unchecked_beside_a_broken_tape, unchecked_tape)
from gradcli.errors import UsageError
from gradcli.methods.fd import fd_gradients
from gradcli.methods.fd_schemes import SCHEMES, STEP_POWER
from gradcli.methods.fd_notes import fd_line_notes
from gradcli.compute.batch.grad_lines import Parts, as_lists, json_lines
from gradcli.compute.tape_origin import origin_note
from gradcli.results import FIRST_ORDER_METHODS, shortest


# fd evaluates 2n stencil points of n coordinates per point (central), so a chunk's memory grows as
# points x n^2: 4,096 points over 1,000 variables would be 65 GB per array. points x n^2 stays under this
# bound (128 MB per array), which changes nothing up to 44 variables at the default --batch-size.
GRAD_CHUNK_SQUARE = 8_000_000


class GradBatch(engine.BatchCore):
    command = "grad"
    allowed_methods = FIRST_ORDER_METHODS

    def __init__(self, expressions: list[str], *, wrt: str | None = None, methods: str | None = None,
                 scheme: str = "central", eps: float | None = None, dtype: str = "float64",
                 symbolic_time_limit: float = 10.0, constants: str | None = None, watch: str | None = None,
                 one_shot: bool = False):
        super().__init__(methods=methods, dtype=dtype, eps=eps, symbolic_time_limit=symbolic_time_limit)
        self.one_shot = one_shot  # --one-shot: also the guide's tape without persistent=True, asked twice
        self.exprs = parse_expressions(expressions)
        self.trees = [e.tree for e in self.exprs]
        self.variables, self.wrt = needed_variables(self.exprs, wrt)
        if scheme not in SCHEMES:
            raise UsageError(f"--scheme must be one of {', '.join(SCHEMES)}, not '{scheme}'")
        self.scheme = scheme
        self.wrt_text = wrt
        self.tape_sources = (constants, watch)  # --constants/--watch: resolved against the --at point
        self.constants: list[str] = []
        self.watched: list[str] = []
        self.origins: dict = {}  # one point: expression -> the tape's first wrong node (None: none), traced once
        from gradcli.expression.functions import value_only, value_only_note

        self.notes += [value_only_note(e.text) for e in self.exprs if value_only(e.tree)]

    def at_one_point(self, point) -> None:
        """At the --at point alone the variables are the point's, in the order typed (one given but not used
        is the guide's unconnected source: a row of zeros, and a note), and --constants/--watch apply."""
        from gradcli.compute.request import resolve_constants, resolve_wrt
        from gradcli.expression.points import unused_variables_note

        super().at_one_point(point)
        used = [v for e in self.exprs for v in e.variables]
        self.variables = list(point.names) + [v for v in dict.fromkeys(used) if v not in point.values]
        self.wrt = resolve_wrt(self.wrt_text, point)
        self.constants, self.watched = resolve_constants(*self.tape_sources, point, self.wrt)
        if note := unused_variables_note(point, used):
            self.notes.append(note)
        if self.constants and "tape" in self.methods:
            self.notes.append(point_notes.constants_note(self.unwatched, self.watched))

    @property
    def unwatched(self) -> list[str]:
        """The constants the tape does not watch: tape.gradient returns None for them, by TF's design."""
        return [v for v in self.constants if v not in self.watched]

    def chunk_size(self, requested: int) -> int:
        """Points per chunk: memory follows points x n^2 (fd's stencil), so fewer at a time for many variables."""
        fitting = max(1, GRAD_CHUNK_SQUARE // max(1, len(self.variables)) ** 2)
        if fitting < requested:
            self.notes.append(f"a gradient over {len(self.variables)} variables is computed {fitting} points at a "
                              f"time (--batch-size {requested} would not fit in memory)")
        return min(requested, fitting)

    def wanted(self):
        return [(i, p) for i in range(len(self.exprs)) for p in [(v,) for v in self.wrt]]

    def fd_steps_along(self) -> tuple[list[str], int]:
        return list(self.wrt), 1

    def describe(self) -> dict:
        doc = {"expressions": [e.text for e in self.exprs], "wrt": self.wrt,
               "fd": self.fd_header(self.scheme, f"eps**{STEP_POWER[self.scheme]:.4g} * max(1, |x|), "
                                    "the step x + h takes")}
        if self._formulas is not None:
            doc["formulas"] = [{v: f.texts.get((v,)) for v in self.wrt} for f in self._formulas]
        if "complex" in self.methods:
            from gradcli.methods.complex_step import COMPLEX_STEP

            doc["complex"] = {"step": COMPLEX_STEP[self.dtype]}
        if self.constants:
            doc["tape_sources"] = {"constants": self.constants, "watched": self.watched,
                                   "unwatched": self.unwatched}
        return doc

    # -----------------------------------------------------------------------------------------
    def compute(self, chunk) -> list[dict]:
        """Every method once for the chunk; the judging is vectorised, the records built from lists."""
        import numpy as np

        size, pts = len(chunk), chunk.values
        values = np.stack([self.value_column(i, pts, size) for i in range(len(self.trees))])  # [T, P]
        columns: dict[str, np.ndarray] = {}  # method -> [T, P, n]
        unconnected: list[list[str]] = [[] for _ in self.exprs]
        steps, tape_sum, fd, cc = None, None, None, None
        if "tape" in self.methods:
            from gradcli.methods.tape import tape_gradients

            t = tape_gradients(self.trees, pts, self.wrt, dtype=self.dtype, constants=self.constants,
                               watch=self.watched)
            columns["tape"], unconnected, tape_sum = t.gradients, t.unconnected, t.summed
            unwatched = [j for j, v in enumerate(self.wrt) if v in self.unwatched]
            columns["tape"][:, :, unwatched] = np.nan  # TF's None, not a number
            tape_sum[:, unwatched] = np.nan
            if self.one_shot:
                self.notes.append(point_notes.one_shot_note(self.trees, pts, self.wrt, self.dtype))
        if "fd" in self.methods:
            results = [fd_gradients(t, pts, self.wrt, scheme=self.scheme, dtype=self.dtype, eps=self.eps)
                       for t in self.trees]
            columns["fd"] = np.stack([r.values for r in results])
            steps = results[0].steps
            fd = _FdExtras(results, self.dtype)
            if self.at_point is not False:  # which values, and with which step (a batch counts the points instead)
                point_notes.adapted_notes(self, results)
            else:
                self.count_adapted(np.stack([r.how for r in results], axis=1))  # [P, T, n]
        if "complex" in self.methods:  # NumPy only, every expression and point at once
            from gradcli.compute.complex_column import complex_columns

            cc = complex_columns(self.trees, pts, self.wrt, self.dtype)
            columns["complex"] = cc.values
            if self.at_point is not False:
                point_notes.complex_step_notes(self, cc)
        if self._formulas is not None:
            columns["symbolic"] = np.stack([np.stack([self.exact_column(i, (v,), pts, size) for v in self.wrt],
                                                     axis=1) for i in range(len(self.exprs))])
        columns = {m: columns[m] for m in self.methods if m in columns}
        undefined = ~np.isfinite(values)
        for c in columns.values():  # derivatives of an undefined value are no numbers either
            c[undefined] = np.nan
        if "tape" in columns and len(self.exprs) > 1:  # what tape.gradient([z1, z2, ...]) returns
            tape_sum[undefined.any(axis=0)] = np.nan
            tape_sum = as_lists(tape_sum, self.dtype)
        if self.at_point is not False and "tape" in columns:  # what a --rule does to the tape's numerics there
            from gradcli.expression.rules import numerics_notes

            self.notes += numerics_notes(self.trees, [e.text for e in self.exprs],
                                         {v: float(pts[v][0]) for v in self.variables}, self.wrt, self.dtype,
                                         [dict(zip(self.wrt, columns["tape"][i, 0].tolist()))
                                          for i in range(len(self.trees))])
        judged = self._judge(values, columns, pts, steps, fd, cc)
        return self._records(chunk, values, columns, judged, undefined, unconnected, steps, fd, cc, tape_sum)

    def _judge(self, values, columns, pts, steps, fd, cc):
        """(error per method [T, P, n], where it exceeds its tolerance [T, P, n], the tolerances, the
        tape-fd cross-check without the exact column or None, the complex step's or None)."""
        import numpy as np

        from gradcli.compute.complex_column import cross_check_complex

        x = np.stack([np.asarray(pts[v], dtype=np.float64) for v in self.wrt], axis=1)
        estimates = None if fd is None else fd.estimates
        complex_estimates = None if cc is None else cc.estimates
        errors, disagree, tols = judge_gradients(values, columns, x, dtype=self.dtype, estimates=estimates,
                                                 shift=self._point_shift(columns, pts),
                                                 complex_estimates=complex_estimates)
        # fd's own diagnostics that doubt its estimate: a kink inside the stencil, a step --eps fixed
        doubted = None if fd is None else fd.kinks | (self.eps is not None)
        cross_complex = cross_check_complex(values, columns, x, {"fd": estimates, "complex": complex_estimates},
                                            dtype=self.dtype, fd_doubted=False if doubted is None else doubted)
        cross = cross_check(values, columns, x, estimates, dtype=self.dtype, doubted=doubted)
        loose = None  # where the tape may be further off than its tolerance, and nothing exact judges it
        if "tape" in columns and "symbolic" not in columns and ("fd" in columns or "complex" in columns):
            from gradcli.compute.complex_column import loose_tape_bounds

            loose = loose_tape_bounds(self.trees, pts, self.wrt, self.dtype, values, columns["tape"], cc)
        from gradcli.expression.functions import value_only

        for i, tree in enumerate(self.trees):  # stop_gradient: fd differentiates the value, by design apart
            if value_only(tree):
                for m in ("fd", "complex"):
                    if m in disagree:
                        disagree[m][i] = False
                if cross is not None:
                    cross[1][i] = False
                cross_complex = None
                if loose is not None:
                    loose[i] = np.nan
        return errors, disagree, tols, cross, cross_complex, loose

    def _point_shift(self, columns, pts):
        """[T, P, n]: how far each exact derivative moves from the point as read (float64) to the dtype's
        (float32): the point's rounding is no method's error. None in float64."""
        import numpy as np

        if self.dtype == "float64" or "symbolic" not in columns:
            return None
        with np.errstate(over="ignore"):
            rounded = {k: np.asarray(v, dtype=np.float64).astype(self.dtype).astype(np.float64)
                       for k, v in pts.items()}
        size = len(next(iter(pts.values()))) if pts else 1
        there = np.stack([np.stack([self.exact_column(i, (v,), rounded, size) for v in self.wrt], axis=1)
                          for i in range(len(self.exprs))])
        with np.errstate(invalid="ignore"):
            shift = np.abs(there - columns["symbolic"])
        return np.where(np.isnan(shift), np.inf, shift)

    def _records(self, chunk, values, columns, judged, undefined, unconnected, steps, fd, cc, tape_sum):
        import numpy as np

        errors, disagree, tols, cross, cross_complex, loose = judged
        watched = [j for j, v in enumerate(self.wrt) if v not in self.unwatched]
        flagged = undefined | np.any([(~np.isfinite(c if m != "tape" else c[:, :, watched])).any(axis=2)
                                      for m, c in columns.items()], axis=0) if columns else undefined
        for d in disagree.values():
            flagged = flagged | d.any(axis=2)
        if cross is not None:
            flagged = flagged | cross[1].any(axis=2)
        if cross_complex is not None:
            for _, apart, _ in cross_complex.pairs.values():
                flagged = flagged | apart.any(axis=2)
        if fd is not None:
            flagged = flagged | fd.remarkable()
        if loose is not None:
            flagged = flagged | np.isfinite(loose).any(axis=2)
        if cc is not None:  # values the complex step cannot resolve: a warning each (complex_column)
            flagged = flagged | (cc.unresolved != "").any(axis=2)
        for m, e in errors.items():
            with python_warnings.catch_warnings():  # an all-NaN chunk (nothing compared) is not news
                python_warnings.simplefilter("ignore", RuntimeWarning)
                engine.note_error(self, m, float(np.nanmax(e)) if e.size else None)
        size = values.shape[1]
        said = {}  # point index -> (point, warnings, undefined), only for the points that have something to say
        for k in np.nonzero(flagged.any(axis=0))[0].tolist():
            point = {v: float(chunk.values[v][k]) for v in self.variables}
            warnings: list[str] = []
            bad = self._warn(warnings, point, k, values, columns, judged, fd, cc)
            said[k] = (point, warnings, bad)
        parts = Parts(chunk, values, columns, errors, unconnected, steps, said, self.dtype,
                       None if fd is None else fd.estimates, None if cc is None else cc.estimates, fd,
                       None if cc is None else cc.steps, tape_sum)
        fast = len(self.exprs) == 1 and bool(self.wrt)
        return engine.RecordBatch(size, list(said.values()), lambda: self.dicts(parts, range(size)),
                                  (lambda: json_lines(self, parts)) if fast else None)

    def dicts(self, p: Parts, indices) -> list[dict]:
        """The records of the points ``indices`` as dicts; per chunk, not per point: a dict per (method,
        expression, point), a result per (expression, point), then a record per point (C-level
        dict(zip(...)), no per-point frames). The lists are the points' own, in ``indices``' order (``n``);
        the chunk's own arrays are indexed by point (``k``)."""
        wrt, texts = self.wrt, [e.text for e in self.exprs]
        indices = list(indices)
        whole = indices == list(range(p.values.shape[1]))
        cols, errs, vals, steps, ests, cests = p.lists(None if whole else indices)
        points = engine.point_dicts(p.chunk, self.variables, None if whole else indices)
        gnames, enames = list(cols), list(errs)
        positions = range(len(indices))
        per_expression = []
        for i in range(len(texts)):
            grows = zip(*[[dict(zip(wrt, cols[m][i][n])) for n in positions] for m in gnames]) if gnames \
                else [()] * len(indices)
            erows = zip(*[[dict(zip(wrt, errs[m][i][n])) for n in positions] for m in enames]) if enames \
                else [()] * len(indices)
            per_expression.append([
                {"expression": texts[i], "value": vals[i][n], "gradient": dict(zip(gnames, g)),
                 "error": dict(zip(enames, e)), "unconnected": p.unconnected[i]}
                for n, g, e in zip(positions, grows, erows)])
            if ests is not None:
                for n, result in zip(positions, per_expression[-1]):
                    result["fd_error_estimate"] = dict(zip(wrt, ests[i][n]))
            if cests is not None:
                for n, k, result in zip(positions, indices, per_expression[-1]):
                    result["complex_error_estimate"] = dict(zip(wrt, cests[i][n]))
                    result["complex_step"] = dict(zip(wrt, p.complex_steps[i][k].tolist()))
            if p.fd is not None:  # fd's one-sided values where it found a kink (each such point has a warning)
                for k, result in zip(indices, per_expression[-1]):
                    sided = p.fd.one_sided(i, k, wrt, self.dtype)
                    if sided:
                        result["one_sided"] = sided
        results = list(zip(*per_expression))
        records = []
        for n, k in enumerate(indices):
            record = engine.base_record(p.chunk, k, points[n])
            record["results"] = list(results[n])
            if len(texts) > 1:
                record["sum"] = {m: dict(zip(wrt, p.tape_sum[k] if m == "tape" else
                                             _sum_rows([c[i][n] for i in range(len(texts))])))
                                 for m, c in cols.items()}
            if steps is not None:
                record["fd_step"] = dict(zip(wrt, steps[n]))
            _, warnings, bad = p.said.get(k, (None, [], False))
            records.append(engine.close_record(record, warnings, bad))
        return records

    def _warn(self, warnings, point, k, values, columns, judged, fd, cc) -> bool:
        """The single-point warnings, for one point that has something to say; True when it has an
        undefined value or derivative. Where the expression is not analytic, the complex step's note is
        the point's warning (the point is not undefined for it)."""
        from gradcli.compute.complex_column import complex_cross_warnings
        from gradcli.expression.functions import value_only
        from gradcli.methods.complex_step import not_analytic_note

        from gradcli.compute.complex_column import loose_tape_warning

        errors, disagree, tols, cross, cross_complex, loose = judged
        undefined = False
        for i, text in enumerate(e.text for e in self.exprs):
            if engine.undefined_value(warnings, text, float(values[i, k])):
                undefined = True
                continue
            before = len(warnings)
            for j, v in enumerate(self.wrt):
                bad = {m: c[i, k, j] for m, c in columns.items() if not math.isfinite(c[i, k, j])
                       and not (m == "tape" and v in self.unwatched)}  # an unwatched None is the lesson
                if cc is not None and cc.not_analytic[i, k, j]:
                    bad.pop("complex", None)
                    warnings.append(not_analytic_note(text, v, None, self.trees[i]))
                if bad:
                    said = ", ".join(f"{m}: {'undefined' if math.isnan(x) else x}" for m, x in bad.items())
                    warnings.append(f"d({text})/d{v} is not finite ({said})")
                    undefined = True
                    point_notes.where_note(self, i, v, bad, columns, k, point)
                    if "tape" in bad and "symbolic" not in columns and not self._check_each_other(
                            cross_complex, fd, cc, (i, k, j)):  # what would have checked the others
                        warnings += [unchecked_beside_a_broken_tape(m, f"d({text})/d{v}", float(c[i, k, j]))
                                     for m, c in columns.items() if m not in bad and m != "tape"]
                kink = fd is not None and bool(fd.kinks[i, k, j])  # fd's own warning says why it is off
                if kink and "symbolic" in columns:
                    point_notes.kink_convention_note(self, i, v)
                for m, d in disagree.items():  # the finite ones are judged too (tape 0.0 beside fd's inf)
                    # at a kink fd's two-sided value is no derivative, and the tape's is TensorFlow's convention
                    # as the exact column's is the average of the one-sided derivatives: nothing to compare
                    if d[i, k, j] and m == "tape" and kink:
                        point_notes.kink_convention_note(self, i, v, column="tape")
                    if d[i, k, j] and m not in bad and not (m in ("fd", "tape") and kink):
                        warnings.append(disagreement(m, f"d({text})/d{v}", float(errors[m][i, k, j]),
                                                     dtype=self.dtype, tol=float(tols[m][i, k, j])))
                        if m == "tape":
                            origin_note(self, i, point=point)
                if "tape" in errors and "tape" not in bad and not disagree["tape"][i, k, j]:
                    point_notes.doubtful_tape(self, i, v, float(errors["tape"][i, k, j]),
                                              float(columns["symbolic"][i, k, j]), float(tols["tape"][i, k, j]),
                                              warnings)
                if not bad:  # the methods checked against each other: only where all of them are finite
                    # a kink no step got clear of (adaptive steps: at the point itself): fd's two-sided value is
                    # no derivative there, nothing to compare; with --eps the kink may only be inside the stencil
                    if cross is not None and kink and self.eps is None:
                        point_notes.kink_convention_note(self, i, v, column="tape")
                    elif cross is not None and cross[1][i, k, j]:
                        warnings.append(cross_disagreement(f"d({text})/d{v}", float(cross[0][i, k, j]),
                                                           float(cross[2][i, k, j]), bool(cross[3][i, k, j]),
                                                           dtype=self.dtype))
                    elif cross is not None and fd.unresolved[i, k, j] and not value_only(self.trees[i]):
                        warnings.append(unchecked_tape(f"d({text})/d{v}", float(columns["tape"][i, k, j]),
                                                       float(fd.estimates[i, k, j])))
                    elif loose is not None and math.isfinite(loose[i, k, j]):
                        warnings.append(loose_tape_warning(f"d({text})/d{v}", float(columns["tape"][i, k, j]),
                                                           float(loose[i, k, j])))
                    warnings += complex_cross_warnings(cross_complex, (i, k, j), f"d({text})/d{v}",
                                                       dtype=self.dtype)
                # each finite method's own warnings stand whatever another method did at this point
                if cc is not None and "complex" not in bad:
                    warnings += cc.warnings((i, k, j), text, v, None)
                if fd is not None and "fd" not in bad:
                    warnings += fd.warnings(i, k, j, f"d({text})/d{v}", self.dtype, self.eps is not None)
            if len(warnings) > before and "symbolic" not in columns and "tape" in columns:
                # no exact column to judge the tape by: where its own computation went wrong is the evidence
                origin_note(self, i, into=warnings, point=point)
        return undefined

    @staticmethod
    def _check_each_other(cross_complex, fd, cc, index) -> bool:
        """Whether fd and the complex step, both with finite estimates, agree within them at ``index``: then
        each checks the other, whatever the tape does."""
        if cross_complex is None or fd is None or cc is None or "fd" not in cross_complex.pairs:
            return False
        finite = math.isfinite(float(fd.estimates[index])) and math.isfinite(float(cc.estimates[index]))
        return finite and not bool(cross_complex.pairs["fd"][1][index])


class _FdExtras:
    """fd's estimates, kinks and adapted steps for a chunk, stacked over the expressions: [T, P, n]."""

    def __init__(self, results, dtype: str):
        import numpy as np

        from gradcli.methods.fd_error import cannot_resolve

        self.results = results
        self.estimates = np.stack([r.estimates for r in results])
        self.kinks = np.stack([r.kinks for r in results])
        self.values = np.stack([r.values for r in results])
        self.unresolved = cannot_resolve(self.values, self.estimates, dtype)  # estimate above 1% of the value

    def one_sided(self, i: int, k: int, wrt: list[str], dtype: str) -> dict:
        """{variable: {"left", "right"}}: the one-sided derivatives of expression i at point k where they differ."""
        r = self.results[i]
        return {v: {"left": shortest(float(r.left[k, j]), dtype), "right": shortest(float(r.right[k, j]), dtype)}
                for j, v in enumerate(wrt) if r.kinks[k, j]}

    def remarkable(self):
        """[P]: points with a kink or a value no step resolves (fd's own warning says so with adaptive
        steps; beside the tape without the exact column, :func:`gradcli.compute.judge.unchecked_tape`)."""
        return (self.kinks | self.unresolved).any(axis=(0, 2))

    def warnings(self, i: int, k: int, j: int, what: str, dtype: str, explicit_step: bool) -> list[str]:
        """The kink / cannot-resolve warnings of one value (adapted steps are not noted per point in a batch)."""
        r = self.results[i]
        warnings, _, _ = fd_line_notes(what, "", dtype=dtype, value=float(r.values[k, j]),
                                       estimate=float(r.estimates[k, j]), step=float(r.steps[k, j]), how=0,
                                       kink=bool(r.kinks[k, j]), left=float(r.left[k, j]),
                                       right=float(r.right[k, j]), explicit_step=explicit_step)
        return warnings


def _sum_rows(rows: list[list]) -> list:
    """Per variable, the sum over the expressions (None when any of them is None): the tape's several targets."""
    return [None if any(x is None for x in col) else sum(col) for col in zip(*rows)]
