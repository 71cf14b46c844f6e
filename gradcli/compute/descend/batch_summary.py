"""Counting many starts: statuses and basins per optimizer, and the first example of each trouble."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gradcli.compute.descend.batch_records import FAILED_STATUSES, basin_key, stationary_key
from gradcli.compute.descend.end_basins import Basin
from gradcli.compute.descend.results import STATUSES, StationaryPoint
from gradcli.results import clean, point_text

# Basin keys that name no place.
_NOWHERE = ("elsewhere", "diverged")


@dataclass
class Summary:
    """Counts over every record: statuses and basins per optimizer, the first example of each trouble."""

    optimizers: list[str]
    starts: int = 0
    statuses: dict[str, Counter] = field(default_factory=dict)
    basins: dict[str, Counter] = field(default_factory=dict)
    points: dict[str, dict] = field(default_factory=dict)  # basin key -> the stationary point
    failures: dict[str, Counter] = field(default_factory=dict)  # "at start" / "diverged" (on the way)
    examples: dict[tuple[str, str], str] = field(default_factory=dict)

    def __post_init__(self):
        for name in self.optimizers:
            self.statuses[name] = Counter()
            self.basins[name] = Counter()
            self.failures[name] = Counter()

    def add(self, records: list[dict]) -> None:
        for r in records:
            name = r["optimizer"]
            if name == self.optimizers[0]:
                self.starts += 1
            self.statuses[name][r["status"]] += 1
            key = basin_key(r)
            self.basins[name][key] += 1
            if r.get("stationary_point") is not None:
                self.points.setdefault(key, r["stationary_point"])
            kind = r["status"]
            if kind in FAILED_STATUSES:
                kind = "at start" if r["steps"] == 0 else "diverged"
                self.failures[name][kind] += 1
            if (name, kind) not in self.examples:
                self.examples[(name, kind)] = point_text(r["start"]) if kind == "at start" else \
                    f"from {point_text(r['start'])}: {r['message']}"

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
                s = dict(self.points[key])
                s.pop("distance", None)
                points.append({**s, "starts": counts[key]})
            out[name] = {"starts": sum(counts.values()), "stationary_points": points}
            if end_basins is not None:
                grouped = [{**b.to_dict(), "starts": counts[f"basin {b.index}"]} for b in end_basins
                           if counts[f"basin {b.index}"]]
                out[name]["basins"] = sorted(grouped, key=lambda b: (-b["starts"], b["index"]))
            out[name].update({"elsewhere": counts["elsewhere"], "diverged": counts["diverged"]})
        return out

    def to_dict(self, stationary: list[StationaryPoint] | None, end_basins: list[Basin] | None = None) -> dict:
        return clean({"starts": self.starts,
                      "statuses": {n: {s: c[s] for s in STATUSES if c[s]} for n, c in self.statuses.items()},
                      "basins": self.basins_dict(stationary, end_basins)})

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

    def warnings(self, tol: float) -> list[str]:
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
            if counts["max_steps"] and tol > 0:
                out.append(f"{name}: {counts['max_steps']} of {self.starts} starts stopped at --steps before the "
                           "gradient norm fell below --tol")
        return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"
