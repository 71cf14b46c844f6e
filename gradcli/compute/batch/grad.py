"""``grad --points/--grid``: the gradient of one or more expressions at every point of a batch."""

from __future__ import annotations

import math
import warnings as python_warnings

from gradcli.compute.batch import engine
from gradcli.compute.grad import parse_expressions, tolerance
from gradcli.errors import UsageError
from gradcli.methods import symbolic as exact
from gradcli.methods.fd import SCHEMES, STEP_POWER, fd_gradients
from gradcli.results import shortest


class GradBatch(engine.BatchCore):
    command = "grad"

    def __init__(self, expressions: list[str], *, wrt: str | None = None, methods: str | None = None,
                 scheme: str = "central", eps: float | None = None, dtype: str = "float64",
                 symbolic_time_limit: float = 10.0):
        super().__init__(methods=methods, dtype=dtype, eps=eps, symbolic_time_limit=symbolic_time_limit)
        self.exprs = parse_expressions(expressions)
        self.trees = [e.tree for e in self.exprs]
        self.variables, self.wrt = engine.needed_variables(self.exprs, wrt)
        if scheme not in SCHEMES:
            raise UsageError(f"--scheme must be one of {', '.join(SCHEMES)}, not '{scheme}'")
        self.scheme = scheme

    def wanted(self):
        return [(i, p) for i in range(len(self.exprs)) for p in [(v,) for v in self.wrt]]

    def describe(self) -> dict:
        doc = {"expressions": [e.text for e in self.exprs], "wrt": self.wrt,
               "fd": self.fd_header(self.scheme, f"eps**{STEP_POWER[self.scheme]:.4g} * max(1, |x|), "
                                    "the step x + h takes")}
        if self._formulas is not None:
            doc["formulas"] = [{v: f.texts.get((v,)) for v in self.wrt} for f in self._formulas]
        return doc

    # -----------------------------------------------------------------------------------------
    def compute(self, chunk) -> list[dict]:
        """Every method once for the chunk; the judging is vectorised, the records built from lists."""
        import numpy as np

        size, pts = len(chunk), chunk.values
        values = np.stack([exact.evaluate(t, pts, size) for t in self.trees])  # [T, P]
        columns: dict[str, np.ndarray] = {}  # method -> [T, P, n]
        unconnected: list[list[str]] = [[] for _ in self.exprs]
        steps, self._tape_sum = None, None
        if "tape" in self.methods:
            from gradcli.methods.tape import tape_gradients

            t = tape_gradients(self.trees, pts, self.wrt, dtype=self.dtype)
            columns["tape"], unconnected, tape_sum = t.gradients, t.unconnected, t.summed
        if "fd" in self.methods:
            results = [fd_gradients(t, pts, self.wrt, scheme=self.scheme, dtype=self.dtype, eps=self.eps)
                       for t in self.trees]
            columns["fd"] = np.stack([r.values for r in results])
            steps = results[0].steps
        if self._formulas is not None:
            columns["symbolic"] = np.stack([np.stack([self.exact_column(i, (v,), pts, size) for v in self.wrt],
                                                     axis=1) for i in range(len(self.exprs))])
        columns = {m: columns[m] for m in self.methods if m in columns}
        undefined = ~np.isfinite(values)
        for c in columns.values():  # derivatives of an undefined value are no numbers either
            c[undefined] = np.nan
        if "tape" in columns and len(self.exprs) > 1:  # what tape.gradient([z1, z2, ...]) returns
            tape_sum[undefined.any(axis=0)] = np.nan
            self._tape_sum = _lists(tape_sum, self.dtype)
        errors, disagree = self._judge(values, columns, pts, steps)
        return self._records(chunk, values, columns, errors, disagree, undefined, unconnected, steps)

    def _judge(self, values, columns, pts, steps):
        """(error per method [T, P, n], where it exceeds what the dtype and step explain [T, P, n])."""
        import numpy as np

        ref = columns.get("symbolic")
        if ref is None:
            return {}, {}
        x = np.stack([np.asarray(pts[v], dtype=np.float64) for v in self.wrt], axis=1) if self.wrt else \
            np.zeros((values.shape[1], 0))
        scale = np.maximum(np.maximum(1.0, np.abs(values)[..., None]), np.maximum(np.abs(ref), np.abs(x)[None]))
        errors, disagree = {}, {}
        with np.errstate(invalid="ignore"):
            for m in ("tape", "fd"):
                if m not in columns:
                    continue
                err = np.abs(columns[m] - ref)  # NaN where either is not finite: not compared
                tol = tolerance(m, dtype=self.dtype, scale=scale, step=None if m != "fd" else steps[None],
                                scheme=self.scheme)
                errors[m], disagree[m] = err, err > tol
        return errors, disagree

    def _records(self, chunk, values, columns, errors, disagree, undefined, unconnected, steps) -> list[dict]:
        import numpy as np

        cols = {m: _lists(c, self.dtype if m != "symbolic" else "float64") for m, c in columns.items()}
        errs = {m: _lists(e, "float64") for m, e in errors.items()}
        vals = _lists(values, "float64")
        step_rows = steps.tolist() if steps is not None else None
        flagged = undefined | np.any([~np.isfinite(c) for c in columns.values()], axis=(0, 3)) \
            if columns else undefined
        for d in disagree.values():
            flagged = flagged | d.any(axis=2)
        flagged_points = set(np.nonzero(flagged.any(axis=0))[0].tolist())
        wrt, texts, many = self.wrt, [e.text for e in self.exprs], len(self.exprs) > 1
        for m, e in errors.items():
            with python_warnings.catch_warnings():  # an all-NaN chunk (nothing compared) is not news
                python_warnings.simplefilter("ignore", RuntimeWarning)
                engine.note_error(self, m, float(np.nanmax(e)) if e.size else None)
        # per chunk, not per point: a dict per (method, expression, point), a result per (expression,
        # point), then a record per point (C-level dict(zip(...)) where a comprehension would cost a frame)
        size = values.shape[1]
        per_expression = []
        for i in range(len(texts)):
            gnames, enames = list(cols), list(errs)
            grows = zip(*[[dict(zip(wrt, row)) for row in cols[m][i]] for m in gnames]) if gnames else [()] * size
            erows = zip(*[[dict(zip(wrt, row)) for row in errs[m][i]] for m in enames]) if enames else [()] * size
            per_expression.append([
                {"expression": texts[i], "value": v, "gradient": dict(zip(gnames, g)), "error": dict(zip(enames, e)),
                 "unconnected": unconnected[i]} for v, g, e in zip(vals[i], grows, erows)])
        results = list(zip(*per_expression))
        records = []
        for k, point in enumerate(engine.point_dicts(chunk, self.variables)):
            record = engine.base_record(chunk, k, point)
            record["results"] = list(results[k])
            if many:
                record["sum"] = {m: dict(zip(wrt, self._tape_sum[k] if m == "tape" else
                                             _sum_rows([c[i][k] for i in range(len(texts))])))
                                 for m, c in cols.items()}
            if step_rows is not None:
                record["fd_step"] = dict(zip(wrt, step_rows[k]))
            warnings: list[str] = []
            undefined = k in flagged_points and self._warn(warnings, record["point"], k, values, columns, errors,
                                                           disagree, steps)
            records.append(engine.close_record(record, warnings, undefined))
        return records

    def _warn(self, warnings, point, k, values, columns, errors, disagree, steps) -> bool:
        """The single-point warnings, for one point that has something to say; True when it has an
        undefined value or derivative."""
        undefined = False
        for i, text in enumerate(e.text for e in self.exprs):
            if engine.undefined_value(warnings, text, float(values[i, k])):
                undefined = True
                continue
            for j, v in enumerate(self.wrt):
                bad = {m: c[i, k, j] for m, c in columns.items() if not math.isfinite(c[i, k, j])}
                if bad:
                    said = ", ".join(f"{m}: {'undefined' if math.isnan(x) else x}" for m, x in bad.items())
                    warnings.append(f"d({text})/d{v} is not finite ({said})")
                    undefined = True
                    continue
                for m, d in disagree.items():
                    if d[i, k, j]:
                        scale = max(1.0, abs(values[i, k]), abs(columns["symbolic"][i, k, j]),
                                    abs(point[v]))
                        tol = tolerance(m, dtype=self.dtype, scale=scale,
                                        step=None if m != "fd" else float(steps[k, j]), scheme=self.scheme)
                        warnings.append(
                            f"{m} and symbolic disagree on d({text})/d{v}: error {errors[m][i, k, j]:.3g} is more "
                            f"than {self.dtype} and the step explain (~{tol:.1g})")
        return undefined


def _lists(a, dtype: str) -> list:
    """A float array as nested lists, None where it is not finite (strict JSON), float32 values with the
    digits float32 needs."""
    import numpy as np

    if dtype == "float64" and np.isfinite(a).all():
        return a.tolist()  # the common case, and ~10x faster than through an object array
    obj = a.astype(object)
    obj[~np.isfinite(a)] = None
    if dtype != "float64":
        finite = np.isfinite(a)
        obj[finite] = [shortest(float(x), dtype) for x in a[finite]]
    return obj.tolist()


def _sum_rows(rows: list[list]) -> list:
    """Per variable, the sum over the expressions (None when any of them is None): the tape's several targets."""
    return [None if any(x is None for x in col) else sum(col) for col in zip(*rows)]
