"""gradcli from Python: the CLI's commands as functions, with the same numbers and the same documents.

    >>> import gradcli
    >>> r = gradcli.grad("(x1+5)*x2**2", at={"x1": 2, "x2": 3})
    >>> r.to_dict()["results"][0]["gradient"]["tape"]
    {'x1': 9.0, 'x2': 42.0}

Every function takes the options of its command, by their long names with ``_`` (``--symbolic-timeout`` ->
``symbolic_timeout``; descend's ``--from`` -> ``start``), with the CLI's defaults, which are read from the
command's own declaration (see :mod:`gradcli.api._options`). One point (``at``) computes as the CLI does at
one point, many (``points``, ``grid``) as with ``--points``/``--grid``; the :class:`Result` holds the CLI's
``-f json`` document, its records, the warnings and notes, and ``failed`` (the CLI's exit 1).

Errors are :class:`gradcli.errors.GradcliError` s: :class:`UsageError` (the CLI's exit 2; :class:`ParseError`
for an expression) and :class:`ComputeError` (exit 1). Nothing is printed, nothing exits.

For Ray Data ``map_batches`` and Dask ``map_partitions``: :func:`grad_columns`, :func:`hessian_columns` and
:func:`derivative_columns` take a dict of arrays (or a DataFrame) and return a dict of NumPy arrays, the
CLI's ``-f csv`` columns, with the batch's other columns passed through.

NumPy, SymPy and TensorFlow are imported when a function is called, not when this module is.
"""

from __future__ import annotations

from collections.abc import Mapping

from gradcli.api._inputs import at_texts, points_spec
from gradcli.api._options import CLI_DEFAULT, cli_command, cli_options
from gradcli.api._result import Result, quiet
from gradcli.api._runs import batch_of_one, collect, many_points, one_point
from gradcli.errors import ComputeError, GradcliError, ParseError, UsageError

__all__ = ["ComputeError", "GradcliError", "ParseError", "Result", "UsageError", "check", "derivative",
           "derivative_columns", "descend", "eval", "evaluate", "grad", "grad_columns", "hessian",
           "hessian_columns"]


# ---------------------------------------------------------------------------------------------
# the commands
# ---------------------------------------------------------------------------------------------
@cli_command("grad")
def grad(*expressions: str, at=None, points=None, grid: str | None = None, wrt: str | None = None,
         method: str = CLI_DEFAULT, scheme: str = CLI_DEFAULT, eps: float | None = None, dtype: str = CLI_DEFAULT,
         symbolic_timeout: float = CLI_DEFAULT, batch_size: int = CLI_DEFAULT, constants: str | None = None,
         watch: str | None = None, rule: str | list[str] | None = None, strict: bool = False) -> Result:
    """``gradcli grad EXPR...``: the gradient, SymPy's exact value beside GradientTape and finite differences
    (several expressions: the Jacobian and the tape's sum). ``at``: {"x1": 2, "x2": 3} or "x1=2,x2=3";
    ``points``: a CSV/JSON Lines path, a mapping of columns or a DataFrame; ``grid``: "x=-1:1:5,y=0:1:3";
    ``constants``/``watch`` (one point): "x1,x2" enter the tape as tf.constant / are tape.watch()ed;
    ``rule``: one ``--rule`` text or a list of them (checked first; a wrong rule raises ComputeError);
    ``strict``: ``failed`` on any warning too."""
    expressions = _expression_list(expressions)
    _check_scheme(scheme)
    if constants is not None or watch is not None:
        from gradcli.compute.request import refuse_constants_for_many

        refuse_constants_for_many(constants, watch, many=points is not None or grid is not None)

    def core():
        from gradcli.compute.batch.grad import GradBatch

        return GradBatch(expressions, wrt=wrt, methods=method, scheme=scheme, eps=eps, dtype=dtype,
                         symbolic_time_limit=symbolic_timeout, constants=constants, watch=watch)

    return _run("grad", core, at=at, points=points, grid=grid, batch_size=batch_size, strict=strict, rule=rule,
                symbolic_timeout=symbolic_timeout)


def _run(command: str, core, *, at, points, grid, batch_size: int, strict: bool, rule, symbolic_timeout: float
         ) -> Result:
    """One point as a batch of one, or many, with the call's ``--rule`` s in force (checked first, as the CLI
    does; they end with the call); ``strict``: ``failed`` on any warning too (--strict's exit 1)."""
    from gradcli.expression.rules import rules_in_force

    with rules_in_force(rule, time_limit=symbolic_timeout) as checked:
        def ruled_core():
            made = core()
            made.notes += checked.notes
            return made

        if points is None and grid is None:
            result = batch_of_one(command, ruled_core, at=at, batch_size=batch_size)
        else:
            result = many_points(command, ruled_core, points=points, grid=grid, at=at, batch_size=batch_size)
    result.failed = result.failed or (strict and bool(result.warnings))
    return result


@cli_command("hessian")
def hessian(expression: str, *, at=None, points=None, grid: str | None = None, wrt: str | None = None,
            method: str = CLI_DEFAULT, eps: float | None = None, dtype: str = CLI_DEFAULT,
            formulas: bool = CLI_DEFAULT, symbolic_timeout: float = CLI_DEFAULT,
            batch_size: int = CLI_DEFAULT, rule: str | list[str] | None = None, strict: bool = False) -> Result:
    """``gradcli hessian EXPR``: the Hessian three ways and what it says (eigenvalues, definiteness, kind of
    critical point); ``rule`` as for :func:`grad`."""
    def core():
        from gradcli.compute.batch.hessian import HessianBatch

        return HessianBatch(expression, wrt=wrt, methods=method, eps=eps, dtype=dtype, formulas=formulas,
                            symbolic_time_limit=symbolic_timeout)

    return _run("hessian", core, at=at, points=points, grid=grid, batch_size=batch_size, strict=strict, rule=rule,
                symbolic_timeout=symbolic_timeout)


@cli_command("derivative")
def derivative(expression: str, *, at=None, points=None, grid: str | None = None, order: int = CLI_DEFAULT,
               wrt: str | None = None, method: str = CLI_DEFAULT, eps: float | None = None,
               accuracy: int = CLI_DEFAULT, dtype: str = CLI_DEFAULT, formulas: bool = CLI_DEFAULT,
               symbolic_timeout: float = CLI_DEFAULT, batch_size: int = CLI_DEFAULT,
               rule: str | list[str] | None = None, strict: bool = False) -> Result:
    """``gradcli derivative EXPR``: the first ``order`` derivatives of a one-variable function; ``rule`` as for
    :func:`grad`."""
    def core():
        from gradcli.compute.batch.derivative import DerivativeBatch

        return DerivativeBatch(expression, order=order, wrt=wrt, methods=method, eps=eps, dtype=dtype,
                               accuracy=accuracy, formulas=formulas, symbolic_time_limit=symbolic_timeout)

    return _run("derivative", core, at=at, points=points, grid=grid, batch_size=batch_size, strict=strict,
                rule=rule, symbolic_timeout=symbolic_timeout)


@cli_command("descend")
def descend(expression: str, *, start=None, points=None, grid: str | None = None, optimizer: str = CLI_DEFAULT,
            lr: float = CLI_DEFAULT, steps: int = CLI_DEFAULT, tol: float | None = None,
            maximize: bool = CLI_DEFAULT, momentum: float | None = None, every: int | None = None,
            dtype: str = CLI_DEFAULT, stationary_timeout: float = CLI_DEFAULT,
            batch_size: int = CLI_DEFAULT, rule: str | list[str] | None = None) -> Result:
    """``gradcli descend EXPR``: gradient descent, the guide's loop (``manual``) and Keras optimizers.
    ``start`` is the CLI's ``--from`` ({"x": -1.2, "y": 1} or "x=-1.2,y=1"); ``points``/``grid``: many starts;
    one start is a batch of one, as in the CLI. ``rule`` as for :func:`grad`. A run's ``seconds`` (its time)
    differs from one call to the next."""
    from gradcli.compute.descend import plan_descent
    from gradcli.compute.descend.core import run_starts
    from gradcli.compute.descend.options import check_stationary_time_limit, refuse_for_many_starts
    from gradcli.expression.rules import rules_in_force

    def plan_for(start_option, every_option):
        return plan_descent(expression, start=start_option, optimizers=optimizer, lr=lr, steps=steps, tol=tol,
                            maximize=maximize, dtype=dtype, momentum=momentum, every=every_option)

    if points is None and grid is None:  # one start: a batch of one, its document and table
        from gradcli.compute.descend import start_chunk
        from gradcli.render.common import to_json
        from gradcli.render.descend import StartSink, descend_table

        sink = StartSink("none", every=every)
        with rules_in_force(rule) as checked, quiet() as captured:
            plan = plan_for(at_texts(start, "start"), every)
            failed = run_starts(plan, [start_chunk(plan)], sink, every=every, one_start=True, notes=checked.notes,
                                stationary_time_limit=check_stationary_time_limit(stationary_timeout)).failed
        document = sink.document
        record = {k: document[k] for k in sink.records[0]}
        out, err = captured
        return Result("descend", to_json(document) + "\n", warnings=document["warnings"], notes=document["notes"],
                      failed=failed, render=lambda: descend_table(document),
                      captured=out.getvalue() + err.getvalue(), records=lambda: [record])

    spec, stdin_text = points_spec(points)

    def run(sink):
        from gradcli.compute.batch.points import start_chunks

        if spec is not None and grid is not None:
            raise UsageError("give --points or --grid, not both")
        refuse_for_many_starts(start=start, every=every)
        plan = plan_for(None, None)
        time_limit = check_stationary_time_limit(stationary_timeout)
        chunks = start_chunks(points=spec, grid=grid, names=plan.names, batch_size=batch_size, dtype=plan.dtype)
        sink.sinks(plan.names)
        return run_starts(plan, chunks, sink, stationary_time_limit=time_limit, notes=checked.notes).failed

    with rules_in_force(rule) as checked:
        return collect("descend", run, stdin_text, list_key="starts")


@cli_command("check")
def check(expression: str, *, expect=None, order: int = CLI_DEFAULT, at=None, points=None,
          grid: str | None = None, box: str = CLI_DEFAULT, samples: int = CLI_DEFAULT, seed: int = CLI_DEFAULT,
          symbolic_timeout: float = CLI_DEFAULT, rtol: float = CLI_DEFAULT, atol: float = CLI_DEFAULT,
          dtype: str = CLI_DEFAULT, rule: str | list[str] | None = None) -> Result:
    """``gradcli check EXPR --expect X=FORMULA``: hand-derived derivatives against SymPy's exact ones (proved
    equal or different by SymPy where it can, else at ``at``, at ``points``/``grid``, or at ``samples`` random
    points in ``box`` and near the formulas' features). ``expect``: "x=2*x*y", a list of such texts, or a mapping
    {"x": "2*x*y"}. ``rtol``/``atol``: a formula agrees where |expected - exact| <= atol + rtol*|exact| (1e-9
    each, float32: 1e-5). ``rule`` as for :func:`grad`. ``failed``: a mismatch (the CLI's exit 1)."""
    from gradcli.compute.check import check_derivatives
    from gradcli.expression.rules import rules_in_force
    from gradcli.render.common import to_json

    if isinstance(expect, dict):
        expect = [f"{k}={v}" for k, v in expect.items()]
    expect = cli_options("check")["expect"].check(expect) or []
    spec, stdin_text = points_spec(points)
    with quiet(stdin_text) as captured, rules_in_force(rule, time_limit=symbolic_timeout) as checked:
        report = check_derivatives(expression, expect=expect, order=order, at=at_texts(at), points=spec,
                                   grid=grid, box=box, samples=samples, seed=seed,
                                   symbolic_time_limit=symbolic_timeout, rtol=rtol, atol=atol, dtype=dtype)
        report.notes += checked.notes
    document = to_json(report.to_dict())
    # check's text output is drawn in gradcli.commands.check (a module that imports Typer): the document
    # stands in for it
    return one_point("check", report, document, lambda: print(document), captured)


@cli_command("eval", "eval_value")
def evaluate(expression: str, *, at=None, points=None, grid: str | None = None, dtype: str = CLI_DEFAULT,
             batch_size: int = CLI_DEFAULT) -> Result:
    """``gradcli eval EXPR``: the value alone, operation by operation in the dtype (no SymPy, no TensorFlow).
    Available as ``gradcli.eval``; ``at``, ``points`` and ``grid`` as for :func:`grad`. At one point
    ``to_dict()["value"]`` is the number (None where undefined); at many, ``records()`` has one per point."""
    from gradcli.compute.value import run_eval

    if points is not None or grid is not None:
        spec, stdin_text = points_spec(points)

        def run(sink):
            sink.sinks()
            return run_eval(expression, at=at_texts(at), points=spec, grid=grid, dtype=dtype,
                            batch_size=batch_size, sink=sink).failed

        return collect("eval", run, stdin_text, list_key="points")
    import contextlib
    import io

    from gradcli.render.common import to_json
    from gradcli.render.value import OnePointSink

    sink = OnePointSink("json")
    with quiet() as captured, contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        failed = run_eval(expression, at=at_texts(at), dtype=dtype, batch_size=batch_size, sink=sink).failed
    document, record = sink.document, sink.records[0]

    def plain() -> None:  # the CLI's -f plain: the number alone
        if document["value"] is not None:
            print(repr(document["value"]))

    out, err = captured
    return Result("eval", to_json(document) + "\n", warnings=document["warnings"], notes=sink.notes, failed=failed,
                  render=plain, captured=out.getvalue() + err.getvalue(), records=lambda: [record])


eval = evaluate  # the CLI's name (it shadows the builtin in this module only)


# ---------------------------------------------------------------------------------------------
# one point, many points
# ---------------------------------------------------------------------------------------------
def _expression_list(expressions) -> list[str]:
    if len(expressions) == 1 and isinstance(expressions[0], (list, tuple)):  # grad(["3*x", "x**2"], ...)
        expressions = expressions[0]
    return cli_options("grad")["expressions"].check(list(expressions)) or []


def _check_scheme(scheme: str) -> None:
    from gradcli.methods.fd_schemes import Scheme

    try:
        Scheme(scheme)
    except ValueError:
        raise UsageError(f"Invalid value for '--scheme': '{scheme}' is not one of "
                         + ", ".join(f"'{s.value}'" for s in Scheme) + ".") from None


# ---------------------------------------------------------------------------------------------
# a dict of arrays in, a dict of arrays out (Ray Data map_batches, Dask map_partitions)
# ---------------------------------------------------------------------------------------------
@cli_command("grad")
def grad_columns(expressions, batch, *, at=None, wrt: str | None = None, method: str = CLI_DEFAULT,
                 scheme: str = CLI_DEFAULT, eps: float | None = None, dtype: str = CLI_DEFAULT,
                 symbolic_timeout: float = CLI_DEFAULT, batch_size: int = CLI_DEFAULT,
                 rule: str | list[str] | None = None) -> dict:
    """grad's batch core on a dict of arrays (a column per variable; ``at`` may fix some): the CLI's
    ``-f csv`` columns as NumPy arrays (a row per point and expression), the batch's other columns first::

        ds.map_batches(lambda b: gradcli.api.grad_columns("x**2*y", b))
    """
    expressions = _expression_list((expressions,) if isinstance(expressions, str) else tuple(expressions))
    _check_scheme(scheme)

    def core():
        from gradcli.compute.batch.grad import GradBatch

        return GradBatch(expressions, wrt=wrt, methods=method, scheme=scheme, eps=eps, dtype=dtype,
                         symbolic_time_limit=symbolic_timeout)

    return _columns("grad", core, batch, at=at, batch_size=batch_size, rule=rule, symbolic_timeout=symbolic_timeout)


@cli_command("hessian")
def hessian_columns(expression: str, batch, *, at=None, wrt: str | None = None, method: str = CLI_DEFAULT,
                    eps: float | None = None, dtype: str = CLI_DEFAULT, symbolic_timeout: float = CLI_DEFAULT,
                    batch_size: int = CLI_DEFAULT, rule: str | list[str] | None = None) -> dict:
    """hessian's batch core on a dict of arrays: the CLI's ``-f csv`` columns (a row per point)."""
    def core():
        from gradcli.compute.batch.hessian import HessianBatch

        return HessianBatch(expression, wrt=wrt, methods=method, eps=eps, dtype=dtype,
                            symbolic_time_limit=symbolic_timeout)

    return _columns("hessian", core, batch, at=at, batch_size=batch_size, rule=rule,
                    symbolic_timeout=symbolic_timeout)


@cli_command("derivative")
def derivative_columns(expression: str, batch, *, at=None, order: int = CLI_DEFAULT, wrt: str | None = None,
                       method: str = CLI_DEFAULT, eps: float | None = None, accuracy: int = CLI_DEFAULT,
                       dtype: str = CLI_DEFAULT, symbolic_timeout: float = CLI_DEFAULT,
                       batch_size: int = CLI_DEFAULT, rule: str | list[str] | None = None) -> dict:
    """derivative's batch core on a dict of arrays: the CLI's ``-f csv`` columns (a row per point)."""
    def core():
        from gradcli.compute.batch.derivative import DerivativeBatch

        return DerivativeBatch(expression, order=order, wrt=wrt, methods=method, eps=eps, dtype=dtype,
                               accuracy=accuracy, symbolic_time_limit=symbolic_timeout)

    return _columns("derivative", core, batch, at=at, batch_size=batch_size, rule=rule,
                    symbolic_timeout=symbolic_timeout)


class _Records:
    """A sink that keeps the header and the records."""

    def __init__(self):
        self.records: list[dict] = []

    def start(self, header: dict) -> None:
        self.header = header

    def write(self, batch) -> None:
        self.records.extend(batch.records())

    def finish(self, summary, summary_text, warnings, notes) -> None:
        pass


def _columns(command: str, core, batch, *, at, batch_size: int, rule, symbolic_timeout: float) -> dict:
    import numpy as np

    from gradcli.compute import work
    from gradcli.compute.batch.engine import run_batch
    from gradcli.expression.points import parse_point
    from gradcli.expression.rules import rules_in_force
    from gradcli.expression.sources.shapes import Needs, PointChunk
    from gradcli.render.batch import sink_for

    arrays = _arrays_of(batch)
    size = len(next(iter(arrays.values()))) if arrays else 0
    sink = _Records()
    with quiet(), rules_in_force(rule, time_limit=symbolic_timeout):
        computation = core()
        needs = Needs(computation.variables, parse_point(at_texts(at), required=False), "--at", computation.dtype)
        values = {}
        for name in computation.variables:
            if name in needs.fixed:
                if name in arrays:
                    raise UsageError(f"{name} is given both by --at and by the batch: drop one of them")
                values[name] = np.full(size, needs.fixed[name])
            else:
                values[name] = _variable_column(name, arrays, needs)
        estimate = work.estimate(computation)
        if estimate is not None:  # refused as the CLI refuses it (gradcli.compute.batch.points)
            estimate.check(size)
        chunk_size = computation.chunk_size(batch_size)
        chunks = (PointChunk({k: v[i:i + chunk_size] for k, v in values.items()}, [{}] * n, [None] * n)
                  for i in range(0, size, chunk_size) for n in [min(chunk_size, size - i)])
        run_batch(computation, chunks, sink)
    rows_of = sink_for(command, "csv").rows  # the CLI's CSV row layout
    names: list[str] | None = None
    flat: dict[str, list] = {}
    repeats = []
    for record in sink.records:
        rows = rows_of(sink.header, record)
        repeats.append(len(rows))
        for row in rows:
            if names is None:
                names = [k for k, _ in row]
                flat = {k: [] for k in names}
            cells = dict(row)
            for k in names:
                flat[k].append(cells.get(k))
    passed = [k for k in arrays if k not in computation.variables]
    clash = [k for k in passed if k in flat]
    if clash:
        raise UsageError(f"batch: column {clash[0]!r} has the name of an output column: rename it")
    out = {k: np.repeat(arrays[k], repeats) for k in passed}
    out.update({k: _array(v) for k, v in flat.items()})
    return out


def _arrays_of(batch) -> dict:
    """A dict of arrays, or a DataFrame's columns (as Dask's map_partitions hands them), as 1-D NumPy arrays."""
    import numpy as np

    if not isinstance(batch, Mapping) and hasattr(batch, "columns"):
        batch = {c: batch[c] for c in batch.columns}
    if not isinstance(batch, Mapping):
        raise UsageError(f"batch: give a dict of arrays or a DataFrame, not {type(batch).__name__}")
    arrays = {str(k): np.asarray(v) for k, v in batch.items()}
    if any(a.ndim != 1 for a in arrays.values()) or len({len(a) for a in arrays.values()}) > 1:
        raise UsageError("batch: give one-dimensional columns of one length: "
                         + ", ".join(f"{k} {a.shape}" for k, a in arrays.items()))
    return arrays


def _variable_column(name: str, arrays: dict, needs):
    import numpy as np

    if name not in arrays:
        raise UsageError(f"batch: no column {name!r} (columns: {', '.join(arrays) or 'none'}; or fix it with at=)")
    try:
        column = arrays[name].astype(np.float64)
    except (TypeError, ValueError):
        raise UsageError(f"batch: column {name!r} is not numbers") from None
    bad = np.flatnonzero(~np.isfinite(column))
    if len(bad):
        raise UsageError(f"batch: column {name!r}, row {bad[0]}: {column[bad[0]]} is not a finite number")
    if needs.dtype != "float64":
        for i, value in enumerate(column.tolist()):
            if (why := needs.misfit(name, value)) is not None:
                raise UsageError(f"batch: row {i}: {why}")
    return column


def _array(values: list):
    """A column of the CSV layout as a NumPy array: int64, float64 (None as NaN), str, or object."""
    import numpy as np

    kinds = {type(v) for v in values}
    if kinds <= {int} and values:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass
    if kinds <= {int, float, type(None)}:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    if kinds <= {str}:
        return np.array(values, dtype=str)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
