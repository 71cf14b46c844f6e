"""``check``: are hand-derived derivatives right? Each ``--expect x=FORMULA`` is compared with SymPy's exact
derivative at every point of ``--at``, ``--points``/``--grid``, or random points in a box (points where the
expression or the exact derivative is undefined are skipped). The first point where they differ by more
than float64 evaluation of two formulas explains is the counterexample."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gradcli.errors import UsageError
from gradcli.expression import Expression, parse
from gradcli.expression.points import split_top_level
from gradcli.results import clean

# |expected - exact| <= RTOL * max(1, |exact|): both are float64 evaluations of exact formulas.
RTOL = 1e-9
DEFAULT_SAMPLES = 20
MAX_TRIES = 50  # random candidates per wanted sample, before giving up on a domain too small to hit


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
    counterexample: dict | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "check"

    def to_dict(self) -> dict:
        return clean({"command": self.command, "expression": self.expression, "order": self.order,
                      "expectations": self.expectations, "points_checked": self.points_checked,
                      "passed": self.counterexample is None and self.points_checked > 0,
                      "counterexample": self.counterexample, "tolerance": f"{RTOL:g} * max(1, |exact|)",
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


def random_points(variables: list[str], box: tuple[float, float], samples: int, seed: int, ok) -> dict:
    """``samples`` points uniform in the box where ``ok(points) -> bool mask`` holds (undefined ones skipped)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    kept = {v: np.empty(0) for v in variables}
    for _ in range(MAX_TRIES):
        candidates = {v: rng.uniform(box[0], box[1], samples) for v in variables}
        mask = ok(candidates)
        for v in variables:
            kept[v] = np.concatenate([kept[v], candidates[v][mask]])
        if len(kept[variables[0]]) >= samples:
            break
    return {v: a[:samples] for v, a in kept.items()}


def parse_box(text: str) -> tuple[float, float]:
    low, sep, high = text.partition(":")
    try:
        box = (float(low), float(high))
    except ValueError:
        box = (math.nan, math.nan)
    if not sep or not all(math.isfinite(b) for b in box) or box[0] >= box[1]:
        raise UsageError(f"--box must be LOW:HIGH with LOW < HIGH, e.g. -2:2, not '{text}'")
    return box


def compare(expr: Expression, expectations: list[Expectation], exact_trees: dict, points: dict, size: int,
            order: int) -> tuple[int, dict | None]:
    """(points compared, the first counterexample or None), over one batch of points, all at once."""
    import numpy as np

    from gradcli.methods import symbolic

    usable = np.isfinite(symbolic.evaluate(expr.tree, points, size))
    exact = {e.variable: symbolic.evaluate(exact_trees[e.variable], points, size) for e in expectations}
    for e in expectations:
        usable &= np.isfinite(exact[e.variable])
    first, culprit = size, None
    for e in expectations:
        want = exact[e.variable]
        got = symbolic.evaluate(e.formula.tree, points, size)
        with np.errstate(invalid="ignore"):
            wrong = usable & (~np.isfinite(got) | (np.abs(got - want) > RTOL * np.maximum(1.0, np.abs(want))))
        hits = np.nonzero(wrong)[0]
        if hits.size and hits[0] < first:
            first, culprit = int(hits[0]), (e, float(got[hits[0]]), float(want[hits[0]]))
    if culprit is None:
        return int(usable.sum()), None
    e, got, want = culprit
    finite = math.isfinite(got)
    return int(usable[:first + 1].sum()), {
        "point": {v: float(a[first]) for v, a in points.items()}, "variable": e.variable, "order": order,
        "expected_formula": e.text, "expected": got if finite else None, "exact": want,
        "difference": abs(got - want) if finite else None}


def check_derivatives(expression: str, *, expect: list[str], order: int = 1, at: list[str] | None = None,
                      points: str | None = None, grid: str | None = None, box: str = "-2:2",
                      samples: int = DEFAULT_SAMPLES, seed: int = 0, symbolic_time_limit: float = 10.0,
                      chunk_size: int = 4096) -> CheckReport:
    """Everything ``gradcli check`` says, as a :class:`CheckReport` (``failed``: exit 1)."""
    from gradcli.compute.derivative import check_order
    from gradcli.errors import ComputeError
    from gradcli.methods.symbolic import differentiate
    from gradcli.methods.worker import BoundedJob, SymbolicTimeout

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
                                             "exact": formulas.texts[(e.variable,) * order]} for e in expectations])
    for batch, size in _batches(expr, trees, variables, at, points, grid, bounds, samples, seed, chunk_size):
        checked, counterexample = compare(expr, expectations, trees, batch, size, order)
        report.points_checked += checked
        if counterexample is not None:
            report.counterexample = counterexample
            report.failed = True
            return report
    if report.points_checked == 0:
        report.failed = True
        report.warnings.append(f"no point where {expr.text} and its exact derivative are defined: nothing checked")
    return report


def _batches(expr, trees, variables, at, points, grid, bounds, samples, seed, chunk_size):
    """The points to check at, as (values by variable, count) batches."""
    import numpy as np

    from gradcli.expression.points import check_covers, parse_point
    from gradcli.methods import symbolic

    if at is not None:
        point = parse_point(at)
        check_covers(point, variables)
        yield {v: np.array([point.values[v]]) for v in variables}, 1
        return
    if points is not None or grid is not None:
        from gradcli.expression.sources import grid_points, open_points

        source = (open_points(points, variables=variables, chunk_size=chunk_size) if points is not None
                  else grid_points(grid, variables=variables, chunk_size=chunk_size))
        for chunk in source.chunks():
            yield {v: chunk.values[v] for v in variables}, len(chunk)
        return
    def defined(candidates):
        size = len(candidates[variables[0]])
        mask = np.isfinite(symbolic.evaluate(expr.tree, candidates, size))
        for tree in trees.values():
            mask &= np.isfinite(symbolic.evaluate(tree, candidates, size))
        return mask

    chosen = random_points(variables, bounds, samples, seed, defined)
    yield chosen, len(chosen[variables[0]])
