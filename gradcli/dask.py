"""gradcli on a Dask DataFrame: the CLI's ``-f csv`` rows for every row of the frame, computed where its
partitions are (a laptop's processes, a cluster's machines).

    import dask.dataframe as dd
    import gradcli.dask

    ddf = dd.read_parquet("points/")               # a column per variable, other columns passed through
    out = gradcli.dask.grad(ddf, "x**2*y", method="symbolic,fd")
    out.to_parquet("gradients/")                   # or out.compute()

:func:`grad`, :func:`hessian`, :func:`derivative` and :func:`eval` take the frame, the expression(s) and the
options of :func:`gradcli.api.grad_columns` and its kin (``at``, ``wrt``, ``method``, ``eps``, ``dtype``,
``symbolic_timeout``, ``batch_size``, ``rule``...), and return a lazy Dask DataFrame made with
``map_partitions``: per input row (grad with several expressions: per row and expression) the CLI's ``-f csv``
row, with the same column names and types (float64 numbers, NaN where a value is undefined, strings for
``status`` and ``warnings``), the frame's other columns first, as they came, in the input's order and with
its index. Its ``meta`` (the columns and their types) comes from a one-row run on the client, which also
checks the request there: a bad option or expression is a :class:`gradcli.errors.UsageError` at once, not a
failed task later.

**Once per worker.** A worker process builds the prepared computation once per request (the expression
parsed, SymPy's derivatives taken, the rules checked, the batch core whose traced TensorFlow functions it
keeps) and reuses it for every partition it is given: a per-process cache keyed by the request's options (a
hashable :class:`Spec`). Before TensorFlow runs anything in a ``distributed`` worker, its thread pools are
capped to the worker's share of the machine (its ``nthreads``, the cores the cluster gave it), so that two
worker processes on one machine do not each start a pool the size of the machine. A prepared computation
is used by one partition at a time (a lock): run workers as processes with one thread each
(``LocalCluster(processes=True, threads_per_worker=1)``, ``dask worker --nthreads 1``).

**The same numbers, however the frame is partitioned.** A row's record depends on that row alone: every
method computes point by point, and the exact (symbolic) column's 30-digit fallback is a per-point rule
(:mod:`gradcli.methods.symbolic_values`): a point whose float64 value its rounding bound does not vouch for
is evaluated at 30 digits, whatever the other points are, within a time bound of its own
(:data:`gradcli.methods.exact_evaluation.EXACT_POINT_SECONDS`), not within a budget shared by a run (which,
on an engine, would give a point different digits depending on what else its partition held). So the rows
equal, bit for bit, those of :func:`gradcli.api.grad_columns` (and of ``gradcli grad --points ... -f csv``)
for the same points, with 1 partition or 100. What is per run is what is not in the rows: the summary, the
notes, the largest errors (a partition is a run of its own, and the work limit of
:mod:`gradcli.compute.work` applies to each partition, not to the frame: spreading a request past one
machine's limit is what the engine is for).

Dask and pandas are imported when a function is called (``pip install 'gradcli[dask]'``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from gradcli.dask_worker import cached, prepare_worker, sympy_in_a_thread
from gradcli.errors import UsageError
from gradcli.library.requests import DerivativeRequest, EvalRequest, GradRequest, HessianRequest

__all__ = ["Spec", "derivative", "eval", "evaluate", "grad", "hessian", "prepared", "spec_of"]

G, H, D, E = GradRequest, HessianRequest, DerivativeRequest, EvalRequest
_REQUESTS = {"grad": GradRequest, "hessian": HessianRequest, "derivative": DerivativeRequest, "eval": EvalRequest}


# ---------------------------------------------------------------------------------------------
# the request, as a key
# ---------------------------------------------------------------------------------------------
def _frozen(value):
    """A hashable form of an option's value (lists as tuples, mappings as sorted pairs)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


@dataclass(frozen=True)
class Spec:
    """A request without its points: the command and its checked options, hashable (the key of a worker's
    prepared computations) and small to send with every task."""

    command: str
    options: tuple  # (name, value) pairs, sorted

    def request(self):
        """The library's Request for these options (no points: a core is made from it, not chunks)."""
        kwargs = {k: list(v) if k in ("expressions", "rule", "at") and v is not None else v
                  for k, v in self.options}
        return _REQUESTS[self.command](**kwargs)


def spec_of(command: str, **options) -> Spec:
    """The checked :class:`Spec` of ``command`` with ``options`` (a bad value: UsageError, as the API's)."""
    request = _REQUESTS[command](**options)  # every value checked, as from gradcli.api
    checked = {name: getattr(request, name) for name in options}
    return Spec(command, tuple(sorted((k, _frozen(v)) for k, v in checked.items())))


# ---------------------------------------------------------------------------------------------
# a worker's prepared computations
# ---------------------------------------------------------------------------------------------
def prepared(spec: Spec) -> Prepared:
    """This process's prepared computation for ``spec``, built on first use."""
    return cached(("dataframe", spec), lambda: Prepared(spec))


class Prepared:
    """One request made ready in this process: the rules checked, the core made, SymPy's derivatives taken
    (the core's start and header, as the batch engine does before its first chunk). :meth:`columns`
    computes a partition's points with it, chunk by chunk as the engine would."""

    def __init__(self, spec: Spec):
        from gradcli.compute.work import estimate
        from gradcli.expression.points import parse_point
        from gradcli.expression.rules import rules_in_force
        from gradcli.expression.tree import active_rules

        self.spec = spec
        request = spec.request()
        prepare_worker(getattr(request, "method", ""))
        self.command = request.command
        with rules_in_force(request.rule, time_limit=request.symbolic_timeout):
            self.rules = tuple(active_rules().values())
            core = request.make_core()
            with sympy_in_a_thread():
                core.start()
                self.header = core.header()
        self.core = core
        self.fixed = parse_point(request.at, required=False)
        self.chunk_size = core.chunk_size(request.batch_size)
        self.work = estimate(core)
        self._lock = threading.Lock()

    def records(self, columns: dict[str, list]) -> list[dict]:
        """The records of the points in ``columns`` ({name: list of values}, as the API's points)."""
        from gradcli.expression.tree import active_rules, set_active_rules
        from gradcli.library.points import ColumnsSource

        with self._lock:
            saved = tuple(active_rules().values())
            set_active_rules(self.rules)
            try:
                source = ColumnsSource(columns, variables=self.core.variables, fixed=self.fixed,
                                       chunk_size=self.chunk_size, dtype=self.core.dtype)
                if self.work is not None:
                    self.work.check(source.total)
                records: list[dict] = []
                for chunk in source.chunks():
                    self.core.check(chunk)
                    records += self.core.compute(chunk).records()
                return records
            finally:
                set_active_rules(saved)

    def columns(self, arrays: dict) -> tuple[dict, list[int]]:
        """The ``-f csv`` columns (as :meth:`gradcli.api.Result.columns`) of the points in ``arrays``
        ({name: 1-D array}), and how many rows each point has (grad: one per expression)."""
        from gradcli.api import Result
        from gradcli.library.points import columns_of
        from gradcli.library.run import Collect, Run

        records = self.records(columns_of(arrays))
        kept = Collect()
        kept.write(records)
        run = Run(self.command, False, self.header, {}, "", [], [], False, 0, kept)
        repeats = [len(r["results"]) if "results" in r else 1 for r in records]
        return Result(run).columns(), repeats


# ---------------------------------------------------------------------------------------------
# a partition
# ---------------------------------------------------------------------------------------------
def _partition_rows(frame, spec: Spec, meta):
    """One partition (a pandas DataFrame) -> its rows: the frame's other columns first (their own arrays,
    repeated where a point has several rows), then the computed ones, typed as ``meta`` says (a column whose
    values happen to be all integers, or all missing, in one partition keeps the frame's type). ``meta``
    None: the one-row run that makes it."""
    import numpy as np
    import pandas as pd

    if len(frame) == 0:
        return meta.iloc[:0].copy()
    work = prepared(spec)
    columns, repeats = work.columns({str(c): frame[c].to_numpy() for c in frame.columns})
    variables = set(work.header["variables"])
    passed = [c for c in frame.columns if str(c) not in variables]
    positions = None if max(repeats) == 1 and len(repeats) == len(frame) else np.repeat(np.arange(len(frame)),
                                                                                        repeats)
    data = {c: frame[c].array if positions is None else frame[c].array.take(positions) for c in passed}
    names = {str(c) for c in passed}
    wanted = {} if meta is None else meta.dtypes
    for k, v in columns.items():
        if k not in names:
            dtype = wanted.get(k)
            data[k] = v.astype(dtype) if isinstance(dtype, np.dtype) and v.dtype != dtype else v
    index = frame.index if positions is None else frame.index[positions]
    out = pd.DataFrame(data, index=index, copy=False)
    return out if meta is None else _typed(out, meta)


def _typed(out, meta):
    """``out`` with ``meta``'s columns, in its order and with its types."""
    if list(out.columns) != list(meta.columns):
        raise UsageError("a partition's columns differ from the frame's first rows': "
                         f"{list(out.columns)} against {list(meta.columns)} (did SymPy time out on one worker? "
                         "raise symbolic_timeout)")
    differ = out.dtypes != meta.dtypes
    return out.astype(meta.dtypes[differ].to_dict()) if differ.any() else out


def _meta(ddf, spec: Spec):
    """The output's columns and types, from a one-row run here: the variables at 1 (or, where a request
    refuses that point, the frame's first row), the other columns as the frame's meta has them."""
    import pandas as pd

    work = prepared(spec)
    sample = ddf._meta_nonempty.iloc[:1].copy()
    needed = [v for v in work.core.variables if v not in work.fixed.values]
    for v in needed:
        if v in sample.columns:
            sample[v] = pd.Series([1.0], index=sample.index, dtype="float64")
    try:
        rows = _partition_rows(sample, spec, None)
    except UsageError:
        rows = _partition_rows(ddf.head(1, npartitions=-1), spec, None)
    typed = {}
    for c in rows.columns:
        typed[c] = ddf._meta.dtypes[c] if c in ddf._meta.columns and c not in needed else rows.dtypes[c]
    return rows.iloc[:0].astype(typed)


def _map(ddf, spec: Spec):
    if not hasattr(ddf, "map_partitions") or not hasattr(ddf, "_meta"):
        raise UsageError(f"give a Dask DataFrame (dask.dataframe), not {type(ddf).__name__}")
    meta = _meta(ddf, spec)
    return ddf.map_partitions(_partition_rows, spec, meta, meta=meta, align_dataframes=False)


# ---------------------------------------------------------------------------------------------
# the commands
# ---------------------------------------------------------------------------------------------
def _expression_list(expressions) -> list[str]:
    if len(expressions) == 1 and isinstance(expressions[0], (list, tuple)):
        return list(expressions[0])
    return list(expressions)


def grad(ddf, *expressions: str, at=None, wrt: str | None = None, method: str = G.method, scheme: str = G.scheme,
         eps: float | None = None, dtype: str = G.dtype, symbolic_timeout: float = G.symbolic_timeout,
         batch_size: int = G.batch_size, rule: str | list[str] | None = None):
    """``gradcli grad EXPR... --points`` over a Dask DataFrame: its ``-f csv`` rows (several expressions: a row
    per point and expression), lazily, as :func:`gradcli.api.grad_columns` gives them."""
    expressions = _expression_list(expressions)
    if not expressions:
        raise UsageError("give an expression, e.g. \"x**2\"")
    return _map(ddf, spec_of("grad", expressions=expressions, at=at, wrt=wrt, method=method, scheme=scheme,
                             eps=eps, dtype=dtype, symbolic_timeout=symbolic_timeout, batch_size=batch_size,
                             rule=rule))


def hessian(ddf, expression: str, *, at=None, wrt: str | None = None, method: str = H.method,
            eps: float | None = None, dtype: str = H.dtype, symbolic_timeout: float = H.symbolic_timeout,
            batch_size: int = H.batch_size, rule: str | list[str] | None = None):
    """``gradcli hessian EXPR --points`` over a Dask DataFrame: its ``-f csv`` rows."""
    return _map(ddf, spec_of("hessian", expression=expression, at=at, wrt=wrt, method=method, eps=eps,
                             dtype=dtype, symbolic_timeout=symbolic_timeout, batch_size=batch_size, rule=rule))


def derivative(ddf, expression: str, *, at=None, order: int = D.order, wrt: str | None = None,
               method: str = D.method, eps: float | None = None, accuracy: int = D.accuracy,
               dtype: str = D.dtype, symbolic_timeout: float = D.symbolic_timeout, batch_size: int = D.batch_size,
               rule: str | list[str] | None = None):
    """``gradcli derivative EXPR --points`` over a Dask DataFrame: its ``-f csv`` rows."""
    return _map(ddf, spec_of("derivative", expression=expression, at=at, order=order, wrt=wrt, method=method,
                             eps=eps, accuracy=accuracy, dtype=dtype, symbolic_timeout=symbolic_timeout,
                             batch_size=batch_size, rule=rule))


def evaluate(ddf, expression: str, *, at=None, dtype: str = E.dtype, batch_size: int = E.batch_size):
    """``gradcli eval EXPR --points`` over a Dask DataFrame: its ``-f csv`` rows (the value alone, operation by
    operation in the dtype). Available as ``gradcli.dask.eval``."""
    return _map(ddf, spec_of("eval", expression=expression, at=at, dtype=dtype, batch_size=batch_size))


eval = evaluate  # the CLI's name (it shadows the builtin in this module only)
