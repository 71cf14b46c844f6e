"""``descend``'s options: their defaults and limits, their checks (usage errors, exit 2), the checked plan."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gradcli.errors import UsageError
from gradcli.expression import Expression
from gradcli.expression.points import check_point_fits, parse_point

# Keras 3 optimizer classes by CLI name; "manual" is the guide's hand-written loop.
OPTIMIZERS = ("manual", "sgd", "momentum", "nesterov", "adam", "adamw", "rmsprop", "adagrad", "adadelta",
              "adamax", "nadam", "lion", "ftrl")

DEFAULT_LEARNING_RATE = 0.1  # the guide's
DEFAULT_STEPS = 1000
DEFAULT_MOMENTUM = 0.9
# Gradient-norm tolerance: far below what matters in practice, above what each dtype's rounding leaves
# (float32 gradients carry noise ~1e-7 x the size of the terms).
DEFAULT_TOL = {"float64": 1e-10, "float32": 1e-6}
DEFAULT_STATIONARY_TIME_LIMIT = 2.0
# Largest --steps / --every: far beyond any run that could finish, well inside the loop's int64 counter.
MAX_STEP_COUNT = 10**15
# Largest --stationary-timeout (s): the waits below it must fit the OS's timeouts (~24 days).
MAX_STATIONARY_TIME_LIMIT = 1e6


@dataclass
class DescentPlan:
    """A checked request: what ``descend`` will run (or print as a program with --show-code)."""

    expression: Expression
    names: list[str]
    start: dict[str, float]
    defaulted: list[str]
    optimizers: list[str]
    lr: float
    steps: int
    tol: float
    momentum: float
    momentum_given: bool
    every: int | None
    dtype: str
    maximize: bool
    # Learning rates given per optimizer (-o sgd:0.1,adam:0.01); the others take ``lr``.
    rates: dict[str, float] = field(default_factory=dict)

    def rate(self, optimizer: str) -> float:
        return self.rates.get(optimizer, self.lr)


def plan_notes(plan: DescentPlan) -> list[str]:
    """Notes about options that do less than they may seem to (one start or many)."""
    notes = []
    if plan.momentum_given and not any(o in ("momentum", "nesterov") for o in plan.optimizers):
        notes.append("--momentum only applies to the momentum and nesterov optimizers")
    if "adamw" in plan.optimizers:
        notes.append("adamw applies Keras' default weight decay (0.004), which moves its minimum slightly")
    return notes


def parse_optimizer_rates(text: str | None) -> dict[str, float | None]:
    """``sgd:0.1,adam`` -> {"sgd": 0.1, "adam": None} (in the order given; None: the --lr default);
    ``all`` or ``all:LR`` -> every optimizer. Names in any case."""
    if text is None:
        return {"manual": None}
    if not text.strip():
        raise UsageError("--optimizer is empty: name one or more, e.g. --optimizer manual,sgd")
    chosen: dict[str, float | None] = {}
    for part in text.split(","):
        name, colon, rate_text = (s.strip() for s in part.partition(":"))
        rate = _rate(name, rate_text) if colon else None
        if name.lower() == "all" and "," not in text:
            return dict.fromkeys(OPTIMIZERS, rate)
        if name.lower() not in OPTIMIZERS:
            raise UsageError(f"--optimizer: unknown optimizer '{name}' (choose from {', '.join(OPTIMIZERS)}, "
                             "or all)")
        if name.lower() in chosen:
            raise UsageError(f"--optimizer: '{name.lower()}' is given twice")
        chosen[name.lower()] = rate
    return chosen


def _rate(name: str, text: str) -> float:
    """The LR of ``-o NAME:LR``: a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--optimizer {name}:{text}: the learning rate after ':' must be a number, "
                         f"e.g. {name}:0.01") from None
    return _positive(f"--optimizer {name}:LR", value)


def _positive(name: str, value: float) -> float:
    if value is None or not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name} must be a positive finite number, not {value!r}")
    return float(value)


def check_options(*, lr: float, steps: int, tol: float | None, every: int | None, momentum: float | None,
                  dtype: str) -> tuple[float, int, float, int | None, float]:
    lr = _positive("--lr", lr)
    if steps is None or steps < 1:
        raise UsageError(f"--steps must be at least 1, not {steps!r}")
    if steps > MAX_STEP_COUNT:
        raise UsageError(f"--steps must be at most {MAX_STEP_COUNT:.0e}, not {steps!r}")
    if tol is None:
        tol = DEFAULT_TOL[dtype]
    if not math.isfinite(tol) or tol < 0:
        raise UsageError(f"--tol must be a finite number >= 0, not {tol!r}")
    if every is not None and every < 1:
        raise UsageError(f"--every must be at least 1, not {every!r}")
    if every is not None and every > MAX_STEP_COUNT:
        raise UsageError(f"--every must be at most {MAX_STEP_COUNT:.0e}, not {every!r}")
    if momentum is None:
        momentum = DEFAULT_MOMENTUM
    if not math.isfinite(momentum) or not 0 <= momentum < 1:
        raise UsageError(f"--momentum must be in [0, 1), not {momentum!r}")
    return lr, int(steps), float(tol), every, float(momentum)


def check_stationary_time_limit(seconds: float | None) -> float:
    """--stationary-timeout: 0 (skip SymPy) or a finite number of seconds up to MAX_STATIONARY_TIME_LIMIT."""
    if seconds is None or not math.isfinite(seconds) or not 0 <= seconds <= MAX_STATIONARY_TIME_LIMIT:
        raise UsageError(f"--stationary-timeout must be a number of seconds from 0 (skip) to "
                         f"{MAX_STATIONARY_TIME_LIMIT:g}, not {seconds!r}")
    return float(seconds)


def start_point(expression: Expression, specs: list[str] | str | None,
                dtype: str = "float64") -> tuple[dict[str, float], list[str]]:
    """``--from``: values for the expression's variables; the ones left out start at 0 (returned)."""
    point = parse_point(specs, option="--from", required=False)
    check_point_fits(point, dtype, option="--from")
    extra = [n for n in point.values if n not in expression.variables]
    if extra:
        raise UsageError(f"--from: '{extra[0]}' is not a variable of {expression.text} "
                         f"(its variables: {', '.join(expression.variables)})")
    defaulted = [v for v in expression.variables if v not in point.values]
    # The order the user wrote in --from (x before y in Rosenbrock's 100*(y-x**2)**2+(1-x)**2), then the rest.
    values = dict(point.values)
    values.update({v: 0.0 for v in defaulted})
    return values, defaulted


def refuse_for_many_starts(*, start, every) -> None:
    """What one start takes and many starts cannot: a --from point, a trajectory (--every)."""
    if start:
        raise UsageError("--from gives one start and --points/--grid many: drop one of them")
    if every is not None:
        raise UsageError("--every records a trajectory, which many starts do not keep: drop --every, or run "
                         "one start with --from")
