"""A record per start: each optimizer's row of the compiled loop, judged (why it stopped, the Hessian's advice
and the kind of its end point), where it ended (SymPy's nearest stationary point, the one it reached, or a
basin of end points), and the start's warnings. One start (``--from``) and many (``--points``/``--grid``)
get the same record."""

from __future__ import annotations

from typing import Any

from gradcli.compute.descend.advice import advise, classify_end, curvatures
from gradcli.compute.descend.end_basins import EndPointBasins
from gradcli.compute.descend.loop import BatchRows
from gradcli.compute.descend.options import DescentPlan
from gradcli.compute.descend.results import FAILED_STATUSES, DescentRun, StationaryPoint
from gradcli.compute.descend.rules import STATUS_NAME
from gradcli.compute.descend.stationary import nearest, within_tolerance
from gradcli.compute.descend.verdicts import explain_stop
from gradcli.results import clean, shortest


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
        """A record per start of ``chunk`` (a gradcli.expression.sources PointChunk), in its order."""
        columns = [chunk.values[v].tolist() for v in self.names]
        starts = [dict(zip(self.names, coords)) for coords in zip(*columns)]
        runs = [[self._run(i, start, name, rows) for name, rows in results.items()] for i, start in enumerate(starts)]
        self._judge([run for per_start in runs for run in per_start], starts, runs)
        out = []
        for i, (start, per_start) in enumerate(zip(starts, runs)):
            record: dict[str, Any] = {"start": start}
            if chunk.lines[i] is not None:
                record["line"] = chunk.lines[i]
            if chunk.fields and chunk.fields[i]:
                record["fields"] = chunk.fields[i]
            record["runs"] = [run.to_dict() for run in per_start]
            record["warnings"] = self._warnings(per_start)
            out.append(record)
        if self.basins is not None:
            self.basins.assign([run for r in out for run in r["runs"]])
        return [clean(r) for r in out]

    def _run(self, i: int, start: dict[str, float], name: str, rows: BatchRows) -> DescentRun:
        plan, dtype = self.plan, self.plan.dtype
        code, k = int(rows.codes[i]), int(rows.steps[i])
        run = DescentRun(
            optimizer=name, learning_rate=plan.rate(name), status=STATUS_NAME[code], steps=k,
            final={v: shortest(float(rows.final[i, j]), dtype) for j, v in enumerate(self.names)},
            value=shortest(float(rows.value[i]), dtype), gradient_norm=shortest(float(rows.gnorm[i]), dtype),
            message="", compiled=rows.compiled, seconds=rows.seconds)
        explain_stop(run, code, k, plan.tol, dtype, plan.maximize, rows.window[:, i, :], start, self.names)
        near = nearest(self.stationary or [], run.final)
        run.nearest_stationary = near
        if near is not None and run.status not in FAILED_STATUSES and within_tolerance(near.distance, near.point):
            run.reached = near
        return run

    def _judge(self, every_run: list[DescentRun], starts: list[dict], runs: list[list[DescentRun]]) -> None:
        """The Hessian's word, all of a batch's points in one tape call: advice for a run that diverged (at
        its start) or oscillates (at its end point), and the kind of a converged run's end point."""
        plan = self.plan
        wanted: list[tuple[DescentRun, str, dict]] = []
        for start, per_start in zip(starts, runs):
            for run in per_start:
                if run.status == "diverged" and run.steps > 0:
                    wanted.append((run, "start", start))
                elif run.status == "oscillating":
                    wanted.append((run, "end point", run.final))
                elif run.status == "converged":
                    wanted.append((run, "end", run.final))
        found = curvatures(plan.expression.tree, self.names, [at for _, _, at in wanted])
        for (run, where, _), curvature in zip(wanted, found):
            if where == "end":
                classify_end(run, curvature, plan.dtype)
            else:
                advise(run, curvature, where, plan.momentum, plan.maximize)

    def _warnings(self, runs: list[DescentRun]) -> list[str]:
        """What a person should hear about this start's runs (each record carries its own)."""
        plan = self.plan
        out = []
        for run in runs:
            wrong = {"maximum", "saddle"} if not plan.maximize else {"minimum", "saddle"}
            if run.status == "converged" and run.end_kind in wrong:
                out.append(f"{run.optimizer}: stopped where the gradient vanishes, but the Hessian says it is a "
                           f"{run.end_kind}, not a {'maximum' if plan.maximize else 'minimum'} (start elsewhere)")
            if run.status in FAILED_STATUSES or run.status == "oscillating" or (
                    run.status == "max_steps" and plan.tol > 0):
                # (with --tol 0 every step was asked for: reaching --steps is the plan, not a problem)
                out.append(f"{run.optimizer}: {run.message}")
        return out


def stationary_key(point: dict[str, float]) -> str:
    """A stationary point's coordinates as a key (every digit: two points never share one)."""
    return ", ".join(f"{k}={v!r}" for k, v in point.items())


def basin_key(run: dict) -> str:
    """Where a run ended, as a key: the stationary point's coordinates, ``basin <index>``, ``elsewhere`` or
    ``diverged``."""
    if run["status"] in FAILED_STATUSES:
        return "diverged"
    s = run.get("stationary_point")
    if s is not None:
        return stationary_key(s["point"])
    b = run.get("basin")
    if b is not None:
        return f"basin {b['index']}"
    return "elsewhere"
