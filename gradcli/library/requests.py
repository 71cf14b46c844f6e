"""One Request per command: every option with its default (written here once), checked once, and run.

The Typer commands (gradcli.commands) take their defaults from these classes (``= GradRequest.method``) and
build a Request from their options; the Python API (gradcli.api) builds the same Request from its keyword
arguments. :meth:`run` computes it with the batch engine (:func:`gradcli.compute.batch.engine.run_batch`),
writing to the sink it is given (the CLI: the format's writer; the API: :class:`gradcli.library.run.Collect`),
and returns a :class:`gradcli.library.run.Run`.

A Request checks what Click checks on the command line (types, ranges, choices), worded as Click words it,
so that a value the CLI refuses is refused alike from Python; the checks of meaning (methods, dtype, the step,
the variables) are the core's own (gradcli.compute.request), the same on every path.

This module is imported by ``gradcli --help`` (the commands' defaults): the standard library only, at the top.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass

from gradcli.errors import UsageError

# What several commands share.
DTYPE = "float64"
SYMBOLIC_TIMEOUT = 10.0
SYMBOLIC_TIMEOUTS = (0.1, 86_400.0)  # the range of --symbolic-timeout (SymPy's limit)
BATCH_SIZE = 4096
BATCH_SIZES = (1, 1_000_000)  # the range of --batch-size
METHODS = "symbolic,tape,fd"
JVP_METHODS = "symbolic,tape,fd,complex"
SCHEME = "central"
SCHEMES = ("central", "forward", "backward", "richardson")  # gradcli.methods.fd_schemes.Scheme's values
ORDER = 1
ACCURACY = 8  # derivative's fd stencil order
OPTIMIZERS = "manual"  # descend's: the guide's loop
LEARNING_RATE = 0.1  # the guide's
STEPS = 1000
STATIONARY_TIMEOUT = 2.0  # SymPy's time to solve grad f = 0 (0: skip)
STARTS_BATCH_SIZE = 1024
STARTS_BATCH_SIZES = (1, 100_000)
BOX = "-2:2"  # check's random points
SAMPLES = 20
SAMPLES_RANGE = (1, 100_000)
SEED = 0
ENGINES = ("local", "dask")  # --engine: this process, or a Dask cluster (gradcli.dask_engine)
ENGINE = "local"
WORKERS = (1, 1024)  # the range of --workers (an embedded LocalCluster's processes)
REDUCTIONS = ("sum", "mean")  # grad's --reduce


# ---------------------------------------------------------------------------------------------
# the checks Click makes on the command line, worded as Click words them
# ---------------------------------------------------------------------------------------------
def _invalid(flag: str, value, why: str) -> UsageError:
    shown = repr(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return UsageError(f"Invalid value for '{flag}': {shown} {why}.")


def check_number(flag: str, value, kind: type, bounds: tuple | None = None, *, optional: bool = False):
    """``value`` as an int or a float (a numeric text too, as typed), within ``bounds`` (low, high)."""
    if value is None and optional:
        return None
    name = "integer" if kind is int else "float"
    if isinstance(value, bool):
        raise _invalid(flag, value, f"is not a valid {name}")
    if isinstance(value, numbers.Integral) or (kind is float and isinstance(value, numbers.Real)):
        number = kind(value)
    elif isinstance(value, str):
        try:
            number = kind(value.strip())
        except ValueError:
            raise _invalid(flag, value, f"is not a valid {name}") from None
    else:
        raise _invalid(flag, value, f"is not a valid {name}")
    if bounds is not None and not bounds[0] <= number <= bounds[1]:  # NaN too
        raise _invalid(flag, number, f"is not in the range {bounds[0]}<=x<={bounds[1]}")
    return number


def check_flag(flag: str, value) -> bool:
    if not isinstance(value, bool):
        raise _invalid(flag, value, "is not a bool (True or False)")
    return value


def check_text(flag: str, value, *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    value = getattr(value, "value", value)  # an enum member (gradcli.methods.fd_schemes.Scheme.central)
    if not isinstance(value, str):
        raise _invalid(flag, value, "is not a string")
    return value


def check_choice(flag: str, value, choices: tuple[str, ...]) -> str:
    """One of ``choices``, in any case (Click's case_sensitive=False)."""
    text = check_text(flag, value, optional=False).lower()
    if text not in choices:
        raise UsageError(f"Invalid value for '{flag}': '{value}' is not one of "
                         + ", ".join(f"'{c}'" for c in choices) + ".")
    return text


def check_comma_list(flag: str, value) -> str | None:
    """A comma-separated option (``--wrt x,y``): the text, or a list of names joined."""
    if isinstance(value, (list, tuple)):
        if not all(isinstance(v, str) for v in value):
            raise _invalid(flag, value, "is not a string or a list of strings")
        return ",".join(value)
    return check_text(flag, value)


def check_texts(flag: str, value) -> list[str] | None:
    """A repeatable option (``--rule``): one text or a list of them."""
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in values):
        raise _invalid(flag, value, "is not a string or a list of strings")
    return values


def check_expression(value) -> str:
    if value is None:
        raise UsageError("give an expression, e.g. \"x**2\"")
    return check_text("EXPR", value, optional=False)


def check_engine(engine, workers, scheduler) -> tuple[str, int | None, str | None]:
    """--engine, --workers, --scheduler: the workers are an embedded cluster's, the scheduler an existing
    cluster's (not both), and either is the Dask engine's (refused with the local one, where they would be
    silently ignored). The scheduler's address from DASK_SCHEDULER_ADDRESS is read when the engine starts."""
    engine = check_choice("--engine", engine, ENGINES)
    workers = check_number("--workers", workers, int, WORKERS, optional=True)
    scheduler = check_text("--scheduler", scheduler)
    if scheduler is not None and not scheduler.strip():
        raise UsageError("Invalid value for '--scheduler': give an address, e.g. tcp://10.0.0.5:8786.")
    if engine == "local" and (workers is not None or scheduler is not None):
        flag = "--workers" if workers is not None else "--scheduler"
        raise UsageError(f"{flag} is for the Dask engine: add --engine dask")
    if workers is not None and scheduler is not None:
        raise UsageError("give --workers (a cluster of your own, started here) or --scheduler (an existing "
                         "cluster, whose workers are its own), not both")
    return engine, workers, scheduler


# ---------------------------------------------------------------------------------------------
# the points
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PointColumns:
    """Points given as columns (a mapping or a DataFrame's): {name: list of values}, every list one length.
    Read as the CSV with that header and those rows would be (:mod:`gradcli.library.points`)."""

    columns: dict

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def source(self, *, variables: list[str], chunk_size: int, fixed=None, fixed_option: str | None = "--at",
               dtype: str = DTYPE):
        """These points as a point source (gradcli.expression.sources.PointSource) of ``variables``."""
        from gradcli.library.points import ColumnsSource

        return ColumnsSource(self.columns, variables=variables, fixed=fixed, fixed_option=fixed_option,
                             chunk_size=chunk_size, dtype=dtype)


def check_at(at, option: str = "at") -> list[str] | None:
    from gradcli.library.points import at_texts

    return at_texts(at, option)


def check_points(points) -> str | PointColumns | None:
    """A path (str or PathLike: CSV or JSON Lines, '-' for stdin, as --points), or columns."""
    if points is None or isinstance(points, PointColumns):
        return points
    if isinstance(points, (str, os.PathLike)):
        return os.fspath(points)
    from gradcli.library.points import columns_of

    return PointColumns(columns_of(points))


@dataclass(kw_only=True)
class PointsRequest:
    """What every command that computes at points takes: one point (``at``), or many (``points``, ``grid``;
    ``at`` then fixes the variables they do not give)."""

    command = ""

    at: list[str] | None = None
    points: str | PointColumns | None = None
    grid: str | None = None
    dtype: str = DTYPE
    batch_size: int = BATCH_SIZE
    engine: str = ENGINE
    workers: int | None = None
    scheduler: str | None = None

    def __post_init__(self) -> None:
        self.at = check_at(self.at)
        self.points = check_points(self.points)
        self.grid = check_text("--grid", self.grid)
        self.dtype = check_text("--dtype", self.dtype, optional=False).lower()
        self.batch_size = check_number("--batch-size", self.batch_size, int, BATCH_SIZES)
        self.engine, self.workers, self.scheduler = check_engine(self.engine, self.workers, self.scheduler)

    @property
    def distributed(self) -> bool:
        """Whether the Dask engine computes the points: ``engine="dask"`` with many points (the --at point
        alone is a batch of one, computed here whatever the engine: there is nothing to spread)."""
        return self.engine == "dask" and not self.one_point

    @property
    def one_point(self) -> bool:
        """The --at point alone (a batch of one, whose document is the point's own)."""
        return self.points is None and self.grid is None

    def make_core(self):
        """The command's batch core (gradcli.compute.batch), its options checked."""
        raise NotImplementedError

    def chunks(self, core):
        """The chunks of points ``core`` computes (gradcli.compute.batch.points.PointChunks)."""
        if isinstance(self.points, PointColumns):
            if self.grid is not None:
                raise UsageError("give --points or --grid, not both")
            from gradcli.library.points import column_chunks

            return column_chunks(core, self.points, at=self.at, batch_size=self.batch_size)
        from gradcli.compute.batch.points import point_chunks

        return point_chunks(core, points=self.points, grid=self.grid, at=self.at, batch_size=self.batch_size)

    def run(self, sink=None, *, rules=None, track=None):
        """Compute the request, writing to ``sink`` (default: a :class:`gradcli.library.run.Collect`, which keeps
        the records); returns the :class:`gradcli.library.run.Run`. See :func:`gradcli.library.run.run_request`."""
        from gradcli.library.run import run_request

        return run_request(self, sink, rules=rules, track=track)


@dataclass(kw_only=True)
class DifferentiatingRequest(PointsRequest):
    """What grad, hessian and derivative share besides the points."""

    wrt: str | None = None
    method: str = METHODS
    eps: float | None = None
    symbolic_timeout: float = SYMBOLIC_TIMEOUT
    rule: list[str] | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.wrt = check_comma_list("--wrt", self.wrt)
        self.method = check_comma_list("--method", self.method)
        self.eps = check_number("--eps", self.eps, float, optional=True)
        self.symbolic_timeout = check_number("--symbolic-timeout", self.symbolic_timeout, float, SYMBOLIC_TIMEOUTS)
        self.rule = check_texts("--rule", self.rule)
        self.strict = check_flag("--strict", self.strict)


@dataclass(kw_only=True)
class GradRequest(DifferentiatingRequest):
    """``gradcli grad EXPR...``: the gradient (several expressions: the Jacobian and the tape's sum)."""

    command = "grad"

    expressions: list[str]
    scheme: str = SCHEME
    constants: str | None = None
    watch: str | None = None
    one_shot: bool = False
    reduce: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.expressions, str):
            self.expressions = [self.expressions]
        self.expressions = check_texts("EXPR...", self.expressions) or []
        if self.reduce is not None:
            self.reduce = check_choice("--reduce", self.reduce, REDUCTIONS)
            if self.one_point:
                raise UsageError("--reduce sums the gradient over the rows of --points (or --grid): give them, "
                                 "with --at for the parameters every row shares")
            if len(self.expressions) != 1:
                raise UsageError("--reduce takes one expression (the loss of a row)")
        self.scheme = check_choice("--scheme", self.scheme, SCHEMES)
        self.constants = check_comma_list("--constants", self.constants)
        self.watch = check_comma_list("--watch", self.watch)
        self.one_shot = check_flag("--one-shot", self.one_shot)

    def reduced(self, *, rules=None):
        """``--reduce``: the gradient summed or averaged over the rows (gradcli.compute.reduce), each method's
        exactly, with the per-example variance and the largest per-example norm."""
        from gradcli.library.run import run_reduction

        return run_reduction(self, rules=rules)

    def make_core(self):
        from gradcli.compute.batch.grad import GradBatch

        if self.constants is not None or self.watch is not None:
            from gradcli.compute.request import refuse_constants_for_many

            refuse_constants_for_many(self.constants, self.watch, many=not self.one_point)
        if self.one_shot and (not self.one_point or "tape" not in (self.method or "")):
            raise UsageError("--one-shot runs the guide's one-shot tape beside the tape column at one point: "
                             "give --at and the tape method (-m tape)")
        return GradBatch(self.expressions, wrt=self.wrt, methods=self.method, scheme=self.scheme, eps=self.eps,
                         dtype=self.dtype, symbolic_time_limit=self.symbolic_timeout, constants=self.constants,
                         watch=self.watch, one_shot=self.one_shot)


@dataclass(kw_only=True)
class HessianRequest(DifferentiatingRequest):
    """``gradcli hessian EXPR``: the Hessian three ways and what it says."""

    command = "hessian"

    expression: str
    formulas: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.expression = check_expression(self.expression)
        self.formulas = check_flag("--formulas", self.formulas)

    def make_core(self):
        from gradcli.compute.batch.hessian import HessianBatch

        return HessianBatch(self.expression, wrt=self.wrt, methods=self.method, eps=self.eps, dtype=self.dtype,
                            formulas=self.formulas, symbolic_time_limit=self.symbolic_timeout)


@dataclass(kw_only=True)
class DerivativeRequest(DifferentiatingRequest):
    """``gradcli derivative EXPR``: the first ``order`` derivatives of a one-variable function."""

    command = "derivative"

    expression: str
    order: int = ORDER
    accuracy: int = ACCURACY
    formulas: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.expression = check_expression(self.expression)
        self.order = check_number("--order", self.order, int)
        self.accuracy = check_number("--accuracy", self.accuracy, int)
        self.formulas = check_flag("--formulas", self.formulas)

    def make_core(self):
        from gradcli.compute.batch.derivative import DerivativeBatch

        return DerivativeBatch(self.expression, order=self.order, wrt=self.wrt, methods=self.method, eps=self.eps,
                               dtype=self.dtype, accuracy=self.accuracy, formulas=self.formulas,
                               symbolic_time_limit=self.symbolic_timeout)


@dataclass(kw_only=True)
class EvalRequest(PointsRequest):
    """``gradcli eval EXPR``: the value alone, operation by operation in the dtype (no SymPy, no TensorFlow)."""

    command = "eval"

    expression: str
    strict: bool = False
    # eval has no --rule or SymPy: what run_request reads of every request
    rule = None
    symbolic_timeout = SYMBOLIC_TIMEOUT

    def __post_init__(self) -> None:
        super().__post_init__()
        self.expression = check_expression(self.expression)
        self.strict = check_flag("--strict", self.strict)

    def make_core(self):
        from gradcli.compute.batch.value import ValueBatch

        return ValueBatch(self.expression, dtype=self.dtype)

    def chunks(self, core):
        if self.one_point:  # a constant needs no point; float64 imports no NumPy
            from gradcli.compute.batch.value import value_chunks

            return value_chunks(core, at=self.at, points=None, grid=None, batch_size=self.batch_size)
        return super().chunks(core)


@dataclass(kw_only=True)
class AlongRequest(PointsRequest):
    """What jvp and hvp share: a direction ``along`` (--along: "x1=1,x2=2" or {"x1": 1, "x2": 2}; variables not
    named: 0), the same at every point."""

    along: list[str] | None = None
    symbolic_timeout: float = SYMBOLIC_TIMEOUT
    strict: bool = False
    rule = None  # no --rule (what run_request reads of every request)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.along = check_at(self.along, "along")
        self.symbolic_timeout = check_number("--symbolic-timeout", self.symbolic_timeout, float, SYMBOLIC_TIMEOUTS)
        self.strict = check_flag("--strict", self.strict)


@dataclass(kw_only=True)
class JvpRequest(AlongRequest):
    """``gradcli jvp EXPR... --along V``: J·v, forward mode beside the exact value, fd along v and the complex
    step."""

    command = "jvp"

    expressions: list[str]
    method: str = JVP_METHODS

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.expressions, str):
            self.expressions = [self.expressions]
        self.expressions = check_texts("EXPR...", self.expressions) or []
        if not self.expressions:
            raise UsageError("give at least one expression, e.g. gradcli jvp \"x**2\" --at x=3 --along x=1")
        self.method = check_comma_list("--method", self.method)

    def make_core(self):
        from gradcli.compute.batch.jvp import JvpBatch

        return JvpBatch(self.expressions, along=self.along, methods=self.method, dtype=self.dtype,
                        symbolic_time_limit=self.symbolic_timeout)


@dataclass(kw_only=True)
class HvpRequest(AlongRequest):
    """``gradcli hvp EXPR --along V``: H·v without the Hessian, three tape compositions, fd of the tape gradient
    and the exact value (``method`` None: all of them)."""

    command = "hvp"

    expression: str
    method: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.expression = check_expression(self.expression)
        self.method = check_comma_list("--method", self.method)

    def make_core(self):
        from gradcli.compute.batch.hvp import HvpBatch

        return HvpBatch(self.expression, along=self.along, methods=self.method, dtype=self.dtype,
                        symbolic_time_limit=self.symbolic_timeout)


@dataclass(kw_only=True)
class DescendRequest:
    """``gradcli descend EXPR``: gradient descent, the guide's loop and Keras optimizers, from one start
    (``start``, the CLI's --from) or many (``points``, ``grid``). The CLI's views (--plot, --plot-file, the
    progress bar) are the CLI's: not options of the computation."""

    command = "descend"

    expression: str
    start: list[str] | None = None
    points: str | PointColumns | None = None
    grid: str | None = None
    optimizer: str = OPTIMIZERS
    lr: float = LEARNING_RATE
    steps: int = STEPS
    tol: float | None = None
    maximize: bool = False
    momentum: float | None = None
    every: int | None = None
    dtype: str = DTYPE
    stationary_timeout: float = STATIONARY_TIMEOUT
    batch_size: int = STARTS_BATCH_SIZE
    rule: list[str] | None = None
    strict: bool = False
    symbolic_timeout = SYMBOLIC_TIMEOUT  # the rules' check (descend has no --symbolic-timeout)

    def __post_init__(self) -> None:
        self.expression = check_expression(self.expression)
        self.start = check_at(self.start, "start")
        self.points = check_points(self.points)
        self.grid = check_text("--grid", self.grid)
        self.optimizer = check_comma_list("--optimizer", self.optimizer)
        self.lr = check_number("--lr", self.lr, float)
        self.steps = check_number("--steps", self.steps, int)
        self.tol = check_number("--tol", self.tol, float, optional=True)
        self.maximize = check_flag("--maximize", self.maximize)
        self.momentum = check_number("--momentum", self.momentum, float, optional=True)
        self.every = check_number("--every", self.every, int, optional=True)
        self.dtype = check_text("--dtype", self.dtype, optional=False).lower()
        # its range is descend's own check (gradcli.compute.descend.options.check_stationary_time_limit)
        self.stationary_timeout = check_number("--stationary-timeout", self.stationary_timeout, float)
        self.batch_size = check_number("--batch-size", self.batch_size, int, STARTS_BATCH_SIZES)
        self.rule = check_texts("--rule", self.rule)
        self.strict = check_flag("--strict", self.strict)

    @property
    def one_point(self) -> bool:
        """One start (--from, or every variable at 0): a batch of one."""
        return self.points is None and self.grid is None

    def plan(self):
        """The checked plan (gradcli.compute.descend.DescentPlan): what --show-code prints, what run() runs."""
        from gradcli.library.run import descent_plan

        return descent_plan(self)

    def run(self, sink=None, *, rules=None, plan=None, every=None, progress_factory=None):
        """Every start through the descent core into ``sink`` (default: a Collect); returns the Run (see
        :func:`gradcli.library.run.run_descent`)."""
        from gradcli.library.run import run_descent

        return run_descent(self, sink, rules=rules, plan=plan, every=every, progress_factory=progress_factory)


@dataclass(kw_only=True)
class CheckRequest:
    """``gradcli check EXPR --expect X=FORMULA``: hand-derived derivatives against SymPy's exact ones."""

    command = "check"

    expression: str
    expect: list[str] | None = None
    order: int = ORDER
    at: list[str] | None = None
    points: str | PointColumns | None = None
    grid: str | None = None
    box: str = BOX
    samples: int = SAMPLES
    seed: int = SEED
    symbolic_timeout: float = SYMBOLIC_TIMEOUT
    rtol: float | None = None
    atol: float | None = None
    dtype: str = DTYPE
    rule: list[str] | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        self.expression = check_expression(self.expression)
        self.expect = check_texts("--expect", self.expect) or []
        self.order = check_number("--order", self.order, int)
        self.at = check_at(self.at)
        self.points = check_points(self.points)
        self.grid = check_text("--grid", self.grid)
        self.box = check_text("--box", self.box, optional=False)
        self.samples = check_number("--samples", self.samples, int, SAMPLES_RANGE)
        self.seed = check_number("--seed", self.seed, int)
        self.symbolic_timeout = check_number("--symbolic-timeout", self.symbolic_timeout, float, SYMBOLIC_TIMEOUTS)
        self.rtol = check_number("--rtol", self.rtol, float, optional=True)
        self.atol = check_number("--atol", self.atol, float, optional=True)
        self.dtype = check_text("--dtype", self.dtype, optional=False).lower()
        self.rule = check_texts("--rule", self.rule)
        self.strict = check_flag("--strict", self.strict)

    def run(self, *, rules=None):
        """The check (gradcli.compute.check.check_derivatives): its report, the rules' notes added."""
        from gradcli.library.run import run_check

        return run_check(self, rules=rules)


@dataclass(kw_only=True)
class TraceRequest(PointsRequest):
    """``gradcli trace EXPR... --at X``: the tape's nodes at one point, each value, adjoint (and tangent along
    ``along``) checked."""

    command = "trace"

    expressions: list[str]
    along: list[str] | None = None
    symbolic_timeout: float = SYMBOLIC_TIMEOUT
    rule: list[str] | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.expressions, str):
            self.expressions = [self.expressions]
        self.expressions = check_texts("EXPR...", self.expressions) or []
        if not self.expressions:
            raise UsageError("give at least one expression, e.g. gradcli trace \"x**2\" --at x=3")
        if not self.one_point:
            # a trace is a table per point (every node, three sweeps): many points would be pages of tables
            raise UsageError("trace shows one point's computation, node by node: give --at (at many points, "
                             "jvp, hvp and grad take --points/--grid)")
        self.along = check_at(self.along, "along")
        self.symbolic_timeout = check_number("--symbolic-timeout", self.symbolic_timeout, float, SYMBOLIC_TIMEOUTS)
        self.rule = check_texts("--rule", self.rule)
        self.strict = check_flag("--strict", self.strict)

    def make_core(self):
        """The trace's core, kept as ``core``: its report is what trace's table and dot views draw."""
        from gradcli.compute.trace_batch import TraceCore

        self.core = TraceCore(self.expressions, along=self.along, dtype=self.dtype,
                              symbolic_time_limit=self.symbolic_timeout)
        return self.core


STEPS_DTYPES = "float64"


@dataclass(kw_only=True)
class StepsRequest:
    """``gradcli steps EXPR --at X``: the error of each difference formula over a sweep of steps h."""

    command = "steps"

    expression: str
    at: list[str] | None = None
    wrt: str | None = None
    order: int = ORDER
    dtype: str = STEPS_DTYPES  # one dtype or several, comma-separated
    formulas: str | None = None
    symbolic_timeout: float = SYMBOLIC_TIMEOUT
    strict: bool = False

    def __post_init__(self) -> None:
        self.expression = check_expression(self.expression)
        self.at = check_at(self.at)
        self.wrt = check_text("--wrt", self.wrt)
        self.order = check_number("--order", self.order, int)
        self.dtype = check_comma_list("--dtype", self.dtype)
        self.formulas = check_comma_list("--formulas", self.formulas)
        self.symbolic_timeout = check_number("--symbolic-timeout", self.symbolic_timeout, float, SYMBOLIC_TIMEOUTS)
        self.strict = check_flag("--strict", self.strict)

    def run(self):
        """The sweep's report (gradcli.compute.steps.StepsReport)."""
        from gradcli.compute.steps import compute_steps

        return compute_steps(self.expression, at=self.at, wrt=self.wrt, order=self.order, dtypes=self.dtype,
                             symbolic_time_limit=self.symbolic_timeout, formula_names=self.formulas)


__all__ = ["AlongRequest", "CheckRequest", "DerivativeRequest", "DescendRequest", "EvalRequest", "GradRequest",
           "HessianRequest", "HvpRequest", "JvpRequest", "PointColumns", "StepsRequest", "TraceRequest"]
