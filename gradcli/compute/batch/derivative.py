"""``derivative --points/--grid``: derivatives 1..n by one variable at every point of a batch."""

from __future__ import annotations

from gradcli.compute.batch import engine
from gradcli.compute.derivative import ACCURACY_ORDERS, DEFAULT_ACCURACY, check_order, judge_derivative
from gradcli.errors import UsageError
from gradcli.expression import parse
from gradcli.methods import symbolic as exact
from gradcli.methods.fd import fd_derivatives
from gradcli.results import shortest


class DerivativeBatch(engine.BatchCore):
    command = "derivative"

    def __init__(self, expression: str, *, order: int = 1, wrt: str | None = None, methods: str | None = None,
                 eps: float | None = None, dtype: str = "float64", accuracy: int = DEFAULT_ACCURACY,
                 formulas: bool = False, symbolic_time_limit: float = 10.0):
        super().__init__(methods=methods, dtype=dtype, eps=eps, symbolic_time_limit=symbolic_time_limit,
                         formulas=formulas)
        self.expr = parse(expression)
        self.trees = [self.expr.tree]
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
        if accuracy not in ACCURACY_ORDERS:
            raise UsageError(f"--accuracy must be one of {', '.join(map(str, ACCURACY_ORDERS))}, not {accuracy}")
        self.accuracy = accuracy

    def wanted(self):
        return [(0, (self.variable,) * k) for k in range(1, self.order + 1)]

    def describe(self) -> dict:
        doc = {"expression": self.expr.text, "variable": self.variable, "order": self.order,
               "fd": self.fd_header(f"central stencils of accuracy {self.accuracy}",
                                    "eps**(1/(k + accuracy)) * max(1, |x|)")}
        if self._formulas is not None and self.formulas:
            doc["formulas"] = [self._formulas[0].texts.get((self.variable,) * k) for k in range(1, self.order + 1)]
        return doc

    def compute(self, chunk) -> engine.RecordBatch:
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
            cols["symbolic"] = np.stack([self.exact_column(0, (self.variable,) * k, pts, size)
                                         for k in range(1, self.order + 1)], axis=1)
        order = [m for m in self.methods if m in cols]
        records = []
        for p, point in enumerate(engine.point_dicts(chunk, self.variables)):
            record = engine.base_record(chunk, p, point)
            record["warnings"], record["undefined"] = [], False
            record["value"] = float(value[p])
            record["derivatives"] = {m: [float(x) if m == "symbolic" else shortest(float(x), self.dtype)
                                         for x in cols[m][p].tolist()] for m in order}
            if "tape" in cols:
                record["structural_zero"] = structural
            if steps is not None:
                record["fd_step"] = steps.steps[p].tolist()
            self._judge(record, point, steps, p)
            warnings, undefined = record.pop("warnings"), record.pop("undefined")
            records.append(engine.close_record(engine.json_safe(record), warnings, undefined))  # null: not finite
        return engine.RecordBatch.of(records)

    def _judge(self, record: dict, point: dict, fd, p: int) -> None:
        text, value, ds = self.expr.text, record["value"], record["derivatives"]
        record["error"] = {}
        if engine.undefined_value(record["warnings"], text, value):
            record["undefined"] = True
            record["value"] = None
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
                err, warning = judge_derivative(
                    m, k + 1, got, want, dtype=self.dtype, value=value, x=x,
                    step=float(fd.steps[p, k]) if m == "fd" else None,
                    accuracy=int(fd.accuracy[p, k]) if m == "fd" else self.accuracy)
                errors.append(err)
                engine.note_error(self, m, err)
                if warning:
                    record["warnings"].append(warning)
            record["error"][m] = errors
