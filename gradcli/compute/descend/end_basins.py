"""Basins from the end points: where many starts converged, grouped, when SymPy gave no stationary points.

SymPy often cannot solve grad f = 0 within ``--stationary-timeout`` (Himmelblau's takes ~9 s), and some
expressions have no closed-form solution at all. The starts still tell where f's stationary points are:
every converged start ended at one. So the converged end points are grouped as they arrive, batch by
batch: an end point within ``STATIONARY_TOLERANCE`` x max(1, |p|) of a basin's representative p (its
first end point) is in that basin, otherwise it founds a new one. Each new basin is classified once, by
the tape Hessian at its representative (minimum, maximum, saddle or degenerate from the eigenvalues, as
for SymPy's points), before any record naming it is written: records are streamed, so a basin's kind
cannot wait for the end.

Grouping is greedy and in input order (two stationary points closer than the tolerance share a basin).
Its cost is bounded: matching is one matrix product against the representatives, in blocks of at most
``MATCH_ELEMENTS`` distances, and at most ``MAX_BASINS`` basins are made; past that, a converged start that
is in none of them gets no basin (a note says how many).

No typer or rich here; NumPy and TensorFlow (the Hessian) are imported when the first end points come.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradcli.compute.analysis import analyse_hessian
from gradcli.compute.descend.stationary import STATIONARY_TOLERANCE

# Distinct basins kept at most: beyond a few thousand the starts are not finding a handful of stationary
# points (a plateau, a flat valley) and a per-basin table would say nothing.
MAX_BASINS = 2000
# End-point-to-representative distances one block may hold (memory: 8 bytes each).
MATCH_ELEMENTS = 4_000_000


@dataclass
class Basin:
    """Where some converged starts ended: the first of their end points stands for all of them."""

    index: int
    point: dict[str, float]
    value: float | None  # f at the representative
    kind: str | None = None  # minimum | maximum | saddle | degenerate | None (no finite Hessian there)

    def tag(self) -> dict[str, Any]:
        """What a record says about its basin."""
        return {"index": self.index, "kind": self.kind, "point": self.point}

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "kind": self.kind, "point": self.point, "value": self.value}


class EndPointBasins:
    """Groups converged end points into basins, across every batch and optimizer of one command."""

    def __init__(self, tree, names: list[str], *, max_basins: int = MAX_BASINS):
        self.tree = tree
        self.names = list(names)
        self.max_basins = max_basins
        self.basins: list[Basin] = []
        self.ungrouped = 0  # converged starts in no basin, once MAX_BASINS were made
        self._tags: list[dict] = []
        self._points: list[list[float]] = []
        self._reps = None  # self._points as arrays (see _representatives), rebuilt when basins were added

    def assign(self, records: list[dict]) -> None:
        """Set ``basin`` (a :meth:`Basin.tag`, or None) on every converged record of a batch."""
        ended = [r for r in records if r["status"] == "converged"]
        if not ended:
            return
        import numpy as np

        ends = np.array([[r["final"][v] for v in self.names] for r in ended], dtype=np.float64)
        index = self._match(ends)
        new = self._found(ends, [r["value"] for r in ended], index)
        self._classify(new)
        for record, b in zip(ended, index.tolist()):
            record["basin"] = self._tags[b] if b >= 0 else None

    def notes(self) -> list[str]:
        if not self.basins:
            return []
        out = [f"the basins are the converged end points grouped (within {STATIONARY_TOLERANCE:g} x max(1, |p|) "
               "of a basin's first end point p), not SymPy's stationary points; each is classified by the tape "
               "Hessian there"]
        if self.ungrouped:
            out.append(f"more than {self.max_basins} distinct end points: grouping stopped at {self.max_basins} "
                       f"basins, and {self.ungrouped} converged start(s) in none of them are counted as elsewhere")
        return out

    def _representatives(self):
        """([B, n] representatives, [B] their squared norms, [B] their squared tolerances)."""
        import numpy as np

        if self._reps is None or len(self._reps[0]) != len(self._points):
            reps = np.array(self._points, dtype=np.float64).reshape(len(self._points), len(self.names))
            squares = np.einsum("ij,ij->i", reps, reps)
            self._reps = (reps, squares, (STATIONARY_TOLERANCE * np.maximum(1.0, np.sqrt(squares))) ** 2)
        return self._reps

    def _match(self, ends):
        """[M]: the basin each end point is in (the nearest representative within its tolerance), else -1."""
        import numpy as np

        index = np.full(len(ends), -1, np.int64)
        if not self._points:
            return index
        reps, rep_squares, radii_squared = self._representatives()
        block = max(1, MATCH_ELEMENTS // len(reps))
        for lo in range(0, len(ends), block):
            part = ends[lo:lo + block]
            # |e - r|^2 as |e|^2 + |r|^2 - 2 e.r: one matrix product, not an [m, B, n] array. Its rounding
            # (~1e-16 |e|^2) is far below the squared tolerance (1e-6 max(1, |r|^2)).
            dist = np.einsum("ij,ij->i", part, part)[:, None] + rep_squares[None, :] - 2.0 * (part @ reps.T)
            dist[dist > radii_squared] = np.inf
            best = dist.argmin(axis=1)
            hit = np.isfinite(dist[np.arange(len(part)), best])
            index[lo:lo + block] = np.where(hit, best, -1)
        return index

    def _found(self, ends, values: list, index) -> list[Basin]:
        """New basins for the end points no basin took, in order (each takes the later ones near it)."""
        import numpy as np

        new: list[Basin] = []
        pending = np.flatnonzero(index < 0)
        while pending.size:
            if len(self.basins) >= self.max_basins:
                self.ungrouped += int(pending.size)
                break
            first, rest = pending[0], pending[1:]
            basin = Basin(len(self.basins), dict(zip(self.names, ends[first].tolist())), values[first])
            self.basins.append(basin)
            self._points.append(ends[first].tolist())
            new.append(basin)
            radius = STATIONARY_TOLERANCE * max(1.0, float(np.linalg.norm(ends[first])))
            near = np.linalg.norm(ends[rest] - ends[first], axis=1) <= radius
            index[first] = basin.index
            index[rest[near]] = basin.index
            pending = rest[~near]
        return new

    def _classify(self, new: list[Basin]) -> None:
        """Each new basin's kind, from the tape Hessian at its representative: one tape call per batch
        (gradcli.compute.descend.advice.curvatures makes the same call for the end points)."""
        if not new:
            return
        import numpy as np

        from gradcli.methods.tape import tape_hessians

        points = {v: np.array([b.point[v] for b in new], dtype=np.float64) for v in self.names}
        try:
            matrices = tape_hessians(self.tree, points, self.names).matrices
        except Exception:  # a Hessian TF cannot compute leaves the kinds unknown, not the results lost
            matrices = [None] * len(new)
        for basin, h in zip(new, matrices):
            if h is not None and np.all(np.isfinite(h)):
                # The start converged there (|grad| < --tol): the eigenvalues decide, as for SymPy's points.
                basin.kind = analyse_hessian(h.tolist(), [0.0] * len(self.names)).critical_point
            self._tags.append(basin.tag())
