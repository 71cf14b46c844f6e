"""``descend``: gradient descent the two ways the TensorFlow guide shows, compiled, with guardrails.

The guide's hand-written loop (``x.assign_sub(lr * dz_dx)``, optimizer ``manual``) and Keras 3's
optimizers (``optimizer.apply_gradients``) run inside one ``tf.function`` per run: a TF while-loop
whose condition holds the stopping tests, so a step costs microseconds instead of the eager loop's
milliseconds. Long runs (more than ``JIT_MIN_STEPS`` steps allowed) are also compiled by XLA, which
costs a fraction of a second once and makes each step cost well under a microsecond.

Every step evaluates f and its gradient at the current point x_k and then decides, in this order:
- the point, the value or the gradient is not finite -> ``diverged`` (``unbounded`` when the value
  is -inf at a finite point: f fell to -inf, e.g. log at 0);
- the value fell more than ``VALUE_BOUND`` x max(1, |f(start)|) below f(start) -> ``unbounded``;
  rose that far above it -> ``diverged`` (descent should never go up that much);
- the gradient norm is below ``--tol`` -> ``converged``;
- the point has not changed (bit for bit) for ``STALL_STEPS`` steps after having moved ->
  ``converged``, with a note: the steps have fallen below the dtype's precision;
- k reached ``--steps`` -> ``max_steps``, then looked at more closely (:func:`_classify_stop`):
  ``oscillating`` when the last steps bounce without shrinking, ``unbounded`` when the value keeps
  falling at an undiminished rate while the point runs away;
- otherwise one update, k += 1.

With ``--maximize`` the loop minimises -f and everything is reported in terms of f.
TensorFlow (and with it Keras) is imported only inside the functions that run the loop.

This module holds the command's core (plan, run, the race of optimizers); the rest is in
``options`` (defaults, checks, the plan), ``results`` (the report), ``optimizers`` (Keras),
``rules`` (status codes and thresholds), ``loop`` (the compiled loop), ``verdicts`` (why a run
stopped), ``advice`` (curvature: learning-rate advice, the kind of an end point), ``stationary``
(SymPy's stationary points) and ``program`` (--show-code).
"""

from __future__ import annotations

import time
from typing import Callable

from gradcli.methods.worker import SymbolicTimeout
from gradcli.compute.descend.advice import _advise, _classify_end
from gradcli.compute.descend.loop import run_descent
from gradcli.compute.descend.optimizers import _CAST_HYPERPARAMETERS, make_optimizer, optimizer_hyperparameters  # noqa: F401
from gradcli.compute.descend.options import (
    DEFAULT_LEARNING_RATE, DEFAULT_STATIONARY_TIME_LIMIT, DEFAULT_STEPS, OPTIMIZERS, DescentPlan,
    check_options, check_stationary_time_limit, parse_optimizer_rates, plan_notes, start_point,
)
from gradcli.compute.descend.results import STATUSES, DescentReport, DescentRun
from gradcli.compute.descend.stationary import _nearest, start_stationary_points
from gradcli.errors import UsageError
from gradcli.limits import TRAJECTORY_MAX_ROWS
from gradcli.expression import parse
from gradcli.expression.points import check_descent_size
from gradcli.compute.request import check_dtype
from gradcli.methods.tf_runtime import load_tensorflow

__all__ = [
    "OPTIMIZERS", "STATUSES", "DescentPlan", "DescentReport", "DescentRun", "check_stationary_time_limit",
    "compute_descent", "make_optimizer", "optimizer_hyperparameters", "plan_descent", "run_descent", "run_plan",
    "start_stationary_points",
]


def plan_descent(expression: str, *, start: list[str] | str | None = None, optimizers: str | None = "manual",
                 lr: float = DEFAULT_LEARNING_RATE, steps: int = DEFAULT_STEPS, tol: float | None = None,
                 maximize: bool = False, dtype: str = "float64", momentum: float | None = None,
                 every: int | None = None) -> DescentPlan:
    """Check every option (usage errors, exit 2) before anything is computed."""
    dtype = check_dtype(dtype)
    chosen = parse_optimizer_rates(optimizers)
    momentum_given = momentum is not None
    lr, steps, tol, every, momentum = check_options(lr=lr, steps=steps, tol=tol, every=every, momentum=momentum,
                                                    dtype=dtype)
    expr = parse(expression)
    if not expr.variables:
        raise UsageError(f"{expr.text} has no variables: there is nothing to descend on")
    check_descent_size(len(expr.variables), len(chosen))
    point, defaulted = start_point(expr, start, dtype)
    return DescentPlan(expr, list(point), point, defaulted, list(chosen), lr, steps, tol, momentum, momentum_given,
                       every, dtype, maximize, rates={k: v for k, v in chosen.items() if v is not None})


def compute_descent(expression: str, *, start: list[str] | str | None = None, optimizers: str | None = "manual",
                    lr: float = DEFAULT_LEARNING_RATE, steps: int = DEFAULT_STEPS, tol: float | None = None,
                    maximize: bool = False, dtype: str = "float64", momentum: float | None = None,
                    every: int | None = None, record_every: int | None = None,
                    stationary_time_limit: float = DEFAULT_STATIONARY_TIME_LIMIT, jit: bool | None = None,
                    progress_factory: Callable[[str, int], Callable[[int, int], None] | None] | None = None,
                    ) -> DescentReport:
    """Everything ``gradcli descend`` shows, as a :class:`DescentReport`.

    ``every``: --every as given (the JSON's history); ``record_every``: how often to record the
    trajectory for a plot or CSV when --every is not given. ``progress_factory(optimizer, steps)``
    returns a ``progress(done, total)`` callback or None.
    """
    plan = plan_descent(expression, start=start, optimizers=optimizers, lr=lr, steps=steps, tol=tol,
                        maximize=maximize, dtype=dtype, momentum=momentum, every=every)
    if record_every is not None and record_every < 1:
        raise UsageError(f"record interval must be at least 1, not {record_every!r}")
    return run_plan(plan, record_every=record_every, stationary_time_limit=stationary_time_limit, jit=jit,
                    progress_factory=progress_factory)


def run_plan(plan: DescentPlan, *, record_every: int | None = None,
             stationary_time_limit: float = DEFAULT_STATIONARY_TIME_LIMIT, jit: bool | None = None,
             progress_factory: Callable[[str, int], Callable[[int, int], None] | None] | None = None,
             ) -> DescentReport:
    expr, names, point, maximize = plan.expression, plan.names, plan.start, plan.maximize
    report = DescentReport(expression=expr.text, variables=names, start=point, dtype=plan.dtype, maximize=maximize,
                           learning_rate=plan.lr, max_steps=plan.steps, tol=plan.tol, momentum=plan.momentum,
                           every=plan.every, runs=[])
    if plan.defaulted:
        report.notes.append(f"starting at {', '.join(f'{v}=0' for v in plan.defaulted)} (not given in --from)")
    report.notes.extend(plan_notes(plan))

    stationary_time_limit = check_stationary_time_limit(stationary_time_limit)
    # SymPy first: before TensorFlow is imported it can work in a process of its own (killed at its
    # deadline) while the runs go on here.
    search = start_stationary_points(expr.tree, names, stationary_time_limit) if stationary_time_limit > 0 else None
    try:
        _race(plan, report, record_every=record_every, jit=jit, progress_factory=progress_factory)
    except BaseException:
        if search is not None:
            search.stop()
        raise

    if search is not None:
        try:
            found, notes = search.result()
            report.stationary_points = found
            report.notes.extend(notes)
            for run in report.runs:
                run.nearest_stationary = _nearest(found, run.final)
        except SymbolicTimeout:
            report.notes.append(f"SymPy did not solve grad f = 0 within {stationary_time_limit:g} s "
                                "(--stationary-timeout); no stationary point shown")
        except Exception as exc:  # SymPy failing on an odd expression must not sink the descent results
            report.notes.append(f"SymPy could not solve grad f = 0 ({type(exc).__name__})")
    return report


def _race(plan: DescentPlan, report: DescentReport, *, record_every, jit, progress_factory) -> None:
    """Every optimizer's run, then advice, the kind of each end point, warnings."""
    expr, names, point, maximize = plan.expression, plan.names, plan.start, plan.maximize
    # Set up first (TensorFlow's import, its runtime's first graph), so that each run's time is its own
    # tracing, compiling and stepping: the first optimizer raced was billed ~2 s of setup the others were not.
    started = time.perf_counter()
    load_tensorflow()
    # a two-step run of the same kind (the loop's tracing machinery, and Keras' optimizers when raced)
    warm = {"manual", *(["sgd"] if any(o != "manual" for o in plan.optimizers) else [])}
    for name in sorted(warm):
        run_descent(parse("x*x").tree, ["x"], {"x": 1.0}, optimizer=name, lr=0.1, dtype=plan.dtype, max_steps=2,
                    jit=False)
    report.setup_seconds = time.perf_counter() - started

    step_every = plan.every or record_every
    for name in plan.optimizers:
        progress = progress_factory(name, plan.steps) if progress_factory else None
        run = run_descent(expr.tree, names, point, optimizer=name, lr=plan.rate(name), momentum=plan.momentum,
                          dtype=plan.dtype, tol=plan.tol, maximize=maximize, max_steps=plan.steps, every=step_every,
                          jit=jit, progress=progress)
        report.runs.append(run)
        spacing = run.history[1].step - run.history[0].step if len(run.history) > 2 else None
        if plan.every is not None and spacing is not None and spacing > plan.every:
            report.notes.append(f"{name}: the trajectory keeps every {spacing} steps, not every {plan.every} "
                                f"(at most {TRAJECTORY_MAX_ROWS:,} rows per run)")

    for run in report.runs:
        if run.status == "diverged" and run.steps > 0:
            _advise(run, expr.tree, names, point, "start", plan.momentum, maximize)
        elif run.status == "oscillating":
            _advise(run, expr.tree, names, run.final, "end point", plan.momentum, maximize)
        elif run.status == "converged":
            _classify_end(run, expr.tree, names, plan.dtype)
            wrong = {"maximum", "saddle"} if not maximize else {"minimum", "saddle"}
            if run.end_kind in wrong:
                report.warnings.append(
                    f"{run.optimizer}: stopped where the gradient vanishes, but the Hessian says it is a "
                    f"{run.end_kind}, not a {'maximum' if maximize else 'minimum'} (start elsewhere: --from)")
        if run.status in ("diverged", "unbounded"):
            report.failed = True
            report.warnings.append(f"{run.optimizer}: {run.message}")
        elif run.status == "oscillating" or (run.status == "max_steps" and plan.tol > 0):
            # (with --tol 0 every step was asked for: reaching --steps is the plan, not a problem)
            report.warnings.append(f"{run.optimizer}: {run.message}")
