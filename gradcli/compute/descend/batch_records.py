"""A record per start and optimizer: what its row of the batched loop says, judged as one run is judged,
and where the start ended (one of SymPy's stationary points, or a basin of end points)."""

from __future__ import annotations

from typing import Any

from gradcli.compute.descend.batch_loop import BatchRows
from gradcli.compute.descend.end_basins import EndPointBasins
from gradcli.compute.descend.options import DescentPlan
from gradcli.compute.descend.results import DescentRun, StationaryPoint
from gradcli.compute.descend.rules import STATUS_NAME
from gradcli.compute.descend.stationary import stationary_reached
from gradcli.compute.descend.verdicts import _explain_stop
from gradcli.results import clean, shortest

# Statuses that make the command exit 1, as for one start.
FAILED_STATUSES = ("diverged", "unbounded")


class StartRecords:
    """Builds the records of a batch. ``stationary``: SymPy's points (None or empty: none to match);
    ``basins``: the end-point grouping, used when SymPy gave none."""

    def __init__(self, plan: DescentPlan, names: list[str], stationary: list[StationaryPoint] | None,
                 basins: EndPointBasins | None):
        self.plan = plan
        self.names = names
        self.stationary = stationary
        self.basins = basins

    def for_chunk(self, chunk, results: dict[str, BatchRows]) -> list[dict]:
        """A record per start and optimizer, start by start (each start's optimizers together)."""
        out = []
        columns = [chunk.values[v].tolist() for v in self.names]
        for i, coords in enumerate(zip(*columns)):
            start = dict(zip(self.names, coords))
            for name, rows in results.items():
                out.append(self._record(chunk, i, start, name, rows))
        if self.basins is not None:
            self.basins.assign(out)
        return out

    def _record(self, chunk, i: int, start: dict[str, float], name: str, rows: BatchRows) -> dict:
        plan, dtype = self.plan, self.plan.dtype
        code, k = int(rows.codes[i]), int(rows.steps[i])
        run = DescentRun(
            optimizer=name, learning_rate=plan.rate(name), status=STATUS_NAME[code], steps=k,
            final={v: shortest(float(rows.final[i, j]), dtype) for j, v in enumerate(self.names)},
            value=shortest(float(rows.value[i]), dtype), gradient_norm=shortest(float(rows.gnorm[i]), dtype),
            message="", compiled=rows.compiled)
        _explain_stop(run, code, k, plan.tol, dtype, plan.maximize, rows.window[:, i, :], start, self.names)
        record: dict[str, Any] = {"start": start}
        if chunk.lines[i] is not None:
            record["line"] = chunk.lines[i]
        if chunk.fields and chunk.fields[i]:
            record["fields"] = chunk.fields[i]
        reached = None
        if self.stationary and run.status not in FAILED_STATUSES:
            reached = stationary_reached(self.stationary, run.final)
        record.update({
            "optimizer": name, "learning_rate": run.learning_rate, "status": run.status, "steps": run.steps, "final": run.final, "value": run.value,
            "gradient_norm": run.gradient_norm,
            "stationary_point": None if reached is None else reached.to_dict(),
            "basin": None,  # set by EndPointBasins.assign, when the basins come from the end points
            "message": run.message.replace(": choose another --from", ""),
        })
        return clean(record)


def stationary_key(point: dict[str, float]) -> str:
    """A stationary point's coordinates as a key (every digit: two points never share one)."""
    return ", ".join(f"{k}={v!r}" for k, v in point.items())


def basin_key(record: dict) -> str:
    """Where a start ended, as a key: the stationary point's coordinates, ``basin <index>``, ``elsewhere``
    or ``diverged``."""
    if record["status"] in FAILED_STATUSES:
        return "diverged"
    s = record.get("stationary_point")
    if s is not None:
        return stationary_key(s["point"])
    b = record.get("basin")
    if b is not None:
        return f"basin {b['index']}"
    return "elsewhere"
