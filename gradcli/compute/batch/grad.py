"""``grad --points/--grid``: the gradient of one or more expressions at every point of a batch."""

from __future__ import annotations

import math
import warnings as python_warnings

from gradcli.compute.batch import engine
from gradcli.compute.request import needed_variables, parse_expressions
from gradcli.compute.judge import cross_check, cross_disagreement, disagreement, judge_gradients
from gradcli.errors import UsageError
from gradcli.methods.fd import fd_gradients
from gradcli.methods.fd_schemes import SCHEMES, STEP_POWER
from gradcli.methods.fd_notes import fd_line_notes
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
                 symbolic_time_limit: float = 10.0):
        super().__init__(methods=methods, dtype=dtype, eps=eps, symbolic_time_limit=symbolic_time_limit)
        self.exprs = parse_expressions(expressions)
        self.trees = [e.tree for e in self.exprs]
        self.variables, self.wrt = needed_variables(self.exprs, wrt)
        if scheme not in SCHEMES:
            raise UsageError(f"--scheme must be one of {', '.join(SCHEMES)}, not '{scheme}'")
        self.scheme = scheme

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
        return doc

    # -----------------------------------------------------------------------------------------
    def compute(self, chunk) -> list[dict]:
        """Every method once for the chunk; the judging is vectorised, the records built from lists."""
        import numpy as np

        size, pts = len(chunk), chunk.values
        values = np.stack([self.value_column(i, pts, size) for i in range(len(self.trees))])  # [T, P]
        columns: dict[str, np.ndarray] = {}  # method -> [T, P, n]
        unconnected: list[list[str]] = [[] for _ in self.exprs]
        steps, self._tape_sum, fd, cc = None, None, None, None
        if "tape" in self.methods:
            from gradcli.methods.tape import tape_gradients

            t = tape_gradients(self.trees, pts, self.wrt, dtype=self.dtype)
            columns["tape"], unconnected, tape_sum = t.gradients, t.unconnected, t.summed
        if "fd" in self.methods:
            results = [fd_gradients(t, pts, self.wrt, scheme=self.scheme, dtype=self.dtype, eps=self.eps)
                       for t in self.trees]
            columns["fd"] = np.stack([r.values for r in results])
            steps = results[0].steps
            fd = _FdExtras(results)
            self.count_adapted(np.stack([r.how for r in results], axis=1))  # [P, T, n]
        if "complex" in self.methods:  # NumPy only, every expression and point at once
            from gradcli.compute.complex_column import complex_columns

            cc = complex_columns(self.trees, pts, self.wrt, self.dtype)
            columns["complex"] = cc.values
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
        judged = self._judge(values, columns, pts, steps, fd, cc)
        return self._records(chunk, values, columns, judged, undefined, unconnected, steps, fd, cc)

    def _judge(self, values, columns, pts, steps, fd, cc):
        """(error per method [T, P, n], where it exceeds its tolerance [T, P, n], the tolerances, the
        tape-fd cross-check without the exact column or None, the complex step's or None)."""
        import numpy as np

        from gradcli.compute.complex_column import cross_check_complex

        x = np.stack([np.asarray(pts[v], dtype=np.float64) for v in self.wrt], axis=1)
        estimates = None if fd is None else fd.estimates
        complex_estimates = None if cc is None else cc.estimates
        errors, disagree, tols = judge_gradients(values, columns, x, steps, dtype=self.dtype, scheme=self.scheme,
                                                 estimates=estimates, shift=self._point_shift(columns, pts),
                                                 complex_estimates=complex_estimates)
        cross_complex = cross_check_complex(values, columns, x, {"fd": estimates, "complex": complex_estimates},
                                            dtype=self.dtype)
        cross = cross_check(values, columns, x, estimates, dtype=self.dtype)
        from gradcli.expression.functions import value_only

        for i, tree in enumerate(self.trees):  # stop_gradient: fd differentiates the value, by design apart
            if value_only(tree):
                for m in ("fd", "complex"):
                    if m in disagree:
                        disagree[m][i] = False
                if cross is not None:
                    cross[1][i] = False
                cross_complex = None
        return errors, disagree, tols, cross, cross_complex

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

    def _records(self, chunk, values, columns, judged, undefined, unconnected, steps, fd, cc):
        import numpy as np

        errors, disagree, tols, cross, cross_complex = judged
        flagged = undefined | np.any([~np.isfinite(c) for c in columns.values()], axis=(0, 3)) \
            if columns else undefined
        for d in disagree.values():
            flagged = flagged | d.any(axis=2)
        if cross is not None:
            flagged = flagged | cross[1].any(axis=2)
        if cross_complex is not None:
            for _, apart, _ in cross_complex.pairs.values():
                flagged = flagged | apart.any(axis=2)
        if fd is not None:
            flagged = flagged | fd.remarkable(self.dtype, self.eps is not None)
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
        parts = _Parts(chunk, values, columns, errors, unconnected, steps, said, self.dtype,
                       None if fd is None else fd.estimates, None if cc is None else cc.estimates)
        fast = len(self.exprs) == 1 and bool(self.wrt)
        return engine.RecordBatch(size, list(said.values()), lambda: self._dicts(parts, range(size)),
                                  (lambda: self._lines(parts)) if fast else None)

    def _dicts(self, p: _Parts, indices) -> list[dict]:
        """The records as dicts; per chunk, not per point: a dict per (method, expression, point), a result
        per (expression, point), then a record per point (C-level dict(zip(...)), no per-point frames)."""
        wrt, texts = self.wrt, [e.text for e in self.exprs]
        indices = list(indices)
        cols, errs, vals, steps, ests, cests = p.lists()
        points = engine.point_dicts(p.chunk, self.variables)
        gnames, enames = list(cols), list(errs)
        per_expression = []
        for i in range(len(texts)):
            grows = zip(*[[dict(zip(wrt, cols[m][i][k])) for k in indices] for m in gnames]) if gnames \
                else [()] * len(indices)
            erows = zip(*[[dict(zip(wrt, errs[m][i][k])) for k in indices] for m in enames]) if enames \
                else [()] * len(indices)
            per_expression.append([
                {"expression": texts[i], "value": vals[i][k], "gradient": dict(zip(gnames, g)),
                 "error": dict(zip(enames, e)), "unconnected": p.unconnected[i]}
                for k, g, e in zip(indices, grows, erows)])
            if ests is not None:
                for k, result in zip(indices, per_expression[-1]):
                    result["fd_error_estimate"] = dict(zip(wrt, ests[i][k]))
            if cests is not None:
                for k, result in zip(indices, per_expression[-1]):
                    result["complex_error_estimate"] = dict(zip(wrt, cests[i][k]))
        results = list(zip(*per_expression))
        records = []
        for n, k in enumerate(indices):
            record = engine.base_record(p.chunk, k, points[k])
            record["results"] = list(results[n])
            if len(texts) > 1:
                record["sum"] = {m: dict(zip(wrt, self._tape_sum[k] if m == "tape" else
                                             _sum_rows([c[i][k] for i in range(len(texts))])))
                                 for m, c in cols.items()}
            if steps is not None:
                record["fd_step"] = dict(zip(wrt, steps[k]))
            _, warnings, bad = p.said.get(k, (None, [], False))
            records.append(engine.close_record(record, warnings, bad))
        return records

    def _lines(self, p: _Parts) -> list[str]:
        """The records as JSON lines, written from column fragments through one template per chunk: the
        same text ``json_line`` gives for the dict record (a property test holds them equal byte for byte).
        One expression only; points with warnings go through their dicts."""
        import numpy as np
        import orjson

        size, wrt = p.values.shape[1], self.wrt
        # float32 results with float32's shortest digits as float64 numbers, which orjson writes as the dict
        # path does (orjson's own float32 text is positional: 0.0000017628644 against 1.7628644e-6)
        typed = {m: (c[0].astype(np.float32).astype(str).astype(np.float64)
                     if self.dtype == "float32" and m != "symbolic" else c[0]) for m, c in p.columns.items()}
        columns = _text_columns(np.stack([p.chunk.values[v] for v in self.variables], axis=1))
        columns.append([_line_and_fields(p.chunk, k) for k in range(size)])
        columns += _text_columns(p.values[0][:, None])
        for m in p.columns:
            columns += _text_columns(typed[m])
        for m in p.errors:
            columns += _text_columns(p.errors[m][0])
        if p.estimates is not None:
            columns += _text_columns(p.estimates[0])
        if p.complex_estimates is not None:
            columns += _text_columns(p.complex_estimates[0])
        if p.steps is not None:
            columns += _text_columns(p.steps)

        def obj(names: list[str]) -> str:
            return "{" + ",".join(f'"{n}":%s' for n in names) + "}"

        template = ('{"point":' + obj(self.variables) + '%s,"results":[{"expression":'
                    + orjson.dumps(self.exprs[0].text).decode() + ',"value":%s,"gradient":{'
                    + ",".join(f'"{m}":' + obj(wrt) for m in p.columns) + '},"error":{'
                    + ",".join(f'"{m}":' + obj(wrt) for m in p.errors) + '},"unconnected":'
                    + orjson.dumps(p.unconnected[0]).decode()
                    + (',"fd_error_estimate":' + obj(wrt) if p.estimates is not None else "")
                    + (',"complex_error_estimate":' + obj(wrt) if p.complex_estimates is not None else "") + "}]"
                    + (',"fd_step":' + obj(wrt) if p.steps is not None else "") + ',"status":"ok","warnings":[]}')
        lines = [template % row for row in zip(*columns)]
        if p.said:  # points with warnings: their records, as the dict path writes them
            slow = sorted(p.said)
            for k, record in zip(slow, self._dicts(p, slow)):
                lines[k] = engine.json_line(record)
        return lines

    def _warn(self, warnings, point, k, values, columns, judged, fd, cc) -> bool:
        """The single-point warnings, for one point that has something to say; True when it has an
        undefined value or derivative. Where the expression is not analytic, the complex step's note is
        the point's warning (the point is not undefined for it)."""
        from gradcli.compute.complex_column import complex_cross_warnings
        from gradcli.methods.complex_step import not_analytic_note

        errors, disagree, tols, cross, cross_complex = judged
        undefined = False
        for i, text in enumerate(e.text for e in self.exprs):
            if engine.undefined_value(warnings, text, float(values[i, k])):
                undefined = True
                continue
            for j, v in enumerate(self.wrt):
                bad = {m: c[i, k, j] for m, c in columns.items() if not math.isfinite(c[i, k, j])}
                if cc is not None and cc.not_analytic[i, k, j]:
                    bad.pop("complex", None)
                    warnings.append(not_analytic_note(text, v, None, self.trees[i]))
                if bad:
                    said = ", ".join(f"{m}: {'undefined' if math.isnan(x) else x}" for m, x in bad.items())
                    warnings.append(f"d({text})/d{v} is not finite ({said})")
                    undefined = True
                    continue
                for m, d in disagree.items():
                    if d[i, k, j]:
                        warnings.append(disagreement(m, text, v, float(errors[m][i, k, j]), dtype=self.dtype,
                                                     tol=float(tols[m][i, k, j])))
                if cross is not None and cross[1][i, k, j]:
                    warnings.append(cross_disagreement(text, v, float(cross[0][i, k, j]), float(cross[2][i, k, j]),
                                                       bool(cross[3][i, k, j]), dtype=self.dtype))
                warnings += complex_cross_warnings(cross_complex, (i, k, j), f"d({text})/d{v}", dtype=self.dtype)
                warnings += cc.warnings((i, k, j), text, v, None) if cc is not None else []
                if fd is not None:
                    warnings += fd.warnings(i, k, j, f"d({text})/d{v}", self.dtype, self.eps is not None)
        return undefined


class _FdExtras:
    """fd's estimates, kinks and adapted steps for a chunk, stacked over the expressions: [T, P, n]."""

    def __init__(self, results):
        import numpy as np

        self.results = results
        self.estimates = np.stack([r.estimates for r in results])
        self.kinks = np.stack([r.kinks for r in results])
        self.values = np.stack([r.values for r in results])

    def remarkable(self, dtype: str, explicit_step: bool):
        """[P]: points with a kink or (adaptive steps only) a value no step resolves."""
        from gradcli.methods.fd_error import cannot_resolve

        odd = self.kinks
        if not explicit_step:
            odd = odd | cannot_resolve(self.values, self.estimates, dtype)
        return odd.any(axis=(0, 2))

    def warnings(self, i: int, k: int, j: int, what: str, dtype: str, explicit_step: bool) -> list[str]:
        """The kink / cannot-resolve warnings of one value (adapted steps are not noted per point in a batch)."""
        r = self.results[i]
        warnings, _, _ = fd_line_notes(what, "", dtype=dtype, value=float(r.values[k, j]),
                                       estimate=float(r.estimates[k, j]), step=float(r.steps[k, j]), how=0,
                                       kink=bool(r.kinks[k, j]), left=float(r.left[k, j]),
                                       right=float(r.right[k, j]), explicit_step=explicit_step)
        return warnings


def _line_and_fields(chunk, k: int) -> str:
    """The record keys between the point and its results, as JSON text (as base_record writes them)."""
    text = "" if chunk.lines[k] is None else f',"line":{chunk.lines[k]}'
    if chunk.fields and chunk.fields[k]:
        import orjson

        try:
            text += ',"fields":' + orjson.dumps(chunk.fields[k]).decode()
        except orjson.JSONEncodeError:  # as json_line does: the standard encoder for what orjson cannot
            import json

            text += ',"fields":' + json.dumps(chunk.fields[k], separators=(",", ":"), allow_nan=False)
    return text


class _Parts:
    """One chunk's results (arrays), ready to become records: dicts, or JSON lines straight from the arrays."""

    def __init__(self, chunk, values, columns, errors, unconnected, steps, said, dtype, estimates=None,
                 complex_estimates=None):
        self.chunk, self.values, self.columns, self.errors = chunk, values, columns, errors
        self.unconnected, self.steps, self.said, self.dtype = unconnected, steps, said, dtype
        self.estimates = estimates  # [T, P, n] fd's error estimates, or None
        self.complex_estimates = complex_estimates  # [T, P, n] the complex step's, or None
        self._lists = None

    def lists(self):
        """(columns, errors, values, steps, fd's and the complex step's estimates) as nested Python lists, None
        where not finite (built once)."""
        if self._lists is None:
            self._lists = ({m: _lists(c, self.dtype if m != "symbolic" else "float64")
                            for m, c in self.columns.items()},
                           {m: _lists(e, "float64") for m, e in self.errors.items()},
                           _lists(self.values, "float64"),
                           self.steps.tolist() if self.steps is not None else None,
                           _lists(self.estimates, "float64") if self.estimates is not None else None,
                           _lists(self.complex_estimates, "float64") if self.complex_estimates is not None
                           else None)
        return self._lists


def _text_columns(array) -> list[list[str]]:
    """A [P, w] float array as w columns of JSON number texts (null where not finite): one orjson call."""
    import numpy as np
    import orjson

    size, width = array.shape
    if not size or not width:
        return [[] for _ in range(width)] if not size else []
    flat = orjson.dumps(np.ascontiguousarray(array), option=orjson.OPT_SERIALIZE_NUMPY).decode()
    cells = flat[2:-2].replace("],[", ",").split(",")
    return [cells[j::width] for j in range(width)]


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
