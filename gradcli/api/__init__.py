"""gradcli from Python: the commands as functions over the library, with the same numbers and documents.

    >>> import gradcli
    >>> r = gradcli.grad("(x1+5)*x2**2", at={"x1": 2, "x2": 3})
    >>> r.gradient["tape"]
    {'x1': 9.0, 'x2': 42.0}

Every function takes the options of its command, by their long names with ``_`` (``--symbolic-timeout`` ->
``symbolic_timeout``; descend's ``--from`` -> ``start``), with the command's defaults: each builds the
library's Request (gradcli.library.requests, where every default is written once and every value checked),
runs it with a sink that keeps the records, and returns a :class:`Result`. One point (``at``) computes as the
CLI does at one point, many (``points``, ``grid``) as with ``--points``/``--grid``; ``points`` given as a
mapping of columns or a DataFrame become chunks directly.

Errors are :class:`gradcli.errors.GradcliError` s: :class:`UsageError` (the CLI's exit 2; :class:`ParseError`
for an expression) and :class:`ComputeError` (exit 1). Nothing is printed, nothing exits, no stream of the
process is touched, and calls in different threads run at once, each with its own ``rule`` s.

For Ray Data ``map_batches`` and Dask ``map_partitions``: :func:`grad_columns`, :func:`hessian_columns` and
:func:`derivative_columns` take a dict of arrays (or a DataFrame) and return a dict of NumPy arrays, the
CLI's ``-f csv`` columns, with the batch's other columns passed through.

NumPy, SymPy and TensorFlow are imported when a function is called, not when this module is.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping

from gradcli.api._result import ReducedResult, ReportResult, Result
from gradcli.errors import ComputeError, GradcliError, ParseError, UsageError
from gradcli.methods.worker import jobs_in_threads
from gradcli.library.requests import (CheckRequest, DerivativeRequest, DescendRequest, EvalRequest, GradRequest,
                                      HessianRequest, HvpRequest, JvpRequest, StepsRequest, TraceRequest)
from gradcli.library.implicit_request import ImplicitRequest
from gradcli.library.propagate_request import PropagateRequest

__all__ = ["ComputeError", "GradcliError", "ParseError", "Result", "UsageError", "check", "derivative",
           "derivative_columns", "descend", "eval", "evaluate", "grad", "grad_columns", "hessian",
           "hessian_columns", "hvp", "implicit", "jvp", "propagate", "steps", "trace"]

G, H, D, E, S, C = GradRequest, HessianRequest, DerivativeRequest, EvalRequest, DescendRequest, CheckRequest
J, V, T, P = JvpRequest, HvpRequest, TraceRequest, StepsRequest
U = PropagateRequest


def _call(fn):
    """An unknown keyword or a missing argument is a UsageError naming it (with the close matches), as the
    CLI's exit 2, and so is RecursionError (an expression nested too deeply); SymPy's jobs run in threads of
    this process (gradcli.methods.worker.jobs_in_threads), not a process per call."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise UsageError(_call_problem(fn.__name__, signature, kwargs, exc)) from None
        try:
            with jobs_in_threads():
                return fn(*args, **kwargs)
        except RecursionError:
            raise UsageError("expression too deeply nested to compute") from None

    return wrapper


def _call_problem(name: str, signature: inspect.Signature, kwargs: dict, exc: TypeError) -> str:
    import difflib

    known = [p for p in signature.parameters if signature.parameters[p].kind is not inspect.Parameter.VAR_POSITIONAL]
    for key in kwargs:
        if key not in signature.parameters:
            close = difflib.get_close_matches(key, known, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else f" (its options: {', '.join(known)})"
            return f"{name}() has no option {key!r}{hint}"
    return f"{name}(): {exc}"


def _expression_list(expressions) -> list[str]:
    if len(expressions) == 1 and isinstance(expressions[0], (list, tuple)):  # grad(["3*x", "x**2"], ...)
        return list(expressions[0])
    return list(expressions)


# ---------------------------------------------------------------------------------------------
# the commands
# ---------------------------------------------------------------------------------------------
@_call
def grad(*expressions: str, at=None, points=None, grid: str | None = None, wrt: str | None = None,
         method: str = G.method, scheme: str = G.scheme, eps: float | None = None, dtype: str = G.dtype,
         symbolic_timeout: float = G.symbolic_timeout, batch_size: int = G.batch_size, constants: str | None = None,
         watch: str | None = None, rule: str | list[str] | None = None, strict: bool = G.strict,
         engine: str = G.engine, workers: int | None = None, scheduler: str | None = None,
         one_shot: bool = G.one_shot, reduce: str | None = None) -> Result:
    """``gradcli grad EXPR...``: the gradient, SymPy's exact value beside GradientTape and finite differences
    (several expressions: the Jacobian and the tape's sum). ``at``: {"x1": 2, "x2": 3} or "x1=2,x2=3";
    ``points``: a CSV/JSON Lines path, a mapping of columns or a DataFrame; ``grid``: "x=-1:1:5,y=0:1:3";
    ``constants``/``watch`` (one point): "x1,x2" enter the tape as tf.constant / are tape.watch()ed;
    ``rule``: one ``--rule`` text or a list of them (checked first; a wrong rule raises ComputeError);
    ``strict``: ``failed`` on any warning too. One point: ``r.gradient[method][variable]``. ``reduce``: "sum"
    or "mean" over the rows of ``points``/``grid`` (``at``: the parameters they share): one result,
    ``to_dict()`` the CLI's ``--reduce -f json``."""
    request = GradRequest(
        expressions=_expression_list(expressions), at=at, points=points, grid=grid, wrt=wrt, method=method,
        scheme=scheme, eps=eps, dtype=dtype, symbolic_timeout=symbolic_timeout, batch_size=batch_size,
        constants=constants, watch=watch, rule=rule, strict=strict, one_shot=one_shot, engine=engine,
        workers=workers, scheduler=scheduler, reduce=reduce)
    if request.reduce is not None:
        return ReducedResult(request.reduced())
    return Result(request.run())


@_call
def hessian(expression: str, *, at=None, points=None, grid: str | None = None, wrt: str | None = None,
            method: str = H.method, eps: float | None = None, dtype: str = H.dtype, formulas: bool = H.formulas,
            symbolic_timeout: float = H.symbolic_timeout, batch_size: int = H.batch_size,
            rule: str | list[str] | None = None, strict: bool = H.strict,
            engine: str = H.engine, workers: int | None = None, scheduler: str | None = None) -> Result:
    """``gradcli hessian EXPR``: the Hessian three ways and what it says (eigenvalues, definiteness, kind of
    critical point); ``rule`` as for :func:`grad`. One point: ``r.hessian[method]``, a 2-D array."""
    return Result(HessianRequest(
        expression=expression, at=at, points=points, grid=grid, wrt=wrt, method=method, eps=eps, dtype=dtype,
        formulas=formulas, symbolic_timeout=symbolic_timeout, batch_size=batch_size, rule=rule,
        strict=strict, engine=engine, workers=workers, scheduler=scheduler).run())


@_call
def jvp(*expressions: str, along=None, at=None, points=None, grid: str | None = None, method: str = J.method,
        dtype: str = J.dtype, symbolic_timeout: float = J.symbolic_timeout, batch_size: int = J.batch_size,
        strict: bool = J.strict,
        engine: str = J.engine, workers: int | None = None, scheduler: str | None = None) -> Result:
    """``gradcli jvp EXPR... --along V``: J·v, the derivative along a direction, by ForwardAccumulator, SymPy,
    fd along v and the complex step. ``along``: {"x1": 1, "x2": 2} or "x1=1,x2=2" (variables not named: 0);
    ``at``, ``points``, ``grid`` as for :func:`grad`. One point: ``r.jvp[method]`` (several expressions:
    ``r.jvps[i]``)."""
    return Result(JvpRequest(
        expressions=_expression_list(expressions), along=along, at=at, points=points, grid=grid, method=method,
        dtype=dtype, symbolic_timeout=symbolic_timeout, batch_size=batch_size, strict=strict, engine=engine,
        workers=workers, scheduler=scheduler).run())


@_call
def hvp(expression: str, *, along=None, at=None, points=None, grid: str | None = None, method: str | None = V.method,
        dtype: str = V.dtype, symbolic_timeout: float = V.symbolic_timeout, batch_size: int = V.batch_size,
        strict: bool = V.strict,
        engine: str = V.engine, workers: int | None = None, scheduler: str | None = None) -> Result:
    """``gradcli hvp EXPR --along V``: H·v without the Hessian, by forward-over-reverse, reverse-over-reverse,
    reverse-over-forward (``tape``: the three), fd of the tape gradient and SymPy (``method`` None: all).
    One point: ``r.hvp[method]``, a 1-D array."""
    return Result(HvpRequest(
        expression=expression, along=along, at=at, points=points, grid=grid, method=method, dtype=dtype,
        symbolic_timeout=symbolic_timeout, batch_size=batch_size, strict=strict, engine=engine, workers=workers,
        scheduler=scheduler).run())


@_call
def derivative(expression: str, *, at=None, points=None, grid: str | None = None, order: int = D.order,
               wrt: str | None = None, method: str = D.method, eps: float | None = None,
               accuracy: int = D.accuracy, dtype: str = D.dtype, formulas: bool = D.formulas,
               symbolic_timeout: float = D.symbolic_timeout, batch_size: int = D.batch_size,
               rule: str | list[str] | None = None, strict: bool = D.strict,
               engine: str = D.engine, workers: int | None = None, scheduler: str | None = None) -> Result:
    """``gradcli derivative EXPR``: the first ``order`` derivatives of a one-variable function; ``rule`` as for
    :func:`grad`. One point: ``r.derivatives[method]``, an array by order 1..n."""
    return Result(DerivativeRequest(
        expression=expression, at=at, points=points, grid=grid, order=order, wrt=wrt, method=method, eps=eps,
        accuracy=accuracy, dtype=dtype, formulas=formulas, symbolic_timeout=symbolic_timeout,
        batch_size=batch_size, rule=rule, strict=strict, engine=engine, workers=workers, scheduler=scheduler).run())


@_call
def evaluate(expression: str, *, at=None, points=None, grid: str | None = None, dtype: str = E.dtype,
             batch_size: int = E.batch_size, strict: bool = E.strict,
             engine: str = E.engine, workers: int | None = None, scheduler: str | None = None) -> Result:
    """``gradcli eval EXPR``: the value alone, operation by operation in the dtype (no SymPy, no TensorFlow).
    Available as ``gradcli.eval``; ``at``, ``points`` and ``grid`` as for :func:`grad`. At one point
    ``r.value`` is the number (None where undefined); at many, ``records()`` has one per point."""
    return Result(EvalRequest(expression=expression, at=at, points=points, grid=grid, dtype=dtype,
                              batch_size=batch_size, strict=strict, engine=engine, workers=workers,
                              scheduler=scheduler).run())


eval = evaluate  # the CLI's name (it shadows the builtin in this module only)


@_call
def descend(expression: str, *, start=None, points=None, grid: str | None = None, optimizer: str = S.optimizer,
            lr: float = S.lr, steps: int = S.steps, tol: float | None = None, maximize: bool = S.maximize,
            momentum: float | None = None, every: int | None = None, dtype: str = S.dtype,
            stationary_timeout: float = S.stationary_timeout, batch_size: int = S.batch_size,
            rule: str | list[str] | None = None, strict: bool = S.strict) -> Result:
    """``gradcli descend EXPR``: gradient descent, the guide's loop (``manual``) and Keras optimizers.
    ``start`` is the CLI's ``--from`` ({"x": -1.2, "y": 1} or "x=-1.2,y=1"); ``points``/``grid``: many starts;
    one start is a batch of one, as in the CLI. ``rule`` as for :func:`grad`. A run's ``seconds`` (its time)
    differs from one call to the next."""
    from gradcli.api._result import DescendResult

    request = DescendRequest(expression=expression, start=start, points=points, grid=grid, optimizer=optimizer,
                             lr=lr, steps=steps, tol=tol, maximize=maximize, momentum=momentum, every=every,
                             dtype=dtype, stationary_timeout=stationary_timeout, batch_size=batch_size, rule=rule,
                             strict=strict)
    return DescendResult(request.run(), every=request.every)


@_call
def check(expression: str, *, expect=None, order: int = C.order, at=None, points=None,
          grid: str | None = None, box: str = C.box, samples: int = C.samples, seed: int = C.seed,
          symbolic_timeout: float = C.symbolic_timeout, rtol: float | None = None, atol: float | None = None,
          dtype: str = C.dtype, rule: str | list[str] | None = None, strict: bool = C.strict) -> Result:
    """``gradcli check EXPR --expect X=FORMULA``: hand-derived derivatives against SymPy's exact ones (proved
    equal or different by SymPy where it can, else at ``at``, at ``points``/``grid``, or at ``samples`` random
    points in ``box`` and near the formulas' features). ``expect``: "x=2*x*y", a list of such texts, or a mapping
    {"x": "2*x*y"}. ``rtol``/``atol``: a formula agrees where |expected - exact| <= atol + rtol*|exact| (1e-9
    each, float32: 1e-5). ``rule`` as for :func:`grad`. ``failed``: a mismatch (the CLI's exit 1)."""
    from gradcli.api._result import CheckResult

    if isinstance(expect, Mapping):
        expect = [f"{k}={v}" for k, v in expect.items()]
    return CheckResult(CheckRequest(
        expression=expression, expect=expect, order=order, at=at, points=points, grid=grid, box=box,
        samples=samples, seed=seed, symbolic_timeout=symbolic_timeout, rtol=rtol, atol=atol, dtype=dtype,
        rule=rule, strict=strict).run())


@_call
def trace(*expressions: str, at=None, along=None, dtype: str = T.dtype, symbolic_timeout: float = T.symbolic_timeout,
          rule: str | list[str] | None = None, strict: bool = T.strict) -> Result:
    """``gradcli trace EXPR... --at X``: the tape's nodes at one point, each value (against SymPy), adjoint
    (against tape.gradient) and, with ``along``, tangent (against ForwardAccumulator) checked; where a value
    went wrong, the first node and why. ``to_dict()["nodes"]``: the nodes; the table is trace's."""
    request = TraceRequest(expressions=_expression_list(expressions), at=at, along=along, dtype=dtype,
                           symbolic_timeout=symbolic_timeout, rule=rule, strict=strict)
    run = request.run()
    core = request.core

    def draw() -> None:
        from gradcli.render.trace import trace_table

        trace_table(core.report)

    result = ReportResult("trace", core.report, document=run.document(), draw=draw)
    result.failed = bool(core.failed or run.failed)
    return result


@_call
def steps(expression: str, *, at=None, wrt: str | None = None, order: int = P.order, dtype: str = P.dtype,
          formulas: str | None = None, symbolic_timeout: float = P.symbolic_timeout, strict: bool = P.strict) -> Result:
    """``gradcli steps EXPR --at X``: each difference formula's error over a sweep of steps h, in each
    ``dtype`` ("float64", "float32" or both), against SymPy's exact derivative; gradcli's default, the best and
    theory's optimal step marked. ``to_dict()["sweeps"]``: per dtype, the steps and each formula's errors."""
    request = StepsRequest(expression=expression, at=at, wrt=wrt, order=order, dtype=dtype, formulas=formulas,
                           symbolic_timeout=symbolic_timeout, strict=strict)
    report = request.run()

    def draw() -> None:
        from gradcli.render.steps import steps_table

        steps_table(report)

    result = ReportResult("steps", report, draw=draw)
    result.failed = bool(report.failed or (strict and report.warnings))
    return result


@_call
def implicit(equation: str, *, at=None, dependent: str = ImplicitRequest.dependent, order: int = ImplicitRequest.order,
             method: str = ImplicitRequest.method, symbolic_timeout: float = ImplicitRequest.symbolic_timeout,
             rule: str | list[str] | None = None, strict: bool = ImplicitRequest.strict):
    """``gradcli implicit "F = G"``: the derivatives of ``dependent`` (default y) along the curve by each other
    variable, orders 1 to ``order``, by SymPy's idiff, the tape (-F_x/F_y) and fd along the curve; ``at``: a
    point on it ("x=0.6,y=0.8" or {"x": 0.6, "y": 0.8}). ``r.derivatives[method]``: {variable: [order 1,
    ...]}; ``to_dict()`` is ``-f json``."""
    from gradcli.api.implicit_result import ImplicitResult

    return ImplicitResult(ImplicitRequest(equation=equation, at=at, dependent=dependent, order=order, method=method,
                                          symbolic_timeout=symbolic_timeout, rule=rule, strict=strict).run())


# ---------------------------------------------------------------------------------------------
# a dict of arrays in, a dict of arrays out (Ray Data map_batches, Dask map_partitions)
# ---------------------------------------------------------------------------------------------
@_call
def propagate(*expressions: str, at=None, points=None, correlation=None, covariance: str | None = None,
              distribution: str = U.distribution, samples: int = U.samples, seed: int = U.seed, k: float = U.k,
              symbolic_timeout: float = U.symbolic_timeout, rule: str | list[str] | None = None,
              strict: bool = U.strict):
    """``gradcli propagate EXPR...``: each expression's mean and standard deviation linear (the exact
    gradient's, the tape's and fd's), second order, by Monte Carlo and as an interval over ±k sd, with a
    verdict on the linear answer. ``at``: "x=2±0.1,y=3+-0.2" or {"x": (2, 0.1)}; ``points``: a path or
    columns with ``x_sd`` columns, a propagation per row; ``correlation``: ["x,y=0.5"]; ``covariance``: a
    CSV file. ``r.mean[method]``, ``r.sd[method]`` (methods: linear, linear_tape, linear_fd, second_order,
    monte_carlo), ``r.covariance`` for several expressions; ``to_dict()`` is ``-f json``."""
    from gradcli.api.propagate_result import PropagateResult

    return PropagateResult(PropagateRequest(
        expressions=_expression_list(expressions), at=at, points=points, correlation=correlation,
        covariance=covariance, distribution=distribution, samples=samples, seed=seed, k=k,
        symbolic_timeout=symbolic_timeout, rule=rule, strict=strict).run())


@_call
def grad_columns(expressions, batch, *, at=None, wrt: str | None = None, method: str = G.method,
                 scheme: str = G.scheme, eps: float | None = None, dtype: str = G.dtype,
                 symbolic_timeout: float = G.symbolic_timeout, batch_size: int = G.batch_size,
                 rule: str | list[str] | None = None) -> dict:
    """grad's batch core on a dict of arrays (a column per variable; ``at`` may fix some): the CLI's
    ``-f csv`` columns as NumPy arrays (a row per point and expression), the batch's other columns first::

        ds.map_batches(lambda b: gradcli.api.grad_columns("x**2*y", b))
    """
    expressions = [expressions] if isinstance(expressions, str) else list(expressions)
    arrays = _arrays_of(batch)
    return _columns(GradRequest(expressions=expressions, points=arrays, at=at, wrt=wrt, method=method,
                                scheme=scheme, eps=eps, dtype=dtype, symbolic_timeout=symbolic_timeout,
                                batch_size=batch_size, rule=rule), arrays)


@_call
def hessian_columns(expression: str, batch, *, at=None, wrt: str | None = None, method: str = H.method,
                    eps: float | None = None, dtype: str = H.dtype, symbolic_timeout: float = H.symbolic_timeout,
                    batch_size: int = H.batch_size, rule: str | list[str] | None = None) -> dict:
    """hessian's batch core on a dict of arrays: the CLI's ``-f csv`` columns (a row per point)."""
    arrays = _arrays_of(batch)
    return _columns(HessianRequest(expression=expression, points=arrays, at=at, wrt=wrt, method=method, eps=eps,
                                   dtype=dtype, symbolic_timeout=symbolic_timeout, batch_size=batch_size,
                                   rule=rule), arrays)


@_call
def derivative_columns(expression: str, batch, *, at=None, order: int = D.order, wrt: str | None = None,
                       method: str = D.method, eps: float | None = None, accuracy: int = D.accuracy,
                       dtype: str = D.dtype, symbolic_timeout: float = D.symbolic_timeout,
                       batch_size: int = D.batch_size, rule: str | list[str] | None = None) -> dict:
    """derivative's batch core on a dict of arrays: the CLI's ``-f csv`` columns (a row per point)."""
    arrays = _arrays_of(batch)
    return _columns(DerivativeRequest(expression=expression, points=arrays, at=at, order=order, wrt=wrt,
                                      method=method, eps=eps, accuracy=accuracy, dtype=dtype,
                                      symbolic_timeout=symbolic_timeout, batch_size=batch_size, rule=rule), arrays)


def _columns(request, arrays: dict) -> dict:
    """The request's ``-f csv`` columns, the batch's other columns first as they came (repeated for a row per
    point and expression)."""
    import numpy as np

    result = Result(request.run())
    columns = result.columns()
    variables = result.run.header["variables"]
    passed = [k for k in arrays if k not in variables]
    repeats = [len(r["results"]) if "results" in r else 1 for r in result.records()]
    out = {k: np.repeat(arrays[k], repeats) for k in passed}
    out.update((k, v) for k, v in columns.items() if k not in out)
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
