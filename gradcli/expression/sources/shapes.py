"""The shapes every point source shares: :class:`PointChunk`, :class:`PointSource`, a validated ``Row``, and
:class:`Needs` (which variables the input must give and which ``--at`` fixes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


@dataclass
class PointChunk:
    """At most ``chunk_size`` points."""

    #: float64 arrays of shape [P], one per needed variable, in ``variables`` order
    values: dict[str, "np.ndarray"]
    #: per point, the pass-through columns (not needed variables) in file order; ``{}`` for a grid
    fields: list[dict[str, object]]
    #: per point, the 1-based physical line of the input it came from; None for grid points
    lines: list[int | None]

    def __len__(self) -> int:
        return len(self.lines)


class PointSource:
    """Where the points come from. ``chunks()`` yields :class:`PointChunk` s in input order."""

    #: how errors and reports name the input: the path, ``<stdin>`` or ``--grid``
    label: str
    #: pass-through column names (CSV: header order; JSON Lines: order of first appearance, so far)
    field_names: list[str]
    #: the needed variables, in the order the caller gave them
    variable_names: list[str]
    #: the number of points when known up front (grid, validated file); None for a stream
    total: int | None
    #: "csv", "jsonl" or "grid"
    format: str

    def chunks(self) -> Iterator[PointChunk]:  # pragma: no cover - every source overrides it
        raise NotImplementedError


#: what a reader yields for one point: (line, values of the needed variables the input gives, fields)
Row = tuple[int, list[float], dict[str, object]]


class Needs:
    """The needed variables, split into those the input must give and those --at fixes.

    ``fixed_option``: how errors name the option that fixes values (None: the command has no such option,
    so errors do not suggest one, and no values may be fixed). ``dtype``: what the points are computed in;
    a value it cannot hold is refused as ``--at`` refuses it (see :meth:`misfit`)."""

    def __init__(self, variables: list[str], fixed, fixed_option: str | None = "--at", dtype: str = "float64"):
        self.names = list(dict.fromkeys(variables))
        self.fixed_option = fixed_option
        self.dtype = dtype
        given = _fixed_values(fixed)
        if given and fixed_option is None:
            raise ValueError("fixed values need the option that gives them (fixed_option)")
        self.fixed = {v: float(given[v]) for v in self.names if v in given}
        self.from_input = [v for v in self.names if v not in self.fixed]
        self.needed = frozenset(self.names)
        for name, value in self.fixed.items():
            misfit = self.misfit(name, value)
            if misfit:
                from gradcli.errors import UsageError

                raise UsageError(f"{fixed_option}: {misfit}")

    def misfit(self, name: str, value: float) -> str | None:
        """``x=1e+39 does not fit in float32 (...)`` when the dtype cannot hold ``value``, else None."""
        if self.dtype == "float64":  # every parsed value is a finite float64 already
            return None
        from gradcli.errors import number_text
        from gradcli.expression.points import dtype_misfit

        why = dtype_misfit(value, self.dtype)
        return f"{name}={number_text(value)} {why}" if why else None


def _fixed_values(fixed) -> Mapping[str, float]:
    if fixed is None:
        return {}
    if isinstance(fixed, Mapping):
        return fixed
    return fixed.values
