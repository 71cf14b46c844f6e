"""``descend --plot-file FILE.png|.svg``: what descend draws, as :class:`gradcli.render.plot_file.Panel`
objects (matplotlib draws them there; it is never imported here).

- one start: f by step, a series per optimizer of the race, from the trajectory the run kept (on a log axis
  labelled in powers of ten where f spans more than 3 decades, as the terminal's ``--plot``);
- many starts (one or two variables): per optimizer, the starts coloured by where they ended (a series per
  basin: a stationary point of SymPy's or a basin of end points, then elsewhere and diverged), from the
  sample the terminal's ``--plot`` draws. Two variables: the starts in the plane, each basin's point marked by
  a letter. One variable: each start against where it ended (the basins are the flat steps).
"""

from __future__ import annotations

import math

# Marks (letters) per panel at most: past that the legend would hide the plot.
MOST_MARKS = 9
# The styles of plot_file's palette that elsewhere and diverged keep (grey, red); the basins take the others.
ELSEWHERE_STYLE = 7
DIVERGED_STYLE = 3
_BASIN_STYLES = [s for s in range(9) if s not in (ELSEWHERE_STYLE, DIVERGED_STYLE)]


def log_scale(values: list[float]) -> bool:
    """Descent shrinks f by orders of magnitude: more than 3 decades of positive values go on a log axis."""
    return bool(values) and min(values) > 0 and max(values) / min(values) > 1e3


def run_label(run: dict, per_optimizer_rates: bool) -> str:
    name = f"{run['optimizer']} lr={run['learning_rate']:g}" if per_optimizer_rates else run["optimizer"]
    return f"{name} ({run['status']})"


def descend_panels(document: dict) -> list:
    """One start's picture: f by step for each run, from the document's ``trajectory``."""
    from gradcli.render.plot_file import Panel, Series

    runs = document["runs"]
    trajectories = document.get("trajectory") or {}
    per_optimizer_rates = len({run["learning_rate"] for run in runs}) > 1
    kept = [[h for h in trajectories.get(run["optimizer"], [])] for run in runs]
    values = [h["value"] for rows in kept for h in rows if _finite(h["value"])]
    log = log_scale(values)
    series = [Series(run_label(run, per_optimizer_rates), [h["step"] for h in rows],
                     [h["value"] if _finite(h["value"]) else None for h in rows], style=i,
                     gid=f"run-{run['optimizer']}")
              for i, (run, rows) in enumerate(zip(runs, kept))]
    goal = "maximise" if document["maximize"] else "minimise"
    note = None if values else "nothing to plot (no finite values recorded)"
    return [Panel(f"{goal} f = {document['expression']}: f by step", "step", "f (log scale)" if log else "f",
                  series, note=note, x_log=False, y_log=log)]


def basin_panels(header: dict, summary: dict, samples: dict, seen: dict) -> list:
    """Many starts' picture: a panel per optimizer, its sampled starts coloured by where they ended.
    ``samples``: per optimizer, (x, y, basin key) as gradcli.render.descend_batch.PlotSink keeps them."""
    from gradcli.render.basins import basin_places, starts_per_key
    from gradcli.render.plot_file import Mark, Panel

    names = header["variables"]
    places = basin_places(header, summary)
    styles: dict[str, int] = {}
    for key, _, _ in places:
        fixed = {"elsewhere": ELSEWHERE_STYLE, "diverged": DIVERGED_STYLE}
        styles[key] = fixed.get(key, _BASIN_STYLES[sum(1 for k in styles if k not in fixed) % len(_BASIN_STYLES)])
    plane = len(names) == 2
    x_label, y_label = (names[0], names[1]) if plane else (f"{names[0]} (start)", f"{names[0]} (end)")
    panels = []
    for name, kept in samples.items():
        by_key: dict[str, list[tuple[float, float | None]]] = {}
        for x, y, key in kept:
            by_key.setdefault(key, []).append((x, y))
        reached = starts_per_key(summary["basins"][name])
        series, marks = [], []
        for index, (key, place, label) in enumerate(places):
            count = reached.get(key, 0)
            if not count:
                continue
            points = by_key.get(key, [])
            text = f"{label}: {count} start{'s' if count != 1 else ''}"
            if not plane and points and all(y is None for _, y in points):
                text += " (no finite end point to draw)"
            series.append(_scatter(text, points, styles[key], gid=f"{name}-{_gid(key, index)}"))
            if plane and place is not None and len(marks) < MOST_MARKS:
                p = [place["point"].get(v) for v in names]
                if all(_finite(c) for c in p):
                    letter = chr(ord("A") + len(marks))
                    marks.append(Mark(letter, f"{letter}: {label}", p[0], p[1], gid=f"{name}-mark-{letter}"))
        drawn = len(kept)
        sampled = f" ({drawn} of {seen[name]} starts drawn, a uniform sample)" if seen[name] > drawn else ""
        how = "the starts, coloured by where they ended" if plane else "each start and where it ended"
        panels.append(Panel(f"{name}: {how}{sampled}; f = {header['expression']}", x_label, y_label, series, marks,
                            x_log=False, y_log=False))
    return panels


def _scatter(label: str, points: list[tuple[float, float | None]], style: int, *, gid: str):
    """Points without a line (a start with no finite end is left out)."""
    from gradcli.render.plot_file import Series

    return Series(label, [x for x, _ in points], [y for _, y in points], style=style, gid=gid, line=False)


def _gid(key: str, index: int) -> str:
    """An SVG id for a basin key (a stationary point's key has '=' and ', ': its place in the list instead)."""
    if key in ("elsewhere", "diverged"):
        return key
    return key.replace(" ", "-") if key.startswith("basin ") else f"stationary-{index}"


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
