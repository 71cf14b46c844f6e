"""Counting starts: statuses and basins per optimizer, and the first example of each trouble."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gradcli.compute.batch.engine import Summary
from gradcli.compute.descend.end_basins import Basin
from gradcli.compute.descend.records import basin_key, stationary_key
from gradcli.compute.descend.results import FAILED_STATUSES, STATUSES, StationaryPoint
from gradcli.results import clean, point_text

# Basin keys that name no place.
_NOWHERE = ("elsewhere", "diverged")


@dataclass
class StartsSummary(Summary):
    """The batch engine's summary (``points``: the starts; ``with_warnings``) with descend's counts: statuses
    and basins per optimizer, the first example of each trouble."""

    optimizers: list[str] = field(default_factory=list)
    core: object = None  # the DescentCore: its SymPy points, basins and times, for the closing summary
    statuses: dict[str, Counter] = field(default_factory=dict)
    basins: dict[str, Counter] = field(default_factory=dict)
    reached: dict[str, dict] = field(default_factory=dict)  # basin key -> the stationary point
    failures: dict[str, Counter] = field(default_factory=dict)  # "at start" / "diverged" (on the way)
    examples: dict[tuple[str, str], str] = field(default_factory=dict)

    def __post_init__(self):
        for name in self.optimizers:
            self.statuses[name] = Counter()
            self.basins[name] = Counter()
            self.failures[name] = Counter()

    @property
    def starts(self) -> int:
        return self.points

    def add(self, batch) -> None:
        records = batch.records()
        self.points += len(records)
        self.with_warnings += sum(1 for record in records if record["warnings"])
        for record in records:
            for r in record["runs"]:
                self._add_run(record["start"], r)

    def _add_run(self, start: dict, r: dict) -> None:
        name = r["optimizer"]
        self.statuses[name][r["status"]] += 1
        key = basin_key(r)
        self.basins[name][key] += 1
        if r.get("stationary_point") is not None:
            self.reached.setdefault(key, r["stationary_point"])
        kind = r["status"]
        if kind in FAILED_STATUSES:
            kind = "at start" if r["steps"] == 0 else "diverged"
            self.failures[name][kind] += 1
        if (name, kind) not in self.examples:
            self.examples[(name, kind)] = point_text(start) if kind == "at start" else \
                f"from {point_text(start)}: {r['message']}"
        wrong = ("minimum", "saddle") if self.core.plan.maximize else ("maximum", "saddle")
        if r["status"] == "converged" and r.get("end_point_kind") in wrong:
            self.failures[name]["wrong kind"] += 1
            self.examples.setdefault((name, "wrong kind"), f"from {point_text(start)}: a {r['end_point_kind']}")

    @property
    def failed(self) -> bool:
        return any(c[s] for c in self.statuses.values() for s in FAILED_STATUSES)

    def basins_dict(self, stationary: list[StationaryPoint] | None, end_basins: list[Basin] | None = None) -> dict:
        """Per optimizer: how many starts ended at each stationary point (SymPy's), in each basin of end
        points (when SymPy gave none), elsewhere, or diverged."""
        out = {}
        order = [stationary_key(s.point) for s in stationary or []]
        for name in self.optimizers:
            counts = self.basins[name]
            reached = sorted((k for k in counts if k not in _NOWHERE and not k.startswith("basin ")),
                             key=lambda k: (-counts[k], order.index(k) if k in order else len(order)))
            points = []
            for key in reached:
                s = dict(self.reached[key])
                s.pop("distance", None)
                points.append({**s, "starts": counts[key]})
            out[name] = {"starts": sum(counts.values()), "stationary_points": points}
            if end_basins is not None:
                grouped = [{**b.to_dict(), "starts": counts[f"basin {b.index}"]} for b in end_basins
                           if counts[f"basin {b.index}"]]
                out[name]["basins"] = sorted(grouped, key=lambda b: (-b["starts"], b["index"]))
            out[name].update({"elsewhere": counts["elsewhere"], "diverged": counts["diverged"]})
        return out

    def to_dict(self) -> dict:
        core = self.core
        end_basins = core.basins.basins if core.basins is not None else None
        return clean({"starts": self.starts,
                      "statuses": {n: {s: c[s] for s in STATUSES if c[s]} for n, c in self.statuses.items()},
                      "basins": self.basins_dict(core.stationary, end_basins), **core.run_level()})

    def text(self) -> str:
        text = f"{self.starts} start{'s' if self.starts != 1 else ''} done"
        for name in self.optimizers:
            counts = self.statuses[name]
            said = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) or "nothing run"
            text += f"; {name}: {said}"
            placed = [(k, v) for k, v in self.basins[name].items() if k not in _NOWHERE and v]
            grouped = [v for k, v in placed if k.startswith("basin ")]
            at_points = [v for k, v in placed if not k.startswith("basin ")]
            if at_points:
                text += f" ({sum(at_points)} at {_count(len(at_points), 'stationary point')})"
            if grouped:
                text += f" ({sum(grouped)} in {_count(len(grouped), 'basin')} of end points)"
        return text

    def closing_warnings(self) -> list[str]:
        """Per optimizer, how many starts had each kind of trouble, with an example (each record has its own)."""
        tol = self.core.plan.tol
        out = []
        for name in self.optimizers:
            counts = self.statuses[name]
            failures = self.failures[name]
            if failures["at start"]:
                out.append(f"{name}: f or its gradient is not finite at {failures['at start']} of {self.starts} "
                           f"start points (e.g. at {self.examples[(name, 'at start')]})")
            if failures["diverged"]:
                out.append(f"{name}: {failures['diverged']} of {self.starts} starts diverged or went unbounded "
                           f"on the way (e.g. {self.examples[(name, 'diverged')]}); a smaller --lr may help")
            if counts["oscillating"]:
                out.append(f"{name}: {counts['oscillating']} of {self.starts} starts ended oscillating "
                           f"(e.g. {self.examples[(name, 'oscillating')]})")
            if failures["wrong kind"]:
                goal = "maximum" if self.core.plan.maximize else "minimum"
                out.append(f"{name}: {failures['wrong kind']} of {self.starts} starts stopped where the gradient "
                           f"vanishes, but the Hessian says it is no {goal} (e.g. "
                           f"{self.examples[(name, 'wrong kind')]})")
            if counts["max_steps"] and tol > 0:
                out.append(f"{name}: {counts['max_steps']} of {self.starts} starts stopped at --steps before the "
                           "gradient norm fell below --tol")
        return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"
