"""``derivative --points/--grid``: derivatives 1..n by one variable at every point of a batch."""

from __future__ import annotations

import math

from gradcli.compute.batch import engine
from gradcli.compute.derivative import ACCURACY_ORDERS, DEFAULT_ACCURACY, check_order, derivative_tolerance
from gradcli.errors import UsageError
from gradcli.expression import parse
from gradcli.compute.grad import check_dtype, check_eps, parse_methods
from gradcli.methods import symbolic as exact
from gradcli.methods.fd import fd_derivatives
from gradcli.results import shortest


class DerivativeBatch:
    command = "derivative"

    def __init__(self, expression: str, *, order: int = 1, wrt: str | None = None, methods: str | None = None,
                 eps: float | None = None, dtype: str = "float64", accuracy: int = DEFAULT_ACCURACY,
                 formulas: bool = False, symbolic_time_limit: float = 10.0):
        self.expr = parse(expression)
        if wrt and wrt.strip():
            self.variable = wrt.strip()
        elif len(self.expr.variables) == 1:
            self.variable = self.expr.variables[0]
        else:
            raise UsageError(f"derivative takes one variable: the expression has {len(self.expr.variables)} "
                             f"({', '.join(self.expr.variables) or 'none'}); choose one with --wrt")
        self.variables = list(self.expr.variables) + \
            ([self.variable] if self.variable not in self.expr.variables else [])
        self.order = check_order(order)
        self.methods = parse_methods(methods)
        self.dtype = check_dtype(dtype)
        self.eps = check_eps(eps)
        if accuracy not in ACCURACY_ORDERS:
            raise UsageError(f"--accuracy must be one of {', '.join(map(str, ACCURACY_ORDERS))}, not {accuracy}")
        self.accuracy = accuracy
        if formulas and "symbolic" not in self.methods:
            raise UsageError("--formulas needs the symbolic method (add symbolic to --method)")
        self.formulas = formulas
        self.time_limit = symbolic_time_limit
        self.notes: list[str] = []
        self._pending = None
        self._formulas = None

    def start(self) -> None:
        if "symbolic" in self.methods:
            wanted = [(0, (self.variable,) * k) for k in range(self.order + 1)]
            self._pending = engine.start_symbolic(exact.differentiate, self.time_limit, [self.expr.tree],
                                                  list(self.variables), wanted)

    def header(self) -> dict:
        if self._pending is not None:
            result = engine.collect_symbolic(self._pending, self.notes, self.methods)
            self._formulas = result[0] if result else None
            self._pending = None
            for key, why in (self._formulas.untranslatable if self._formulas else {}).items():
                self.notes.append(f"symbolic values of order {len(key)} left out: {why}")
        doc = {"command": self.command, "expression": self.expr.text, "variable": self.variable,
               "variables": self.variables, "order": self.order, "dtype": self.dtype, "methods": self.methods,
               "fd": {"scheme": f"central stencils of accuracy {self.accuracy}",
                      "step": "as given" if self.eps is not None else "eps**(1/(k + accuracy)) * max(1, |x|)"}
               if "fd" in self.methods else None}
        if self._formulas is not None:
            doc["symbolic_values"] = exact.EVALUATION
            if self.formulas:
                doc["formulas"] = [self._formulas.texts.get((self.variable,) * k) for k in range(1, self.order + 1)]
        return doc

    def compute(self, chunk) -> list[dict]:
        import numpy as np

        size, pts = len(chunk), chunk.values
        value = exact.evaluate(self.expr.tree, pts, size)
        cols, structural, steps = {}, [], None
        if "tape" in self.methods:
            from gradcli.methods.tape import tape_derivatives

            t = tape_derivatives(self.expr.tree, pts, self.variable, self.order, dtype=self.dtype, notes=self.notes)
            cols["tape"], structural = t.values, list(t.structural)
        if "fd" in self.methods:
            f = fd_derivatives(self.expr.tree, pts, self.variable, self.order, dtype=self.dtype, eps=self.eps,
                               accuracy=self.accuracy)
            cols["fd"], steps = f.values, f
        if self._formulas is not None:
            sym = np.full((size, self.order), np.nan)
            for k in range(1, self.order + 1):
                tree = self._formulas.trees.get((self.variable,) * k)
                if tree is not None:
                    sym[:, k - 1] = exact.evaluate(tree, pts, size)
            cols["symbolic"] = sym
        order = [m for m in self.methods if m in cols]
        records = []
        for p, point in enumerate(engine.point_dicts(chunk, self.variables)):
            record = engine.base_record(chunk, p, point)
            record["value"] = float(value[p])
            record["derivatives"] = {m: [float(x) if m == "symbolic" else shortest(float(x), self.dtype)
                                         for x in cols[m][p].tolist()] for m in order}
            if "tape" in cols:
                record["structural_zero"] = structural
            if steps is not None:
                record["fd_step"] = steps.steps[p].tolist()
            self._judge(record, point, steps, p)
            records.append(record)
        return records

    def _judge(self, record: dict, point: dict, fd, p: int) -> None:
        text, value, ds = self.expr.text, record["value"], record["derivatives"]
        record["error"] = {}
        if not math.isfinite(value):
            record["warnings"].append(f"{text} is {'infinite' if math.isinf(value) else 'undefined (not a real number)'}"
                                      "; its derivatives there mean nothing")
            record["value"] = None
            record["undefined"] = True
            record["derivatives"] = {m: [None] * len(v) for m, v in ds.items()}  # no numbers either
            return
        for k in range(self.order):
            bad = [m for m, vals in ds.items() if k < len(vals) and not engine.finite(vals[k])]
            if bad:
                record["warnings"].append(f"derivative of order {k + 1} is not finite ({', '.join(bad)})")
                record["undefined"] = True
        ref = ds.get("symbolic")
        if ref is None or record["value"] is None:
            return
        x = point[self.variable]
        for m in ("tape", "fd"):
            if m not in ds:
                continue
            errors = []
            for k, (got, want) in enumerate(zip(ds[m], ref)):
                if not (engine.finite(got) and engine.finite(want)):
                    errors.append(None)
                    continue
                err = abs(got - want)
                errors.append(err)
                engine.note_error(record, m, err)
                scale = max(1.0, abs(want), abs(value), abs(x))
                tol = derivative_tolerance(
                    m, dtype=self.dtype, scale=scale, order=k + 1,
                    step=float(fd.steps[p, k]) if m == "fd" else None,
                    accuracy=int(fd.accuracy[p, k]) if m == "fd" else self.accuracy,
                    value_scale=max(1.0, abs(value)), exact=want)
                if err > tol:
                    record["warnings"].append(f"{m} and symbolic disagree on derivative {k + 1}: error {err:.3g} "
                                              f"is more than {self.dtype} and the step explain (~{tol:.1g})")
            record["error"][m] = errors
