"""``descend``: gradient descent the two ways the TensorFlow guide shows, compiled, with guardrails.

The guide's hand-written loop (``x.assign_sub(lr * dz_dx)``, optimizer ``manual``) and Keras 3's
optimizers (``optimizer.apply_gradients``) run inside one ``tf.function`` per optimizer: a TF while-loop
over a block of untested steps, after which the stopping tests are applied in NumPy to each step of the
block (as if after every step), so a step costs microseconds instead of the eager loop's milliseconds. Long runs (more than
``JIT_MIN_STEPS`` steps allowed) have their steps compiled by XLA, which costs a fraction of a second once
and makes each step cost well under a microsecond.

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

One start (``--from``) is a batch of one: the same compiled loop and the same record as a start of
``--points``/``--grid``. This module holds the plan (every option checked before anything runs) and the
one-start chunk; the rest is in ``options`` (defaults, checks, the plan), ``core`` (the batch core: SymPy's
search, the runs, the records), ``loop`` (the compiled loop), ``records`` (a record per start),
``summary`` (the counts), ``results`` (a run), ``optimizers`` (Keras), ``rules`` (status codes and
thresholds), ``verdicts`` (why a run stopped), ``advice`` (curvature: learning-rate advice, the kind of an
end point), ``stationary`` (SymPy's stationary points), ``end_basins`` (basins of end points) and
``trajectory`` (the kept steps).
"""

from __future__ import annotations

from gradcli.compute.descend.optimizers import CAST_HYPERPARAMETERS, make_optimizer, optimizer_hyperparameters
from gradcli.compute.descend.options import (
    DEFAULT_LEARNING_RATE, DEFAULT_STEPS, OPTIMIZERS, DescentPlan, check_options, parse_optimizer_rates,
    start_point,
)
from gradcli.compute.descend.results import STATUSES
from gradcli.compute.request import check_dtype
from gradcli.errors import UsageError
from gradcli.expression import parse
from gradcli.expression.points import check_descent_size

__all__ = [
    "CAST_HYPERPARAMETERS", "OPTIMIZERS", "STATUSES", "DescentPlan", "make_optimizer", "optimizer_hyperparameters",
    "plan_descent", "start_chunk",
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


def start_chunk(plan: DescentPlan):
    """The --from start as a chunk of one start (variables in the order --from gave them)."""
    import numpy as np

    from gradcli.expression.sources.shapes import PointChunk

    return PointChunk({v: np.array([plan.start[v]], dtype=np.float64) for v in plan.names}, [{}], [None])
