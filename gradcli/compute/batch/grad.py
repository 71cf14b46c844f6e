"""``grad --points/--grid``: the gradient of one or more expressions at every point of a batch."""

from __future__ import annotations

import math

from gradcli.compute.batch import engine
from gradcli.errors import UsageError
from gradcli.compute.grad import check_dtype, check_eps, parse_expressions, parse_methods, tolerance
from gradcli.methods import symbolic as exact
from gradcli.methods.fd import SCHEMES, STEP_POWER, fd_gradients
from gradcli.methods.fd import Scheme
from gradcli.results import shortest


class GradBatch:
    command = "grad"

    def __init__(self, expressions: list[str], *, wrt: str | None = None, methods: str | None = None,
                 scheme: str = "central", eps: float | None = None, dtype: str = "float64",
                 symbolic_time_limit: float = 10.0):
        self.exprs = parse_expressions(expressions)
        self.variables, self.wrt = engine.needed_variables(self.exprs, wrt)
        self.methods = parse_methods(methods)
        self.dtype = check_dtype(dtype)
        self.eps = check_eps(eps)
        if scheme not in SCHEMES:
            raise UsageError(f"--scheme must be one of {', '.join(SCHEMES)}, not '{scheme}'")
        self.scheme = scheme
        self.time_limit = symbolic_time_limit
        self.notes: list[str] = []
        self._pending = None
        self._formulas = None

    def start(self) -> None:
        if "symbolic" in self.methods:
            wanted = [(i, p) for i in range(len(self.exprs)) for p in [()] + [(v,) for v in self.wrt]]
            self._pending = engine.start_symbolic(exact.differentiate, self.time_limit,
                                                  [e.tree for e in self.exprs], list(self.variables), wanted)

    def header(self) -> dict:
        if self._pending is not None:
            self._formulas = engine.collect_symbolic(self._pending, self.notes, self.methods)
            self._pending = None
            for f in self._formulas or []:
                for key, why in f.untranslatable.items():
                    self.notes.append(f"symbolic values for d/d{','.join(key)} left out: {why}")
        doc = {"command": self.command, "expressions": [e.text for e in self.exprs], "variables": self.variables,
               "wrt": self.wrt, "dtype": self.dtype, "methods": self.methods,
               "fd": {"scheme": self.scheme, "step": "as given" if self.eps is not None else
                      f"eps**{STEP_POWER[self.scheme]:.4g} * max(1, |x|), the step x + h takes"}
               if "fd" in self.methods else None}
        if self._formulas is not None:
            doc["symbolic_values"] = exact.EVALUATION
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
            sym = np.full((len(self.exprs), size, len(self.wrt)), np.nan)
            for i, f in enumerate(self._formulas):
                for j, v in enumerate(self.wrt):
                    tree = f.trees.get((v,))
                    if tree is not None:
                        sym[i, :, j] = exact.evaluate(tree, pts, size)
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
        if not math.isfinite(value):
            why = "is infinite" if math.isinf(value) else "is undefined (not a real number)"
            record["warnings"].append(f"{text} {why}; its derivatives there mean nothing")
            result["value"] = None
            record["undefined"] = True
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
