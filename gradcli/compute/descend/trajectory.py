"""The trajectory a run keeps (--every, a plot, a CSV trajectory), bounded whatever the number of steps.

The compiled loop records every ``every``-th step; past ``max_rows`` rows the kept steps are thinned evenly
(every 2nd, then every 4th, ... of the recorded ones), so ``--steps 1e15 --every 1`` keeps at most
``max_rows`` rows instead of growing with the run. The first and the last step are always kept.
"""

from __future__ import annotations

from gradcli.limits import TRAJECTORY_MAX_ROWS
from gradcli.compute.descend.results import HistoryRow


class Trajectory:
    def __init__(self, every: int, max_rows: int = TRAJECTORY_MAX_ROWS):
        self.every = every
        self.max_rows = max(2, max_rows)
        self.stride = 1  # of the recorded rows, every stride-th is kept
        self.rows: list[HistoryRow] = []

    @property
    def spacing(self) -> int:
        """Steps between kept rows (before the last)."""
        return self.every * self.stride

    def add(self, rows: list[HistoryRow], *, last: bool) -> None:
        """Rows the loop recorded: steps that are multiples of ``every`` and, with ``last``, the run's final
        step as the last row (kept whatever its step)."""
        final = rows[-1] if last and rows else None
        for row in rows[:-1] if final is not None else rows:
            if (row.step // self.every) % self.stride == 0:
                self.rows.append(row)
                if len(self.rows) >= self.max_rows:  # one place left for the final step
                    self._thin()
        if final is not None and (not self.rows or self.rows[-1].step != final.step):
            self.rows.append(final)

    def _thin(self) -> None:
        self.stride *= 2
        self.rows = [r for r in self.rows if (r.step // self.every) % self.stride == 0]
