"""The points a batch core computes at, from whichever option gives them: ``--points``, ``--grid``, or the
``--at`` point as a batch of one. The command line and the Python API read them here, so that both refuse
and note alike, a request too large to finish in reasonable time too (gradcli.compute.work)."""

from __future__ import annotations

from typing import Iterable, Iterator

from gradcli.errors import UsageError


def point_chunks(computation, *, points: str | None, grid: str | None, at, batch_size: int) -> PointChunks:
    """The chunks for ``computation`` (a gradcli.compute.batch core): its variables from the points, the
    others fixed by ``at``. A file with no rows yields nothing and leaves a note on the computation.

    A request whose estimated work (:mod:`gradcli.compute.work`) is past the limit is refused here, before
    anything is computed: the points of --grid, a --points file and --at are counted up front; a stream
    (stdin, a pipe) is refused once the points it has given reach the limit, before the chunk that would
    pass it is computed."""
    from gradcli.compute.work import estimate

    chunks, total = _chunks_and_total(computation, points=points, grid=grid, at=at, batch_size=batch_size)
    work = estimate(computation)  # after at_one_point: one point's variables are its own
    if work is not None and total is not None:
        work.check(total)
    return PointChunks(chunks, total, work)


class PointChunks:
    """A request's chunks, with what is known before the first: ``total`` points (None for a stream, whose
    length is known only once read) and ``work``, the request's estimate (None for a reader of points that
    computes nothing itself)."""

    def __init__(self, chunks: Iterable, total: int | None, work):
        self._chunks = chunks
        self.total = total
        self.work = work

    @property
    def seconds(self) -> float | None:
        """The estimated seconds of the whole request on the bench machine (None: not known up front)."""
        if self.work is None or self.total is None:
            return None
        return self.work.seconds(self.total)

    def __iter__(self) -> Iterator:
        if self.work is None or self.total is not None:
            yield from self._chunks
            return
        read = 0
        for chunk in self._chunks:
            read += len(chunk)
            self.work.check(read, so_far=True)
            yield chunk


def _chunks_and_total(computation, *, points: str | None, grid: str | None, at, batch_size: int):
    from gradcli.expression.points import parse_point
    from gradcli.expression.sources import grid_points, open_points

    if points is not None and grid is not None:
        raise UsageError("give --points or --grid, not both")
    fixed = parse_point(at, required=points is None and grid is None)
    size = computation.chunk_size(batch_size)  # a core may take fewer points at a time (memory)
    options = {"variables": computation.variables, "fixed": fixed, "chunk_size": size, "dtype": computation.dtype}
    if points is not None:
        source = open_points(points, **options)
        return _noting_no_points(source, computation.notes), source.total
    if grid is not None:
        source = grid_points(grid, **options)
        return source.chunks(), source.total
    from gradcli.expression.points import check_covers, check_point_fits

    check_point_fits(fixed, computation.dtype)
    computation.at_one_point(fixed)  # first: its --wrt words name the option (resolve_wrt, derivative_variable)
    check_covers(fixed, computation.variables)  # with its hints (sinx: did you mean sin(x)?)
    return [one_point_chunk(fixed, computation.variables)], 1


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
