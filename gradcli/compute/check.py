"""``check``: are hand-derived derivatives right? Each ``--expect x=FORMULA`` is compared with SymPy's exact
derivative, first as formulas (SymPy simplifies the difference: 0 proves the formula right, a nonzero
number proves it wrong), then at every point of ``--at``, ``--points``/``--grid``, or in a box: random points
plus a ladder of points closing in on the box's centre and on 0, where narrow features (``exp(-1e4*x**2)``)
live that uniform samples miss. Points where the expression or the exact derivative is undefined are
skipped. Float64 evaluation finds the candidates; a candidate is a counterexample only when both formulas,
evaluated exactly (30 digits) at that point, differ too, so cancellation in float64 never fails a right
formula."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gradcli.errors import UsageError
from gradcli.expression import Expression, parse
from gradcli.expression.points import split_top_level
from gradcli.results import clean

# A formula agrees with the exact derivative where |expected - exact| <= ATOL + RTOL * |exact| (numpy.isclose's
# rule, with the exact value as the reference; --rtol/--atol). Both are evaluations of exact formulas, so the
# defaults only absorb rounding: 1e-9 each (until --rtol/--atol came, the rule was 1e-9 * max(1, |exact|),
# the larger of the two terms instead of their sum).
RTOL = 1e-9
ATOL = 1e-9
DEFAULT_SAMPLES = 20
MAX_TRIES = 50  # random candidates per wanted sample, before giving up on a domain too small to hit
# Ladder points per side of each centre: half-widths 2^0 .. 2^-(LADDER - 1) of the box (down to ~1e-12 of it).
LADDER = 40
# Points of the dense sweep after the samples and the ladder: a grid for one variable (spacing 6e-5 of the
# box), uniform random points for several. Float64 evaluation of the formulas at this many takes milliseconds.
DENSE = 2**16
# Float64 candidates re-checked exactly (30 digits) before the check gives up confirming any of them.
EXACT_CONFIRMATIONS = 64
# The share of --symbolic-timeout SymPy may spend proving the formulas equal (the rest is for differentiating).
PROOF_SHARE = 0.5


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
    # per variable: "equal" (SymPy proved expected - exact == 0), "different" (a nonzero constant), "unknown"
    proof: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    command: str = "check"
    rtol: float = RTOL
    atol: float = ATOL

    @property
    def passed(self) -> bool:
        proved = bool(self.proof) and all(v == "equal" for v in self.proof.values())
        return self.counterexample is None and (self.points_checked > 0 or proved) and \
            "different" not in self.proof.values()

    def to_dict(self) -> dict:
        return clean({"command": self.command, "expression": self.expression, "order": self.order,
                      "expectations": self.expectations, "points_checked": self.points_checked,
                      "passed": self.passed, "proof": self.proof,
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


def allowed(exact, rtol: float = RTOL, atol: float = ATOL):
    """How far a formula may be from the exact value ``exact`` (a number or an array) and still agree."""
    return atol + rtol * abs(exact)


def check_tolerance(option: str, value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{option} must be a finite number >= 0, not {value!r}")
    return value


def compare(expr: Expression, expectations: list[Expectation], exact_trees: dict, points: dict, size: int,
            order: int, *, largest: bool = False, rtol: float = RTOL,
            atol: float = ATOL) -> tuple[int, dict | None]:
    """(points compared, the first counterexample or None), over one batch of points: float64 finds the
    candidates all at once, exact evaluation at each candidate decides. With ``largest`` the candidates are
    tried from the largest float64 difference down (a sweep's first hit is often a band's faint edge)."""
    import numpy as np

    from gradcli.methods import symbolic

    usable = np.isfinite(symbolic.evaluate(expr.tree, points, size))
    exact = {e.variable: symbolic.evaluate(exact_trees[e.variable], points, size) for e in expectations}
    for e in expectations:
        usable &= np.isfinite(exact[e.variable])
    candidates: list[tuple[int, Expectation]] = []
    for e in expectations:
        want = exact[e.variable]
        got = symbolic.evaluate(e.formula.tree, points, size)
        with np.errstate(invalid="ignore"):
            wrong = usable & (~np.isfinite(got) | (np.abs(got - want) > allowed(want, rtol, atol)))
        hits = np.nonzero(wrong)[0]
        if largest:
            with np.errstate(invalid="ignore"):
                gap = np.where(np.isfinite(got[hits]), np.abs(got[hits] - want[hits]), np.inf)
            hits = hits[np.argsort(-gap, kind="stable")]
        candidates += [(int(k), e) for k in hits[:EXACT_CONFIRMATIONS]]
    if not largest:
        candidates.sort(key=lambda c: c[0])
    for k, e in candidates[:EXACT_CONFIRMATIONS]:
        point = {v: float(a[k]) for v, a in points.items()}
        verdict = _exact_difference(e, exact_trees[e.variable], point, rtol, atol)
        if verdict is not None:
            got, want = verdict
            finite = got is not None and math.isfinite(got)
            return int(usable[:k + 1].sum()), {
                "point": point, "variable": e.variable, "order": order, "expected_formula": e.text,
                "expected": got if finite else None, "exact": want,
                "difference": abs(got - want) if finite else None, "allowed": allowed(want, rtol, atol)}
    return int(usable.sum()), None


def _exact_difference(e: Expectation, exact_tree, point: dict[str, float], rtol: float = RTOL,
                      atol: float = ATOL) -> tuple[float | None, float] | None:
    """(expected, exact), both evaluated exactly at ``point``, when they really differ there; None when they
    agree (float64 lost the digits) or the exact derivative is undefined there."""
    import sympy as sp

    from gradcli.methods.symbolic import symbols_for, to_sympy, value_at

    symbols = symbols_for(point)
    subs = {symbols[v]: sp.Rational(x) for v, x in point.items()}
    want = value_at(to_sympy(exact_tree, symbols), subs)
    if want is None or not math.isfinite(want):
        return None
    got = value_at(to_sympy(e.formula.tree, symbols), subs)
    if got is not None and math.isfinite(got) and abs(got - want) <= allowed(want, rtol, atol):
        return None
    return got, want


def prove(expression_tree, variables: list[str], order: int, expected: list[tuple[str, object]],
          cancel=None) -> dict[str, str]:
    """For each (variable, formula tree): "equal" when SymPy simplifies formula - exact derivative to 0,
    "different" when to a nonzero number, else "unknown" (SymPy's simplify proves no identity it misses).
    Module-level with picklable arguments, for a forked worker."""
    import sympy as sp

    from gradcli.methods.symbolic import diff, symbols_for, to_sympy

    symbols = symbols_for(variables)
    f = to_sympy(expression_tree, symbols)
    out: dict[str, str] = {}
    for name, tree in expected:
        if cancel is not None:
            cancel.check()
        d = diff(f, *[symbols[name]] * order)
        difference = sp.simplify(to_sympy(tree, symbols) - d)
        if difference.is_zero is True:
            out[name] = "equal"
        elif difference.is_number and difference.is_zero is False and difference.is_finite:
            out[name] = "different"
        else:
            out[name] = "unknown"
    return out


def check_derivatives(expression: str, *, expect: list[str], order: int = 1, at: list[str] | None = None,
                      points: str | None = None, grid: str | None = None, box: str = "-2:2",
                      samples: int = DEFAULT_SAMPLES, seed: int = 0, symbolic_time_limit: float = 10.0,
                      chunk_size: int = 4096, rtol: float = RTOL, atol: float = ATOL) -> CheckReport:
    """Everything ``gradcli check`` says, as a :class:`CheckReport` (``failed``: exit 1)."""
    from gradcli.compute.batch.derivative import check_order
    from gradcli.errors import ComputeError
    from gradcli.methods.symbolic import differentiate
    from gradcli.methods.worker import BoundedJob, SymbolicTimeout

    rtol, atol = check_tolerance("--rtol", rtol), check_tolerance("--atol", atol)
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
                                             "exact": formulas.texts[(e.variable,) * order]} for e in expectations],
                         rtol=rtol, atol=atol)
    proof = BoundedJob(prove, (expr.tree, variables, order, [(e.variable, e.formula.tree) for e in expectations]),
                       max(0.1, PROOF_SHARE * symbolic_time_limit), parallel=True, cancellable=True)
    try:
        report.proof = proof.result()
    except SymbolicTimeout:
        report.proof = {e.variable: "unknown" for e in expectations}
        report.notes.append("SymPy could not decide within its time whether the formulas are equal: checked at "
                            "points only")
    if "different" in report.proof.values():
        report.failed = True
    for batch, size, sweep in _batches(expr, trees, variables, at, points, grid, bounds, samples, seed, chunk_size):
        checked, counterexample = compare(expr, expectations, trees, batch, size, order, largest=sweep, rtol=rtol,
                                          atol=atol)
        report.points_checked += checked
        if counterexample is not None:
            report.counterexample = counterexample
            report.failed = True
            return report
    if report.points_checked == 0 and not report.passed and not report.failed:
        report.failed = True
        report.warnings.append(f"no point where {expr.text} and its exact derivative are defined: nothing checked")
    if report.counterexample is None and "different" in report.proof.values():
        names = ", ".join(v for v, p in report.proof.items() if p == "different")
        report.warnings.append(f"SymPy proves the expected derivative by {names} wrong (the difference is a "
                               "nonzero constant), but no point of the check shows it")
    return report


def _batches(expr, trees, variables, at, points, grid, bounds, samples, seed, chunk_size):
    """The points to check at, as (values by variable, count, whether a sweep of gradcli's own) batches."""
    import numpy as np

    from gradcli.expression.points import check_covers, parse_point
    from gradcli.methods import symbolic

    if at is not None:
        point = parse_point(at)
        check_covers(point, variables)
        yield {v: np.array([point.values[v]]) for v in variables}, 1, False
        return
    if points is not None or grid is not None:
        from gradcli.expression.sources import grid_points, open_points

        source = (open_points(points, variables=variables, chunk_size=chunk_size) if points is not None
                  else grid_points(grid, variables=variables, chunk_size=chunk_size))
        for chunk in source.chunks():
            yield {v: chunk.values[v] for v in variables}, len(chunk), False
        return
    def defined(candidates):
        size = len(candidates[variables[0]])
        mask = np.isfinite(symbolic.evaluate(expr.tree, candidates, size))
        for tree in trees.values():
            mask &= np.isfinite(symbolic.evaluate(tree, candidates, size))
        return mask

    chosen = random_points(variables, bounds, samples, seed, defined)
    yield chosen, len(chosen[variables[0]]), False
    ladder = ladder_points(variables, bounds)
    mask = defined(ladder)
    ladder = {v: a[mask] for v, a in ladder.items()}
    yield ladder, len(ladder[variables[0]]), True
    dense = dense_points(variables, bounds, seed)
    mask = defined(dense)
    yield {v: a[mask] for v, a in dense.items()}, int(mask.sum()), True


def dense_points(variables: list[str], box: tuple[float, float], seed: int) -> dict:
    """:data:`DENSE` points filling the box: an even grid for one variable, uniform random points for more."""
    import numpy as np

    if len(variables) == 1:
        return {variables[0]: np.linspace(box[0], box[1], DENSE)}
    rng = np.random.default_rng(seed + 1)
    return {v: rng.uniform(box[0], box[1], DENSE) for v in variables}


def ladder_points(variables: list[str], box: tuple[float, float]) -> dict:
    """Points closing in geometrically on the box's centre (and on 0 when the box holds it), every variable
    at the same offset: a feature narrower than the box (a spike, a band, a bump) that uniform samples
    almost never hit lies on such a ladder when it sits at the centre or at 0."""
    import numpy as np

    low, high = box
    half = (high - low) / 2
    centres = [low + half] + ([0.0] if low < 0.0 < high and low + half != 0.0 else [])
    offsets = half * 2.0 ** -np.arange(LADDER)
    values = np.concatenate([np.clip(np.concatenate([[c], c + offsets, c - offsets]), low, high) for c in centres])
    values = np.unique(values)
    return {v: values.copy() for v in variables}
