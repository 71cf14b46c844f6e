"""``derivative --points/--grid``: derivatives 1..n by one variable at every point of a batch."""

from __future__ import annotations

from gradcli.compute.batch import engine
from gradcli.compute.tape_origin import origin_note
from gradcli.compute.request import derivative_variable
from gradcli.compute.complex_column import (complex_columns, complex_cross_warnings, cross_check_complex,
                                            judge_complex_value, refuse_higher_orders)
from gradcli.compute.judge import cross_derivative, disagreement, judge_derivative, one_cell
from gradcli.methods.fd_schemes import ACCURACY_ORDERS, DEFAULT_ACCURACY
from gradcli.errors import UsageError
from gradcli.expression import parse
from gradcli.methods.fd import SWITCH_REACH, fd_gradients
from gradcli.methods.fd_switches import switch_beside
from gradcli.methods.fd_stencils import fd_derivatives, sided_kinks
from gradcli.methods.complex_step import COMPLEX_STEP, not_analytic_note
from gradcli.methods.fd_notes import fd_line_notes
from gradcli.results import FIRST_ORDER_METHODS, shortest

MAX_ORDER = 10


def check_order(order: int) -> int:
    """--order: derivatives 1..N, N up to MAX_ORDER (each order nests one more tape)."""
    from gradcli.compute.request import check_order as within

    return within(order, MAX_ORDER)


class DerivativeBatch(engine.BatchCore):
    command = "derivative"
    allowed_methods = FIRST_ORDER_METHODS  # the complex step at --order 1 only

    def __init__(self, expression: str, *, order: int = 1, wrt: str | None = None, methods: str | None = None,
                 eps: float | None = None, dtype: str = "float64", accuracy: int = DEFAULT_ACCURACY,
                 formulas: bool = False, symbolic_time_limit: float = 10.0):
        super().__init__(methods=methods, dtype=dtype, eps=eps, symbolic_time_limit=symbolic_time_limit,
                         formulas=formulas)
        self.expr = parse(expression)
        self.trees = [self.expr.tree]
        self.exprs = [self.expr]  # as grad's core has them, for the tape's first wrong node (nan_origin)
        self.origins: dict = {}
        self.wrt_text = wrt
        if wrt is None and not self.expr.variables:  # a constant: by the --at point's one variable (at_one_point)
            self.variable, self.variables = None, []
        else:
            self.variable = derivative_variable(wrt, self.expr.variables)
            self.variables = list(self.expr.variables) + \
                ([self.variable] if self.variable not in self.expr.variables else [])
        self.order = check_order(order)
        refuse_higher_orders(self.methods, self.order)
        if accuracy not in ACCURACY_ORDERS:
            raise UsageError(f"--accuracy must be one of {', '.join(map(str, ACCURACY_ORDERS))}, not {accuracy}")
        self.accuracy = accuracy

    def at_one_point(self, point) -> None:
        """At the --at point alone its variables are the point's, in the order typed, and --wrt must name one
        of them or one of the expression's (as the one-point command always checked)."""
        super().at_one_point(point)
        self.variable = derivative_variable(self.wrt_text, self.expr.variables, list(point.names))
        if self.variable not in point.values:
            raise UsageError(f"--wrt: '{self.variable}' has no value in --at")
        self.variables = list(point.names) + [v for v in self.variables if v not in point.values]

    def start(self) -> None:
        if self.variable is None:  # a constant at many points: which variable is not known
            derivative_variable(None, [])
        super().start()

    def wanted(self):
        return [(0, (self.variable,) * k) for k in range(1, self.order + 1)]

    def fd_steps_along(self) -> tuple[list[str], int]:
        return [self.variable], self.order

    def describe(self) -> dict:
        doc = {"expression": self.expr.text, "variable": self.variable, "order": self.order,
               "fd": self.fd_header(f"central stencils of accuracy {self.accuracy}",
                                    "eps**(1/(k + accuracy)) * max(1, |x|)")}
        if "complex" in self.methods:
            doc["complex"] = {"step": COMPLEX_STEP[self.dtype]}
        if self._formulas is not None and self.formulas:
            doc["formulas"] = [self._formulas[0].texts.get((self.variable,) * k) for k in range(1, self.order + 1)]
        return doc

    def compute(self, chunk) -> engine.RecordBatch:
        import numpy as np

        size, pts = len(chunk), chunk.values
        value = self.value_column(0, pts, size)
        cols, structural, steps = {}, [], None
        if "tape" in self.methods:
            from gradcli.methods.tape import tape_derivatives

            t = tape_derivatives(self.expr.tree, pts, self.variable, self.order, dtype=self.dtype, notes=self.notes)
            cols["tape"], structural = t.values, list(t.structural)
        if "fd" in self.methods:
            f = fd_derivatives(self.expr.tree, pts, self.variable, self.order, dtype=self.dtype, eps=self.eps,
                               accuracy=self.accuracy)
            cols["fd"], steps = f.values, f
            if self.at_point is not False:  # which orders, with which step (a batch counts the points instead)
                self._adapted_notes(f)
            else:
                self.count_adapted(f.how)
            # order 1's one-sided derivatives, as grad's central fd sees them: kinks
            f.kinks = fd_gradients(self.expr.tree, pts, [self.variable], dtype=self.dtype, eps=self.eps)
            # order 1 beside a switch of min/max/clip/where/abs/relu (the tree says it is not at the point): the
            # wide stencil straddles it, grad's adapted steps (or its one-sided stencil away from it) do not
            if f.estimates is not None and self.eps is None:
                size = len(f.values)
                beside = switch_beside(self.expr.tree, pts, self.variable, SWITCH_REACH * f.steps[:, 0], size) \
                    & (f.kinks.estimates[:, 0] < f.estimates[:, 0])
            else:
                beside = np.zeros(len(f.values), dtype=bool)
            if beside.any():
                for mine, grads in ((f.values, f.kinks.values), (f.estimates, f.kinks.estimates),
                                    (f.steps, f.kinks.steps)):
                    mine[beside, 0] = grads[beside, 0]
            f.sided = sided_kinks(self.expr.tree, pts, self.variable, self.order, dtype=self.dtype)  # orders 2+
        cc = None
        if "complex" in self.methods:  # order 1 only: [P, 1]
            cc = complex_columns([self.expr.tree], pts, [self.variable], self.dtype)
            cols["complex"] = cc.values[0]
            if self.at_point is not False:
                self._complex_step_note(cc)
        if self._formulas is not None:
            cols["symbolic"] = np.stack([self.exact_column(0, (self.variable,) * k, pts, size)
                                         for k in range(1, self.order + 1)], axis=1)
        shift = self._point_shift(pts, size, cols)  # [P, order]
        order = [m for m in self.methods if m in cols]
        records = []
        for p, point in enumerate(engine.point_dicts(chunk, self.variables)):
            record = engine.base_record(chunk, p, point)
            record["warnings"], record["undefined"] = [], False
            record["not_analytic"] = cc is not None and bool(cc.not_analytic[0, p, 0])
            record["value"] = float(value[p])
            record["derivatives"] = {m: [float(x) if m == "symbolic" else shortest(float(x), self.dtype)
                                         for x in cols[m][p].tolist()] for m in order}
            if "tape" in cols:
                record["structural_zero"] = structural
            if steps is not None:
                record["fd_step"] = steps.steps[p].tolist()
                record["fd_accuracy"] = steps.accuracy[p].tolist()  # the stencil each order used (narrower
                record["fd_points"] = steps.points[p].tolist()  # where the wide one leaves the domain)
                record["fd_error_estimate"] = steps.estimates[p].tolist()
            if cc is not None:
                record["complex_error_estimate"] = cc.estimates[0, p].tolist()
            self._judge(record, point, steps, p, shift[p])
            if cc is not None:
                self._judge_complex(record, point, cc, steps, p, shift[:, 0])
            warnings, undefined = record.pop("warnings"), record.pop("undefined")
            record.pop("not_analytic")
            records.append(engine.close_record(engine.json_safe(record), warnings, undefined))  # null: not finite
        return engine.RecordBatch.of(records)

    def _adapted_notes(self, fd) -> None:
        """At one point: a note for each order whose stencil adapted to the domain, with its step."""
        for k in range(self.order):
            if fd.how[0, k]:
                _, notes, _ = fd_line_notes(f"derivative {k + 1}", "", dtype=self.dtype, value=float(fd.values[0, k]),
                                            estimate=float(fd.estimates[0, k]), step=float(fd.steps[0, k]),
                                            how=int(fd.how[0, k]), explicit_step=self.eps is not None, order=k + 1)
                self.notes += notes

    def _complex_step_note(self, cc) -> None:
        """At one point: a note when the complex step is taken with another step than the default."""
        import numpy as np

        from gradcli.compute.complex_column import step_note

        if np.isfinite(cc.values[0, 0, 0]) and cc.steps[0, 0, 0] != COMPLEX_STEP[self.dtype]:
            self.notes.append(step_note(self.expr.text, self.variable, None, float(cc.steps[0, 0, 0]), self.dtype))

    def _judge(self, record: dict, point: dict, fd, p: int, shift) -> None:
        text, value, ds = self.expr.text, record["value"], record["derivatives"]
        record["error"] = {}
        if engine.undefined_value(record["warnings"], text, value):
            record["undefined"] = True
            record["value"] = None
            record["derivatives"] = {m: [None] * len(v) for m, v in ds.items()}  # no numbers either
            return
        for k in range(self.order):
            bad = [m for m, vals in ds.items() if k < len(vals) and not engine.finite(vals[k])
                   and not (m == "complex" and record["not_analytic"])]  # a note instead (_judge_complex)
            if bad:
                record["warnings"].append(f"derivative of order {k + 1} is not finite ({', '.join(bad)})")
                record["undefined"] = True
                if "tape" in bad:  # where the tape's own computation first went wrong, if it did
                    origin_note(self, 0, point=point)
        if fd is not None:
            self._fd_warnings(record, fd, p)
        ref = ds.get("symbolic")
        x = point[self.variable]
        if ref is None or record["value"] is None:
            if ref is None and "tape" in ds and "fd" in ds and record["value"] is not None:
                for k in range(min(len(ds["tape"]), len(ds["fd"]))):
                    if self._fd_kink(fd, p, k) and self.eps is None:  # at the point: fd's value is no derivative
                        self._tape_kink_note(k)
                        continue
                    warning = cross_derivative(k + 1, ds["tape"][k], ds["fd"][k], float(fd.estimates[p, k]),
                                               dtype=self.dtype, value=value, doubted=self._fd_doubted(fd, p, k))
                    if warning:
                        record["warnings"].append(warning)
            return
        for m in ("tape", "fd"):
            if m not in ds:
                continue
            errors = []
            for k, (got, want) in enumerate(zip(ds[m], ref)):
                err, warning = judge_derivative(m, k + 1, got, want, dtype=self.dtype, value=value, x=x,
                                                estimate=float(fd.estimates[p, k]) if m == "fd" else None,
                                                shift=float(shift[k]))
                errors.append(err)
                engine.note_error(self, m, err)
                if warning and fd is not None and self.eps is None and self._fd_kink(fd, p, k):
                    # at a kink no method's value is a derivative: the tape's is TensorFlow's convention, the
                    # exact column's the average of the one-sided derivatives, fd's two-sided value neither
                    if m == "tape":
                        self._tape_kink_note(k)
                    continue
                if warning:
                    record["warnings"].append(warning)
            record["error"][m] = errors

    def _fd_doubted(self, fd, p: int, k: int) -> bool:
        """Whether fd's own diagnostics doubt its estimate of order k + 1 at point p: a step --eps fixed, or a
        kink inside the stencil."""
        return self.eps is not None or self._fd_kink(fd, p, k)

    @staticmethod
    def _fd_kink(fd, p: int, k: int) -> bool:
        """A kink in the derivative of order k + 1 at point p: order 1 as grad's central fd sees it, orders 2 and
        up by one-sided stencils."""
        return bool(fd.kinks.kinks[p, 0]) if k == 0 else bool(fd.sided[0][p, k])

    def _tape_kink_note(self, k: int) -> None:
        """Once per order: the tape's value at a kink is TensorFlow's convention (as the exact column's is SymPy's)."""
        note = (f"the tape's derivative {k + 1} of {self.expr.text} at a kink is TensorFlow's convention (the "
                "gradient it defines there: relu's is 0 at 0, a tie in max or min goes to the first argument), not "
                "a derivative: the one-sided derivatives differ, and fd's two-sided value is neither")
        if note not in self.notes:
            self.notes.append(note)

    def _fd_warnings(self, record: dict, fd, p: int) -> None:
        """Kinks (both one-sided values in the record, per order: order 1 as grad's central fd sees it, orders
        2 and up by one-sided stencils), values no step resolves (adaptive steps)."""
        g = fd.kinks
        warnings, _, sided = fd_line_notes("derivative 1", "", dtype=self.dtype, value=float(g.values[p, 0]),
                                           estimate=float(g.estimates[p, 0]), step=float(g.steps[p, 0]), how=0,
                                           kink=bool(g.kinks[p, 0]), left=float(g.left[p, 0]),
                                           right=float(g.right[p, 0]), explicit_step=True)
        sides = [sided or None] + [None] * (self.order - 1)  # per order: both one-sided values at a kink, else null
        if sided:
            record["warnings"] += warnings
        kinks, left, right = fd.sided
        for k in range(self.order):
            warnings, _, sided = fd_line_notes(f"derivative {k + 1}", "", dtype=self.dtype,
                                               value=float(fd.values[p, k]), estimate=float(fd.estimates[p, k]),
                                               step=float(fd.steps[p, k]), how=0, explicit_step=self.eps is not None,
                                               order=k + 1, kink=k > 0 and bool(kinks[p, k]),
                                               left=float(left[p, k]), right=float(right[p, k]))
            if sided and k > 0:
                sides[k] = sided
            record["warnings"] += warnings
        if any(sides):
            record["one_sided"] = sides

    def _point_shift(self, pts, size: int, cols):
        """[P, order]: how far each exact derivative moves from the point as read to the dtype's (float32):
        the point's rounding is no method's error, as in the single-point command. Zeros
        in float64 or without SymPy."""
        import numpy as np

        if self.dtype == "float64" or "symbolic" not in cols:
            return np.zeros((size, self.order))
        with np.errstate(over="ignore"):
            rounded = {k: np.asarray(v, dtype=np.float64).astype(self.dtype).astype(np.float64)
                       for k, v in pts.items()}
        there = np.stack([self.exact_column(0, (self.variable,) * k, rounded, size)
                          for k in range(1, self.order + 1)], axis=1)
        with np.errstate(invalid="ignore"):
            shift = np.abs(there - cols["symbolic"])
        return np.where(np.isnan(shift), np.inf, shift)

    def _judge_complex(self, record: dict, point: dict, cc, fd, p: int, shift) -> None:
        """The complex step at order 1: a note where not analytic, else against the exact value or, without
        it, against the tape and fd (gradcli.compute.complex_column, as at one point)."""
        import numpy as np

        ds, text = record["derivatives"], self.expr.text
        if record["value"] is None:
            return
        if record["not_analytic"]:
            record["warnings"].append(not_analytic_note(text, self.variable, None, self.expr.tree))
            return
        got, est = ds["complex"][0], float(cc.estimates[0, p, 0])
        if not engine.finite(got):
            return  # said by _judge: not finite
        record["warnings"] += cc.warnings((0, p, 0), text, self.variable, None)
        ref = (ds.get("symbolic") or [None])[0]
        if engine.finite(ref):
            err, tol = judge_complex_value(got, ref, est, float(shift[p]), dtype=self.dtype)
            record["error"]["complex"] = [err]
            engine.note_error(self, "complex", err)
            if err > tol:
                record["warnings"].append(disagreement("complex", f"d({text})/d{self.variable}", err,
                                                     dtype=self.dtype, tol=tol))
            return
        columns = {m: one_cell(ds[m][0]) for m in ds}
        fd_estimate = record.get("fd_error_estimate", [np.nan])[0]
        estimates = {"complex": one_cell(est), "fd": one_cell(fd_estimate)}
        doubted = fd is not None and self._fd_doubted(fd, p, 0)
        cross = cross_check_complex(np.array([[record["value"]]]), columns, np.array([[point[self.variable]]]),
                                    estimates, dtype=self.dtype, fd_doubted=doubted)
        record["warnings"] += complex_cross_warnings(cross, (0, 0, 0), "derivative 1", dtype=self.dtype)
