"""``hessian --points/--grid``: the Hessian, and what it says, at every point of a batch."""

from __future__ import annotations


from gradcli.compute.batch import engine
from gradcli.compute.request import needed_variables
from gradcli.expression import parse
from gradcli.expression.points import check_hessian_size
from gradcli.compute.hessian import best_analysis, cross_check_hessian, judge_hessian
from gradcli.methods.fd_hessian import fd_hessians
from gradcli.methods.fd_notes import SIDE_NAMES, unresolved_hessian_warning
from gradcli.results import shortest


# fd evaluates 4n^2 stencil points of n coordinates per point, so a chunk's memory grows as points x n^3:
# 4,096 points over 100 variables went past 24 GB (killed); 4 points took 0.66 GB. points x n^3 stays under
# this bound, which changes nothing up to 9 variables at the default --batch-size.
HESSIAN_CHUNK_CUBE = 4_000_000


class HessianBatch(engine.BatchCore):
    command = "hessian"

    def __init__(self, expression: str, *, wrt: str | None = None, methods: str | None = None,
                 eps: float | None = None, dtype: str = "float64", formulas: bool = False,
                 symbolic_time_limit: float = 10.0):
        super().__init__(methods=methods, dtype=dtype, eps=eps, symbolic_time_limit=symbolic_time_limit,
                         formulas=formulas)
        self.expr = parse(expression)
        self.trees = [self.expr.tree]
        self.variables, self.wrt = needed_variables([self.expr], wrt)
        check_hessian_size(self.wrt, wrt_given=bool(wrt and wrt.strip()))

    def chunk_size(self, requested: int) -> int:
        """Points per chunk: memory follows points x n^3 (fd's stencil), so fewer at a time for many variables."""
        fitting = max(1, HESSIAN_CHUNK_CUBE // len(self.wrt) ** 3)
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

            t = tape_hessians(self.expr.tree, pts, self.wrt, dtype=self.dtype)
            mats["tape"], grads["tape"], structural = t.matrices, t.gradients, t.structural
        if "fd" in self.methods:
            f = fd_hessians(self.expr.tree, pts, self.wrt, dtype=self.dtype, eps=self.eps)
            mats["fd"], grads["fd"], steps, estimates = f.matrices, f.gradients, f.steps, f.estimates
            sides, unresolved = f.sides, f.unresolved
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
                if unresolved[k]:
                    record["warnings"].append(unresolved_hessian_warning(mats["fd"][k].tolist(),
                                                                         estimates[k].tolist(), self.wrt, self.dtype))
            est = None if estimates is None else estimates[k]
            self._judge(record, {m: mats[m][k] for m in order}, steps[k] if steps is not None else None, est,
                        None if shift is None else shift[k])
            if record["value"] is not None:
                self._analyse(record, {m: mats[m][k] for m in order}, {m: grads[m][k] for m in order},
                              steps[k] if steps is not None else None, est)
            warnings, undefined = record.pop("warnings"), record.pop("undefined")
            records.append(engine.close_record(engine.json_safe(record), warnings, undefined))  # null: not finite
        return engine.RecordBatch.of(records)

    def _out(self, method: str, x: float) -> float:
        return float(x) if method == "symbolic" else shortest(float(x), self.dtype)

    def _point_shift(self, pts, size: int, mats):
        """[P, n, n]: how far each exact entry moves from the point as read to the dtype's (float32): the
        point's rounding is no method's error, as in the single-point command. None in
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

    def _judge(self, record: dict, mats: dict, steps, estimates, shift=None) -> None:
        """Each entry on its own scale (|exact entry|, |f|): a tiny entry beside a huge one is still judged;
        ``shift`` [n, n]: the exact entries' move with the point's rounding, allowed for."""
        import numpy as np

        text, value = self.expr.text, record["value"]
        record["error"] = {}
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
        ref = mats.get("symbolic")
        if ref is None and "tape" in mats and "fd" in mats and estimates is not None and record["value"] is not None:
            warning = cross_check_hessian(mats["tape"], mats["fd"], estimates, wrt=self.wrt, dtype=self.dtype)
            if warning:
                record["warnings"].append(warning)
        if ref is None or record["value"] is None or not np.all(np.isfinite(ref)):
            return
        step = None if steps is None else float(np.min(steps))
        for m in ("tape", "fd"):
            if m not in mats or not np.all(np.isfinite(mats[m])):
                continue
            worst, warning = judge_hessian(m, mats[m], ref, wrt=self.wrt, dtype=self.dtype, value=value, step=step,
                                           estimates=estimates if m == "fd" else None, shift=shift)
            record["error"][m] = worst
            engine.note_error(self, m, worst)
            if warning:
                record["warnings"].append(warning)

    def _analyse(self, record: dict, mats: dict, grads: dict, steps, estimates) -> None:
        """As the single-point command (:func:`gradcli.compute.hessian.best_analysis`)."""
        found = best_analysis(mats, grads, dtype=self.dtype, step=None if steps is None else float(min(steps)),
                              fd_estimates=estimates)
        if found is not None:
            source, a, _ = found
            record.update({"analysis_source": source, "eigenvalues": a.eigenvalues, "definiteness": a.definiteness,
                           "critical_point": a.critical_point})


def _key(a: str, b: str, order: list[str] | None = None) -> tuple[str, str]:
    """The key SymPy's mixed partial was asked under: the pair in --wrt order (upper triangle)."""
    if order is not None and order.index(a) > order.index(b):
        return (b, a)
    return (a, b)
