"""``hessian``: the Hessian, and what it says, at every point of a batch, and at the ``--at`` point as a
batch of one (its document: gradcli.render.detail).

- tape: nested ``GradientTape``s, the outer one over the inner one's gradient, as the TF guide does
  (:func:`gradcli.methods.tape.tape_hessians`: per row up to ROWS_MAX variables, which shows every entry
  the tape reports as unconnected, else all rows at once).
- fd: central second differences (one-sided at a domain edge), every stencil point at once.
- symbolic: SymPy's exact Hessian, differentiated once in a bounded job, evaluated at every point.

The analysis (eigenvalues, definiteness, critical point, ...) is of the most trustworthy matrix at each
point: exact, else tape, else fd (:func:`gradcli.compute.judge.best_analysis`).
"""

from __future__ import annotations


from gradcli.compute.batch import engine
from gradcli.compute.tape_origin import origin_note
from gradcli.compute.request import needed_variables
from gradcli.errors import UsageError
from gradcli.expression import parse
from gradcli.expression.points import check_hessian_size
from gradcli.compute.judge import (best_analysis, cross_check, cross_check_hessian, cross_disagreement, disagreement,
                                  judge_gradients, judge_hessian, tape_asymmetry_warning,
                                  unchecked_beside_a_broken_tape)
from gradcli.methods import fd_error
from gradcli.methods.fd import fd_gradients
from gradcli.methods.fd_hessian import fd_hessians
from gradcli.methods.fd_notes import SIDE_NAMES, fd_line_notes, unresolved_hessian_warning
from gradcli.results import shortest


# fd evaluates 4n^2 stencil points of n coordinates per point, so a chunk's memory grows as points x n^3:
# 4,096 points over 100 variables went past 24 GB (killed); 4 points took 0.66 GB. points x n^3 stays under
# this bound, which changes nothing up to 9 variables at the default --batch-size.
HESSIAN_CHUNK_CUBE = 4_000_000

# The header's words for the tape's way (gradcli.methods.tape.tape_hessians' modes).
TAPE_MODE_TEXT = {
    "rows": "per-row outer.gradient (the guide's loop)",
    "stacked": "the jacobian of the inner gradient as one outer.gradient over n stacked copies of the point "
               "(vectorised, no pfor)",
    "jacobian": "outer.jacobian of the inner gradient (vectorised, in one tf.function)",
}
# What the vectorised modes cannot say, at one point (where the table marks each structural zero).
_VECTORISED_NOTE = {
    "jacobian": "tape.jacobian (vectorised) does not say which single entries were unconnected; only variables "
                "the expression lacks are marked structural",
    "stacked": "the stacked tape (all rows in one outer gradient) does not say which single entries were "
               "unconnected; only variables the expression lacks are marked structural",
}
FD_ANALYSIS_NOTE = ("the analysis uses the fd Hessian: an eigenvalue within its entries' error estimates (each "
                    "entry on its own scale) is taken as zero")


class HessianBatch(engine.BatchCore):
    command = "hessian"

    def __init__(self, expression: str, *, wrt: str | None = None, methods: str | None = None,
                 eps: float | None = None, dtype: str = "float64", formulas: bool = False,
                 symbolic_time_limit: float = 10.0):
        super().__init__(methods=methods, dtype=dtype, eps=eps, symbolic_time_limit=symbolic_time_limit,
                         formulas=formulas)
        self.expr = parse(expression)
        self.trees = [self.expr.tree]
        self.exprs = [self.expr]  # as grad's core has them, for the tape's first wrong node (nan_origin)
        self.origins: dict = {}
        self.wrt_text = wrt
        self._refused = None  # a refusal that only many points raise (one point takes its variables)
        if wrt is None and not self.expr.variables:  # at the --at point the Hessian is over the point's names
            self.variables, self.wrt = [], []
            self._refused = UsageError("the expression has no variables, so nothing to differentiate at each "
                                       "point (name the variables with --wrt)")
        else:
            self.variables, self.wrt = needed_variables([self.expr], wrt)
        check_hessian_size(self.wrt, wrt_given=bool(wrt and wrt.strip()))

    def check(self, chunk) -> None:
        if self._refused is not None and self.at_point is False:
            raise self._refused
        super().check(chunk)

    def at_one_point(self, point) -> None:
        """At the --at point alone the variables are the point's, in the order typed (one given but not used
        is a row and column of zeros, and a note)."""
        from gradcli.compute.request import resolve_wrt
        from gradcli.expression.points import unused_variables_note

        super().at_one_point(point)
        used = self.expr.variables
        self.variables = list(point.names) + [v for v in used if v not in point.values]
        self.wrt = resolve_wrt(self.wrt_text, point)
        check_hessian_size(self.wrt, wrt_given=bool(self.wrt_text and self.wrt_text.strip()))
        if note := unused_variables_note(point, used):
            self.notes.append(note)

    @property
    def tape_mode(self) -> str:
        from gradcli.methods.tape import default_hessian_mode

        return default_hessian_mode(len(self.wrt))

    def start(self) -> None:
        super().start()
        if self.at_point is not False and "tape" in self.methods and self.tape_mode in _VECTORISED_NOTE:
            self.notes.append(_VECTORISED_NOTE[self.tape_mode])

    def chunk_size(self, requested: int) -> int:
        """Points per chunk: memory follows points x n^3 (fd's stencil), so fewer at a time for many variables."""
        fitting = max(1, HESSIAN_CHUNK_CUBE // max(1, len(self.wrt)) ** 3)
        if fitting < requested:
            self.notes.append(f"a Hessian over {len(self.wrt)} variables is computed {fitting} points at a time "
                              f"(--batch-size {requested} would not fit in memory)")
        return min(requested, fitting)

    def wanted(self):
        n = len(self.wrt)
        return [(0, (v,)) for v in self.wrt] + \
            [(0, (self.wrt[i], self.wrt[j])) for i in range(n) for j in range(i, n)]

    def fd_steps_along(self) -> tuple[list[str], int]:
        return list(self.wrt), 2

    def describe(self) -> dict:
        doc = {"expression": self.expr.text, "wrt": self.wrt,
               "tape": {"mode": TAPE_MODE_TEXT[self.tape_mode]} if "tape" in self.methods else None,
               "fd": self.fd_header("central second differences", "eps**0.25 * max(1, |x|), the step x + h takes")}
        if self._formulas is not None and self.formulas:
            texts = self._formulas[0].texts
            doc["formulas"] = [[texts.get(_key(a, b, self.wrt)) for b in self.wrt] for a in self.wrt]
        return doc

    def compute(self, chunk) -> engine.RecordBatch:
        import numpy as np

        size, n, pts = len(chunk), len(self.wrt), chunk.values
        value = self.value_column(0, pts, size)
        mats, grads, structural, steps, estimates = {}, {}, [], None, None
        if "tape" in self.methods:
            from gradcli.methods.tape import tape_hessians

            t = tape_hessians(self.expr.tree, pts, self.wrt, dtype=self.dtype, mode=self.tape_mode)
            mats["tape"], grads["tape"], structural = t.matrices, t.gradients, t.structural
        if "fd" in self.methods:
            f = fd_hessians(self.expr.tree, pts, self.wrt, dtype=self.dtype, eps=self.eps)
            # the gradient from grad's fd engine (its own steps, each value's estimate, kinks): the Hessian
            # stencil's first differences at eps^(1/4) have no estimate, and a huge f swamps them
            fg = fd_gradients(self.expr.tree, pts, self.wrt, dtype=self.dtype, eps=self.eps)
            for c in fd_error.absent_columns(self.expr.tree, self.wrt):  # 0 by construction, and known to be
                fg.values[:, c] = fg.estimates[:, c] = 0.0
                fg.kinks[:, c] = False
            mats["fd"], grads["fd"], steps, estimates = f.matrices, fg.values, f.steps, f.estimates
            sides, unresolved = f.sides, f.unresolved
            if self.at_point is not False:  # with its steps (a batch counts the points instead)
                from gradcli.methods.fd_notes import fd_hessian_note

                if note := fd_hessian_note(int(f.how[0]), f.steps[0].tolist(), f.sides[0].tolist(), self.wrt):
                    self.notes.append(note)
            else:
                self.count_adapted(f.how)
        if self._formulas is not None:
            m = np.full((size, n, n), np.nan)
            g = np.full((size, n), np.nan)
            for i, a in enumerate(self.wrt):
                g[:, i] = self.exact_column(0, (a,), pts, size)
                for j in range(i, n):
                    m[:, i, j] = m[:, j, i] = self.exact_column(0, _key(a, self.wrt[j]), pts, size)
            mats["symbolic"], grads["symbolic"] = m, g
        shift = self._point_shift(pts, size, mats)
        order = [m for m in self.methods if m in mats]
        gradient_said = self._judge_gradients(pts, size, value, grads, fg if "fd" in grads else None)
        records = []
        for k, point in enumerate(engine.point_dicts(chunk, self.variables)):
            record = engine.base_record(chunk, k, point)
            record["warnings"], record["undefined"] = [], False
            record["value"] = float(value[k])
            record["gradient"] = {m: {v: self._out(m, grads[m][k, i]) for i, v in enumerate(self.wrt)} for m in order}
            record["hessian"] = {m: [[self._out(m, x) for x in row] for row in mats[m][k].tolist()] for m in order}
            if "tape" in mats:
                record["structural_zeros"] = [[self.wrt[i], self.wrt[j]] for i, j in structural]
            if steps is not None:
                record["fd_step"] = {v: float(steps[k, i]) for i, v in enumerate(self.wrt)}
                record["fd_error_estimate"] = estimates[k].tolist()
                record["fd_sides"] = {v: SIDE_NAMES[int(s)] for v, s in zip(self.wrt, sides[k])}
                record["fd_gradient_error_estimate"] = {v: float(fg.estimates[k, i]) for i, v in enumerate(self.wrt)}
                record["warnings"] += self._fd_gradient_warnings(fg, k)
                if unresolved[k]:
                    record["warnings"].append(unresolved_hessian_warning(
                        mats["fd"][k].tolist(), estimates[k].tolist(), self.wrt, self.dtype,
                        one_sided=int(f.how[k]) == fd_error.ONE_SIDED))
            est = None if estimates is None else estimates[k]
            doubted = False if estimates is None else \
                (fg.kinks[k][:, None] | fg.kinks[k][None, :]) | (self.eps is not None)
            self._judge(record, {m: mats[m][k] for m in order}, est, None if shift is None else shift[k], doubted)
            if record["value"] is not None:
                record["warnings"] += gradient_said(k)
            if record["value"] is not None:
                self._analyse(record, {m: mats[m][k] for m in order}, {m: grads[m][k] for m in order}, est)
            warnings, undefined = record.pop("warnings"), record.pop("undefined")
            records.append(engine.close_record(engine.json_safe(record), warnings, undefined))  # null: not finite
        return engine.RecordBatch.of(records)

    def _fd_gradient_warnings(self, fg, k: int) -> list[str]:
        """grad's warnings for fd's gradient entries at point k: a kink, or a value no step resolves."""
        out = []
        for j, v in enumerate(self.wrt):
            warnings, _, _ = fd_line_notes(f"d({self.expr.text})/d{v}", "", dtype=self.dtype,
                                           value=float(fg.values[k, j]), estimate=float(fg.estimates[k, j]),
                                           step=float(fg.steps[k, j]), how=0, kink=bool(fg.kinks[k, j]),
                                           left=float(fg.left[k, j]), right=float(fg.right[k, j]),
                                           explicit_step=self.eps is not None)
            out += warnings
        return out

    def _out(self, method: str, x: float) -> float:
        return float(x) if method == "symbolic" else shortest(float(x), self.dtype)

    def _point_shift(self, pts, size: int, mats):
        """[P, n, n]: how far each exact entry moves from the point as read to the dtype's (float32): the
        point's rounding is no method's error, at one point as at many. None in
        float64 or without SymPy."""
        import numpy as np

        if self.dtype == "float64" or "symbolic" not in mats:
            return None
        with np.errstate(over="ignore"):
            rounded = {k: np.asarray(v, dtype=np.float64).astype(self.dtype).astype(np.float64)
                       for k, v in pts.items()}
        n = len(self.wrt)
        there = np.full((size, n, n), np.nan)
        for i, a in enumerate(self.wrt):
            for j in range(i, n):
                there[:, i, j] = there[:, j, i] = self.exact_column(0, _key(a, self.wrt[j]), rounded, size)
        with np.errstate(invalid="ignore"):
            shift = np.abs(there - mats["symbolic"])
        return np.where(np.isnan(shift), np.inf, shift)

    def _judge_gradients(self, pts, size: int, value, grads: dict, fg):
        """The record's gradient judged as grad judges it, every point at once: tape and fd against the exact
        gradient (fd within its own estimates), or, without it, against each other. Returns the warnings of
        point k, as a function of k."""
        import numpy as np

        x = np.stack([np.asarray(pts[v], dtype=np.float64) for v in self.wrt], axis=1)
        columns = {m: np.asarray(g, dtype=np.float64)[None] for m, g in grads.items()}  # [1, P, n]
        values = np.asarray(value, dtype=np.float64)[None]
        estimates = None if fg is None else fg.estimates[None]
        shift = None
        if self.dtype != "float64" and "symbolic" in columns:  # the point's rounding is no method's error
            with np.errstate(over="ignore"):
                rounded = {k: np.asarray(v, dtype=np.float64).astype(self.dtype).astype(np.float64)
                           for k, v in pts.items()}
            there = np.stack([self.exact_column(0, (v,), rounded, size) for v in self.wrt], axis=1)[None]
            with np.errstate(invalid="ignore"):
                shift = np.nan_to_num(np.abs(there - columns["symbolic"]), nan=np.inf)
        errors, disagree, tols = judge_gradients(values, columns, x, dtype=self.dtype, estimates=estimates,
                                                 shift=shift)
        doubted = None if fg is None else fg.kinks[None] | (self.eps is not None)
        cross = cross_check(values, columns, x, estimates, dtype=self.dtype, doubted=doubted)
        text = self.expr.text

        def said(k: int) -> list[str]:
            out = []
            for j, v in enumerate(self.wrt):
                kinked = fg is not None and bool(fg.kinks[k, j])
                for m, d in disagree.items():
                    # a kink: fd's own warning says why; the tape's value there is TensorFlow's convention, the
                    # exact column's the average of the one-sided derivatives (neither is a derivative)
                    if d[0, k, j] and not (m in ("fd", "tape") and kinked):
                        out.append(disagreement(m, f"d({text})/d{v}", float(errors[m][0, k, j]), dtype=self.dtype,
                                                tol=float(tols[m][0, k, j])))
                if cross is not None and fg.kinks[k, j] and self.eps is None:  # at the point: fd's value is none
                    continue
                if cross is not None and cross[1][0, k, j]:
                    out.append(cross_disagreement(f"d({text})/d{v}", float(cross[0][0, k, j]),
                                                  float(cross[2][0, k, j]), bool(cross[3][0, k, j]),
                                                  dtype=self.dtype))
                elif cross is not None and not np.isfinite(columns["tape"][0, k, j]) \
                        and np.isfinite(columns["fd"][0, k, j]):
                    out.append(unchecked_beside_a_broken_tape("fd", f"d({text})/d{v}", float(columns["fd"][0, k, j])))
            return out

        return said

    def _judge(self, record: dict, mats: dict, estimates, shift=None, doubted=False) -> None:
        """Each entry on its own scale (|exact entry|, |f|): a tiny entry beside a huge one is still judged;
        ``shift`` [n, n]: the exact entries' move with the point's rounding, allowed for; ``doubted`` [n, n]:
        where fd's own diagnostics doubt its estimate (a kink along either variable, a step --eps fixed)."""
        import numpy as np

        text, value = self.expr.text, record["value"]
        record["error"] = {}
        record["symmetry"] = dict.fromkeys(mats)  # max |H - H^T| per method, None where H is not finite
        if engine.undefined_value(record["warnings"], text, value):
            record["undefined"] = True
            record["value"] = None
            # derivatives of an undefined value are no numbers either
            record["gradient"] = {m: dict.fromkeys(g) for m, g in record["gradient"].items()}
            record["hessian"] = {m: [[None] * len(row) for row in h] for m, h in record["hessian"].items()}
            return
        for m, h in mats.items():
            if not np.all(np.isfinite(h)):
                record["warnings"].append(f"the {m} Hessian is not finite")
                record["undefined"] = True
                if m == "tape":  # where the tape's own computation first went wrong, if it did
                    origin_note(self, 0, point=record["point"])
            else:
                record["symmetry"][m] = float(np.max(np.abs(h - h.T), initial=0.0))
        ref = mats.get("symbolic")
        if ref is None and "tape" in mats and "fd" in mats and estimates is not None and record["value"] is not None:
            warning = cross_check_hessian(mats["tape"], mats["fd"], estimates, wrt=self.wrt, dtype=self.dtype,
                                          doubted=doubted)
            if warning:
                record["warnings"].append(warning)
        if ref is None or record["value"] is None or not np.all(np.isfinite(ref)):
            return
        # entries along a variable at a kink have no second derivative: the tape's convention there is not judged
        at_kink = np.asarray(doubted, dtype=bool) if self.eps is None and doubted is not None \
            else np.zeros(ref.shape, dtype=bool)
        for m in ("tape", "fd"):
            if m not in mats or not np.all(np.isfinite(mats[m])):
                continue
            reference = np.where(at_kink, mats[m], ref) if m == "tape" and at_kink.any() else ref
            worst, warning = judge_hessian(m, mats[m], reference, wrt=self.wrt, dtype=self.dtype,
                                           estimates=estimates if m == "fd" else None, shift=shift)
            record["error"][m] = worst
            engine.note_error(self, m, worst)
            if warning:
                record["warnings"].append(warning)
        if warning := tape_asymmetry_warning(record["symmetry"].get("tape"), ref, dtype=self.dtype):
            record["warnings"].append(warning)

    def _analyse(self, record: dict, mats: dict, grads: dict, estimates) -> None:
        """What the most trustworthy matrix says there (:func:`gradcli.compute.judge.best_analysis`)."""
        found = best_analysis(mats, grads, dtype=self.dtype, fd_estimates=estimates)
        if found is not None:
            source, a, from_fd = found
            record.update({"analysis_source": source, "eigenvalues": a.eigenvalues, "definiteness": a.definiteness,
                           "critical_point": a.critical_point, "condition_number": a.condition_number,
                           "max_stable_learning_rate": a.max_stable_learning_rate})
            if from_fd and self.at_point is not False:
                self.notes.append(FD_ANALYSIS_NOTE)


def _key(a: str, b: str, order: list[str] | None = None) -> tuple[str, str]:
    """The key SymPy's mixed partial was asked under: the pair in --wrt order (upper triangle)."""
    if order is not None and order.index(a) > order.index(b):
        return (b, a)
    return (a, b)
