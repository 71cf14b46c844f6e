"""``jvp`` and ``hvp`` at many points (``--points FILE``, ``--grid X=A:B:N``, or ``-f csv/jsonl`` at the ``--at``
point): one record per point, from the same shared point sources as grad's (:func:`gradcli.compute.batch.points.
point_chunks`), with the same direction v at every point.

The exact column is differentiated once and evaluated at every point, in one SymPy job started before
TensorFlow is imported. jvp's tape, fd and complex-step columns are computed point by point by the one-point
code (:func:`gradcli.compute.jvp.numeric_jvp`); hvp's a chunk of points at a time
(:mod:`gradcli.compute.hvp_batch`, whose chunk of one is the one-point command), so that a record holds
exactly what the one-point command shows. A run takes at most :data:`MAX_POINTS` points (jvp 5,000, hvp
10,000) (refused up front, before any work: never an hour of it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from gradcli.errors import UsageError

# The most points a run takes, so that a run at the limit takes a minute or two on a loaded 2-core machine:
# jvp's eager TensorFlow calls cost ~20 ms a point with every method; hvp's chunks ~0.7 ms a point, and its
# exact column ~2 ms (1,000 points in 2.5 s).
MAX_POINTS = {"jvp": 5_000, "hvp": 10_000}
# Warnings printed on stderr at most (every record keeps its own).
MAX_WARNINGS = 10


@dataclass
class ManyPoints:
    """A run's output: the header, one record per point, the summary and the diagnostics."""

    header: dict
    records: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    summary_text: str = ""
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: bool = False


@dataclass
class _Wanted:
    """What :func:`point_chunks` reads from a computation: its variables, dtype and notes."""

    variables: list[str]
    dtype: str
    notes: list[str]

    def chunk_size(self, batch_size: int) -> int:
        return batch_size

    def at_one_point(self, point) -> None:
        """The --at point alone: its typed values are the exact ones already (read_points takes them)."""


def read_points(command: str, variables: list[str], dtype: str, *, points, grid, at, notes: list[str]):
    """[(values, exact values, fields, line)] for every point, at most MAX_POINTS (exit 2 past it): the file's
    or grid's numbers taken exactly as float64, the ``--at`` ones as typed."""
    from gradcli.compute.batch.points import point_chunks
    from gradcli.expression import Num
    from gradcli.expression.points import parse_point

    fixed = parse_point(at, required=points is None and grid is None)
    chunks = point_chunks(_Wanted(variables, dtype, notes), points=points, grid=grid, at=at, batch_size=1024)
    out = []
    for chunk in chunks:
        for k in range(len(chunk)):
            if len(out) == MAX_POINTS[command]:
                raise UsageError(f"{command} takes at most {MAX_POINTS[command]:,} points at a time; "
                                 f"split the input, or use grad for gradients at more points")
            values = {v: float(chunk.values[v][k]) for v in variables}
            exact = {v: fixed.exact[v] if v in fixed.exact else Num(Fraction(x), repr(x)) for v, x in values.items()}
            out.append((values, exact, chunk.fields[k], chunk.lines[k]))
    return out


def parse_direction_over(along, variables: list[str]):
    """``--along`` over the expression's variables: ({name: float64}, {name: exact tree}); not named: 0."""
    from gradcli.expression import Num
    from gradcli.expression.points import parse_point

    if not along:
        raise UsageError("--along is required: the direction v, e.g. --along x1=1,x2=0")
    direction = parse_point(along, option="--along")
    unknown = [k for k in direction.names if k not in variables]
    if unknown:
        raise UsageError(f"--along names {', '.join(unknown)}, which the expression does not use")
    zero = Num(Fraction(0), "0")
    return ({k: float(direction.values.get(k, 0.0)) for k in variables},
            {k: direction.exact.get(k, zero) for k in variables})


def _point_text(values: dict[str, float]) -> str:
    return ",".join(f"{k}={v!r}" for k, v in values.items())


def _exact_job(fn, args, seconds: float):
    from gradcli.methods.worker import BoundedJob

    return BoundedJob(fn, args, seconds, parallel=True)


def _exact_result(job, notes: list[str], column: str):
    from gradcli.methods.worker import SymbolicTimeout

    if job is None:
        return None
    try:
        return job.result()
    except SymbolicTimeout as exc:
        notes.append(f"{column} column left out: {exc} (raise --symbolic-timeout to wait longer)")
        return None


def _finish(run: ManyPoints, reports, rows, errors: dict[str, list[float]]) -> ManyPoints:
    warnings: list[str] = []
    notes: list[str] = []
    undefined = 0
    for report, (_, _, fields, line) in zip(reports, rows):
        warnings.extend(report.warnings)
        notes.extend(n for n in report.notes if n not in notes and n not in run.notes)
        undefined += report.failed
    run.failed = undefined > 0
    run.warnings = warnings[:MAX_WARNINGS]
    if len(warnings) > MAX_WARNINGS:
        run.notes.append(f"{len(warnings) - MAX_WARNINGS} more warnings: each record has its own")
    run.notes.extend(notes)
    largest = {m: (max(v) if v else None) for m, v in errors.items()}
    run.summary = {"points": len(rows), "undefined": undefined, "largest_error": largest}
    shown = ", ".join(f"{m} {_short(e)}" for m, e in largest.items())
    run.summary_text = f"{len(rows)} point{'s' if len(rows) != 1 else ''} done, {undefined} undefined" + (
        f"; largest error against exact: {shown}" if largest else "")
    return run


def _short(e: float | None) -> str:
    from gradcli.render.common import error

    return error(e)


def _base(report, fields, line) -> dict:
    return {"point": report.point, "line": line, "fields": fields}


def jvp_many(expressions, *, points, grid, at, along, dtype: str = "float64", methods=None,
             symbolic_time_limit: float = 10.0) -> ManyPoints:
    """J·v at every point (see the module)."""
    from gradcli.compute.jvp import JVP_METHODS, exact_jvp_many, judge_jvp, numeric_jvp
    from gradcli.compute.request import check_dtype, parse_expressions, parse_methods
    from gradcli.results import clean

    exprs = parse_expressions(expressions)
    dtype = check_dtype(dtype)
    chosen = parse_methods(methods or ",".join(JVP_METHODS), allowed=JVP_METHODS)
    variables = list(dict.fromkeys(v for e in exprs for v in e.variables))
    direction, direction_exact = parse_direction_over(along, variables)
    run = ManyPoints({"command": "jvp", "expressions": [e.text for e in exprs], "variables": variables,
                      "along": direction, "dtype": dtype, "methods": chosen})
    rows = read_points(run.header['command'], variables, dtype, points=points, grid=grid, at=at, notes=run.notes)
    trees = [e.tree for e in exprs]
    job = None
    if "symbolic" in chosen and rows:  # before anything imports TensorFlow (a forked worker)
        job = _exact_job(exact_jvp_many, (trees, [r[1] for r in rows], direction_exact), symbolic_time_limit)
    reports = [numeric_jvp(run.header["expressions"], trees, values, direction, dtype, chosen)
               for values, *_ in rows]
    exact = _exact_result(job, run.notes, "symbolic")
    if "symbolic" in chosen and exact is None and rows:
        run.header["methods"] = [m for m in chosen if m != "symbolic"]
    errors: dict[str, list[float]] = {m: [] for m in run.header["methods"] if m != "symbolic"} \
        if "symbolic" in run.header["methods"] else {}
    for k, (report, (values, _, fields, line)) in enumerate(zip(reports, rows)):
        report.methods = list(run.header["methods"])
        judge_jvp(report, None if exact is None else exact[k], _point_text(values))
        for r in report.rows:
            for m, e in r.error.items():
                if e is not None and m in errors:
                    errors[m].append(e)
        run.records.append(clean({
            **_base(report, fields, line),
            "results": [{"expression": r.expression, "value": r.value, "jvp": r.jvp, "error": r.error,
                         "error_estimate": r.estimate} for r in report.rows],
            "fd_step": report.fd_step, "complex_step": report.complex_step,
            "status": "undefined" if report.failed else "ok", "warnings": report.warnings}))
    return _finish(run, reports, rows, errors)


def hvp_many(expression, *, points, grid, at, along, dtype: str = "float64", methods=None,
             symbolic_time_limit: float = 10.0) -> ManyPoints:
    """H·v at every point (see the module)."""
    from gradcli.compute.hvp import exact_hvp_many, judge_hvp, parse_hvp_methods
    from gradcli.compute.request import check_dtype
    from gradcli.expression import parse
    from gradcli.results import clean

    expr = parse(expression)
    dtype = check_dtype(dtype)
    chosen = parse_hvp_methods(methods)
    variables = list(expr.variables)
    if not variables:
        raise UsageError(f"{expr.text} has no variable: its Hessian is empty")
    direction, direction_exact = parse_direction_over(along, variables)
    run = ManyPoints({"command": "hvp", "expression": expr.text, "variables": variables, "along": direction,
                      "dtype": dtype, "methods": chosen})
    rows = read_points(run.header['command'], variables, dtype, points=points, grid=grid, at=at, notes=run.notes)
    job = None
    if "exact" in chosen and rows:  # before anything imports TensorFlow (a forked worker)
        job = _exact_job(exact_hvp_many, (expr.tree, [r[1] for r in rows], variables, direction_exact),
                         symbolic_time_limit)
    reports = []
    if rows:
        from gradcli.compute.hvp_batch import chunk_size, numeric_hvps
        from gradcli.methods.tape_vectorise import vectorised_function

        f = vectorised_function(expr.tree, variables, dtype)  # built once, called on every chunk
        size = chunk_size(len(variables))
        for start in range(0, len(rows), size):
            chunk = [values for values, *_ in rows[start:start + size]]
            reports.extend(numeric_hvps(expr.text, expr.tree, chunk, variables, direction, dtype, chosen, f))
    exact = _exact_result(job, run.notes, "exact")
    if "exact" in chosen and exact is None and rows:
        run.header["methods"] = [m for m in chosen if m != "exact"]
    errors: dict[str, list[float]] = {m: [] for m in run.header["methods"] if m != "exact"} \
        if "exact" in run.header["methods"] else {}
    for k, (report, (values, _, fields, line)) in enumerate(zip(reports, rows)):
        report.methods = list(run.header["methods"])
        judge_hvp(report, None if exact is None else exact[k], _point_text(values))
        for m, e in report.error.items():
            if e is not None and m in errors:
                errors[m].append(e)
        run.records.append(clean({
            **_base(report, fields, line), "value": report.value, "hvp": report.hvp, "max_error": report.error,
            "fd_error_estimate": report.fd_estimate, "fd_step": report.fd_step, "seconds": report.seconds,
            "status": "undefined" if report.failed else "ok", "warnings": report.warnings}))
    return _finish(run, reports, rows, errors)
