"""``--grid x=-2:2:41,y=-1:3:41``: points generated chunk by chunk from the flat index range
(``numpy.unravel_index``), never held all at once."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Iterator

from gradcli.expression.sources.messages import show
from gradcli.expression.sources.numbers import ASCII_SPACE
from gradcli.expression.sources.shapes import Needs, PointChunk, PointSource
from gradcli.errors import UsageError, number_text
from gradcli.expression.points import NON_FINITE_WORDS, NotAConstant, read_constant, split_top_level

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from gradcli.expression.points import Point

#: the most points ``--grid`` may describe
MAX_GRID_POINTS = 100_000_000

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_COUNT = re.compile(r"[0-9]+\Z")


class GridSource(PointSource):
    format = "grid"

    def __init__(self, option: str, needs: Needs, axes: dict[str, "np.ndarray"], chunk_size: int):
        self.label = option
        self.field_names = []
        self.variable_names = list(needs.names)
        self._needs = needs
        self._axes = axes
        self._chunk_size = chunk_size
        total = 1
        for axis in axes.values():
            total *= len(axis)
        self.total = total

    def chunks(self) -> Iterator[PointChunk]:
        import numpy as np

        names = list(self._axes)
        shape = tuple(len(a) for a in self._axes.values())
        for start in range(0, self.total, self._chunk_size):
            stop = min(start + self._chunk_size, self.total)
            index = np.unravel_index(np.arange(start, stop, dtype=np.int64), shape)  # first varies slowest
            n = stop - start
            values = {}
            for v in self._needs.names:
                if v in self._axes:
                    values[v] = self._axes[v][index[names.index(v)]]
                else:
                    values[v] = np.full(n, self._needs.fixed[v], dtype=np.float64)
            yield PointChunk(values, [{} for _ in range(n)], [None] * n)


def _grid_bound(option: str, spec: str, name: str, which: str, text: str, offset: int) -> float:
    """One bound of a range, read as --at reads a value (a number or a constant expression)."""
    stripped = text.strip()
    if not stripped:
        raise UsageError(f"{option}: {name}: the {which} is missing", source=spec, position=offset)
    try:
        return read_constant(text)[1]
    except NotAConstant as why:
        if why.kind == "syntax":
            pos = offset if why.error.position is None else offset + why.error.position
            raise UsageError(f"{option}: {name}: {which}: {why.error.message}", source=spec, position=pos) from None
        if why.kind == "variable":
            raise UsageError(f"{option}: {name}: the {which} must be a number or constant expression, "
                             f"not one using '{why.variable}'", source=spec, position=offset) from None
        if stripped.lstrip("+-").lower() in NON_FINITE_WORDS:
            raise UsageError(f"{option}: {name}: the {which} must be a finite number, not {show(stripped)}",
                             source=spec, position=offset) from None
        raise UsageError(f"{option}: {name}: the {which} is not a finite number", source=spec,
                         position=offset) from None


def _grid_count(option: str, spec: str, name: str, text: str, offset: int) -> int:
    """The count of a range: a whole number from 1 to MAX_GRID_POINTS."""
    count_text = text.strip(ASCII_SPACE)
    if not _COUNT.match(count_text):
        shown = show(count_text) if count_text else "nothing"
        raise UsageError(f"{option}: {name}: the count must be a positive whole number, not {shown}",
                         source=spec, position=offset)
    if len(count_text.lstrip("0")) > len(str(MAX_GRID_POINTS)):
        count = MAX_GRID_POINTS + 1
    else:
        count = int(count_text)
    if count < 1:
        raise UsageError(f"{option}: {name}: the count must be at least 1", source=spec, position=offset)
    if count > MAX_GRID_POINTS:
        raise UsageError(f"{option}: {name}: a count of {show(count_text)} is more than the {MAX_GRID_POINTS:,} allowed",
                         source=spec, position=offset)
    return count


def _grid_entry(option: str, spec: str, needs: Needs, axes: dict, piece: str, offset: int) -> tuple[str, str, int]:
    """(name, range text, offset of the range in ``spec``) of one ``name=start:stop:count`` entry, the name
    checked: a variable the expression needs, not given twice, not fixed by --at."""
    example = f"{option} x=-2:2:41,y=-1:3:41"
    if not piece.strip():
        raise UsageError(f"{option}: empty entry; write it as {example}", source=spec, position=offset)
    raw_name, eq, range_text = piece.partition("=")
    name = raw_name.strip()
    name_offset = offset + len(raw_name) - len(raw_name.lstrip())
    if not eq:
        raise UsageError(f"{option}: {show(piece.strip())} is not of the form name=start:stop:count",
                         source=spec, position=name_offset)
    if not _NAME.match(name):
        raise UsageError(f"{option}: {show(name)} is not a variable name", source=spec, position=name_offset)
    if name in axes:
        raise UsageError(f"{option}: '{name}' is given twice", source=spec, position=name_offset)
    if name not in needs.needed:
        known = ", ".join(needs.names) if needs.names else "none"
        raise UsageError(f"{option}: '{name}' is not one of the variables (they are: {known})",
                         source=spec, position=name_offset)
    if name in needs.fixed:
        raise UsageError(f"{option}: '{name}' is given both by {option} and by {needs.fixed_option} (ambiguous); "
                         "give it in one place only", source=spec, position=name_offset)
    return name, range_text, offset + len(raw_name) + 1


def _grid_range(option: str, spec: str, name: str, range_text: str, range_offset: int) -> tuple[float, float, int]:
    """(start, stop, count) of ``start:stop:count``, checked; nothing is allocated yet."""
    parts = range_text.split(":")
    if len(parts) != 3:
        raise UsageError(f"{option}: {name}: expected start:stop:count, got {len(parts)} part"
                         f"{'s' if len(parts) != 1 else ''}", source=spec, position=range_offset)
    offsets = [range_offset, range_offset + len(parts[0]) + 1, range_offset + len(parts[0]) + len(parts[1]) + 2]
    start = _grid_bound(option, spec, name, "start", parts[0], offsets[0])
    stop = _grid_bound(option, spec, name, "stop", parts[1], offsets[1])
    count = _grid_count(option, spec, name, parts[2], offsets[2])
    if count == 1 and start != stop:
        raise UsageError(f"{option}: {name}: a count of 1 is the single value start, so start and stop must "
                         f"be equal (got {number_text(start)} and {number_text(stop)})", source=spec, position=offsets[2])
    return start, stop, count


def _grid_axis(option: str, spec: str, name: str, start: float, stop: float, count: int,
               range_offset: int) -> "np.ndarray":
    """The values of ``start:stop:count``: ``numpy.linspace(start, stop, count)``, all finite."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        axis = np.linspace(start, stop, count, dtype=np.float64)
    if not np.all(np.isfinite(axis)):
        raise UsageError(f"{option}: {name}: the range {number_text(start)} to {number_text(stop)} is too wide for float64",
                         source=spec, position=range_offset)
    return axis


def _check_axis_fits(option: str, spec: str, needs: Needs, name: str, axis: "np.ndarray", offset: int) -> None:
    """Every value of the axis in the dtype (the ends, and a tiny nonzero step between them)."""
    if needs.dtype == "float64":
        return
    import numpy as np

    from gradcli.expression.points import LARGEST, SMALLEST

    bad = np.flatnonzero((np.abs(axis) > LARGEST[needs.dtype])
                         | ((axis != 0) & (np.abs(axis) <= SMALLEST[needs.dtype] / 2)))
    if bad.size:
        raise UsageError(f"{option}: {needs.misfit(name, float(axis[bad[0]]))}", source=spec, position=offset)


def grid_points(spec: str, *, variables: list[str], fixed: "Point | None" = None,
                chunk_size: int = 4096, option: str = "--grid", fixed_option: str | None = "--at",
                dtype: str = "float64") -> PointSource:
    """Points of ``x=-2:2:41,y=-1:3:41``: ``numpy.linspace(start, stop, count)`` per variable, the
    cartesian product in ``itertools.product`` order (the first variable varies slowest).

    ``fixed_option``: the option that fixes the variables ``fixed`` gives, named in errors (None: the
    command has no such option, and errors do not suggest one). ``dtype``: a grid value it cannot hold is a
    usage error, as ``--at`` refuses it."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    needs = Needs(variables, fixed, fixed_option, dtype)
    if not spec.strip():
        raise UsageError(f"{option} is empty; write it as {option} x=-2:2:41,y=-1:3:41")
    # Every entry is read and the total checked from the counts before any axis is built: a refused grid
    # of many long axes would otherwise take 8 bytes per value of each first (10 axes of 1e8: 8 GB).
    ranges: dict[str, tuple[float, float, int, int]] = {}
    for offset, piece in split_top_level(spec):
        name, range_text, range_offset = _grid_entry(option, spec, needs, ranges, piece, offset)
        ranges[name] = (*_grid_range(option, spec, name, range_text, range_offset), range_offset)
    missing = [v for v in needs.from_input if v not in ranges]
    if missing:
        listed = ", ".join(missing)
        message = f"{option} has no values for {listed}: add {','.join(f'{v}=start:stop:count' for v in missing)} " \
                  f"to {option}"
        if needs.fixed_option is not None:
            message += f", or give {needs.fixed_option} {','.join(f'{v}=value' for v in missing)}"
        raise UsageError(message)
    counts = [count for _, _, count, _ in ranges.values()]
    total = math.prod(counts)  # at most 1e8 per axis and MAX_VARIABLES axes: an exact int, quickly
    if total > MAX_GRID_POINTS:
        sizes = " x ".join(str(count) for count in counts)
        shown = f" = {total:,}" if total < 10 ** 40 else ""  # past that, digits say nothing (and str() may refuse)
        raise UsageError(f"{option} has {sizes}{shown} points, more than the {MAX_GRID_POINTS:,} allowed")
    axes: dict[str, np.ndarray] = {}
    for name, (start, stop, count, range_offset) in ranges.items():
        axes[name] = _grid_axis(option, spec, name, start, stop, count, range_offset)
        _check_axis_fits(option, spec, needs, name, axes[name], range_offset)
    return GridSource(option, needs, axes, chunk_size)
