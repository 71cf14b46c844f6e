"""The points of a propagation: the ``--at`` point with its standard deviations, or one per row of
``--points`` (a column ``x_sd`` or ``x_unc`` gives x's standard deviation on that row; ``--at`` fixes the
variables the rows do not give, with theirs), each with its covariance matrix and factor."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gradcli.errors import UsageError, number_text
from gradcli.uncertainty.inputs import Correlations, covariance_matrix, factor

SD_SUFFIXES = ("_sd", "_unc")


@dataclass
class InputPoint:
    """One point's inputs: names (in order), means, standard deviations, Σ and L; ``at_text``: the --at
    point as typed (values only: what the exact methods read), ``line``/``fields``: a --points row's."""

    names: list[str]
    means: list[float]
    sds: list[float]
    covariance: list[list[float]]
    lower: object
    at_text: str | None = None
    line: int | None = None
    fields: dict = field(default_factory=dict)


def one_point(at: list[str] | None, variables: list[str], correlations: Correlations) -> InputPoint:
    from gradcli.expression.points import check_covers, check_point_fits, parse_point

    point = parse_point(at, uncertain=True, required=bool(variables))
    check_covers(point, variables)
    check_point_fits(point, "float64")
    names = list(point.names)
    cov = covariance_matrix(names, point.sd, correlations)
    sds = [math.sqrt(cov[i][i]) for i in range(len(names))]
    return InputPoint(names, [point.values[n] for n in names], sds, cov, factor(cov), at_text=point.text() or None)


def many_points(points, at: list[str] | None, variables: list[str], correlations: Correlations,
                limit: int) -> list[InputPoint]:
    """A propagation per row of ``points`` (a path, or gradcli.library.requests.PointColumns)."""
    from gradcli.expression.points import parse_point

    fixed = parse_point(at, uncertain=True, required=False)
    source = _source(points, variables, fixed)
    if source.total is not None and source.total > limit:
        raise UsageError(f"--points gives {source.total:,} rows; propagate computes at most {limit:,} (each row "
                         f"is its own Monte Carlo run)")
    sd_columns = _sd_columns(source.field_names, variables, fixed)
    out = []
    for chunk in source.chunks():
        for i in range(len(chunk)):
            means = {n: float(chunk.values[n][i]) for n in source.variable_names}
            fields = chunk.fields[i]
            line = chunk.lines[i]
            sds = dict(fixed.sd)
            for name, column in sd_columns.items():
                sds[name] = _cell_sd(fields.get(column, ""), column, line, points)
            names = list(source.variable_names)
            cov = covariance_matrix(names, sds, correlations, option="--points")
            out.append(InputPoint(names, [means[n] for n in names], [math.sqrt(cov[j][j]) for j in range(len(names))],
                                  cov, factor(cov), line=line,
                                  fields={k: v for k, v in fields.items() if k not in sd_columns.values()}))
            if len(out) > limit:
                raise UsageError(f"--points gives more than {limit:,} rows; propagate computes at most {limit:,}")
    return out


def _source(points, variables: list[str], fixed):
    from gradcli.expression.points import Point

    values_only = Point(dict(fixed.values), dict(fixed.exact))
    if isinstance(points, str):
        from gradcli.expression.sources import open_points

        return open_points(points, variables=variables, fixed=values_only, chunk_size=4096)
    return points.source(variables=variables, chunk_size=4096, fixed=values_only)


def _sd_columns(field_names: list[str], variables: list[str], fixed) -> dict[str, str]:
    """{variable: its sd column} for the columns the file has."""
    out = {}
    for name in variables:
        found = [name + s for s in SD_SUFFIXES if name + s in field_names]
        if len(found) > 1:
            raise UsageError(f"--points: both {found[0]} and {found[1]} give {name}'s standard deviation; keep one")
        if found:
            if name in fixed.sd:
                raise UsageError(f"--points: {found[0]} and --at both give {name}'s standard deviation; give it in "
                                 f"one place")
            out[name] = found[0]
    return out


def _cell_sd(text: str, column: str, line: int | None, points) -> float:
    label = points if isinstance(points, str) else "columns"
    where = f"--points {label}:{line}" if line is not None else f"--points {label}"
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{where}: {column}: '{text}' is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{where}: {column} must be a finite number >= 0, not {number_text(value)}")
    return value
