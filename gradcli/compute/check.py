"""``check``: are hand-derived derivatives right? Each ``--expect x=FORMULA`` is compared with SymPy's exact
derivative. It is decided exactly where SymPy can: SymPy simplifies expected - exact within a share of the
symbolic time limit (then tries ``equals``), and 0 proves the formula right ("proved equal"); a nonzero
number proves it wrong ("proved different", with a counterexample point evaluated at 30 digits). Where
SymPy cannot decide, the formulas are compared at points: ``--at``, ``--points``/``--grid``, or in a box
points chosen adaptively (:mod:`gradcli.compute.check_points`: samples, the features of both formulas, a
sweep, then more points where they come closest to differing), each compared against exact values
(:mod:`gradcli.compute.check_values`), so float64's rounding neither fails a right formula nor hides a
wrong one; such a pass is "equal at N sampled points, not proved". Points where the expression or the exact
derivative is undefined are skipped."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gradcli.errors import UsageError
from gradcli.expression import Expression, parse
from gradcli.expression.points import split_top_level
from gradcli.results import clean

# A formula agrees with the exact derivative where |expected - exact| <= ATOL + RTOL * |exact| (numpy.isclose's
# rule, with the exact value as the reference; --rtol/--atol). Both sides are exact values, so the defaults
# only absorb what the formulas are meant to be evaluated in: 1e-9 each in float64, 1e-5 each (some 80
# float32 ulps) for --dtype float32.
TOLERANCES = {"float64": 1e-9, "float32": 1e-5}
RTOL = ATOL = TOLERANCES["float64"]
DEFAULT_SAMPLES = 20
# The shares of --symbolic-timeout SymPy may spend proving the formulas equal: simplify, then equals on what
# simplify left (the limit is for differentiating; a proof SymPy does not find in these seconds it rarely
# finds at all, and the points decide then).
PROOF_SHARE = 0.3
EQUALS_SHARE = 0.1
# How each expectation was decided (the JSON's "decision"; the text says it in words).
PROVED_EQUAL = "proved equal"
PROVED_DIFFERENT = "proved different"
DIFFERS = "differs"
SAMPLED = "sampled"
NOT_CHECKED = "not checked"


@dataclass
class Expectation:
    variable: str
    formula: Expression
    text: str


@dataclass
class CheckReport:
    expression: str
    order: int
    expectations: list[dict]
    points_checked: int = 0
    points_exact: int = 0  # of those, where a formula had to be evaluated at 30 digits
    points_undecided: int = 0  # past the budget of exact evaluations: not counted
    counterexample: dict | None = None
    # per variable: "equal" (SymPy proved expected - exact == 0), "different" (a nonzero constant), "unknown"
    proof: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "check"
    dtype: str = "float64"
    rtol: float = RTOL
    atol: float = ATOL

    @property
    def passed(self) -> bool:
        return not self.failed and all(e["decision"] in (PROVED_EQUAL, SAMPLED) for e in self.expectations)

    @property
    def decision(self) -> str:
        """The run's verdict: "proved equal" when SymPy proved every formula, "differs" when one is wrong,
        "sampled" when the rest agree at every point checked, "not checked" when no point could be."""
        decisions = {e["decision"] for e in self.expectations}
        if decisions & {PROVED_DIFFERENT, DIFFERS}:
            return DIFFERS
        if decisions == {PROVED_EQUAL}:
            return PROVED_EQUAL
        return SAMPLED if self.passed else NOT_CHECKED

    def to_dict(self) -> dict:
        return clean({"command": self.command, "expression": self.expression, "order": self.order,
                      "dtype": self.dtype, "decision": self.decision, "expectations": self.expectations,
                      "points_checked": self.points_checked, "points_exact": self.points_exact,
                      "points_undecided": self.points_undecided, "passed": self.passed, "proof": self.proof,
                      "counterexample": self.counterexample, "rtol": self.rtol, "atol": self.atol,
                      "tolerance": "|expected - exact| <= atol + rtol * |exact|",
                      "warnings": self.warnings, "notes": self.notes})


def parse_expectations(texts: list[str], expr: Expression) -> list[Expectation]:
    """``--expect x=2*x*y`` (repeatable; commas inside calls are fine): the variable and its formula."""
    if not texts:
        raise UsageError("give at least one --expect VAR=FORMULA, e.g. --expect x=2*x")
    out: list[Expectation] = []
    for text in texts:
        for offset, piece in split_top_level(text):
            name, eq, formula = piece.partition("=")
            name = name.strip()
            if not eq or not formula.strip():
                raise UsageError(f"--expect: '{piece.strip()}' is not of the form VAR=FORMULA", source=text,
                                 position=offset)
            if name not in expr.variables:
                raise UsageError(f"--expect: '{name}' is not a variable of {expr.text}", source=text, position=offset)
            if any(e.variable == name for e in out):
                raise UsageError(f"--expect: '{name}' is given twice", source=text, position=offset)
            parsed = parse(formula)
            extra = [v for v in parsed.variables if v not in expr.variables]
            if extra:
                raise UsageError(f"--expect: the formula for {name} uses '{extra[0]}', which {expr.text} does not",
                                 source=text, position=offset)
            out.append(Expectation(name, parsed, formula.strip()))
    return out


def parse_box(text: str) -> tuple[float, float]:
    low, sep, high = text.partition(":")
    try:
        box = (float(low), float(high))
    except ValueError:
        box = (math.nan, math.nan)
    if not sep or not all(math.isfinite(b) for b in box) or box[0] >= box[1]:
        raise UsageError(f"--box must be LOW:HIGH with LOW < HIGH, e.g. -2:2, not '{text}'")
    return box


def check_tolerance(option: str, value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{option} must be a finite number >= 0, not {value!r}")
    return value



def prove(expression_tree, variables: list[str], order: int, expected: list[tuple[str, object]],
          use_equals: bool = False, cancel=None) -> dict[str, tuple[str, str | None]]:
    """For each (variable, formula tree): ("equal", None) when SymPy simplifies formula - exact derivative to
    0 (or, with ``use_equals``, its ``equals(0)`` proves it), ("different", the difference) when it is a
    nonzero number, else ("unknown", None): simplify proves no identity it misses. Module-level with
    picklable arguments, for a forked worker."""
    import sympy as sp

    from gradcli.methods.symbolic import diff, symbols_for, to_sympy

    symbols = symbols_for(variables)
    f = to_sympy(expression_tree, symbols)
    out: dict[str, tuple[str, str | None]] = {}
    for name, tree in expected:
        if cancel is not None:
            cancel.check()
        d = diff(f, *[symbols[name]] * order)
        difference = sp.simplify(to_sympy(tree, symbols) - d)
        if difference.is_zero is True:
            out[name] = ("equal", None)
        elif difference.is_number and difference.is_zero is False and difference.is_finite:
            out[name] = ("different", str(difference))
        elif use_equals and difference.equals(0) is True:
            out[name] = ("equal", None)
        else:
            out[name] = ("unknown", None)
    return out


def check_derivatives(expression: str, *, expect: list[str], order: int = 1, at: list[str] | None = None,
                      points: str | None = None, grid: str | None = None, box: str = "-2:2",
                      samples: int = DEFAULT_SAMPLES, seed: int = 0, symbolic_time_limit: float = 10.0,
                      chunk_size: int = 4096, rtol: float | None = None, atol: float | None = None,
                      dtype: str = "float64") -> CheckReport:
    """Everything ``gradcli check`` says, as a :class:`CheckReport` (``failed``: exit 1)."""
    from gradcli.compute.batch.derivative import check_order
    from gradcli.compute.check_values import ExactComparison
    from gradcli.compute.request import check_dtype
    from gradcli.errors import ComputeError
    from gradcli.methods.symbolic import differentiate
    from gradcli.methods.worker import BoundedJob, SymbolicTimeout

    dtype = check_dtype(dtype)
    rtol = check_tolerance("--rtol", TOLERANCES[dtype] if rtol is None else rtol)
    atol = check_tolerance("--atol", TOLERANCES[dtype] if atol is None else atol)
    expr = parse(expression)
    expectations = parse_expectations(expect, expr)
    order = check_order(order)
    if sum(x is not None for x in (at, points, grid)) > 1:
        raise UsageError("give one of --at, --points, --grid (or none: random points in --box)")
    bounds = parse_box(box)
    variables = list(expr.variables)
    job = BoundedJob(differentiate, ([expr.tree], variables, [(0, (e.variable,) * order) for e in expectations]),
                     symbolic_time_limit, parallel=True, cancellable=True)
    try:
        formulas = job.result()[0]
    except SymbolicTimeout as exc:
        raise ComputeError(f"{exc}: no exact derivative to check against (raise --symbolic-timeout)") from None
    if formulas.untranslatable:
        raise ComputeError(f"the exact derivative cannot be evaluated: {next(iter(formulas.untranslatable.values()))}")
    trees = {e.variable: formulas.trees[(e.variable,) * order] for e in expectations}
    report = CheckReport(expr.text, order, [{"variable": e.variable, "expected": e.text,
                                             "exact": formulas.texts[(e.variable,) * order],
                                             "decision": NOT_CHECKED, "sympy_difference": None}
                                            for e in expectations], dtype=dtype, rtol=rtol, atol=atol)
    differences = _proofs(report, expr, variables, order, expectations, symbolic_time_limit)
    comparison = ExactComparison(expr.tree, expectations, trees, variables, order, rtol, atol)
    cast = _caster(dtype)
    sampled = SampledPoints(comparison)
    if at is not None or points is not None or grid is not None:
        for batch, size in _given_points(variables, at, points, grid, chunk_size, cast):
            if sampled.add(batch, size, share=1.0):
                break
    elif "unknown" in report.proof.values() and "different" not in report.proof.values():
        _sample_box(sampled, expr, trees, expectations, variables, bounds, samples, seed, cast)
    report.points_checked = sampled.checked
    report.points_exact = sampled.exact
    report.points_undecided = sampled.left
    report.counterexample = sampled.counterexample
    proved_wrong = [e for e in expectations if report.proof[e.variable] == "different"]
    if proved_wrong and report.counterexample is None:
        report.counterexample = _any_counterexample(comparison, proved_wrong[0], expr, trees, variables, bounds,
                                                    seed, cast, sampled.seen)
    for entry, e in zip(report.expectations, expectations):
        status = report.proof[e.variable]
        entry["sympy_difference"] = differences.get(e.variable)
        if e.variable in sampled.differing:  # even where SymPy's simplify said equal: x/x is no number at 0
            entry["decision"] = DIFFERS
        elif status == "equal":
            entry["decision"] = PROVED_EQUAL
        elif status == "different":
            entry["decision"] = PROVED_DIFFERENT
        elif report.counterexample is None and report.points_checked > 0:
            entry["decision"] = SAMPLED
    if report.counterexample is not None or proved_wrong:
        report.failed = True
    elif not report.passed:
        report.failed = True
        report.warnings.append(f"no point where {expr.text} and its exact derivative are defined could be "
                               "checked: nothing decided")
    if proved_wrong and report.counterexample is None:
        names = ", ".join(e.variable for e in proved_wrong)
        report.warnings.append(f"SymPy proves the expected derivative by {names} wrong (the difference is a "
                               "nonzero constant), but no point where both are defined was found to show it")
    if sampled.left:
        from gradcli.compute.check_values import EXACT_POINTS, EXACT_SECONDS

        report.notes.append(f"{sampled.left:,} of the points sampled could be decided only at 30 digits (float64 "
                            f"cannot vouch for the values there), past the check's {EXACT_POINTS} such "
                            f"evaluations or {EXACT_SECONDS:g} s: not counted as checked")
    return report


def _proofs(report: CheckReport, expr, variables, order, expectations, time_limit) -> dict[str, str]:
    """SymPy's proofs into ``report.proof``; returns the proven nonzero differences by variable."""
    from gradcli.methods.worker import BoundedJob, SymbolicTimeout

    report.proof = {e.variable: "unknown" for e in expectations}
    differences: dict[str, str] = {}
    for use_equals, share in ((False, PROOF_SHARE), (True, EQUALS_SHARE)):
        open_ = [(e.variable, e.formula.tree) for e in expectations if report.proof[e.variable] == "unknown"]
        if not open_:
            break
        job = BoundedJob(prove, (expr.tree, variables, order, open_, use_equals), max(0.1, share * time_limit),
                         parallel=True, cancellable=True)
        try:
            found = job.result()
        except SymbolicTimeout:
            if not use_equals:
                report.notes.append("SymPy could not simplify the differences within its share of "
                                    "--symbolic-timeout: decided at points")
            continue
        for name, (status, difference) in found.items():
            report.proof[name] = status
            if difference is not None:
                differences[name] = difference
    return differences


class SampledPoints:
    """The points compared so far: counts, the first counterexample, and the points that came closest to
    differing (for :func:`gradcli.compute.check_points.around`)."""

    def __init__(self, comparison):
        self.comparison = comparison
        self.checked = self.exact = self.left = 0
        self.counterexample: dict | None = None
        self.differing: set[str] = set()
        self.closest: list[tuple[float, dict]] = []
        self.seen: list[dict] = []  # a few points where everything is defined

    def add(self, batch: dict, size: int, share: float = 0.5) -> bool:
        """Compare at ``batch``; True once a counterexample is found (the check stops)."""
        import numpy as np

        from gradcli.compute.check_points import REFINE_POINTS

        outcome = self.comparison.compare(batch, size, share)
        self.checked += outcome.checked
        self.exact += outcome.exact
        self.left += outcome.left
        closeness = np.asarray(outcome.closeness)
        decided = np.flatnonzero(np.isfinite(closeness))
        if len(self.seen) < 4:
            self.seen += [{v: float(a[k]) for v, a in batch.items()} for k in decided[:4 - len(self.seen)]]
        best = decided[np.argsort(-closeness[decided], kind="stable")][:REFINE_POINTS]
        self.closest += [(float(closeness[k]), {v: float(a[k]) for v, a in batch.items()})
                         for k in best if closeness[k] > 0]
        self.closest = sorted(self.closest, key=lambda c: -c[0])[:REFINE_POINTS]
        if outcome.counterexample is not None:
            self.counterexample = outcome.counterexample
            self.differing |= outcome.differing
            return True
        return False


def _sample_box(sampled: SampledPoints, expr, trees, expectations, variables, bounds, samples, seed, cast):
    """Random samples, ladders, the formulas' features, a sweep, then refinement, until a counterexample."""
    from gradcli.compute import check_points as where

    defined = _defined(expr, trees)
    chosen = where.random_points(variables, bounds, samples, seed, defined, cast)
    if sampled.add(chosen, len(chosen[variables[0]])):
        return
    centre = {v: (bounds[0] + bounds[1]) / 2 for v in variables}
    lines = min(where.EXTRA_LINES, len(chosen[variables[0]])) if len(variables) > 1 else 0
    bases = [centre] + [{v: float(chosen[v][k]) for v in variables} for k in range(lines)]
    functions = where.feature_functions([expr.tree, *(e.formula.tree for e in expectations), *trees.values()])
    for points in (lambda: where.ladder_points(variables, bounds, cast),
                   lambda: where.feature_points(functions, variables, bounds, bases, cast),
                   lambda: where.dense_points(variables, bounds, seed, cast)):
        batch = _only(points(), defined)
        if sampled.add(batch, len(batch[variables[0]])):
            return
    for round_ in range(where.REFINE_ROUNDS):
        if not sampled.closest:
            return
        batch = _only(where.around([p for _, p in sampled.closest], variables, bounds, seed + round_, cast),
                      defined)
        if sampled.add(batch, len(batch[variables[0]]), share=0.5 if round_ < where.REFINE_ROUNDS - 1 else 1.0):
            return


def _defined(expr, trees):
    """A mask function: where the expression and every exact derivative are defined in float64."""
    import numpy as np

    from gradcli.methods import symbolic

    def defined(candidates):
        size = len(next(iter(candidates.values())))
        mask = ~np.isnan(symbolic.evaluate(expr.tree, candidates, size))
        for tree in trees.values():
            mask &= ~np.isnan(symbolic.evaluate(tree, candidates, size))
        return mask

    return defined


def _only(points: dict, defined) -> dict:
    mask = defined(points)
    return {v: a[mask] for v, a in points.items()}


def _caster(dtype: str):
    """Coordinates rounded to the dtype checked (float32 points are float32 numbers), kept as float64."""
    import numpy as np

    if dtype == "float64":
        return lambda a: np.asarray(a, dtype=np.float64)

    def cast(a):
        with np.errstate(over="ignore"):
            return np.asarray(a, dtype=np.float64).astype(np.float32).astype(np.float64)

    return cast


def _given_points(variables, at, points, grid, chunk_size, cast):
    """The points of --at, --points or --grid, as (values by variable, count) batches."""
    import numpy as np

    from gradcli.expression.points import check_covers, parse_point

    if at is not None:
        point = parse_point(at)
        check_covers(point, variables)
        yield {v: cast(np.array([point.values[v]])) for v in variables}, 1
        return
    from gradcli.expression.sources import grid_points, open_points

    if hasattr(points, "source"):  # columns from the Python API (gradcli.library.requests.PointColumns)
        source = points.source(variables=variables, chunk_size=chunk_size)
    else:
        source = (open_points(points, variables=variables, chunk_size=chunk_size) if points is not None
                  else grid_points(grid, variables=variables, chunk_size=chunk_size))
    for chunk in source.chunks():
        yield {v: cast(chunk.values[v]) for v in variables}, len(chunk)


def _any_counterexample(comparison, e, expr, trees, variables, bounds, seed, cast, seen) -> dict | None:
    """For a formula SymPy proved off by a constant: the exact values at the first point where both are
    defined (from those compared, else random points in the box)."""
    from gradcli.compute.check_points import random_points

    candidates = list(seen)
    if not candidates:
        found = random_points(variables, bounds, 8, seed, _defined(expr, trees), cast)
        candidates = [{v: float(found[v][k]) for v in variables} for k in range(len(found[variables[0]]))]
    for point in candidates:
        values = comparison.values_at(e.variable, point)
        if values is not None:
            return comparison.counterexample(e, point, *values)
    return None
