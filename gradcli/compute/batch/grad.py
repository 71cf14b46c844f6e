"""``grad --points/--grid``: the gradient of one or more expressions at every point of a batch."""

from __future__ import annotations

import math

from gradcli.compute.batch import engine
from gradcli.compute.grad import parse_expressions, tolerance
from gradcli.errors import UsageError
from gradcli.methods import symbolic as exact
from gradcli.methods.fd import SCHEMES, STEP_POWER, Scheme, fd_gradients
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
        import numpy as np

        size = len(chunk)
        pts = chunk.values
        values = [exact.evaluate(e.tree, pts, size) for e in self.exprs]
        columns: dict[str, np.ndarray] = {}  # method -> [T, P, n]
        unconnected = [[] for _ in self.exprs]
        summed = {}
        if "tape" in self.methods:
            from gradcli.methods.tape import tape_gradients

            t = tape_gradients([e.tree for e in self.exprs], pts, self.wrt, dtype=self.dtype)
            columns["tape"], unconnected, summed["tape"] = t.gradients, t.unconnected, t.summed
        steps = None
        if "fd" in self.methods:
            results = [fd_gradients(e.tree, pts, self.wrt, scheme=self.scheme, dtype=self.dtype, eps=self.eps)
                       for e in self.exprs]
            columns["fd"] = np.stack([r.values for r in results])
            steps = results[0].steps
            summed["fd"] = columns["fd"].sum(axis=0)
        if self._formulas is not None:
            sym = np.stack([np.stack([self.exact_column(i, (v,), pts, size) for v in self.wrt], axis=1)
                            for i in range(len(self.exprs))])
            columns["symbolic"] = sym
            summed["symbolic"] = sym.sum(axis=0)
        columns = {m: columns[m] for m in self.methods if m in columns}
        return [self._record(chunk, k, point, values, columns, unconnected, summed, steps)
                for k, point in enumerate(engine.point_dicts(chunk, self.variables))]

    def _record(self, chunk, k, point, values, columns, unconnected, summed, steps) -> dict:
        record = engine.base_record(chunk, k, point)
        results = []
        for i, e in enumerate(self.exprs):
            value = float(values[i][k])
            gradient = {m: {v: shortest(float(c[i, k, j]), self.dtype) if m != "symbolic" else float(c[i, k, j])
                            for j, v in enumerate(self.wrt)} for m, c in columns.items()}
            result = {"expression": e.text, "value": value, "gradient": gradient, "error": {},
                      "unconnected": unconnected[i]}
            self._judge(record, result, point, steps[k] if steps is not None else None)
            results.append(result)
        record["results"] = results
        if len(self.exprs) > 1:
            record["sum"] = {m: {v: float(s[k, j]) for j, v in enumerate(self.wrt)} for m, s in summed.items()}
        if steps is not None:
            record["fd_step"] = {v: float(steps[k, j]) for j, v in enumerate(self.wrt)}
        return record

    def _judge(self, record, result, point, steps) -> None:
        """The single-point rules, per point: undefined values and derivatives are nulls with a warning;
        a method further from the exact value than its dtype and step explain is a warning."""
        text, value, gradient = result["expression"], result["value"], result["gradient"]
        if engine.undefined_value(record, text, value):
            result["value"] = None
            for g in gradient.values():  # derivatives of an undefined value are no numbers either
                g.update(dict.fromkeys(g))
            return
        ref = gradient.get("symbolic")
        for j, v in enumerate(self.wrt):
            bad = [m for m, g in gradient.items() if not engine.finite(g[v])]
            if bad:
                said = ", ".join(f"{m}: {'undefined' if gradient[m][v] is None or math.isnan(gradient[m][v]) else gradient[m][v]}"
                                 for m in bad)
                record["warnings"].append(f"d({text})/d{v} is not finite ({said})")
                record["undefined"] = True
                continue
            if ref is None or result["value"] is None:
                continue
            scale = max(1.0, abs(value), abs(ref[v]), abs(point[v]))
            for method in ("tape", "fd"):
                if method not in gradient:
                    continue
                err = abs(gradient[method][v] - ref[v])
                result["error"].setdefault(method, {})[v] = err
                engine.note_error(record, method, err)
                tol = tolerance(method, dtype=self.dtype, scale=scale,
                                step=None if steps is None else float(steps[j]), scheme=Scheme(self.scheme))
                if err > tol:
                    record["warnings"].append(
                        f"{method} and symbolic disagree on d({text})/d{v}: error {err:.3g} is more than "
                        f"{self.dtype} and the step explain (~{tol:.1g})")
