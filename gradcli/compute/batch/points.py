"""The points a batch core computes at, from whichever option gives them: ``--points``, ``--grid``, or the
``--at`` point as a batch of one. The command line and the Python API read them here, so that both refuse
and note alike."""

from __future__ import annotations

from typing import Iterable, Iterator

from gradcli.errors import UsageError


def point_chunks(computation, *, points: str | None, grid: str | None, at, batch_size: int) -> Iterable:
    """The chunks for ``computation`` (a gradcli.compute.batch core): its variables from the points, the
    others fixed by ``at``. A file with no rows yields nothing and leaves a note on the computation."""
    from gradcli.expression.points import parse_point
    from gradcli.expression.sources import grid_points, open_points

    if points is not None and grid is not None:
        raise UsageError("give --points or --grid, not both")
    fixed = parse_point(at, required=points is None and grid is None)
    size = computation.chunk_size(batch_size)  # a core may take fewer points at a time (memory)
    options = {"variables": computation.variables, "fixed": fixed, "chunk_size": size, "dtype": computation.dtype}
    if points is not None:
        return _noting_no_points(open_points(points, **options), computation.notes)
    if grid is not None:
        return grid_points(grid, **options).chunks()
    from gradcli.expression.points import check_covers, check_point_fits

    check_point_fits(fixed, computation.dtype)
    computation.at_one_point(fixed)  # first: its --wrt words name the option (resolve_wrt, derivative_variable)
    check_covers(fixed, computation.variables)  # with its hints (sinx: did you mean sin(x)?)
    return [one_point_chunk(fixed, computation.variables)]


def start_chunks(*, points: str | None, grid: str | None, names: list[str], batch_size: int, dtype: str):
    """descend's starts: every variable from the points (descend has no --at to fix some of them)."""
    from gradcli.expression.sources import grid_points, open_points

    if points is not None and grid is not None:
        raise UsageError("give --points or --grid, not both")
    options = {"variables": names, "chunk_size": batch_size, "fixed_option": None, "dtype": dtype}
    return (open_points(points, **options) if points is not None else grid_points(grid, **options)).chunks()


def one_point_chunk(fixed, variables: list[str]):
    """The --at point as a chunk of one point."""
    import numpy as np

    from gradcli.expression.sources.shapes import PointChunk

    missing = [v for v in variables if v not in fixed.values]
    if missing:
        raise UsageError(f"--at has no value for {', '.join(missing)} (add {missing[0]}=...)")
    return PointChunk({v: np.array([fixed.values[v]], dtype=np.float64) for v in variables}, [{}], [None])


def _noting_no_points(source, notes: list[str]) -> Iterator:
    """``source``'s chunks; when it had none (a CSV header and no rows, an empty file) a note says so. The
    result is then empty in each format's own terms (JSON: the document with an empty list; JSON Lines and
    CSV: no lines; table: the title) and the exit code 0: an empty input is not an error."""
    points = 0
    for chunk in source.chunks():
        points += len(chunk)
        yield chunk
    if points == 0:
        notes.append(f"no points were read: {source.label} has no rows")
