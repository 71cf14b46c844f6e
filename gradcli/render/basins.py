"""Where a batch of descents ended, as every view of it (the table, the terminal plot, the picture) names
and orders the places: stationary points, basins of end points, elsewhere, diverged."""

from __future__ import annotations


def _short(v: float | None) -> str:
    return "undefined" if v is None else f"{v:.6g}"


def stationary_label(s: dict) -> str:
    """``minimum at (3, 2)``: a stationary point, or a basin of end points by its representative."""
    where = ", ".join(_short(v) for v in s["point"].values())
    return f"{s.get('kind') or 'stationary point'} at ({where})"


def basin_places(header: dict, summary: dict) -> list[tuple[str, dict | None, str]]:
    """(basin key, stationary point or basin, label) of every place a start can end, in the order every
    plot gives them their markers: stationary points in SymPy's order, basins of end points in the order
    they were found, then elsewhere and diverged (no point)."""
    from gradcli.compute.descend.records import stationary_key

    places = [(stationary_key(s["point"]), s) for s in header.get("stationary_points") or []]
    grouped = {b["index"]: b for counts in summary["basins"].values() for b in counts.get("basins", [])}
    places += [(f"basin {i}", grouped[i]) for i in sorted(grouped)]
    found: dict[str, tuple[str, dict | None, str]] = {}
    for key, s in places:
        found.setdefault(key, (key, s, stationary_label(s)))
    elsewhere = "not converged" if header.get("basins_from") == "end points" else "no stationary point reached"
    found["elsewhere"] = ("elsewhere", None, f"elsewhere ({elsewhere})")
    found["diverged"] = ("diverged", None, "diverged or unbounded")
    return list(found.values())


def starts_per_key(counts: dict) -> dict[str, int]:
    """One optimizer's starts per basin key."""
    from gradcli.compute.descend.records import stationary_key

    reached = {stationary_key(s["point"]): s["starts"] for s in counts["stationary_points"]}
    reached.update({f"basin {b['index']}": b["starts"] for b in counts.get("basins", [])})
    reached["elsewhere"], reached["diverged"] = counts["elsewhere"], counts["diverged"]
    return reached
