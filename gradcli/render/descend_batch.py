"""Writers for ``descend --points/--grid`` (records from :mod:`gradcli.compute.descend.batch`).

- ``jsonl``: a record per start and optimizer, a line each, flushed as each batch of starts finishes;
- ``csv``: one header, a row per record (the start's coordinates under the variables' names, so the
  file can be read back with --points; the end point as ``final_<name>``);
- ``json``: one document, written as it goes: the header's keys, ``starts`` (the records), then
  ``summary``, ``basins``, ``warnings`` and ``notes``;
- ``table``: per optimizer, where the starts ended (the basins: a row per stationary point reached, or
  per basin of end points when SymPy gave no stationary points, then elsewhere and diverged), and a
  compact table of the first :data:`TABLE_STARTS` starts.

``--plot`` (two variables): the starts in the plane, one marker per basin, a legend naming the
stationary points (or the basins' representative end points). The summary line, warnings and notes
go to stderr. Memory: one batch of records, the first TABLE_STARTS starts, and at most PLOT_STARTS
sampled starts per optimizer.
"""

from __future__ import annotations

import os
import random
import sys
from typing import Any

from gradcli.render.batch import CsvSink, JsonlSink, JsonSink, print_batch_diagnostics
from gradcli.render.common import number

# Starts the table shows (all their optimizers' records).
TABLE_STARTS = 20
# Starts a plot draws per optimizer at most (a uniform sample of all of them beyond that).
PLOT_STARTS = 5000
_STATUS_STYLE = {"converged": "green", "max_steps": "yellow", "oscillating": "yellow", "diverged": "red",
                 "unbounded": "red"}
# One marker per basin, so that the plot stays readable without colour.
_MARKERS = ["o", "x", "+", "*", "#", "@", "%", "&", "$", "=", "~", "^", "•"]
_ELSEWHERE_MARKER = "?"
_DIVERGED_MARKER = "!"


def _short(v: float | None) -> str:
    return "undefined" if v is None else f"{v:.6g}"


def stationary_label(s: dict) -> str:
    """``minimum at (3, 2)``: a stationary point, or a basin of end points by its representative."""
    where = ", ".join(_short(v) for v in s["point"].values())
    return f"{s.get('kind') or 'stationary point'} at ({where})"


def _ended_at(record: dict) -> str:
    s = record.get("stationary_point") or record.get("basin")
    if s is not None:
        return stationary_label(s)
    return "-"


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------
def csv_rows(header: dict, record: dict) -> list[list[tuple[str, Any]]]:
    names = header["variables"]
    row: list[tuple[str, Any]] = [(k, v) for k, v in record.get("fields", {}).items()]
    row += [(v, record["start"][v]) for v in names]
    if "line" in record:  # files: the line each start came from (a grid has none)
        row.append(("line", record["line"]))
    row += [("optimizer", record["optimizer"]), ("status", record["status"]), ("steps", record["steps"])]
    row += [(f"final_{v}", record["final"].get(v)) for v in names]
    row += [("value", record["value"]), ("gradient_norm", record["gradient_norm"])]
    s = record.get("stationary_point") or {}
    row += [("stationary_kind", s.get("kind"))]
    row += [(f"stationary_{v}", (s.get("point") or {}).get(v)) for v in names]
    row += [("stationary_value", s.get("value")), ("stationary_distance", s.get("distance"))]
    b = record.get("basin") or {}
    row += [("basin", b.get("index")), ("basin_kind", b.get("kind")), ("message", record["message"])]
    return [row]


def _summary_and_basins(summary: dict) -> dict:
    """descend's JSON tail: the counts under ``summary``, the basins beside them."""
    summary = dict(summary)
    basins = summary.pop("basins")
    return {"summary": summary, "basins": basins}


# ---------------------------------------------------------------------------------------------
# Table: the basins per optimizer, then the first starts
# ---------------------------------------------------------------------------------------------
class TableSink:
    def __init__(self):
        self.kept: list[dict] = []
        self.starts = 0
        self.last_start = None

    def start(self, header: dict) -> None:
        self.header = header

    def write(self, records: list[dict]) -> None:
        for r in records:
            if r["optimizer"] == self.header["optimizers"][0]:
                self.starts += 1
            if self.starts <= TABLE_STARTS:
                self.kept.append(r)

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        from gradcli.render.common import stdout_console

        console = stdout_console()
        h = self.header
        goal = "maximise" if h["maximize"] else "minimise"
        console.print(f"[bold]{goal}[/bold]  {h['expression']}    [bold]from[/bold]  {summary['starts']} starts    "
                      f"[bold]dtype[/bold]  {h['dtype']}")
        console.print(f"[bold]lr[/bold]  {h['learning_rate']:g}    [bold]steps[/bold]  at most {h['max_steps']}    "
                      f"[bold]tol[/bold]  |grad| < {h['tol']:g}")
        for name, basin in summary["basins"].items():
            console.print(_basins_table(name, basin, h["variables"], h.get("basins_from") == "end points"))
        if self.kept:
            console.print(_starts_table(self.kept, h, min(self.starts, TABLE_STARTS)))
        if self.starts > TABLE_STARTS:
            notes = [f"the table shows the first {TABLE_STARTS} of {self.starts} starts: use --format jsonl or csv "
                     "for every start"] + notes
        print_batch_diagnostics(summary_text, warnings, notes)


def _basins_table(name: str, basin: dict, names: list[str], from_end_points: bool):
    """Where one optimizer's starts ended: a row per stationary point or basin, then elsewhere, diverged."""
    from rich.table import Table

    how = " (basins of the end points, not SymPy's stationary points)" if from_end_points else ""
    table = Table(title=f"{name}: where the {basin['starts']} starts ended{how}", title_justify="left")
    table.add_column("ended at", style="bold")
    for v in names:
        table.add_column(v, justify="right")
    table.add_column("f", justify="right")
    table.add_column("starts", justify="right")
    for s in basin["stationary_points"] + basin.get("basins", []):
        table.add_row(s.get("kind") or "stationary point", *[number(s["point"].get(v)) for v in names],
                      number(s.get("value")), str(s["starts"]))
    if basin["elsewhere"]:
        elsewhere = "elsewhere (not converged)" if from_end_points else "elsewhere"
        table.add_row(elsewhere, *["" for _ in names], "", str(basin["elsewhere"]))
    if basin["diverged"]:
        table.add_row("[red]diverged or unbounded[/red]", *["" for _ in names], "", str(basin["diverged"]))
    return table


def _starts_table(kept: list[dict], header: dict, shown: int):
    """The first starts: a row per start and optimizer."""
    from rich.table import Table

    names = header["variables"]
    several = len(header["optimizers"]) > 1
    table = Table(title=f"the first {shown} starts", title_justify="left")
    fields = list(kept[0].get("fields", {}))
    for f in fields:
        table.add_column(f)
    for v in names:
        table.add_column(f"{v} (start)", justify="right")
    if several:
        table.add_column("optimizer", style="bold")
    table.add_column("status")
    table.add_column("steps", justify="right")
    for v in names:
        table.add_column(v, justify="right")
    table.add_column("f", justify="right")
    table.add_column("ended at", overflow="fold")
    for r in kept:
        style = _STATUS_STYLE.get(r["status"], "")
        row = [str(r.get("fields", {}).get(f, "")) for f in fields]
        row += [number(r["start"][v]) for v in names]
        if several:
            row.append(r["optimizer"])
        row += [f"[{style}]{r['status']}[/{style}]", str(r["steps"])]
        row += [number(r["final"].get(v)) for v in names]
        row += [number(r["value"]), _ended_at(r)]
        table.add_row(*row)
    return table


# ---------------------------------------------------------------------------------------------
# --plot: the starts in the plane, marked by where they ended
# ---------------------------------------------------------------------------------------------
class PlotSink:
    """Passes records on to another sink and keeps a uniform sample of the starts for the plot."""

    def __init__(self, inner, variables: list[str], *, file=None):
        self.inner = inner
        self.variables = variables
        self.file = file or sys.stdout
        self.samples: dict[str, list[tuple[float, float, str]]] = {}
        self.seen: dict[str, int] = {}
        self.random = random.Random(0)

    def start(self, header: dict) -> None:
        self.header = header
        self.inner.start(header)

    def write(self, records: list[dict]) -> None:
        from gradcli.compute.descend.batch_records import basin_key

        self.inner.write(records)
        a, b = self.variables
        for r in records:
            name = r["optimizer"]
            kept = self.samples.setdefault(name, [])
            seen = self.seen[name] = self.seen.get(name, 0) + 1
            item = (r["start"][a], r["start"][b], basin_key(r))
            if len(kept) < PLOT_STARTS:  # reservoir sampling: every start equally likely to be drawn
                kept.append(item)
            else:
                j = self.random.randrange(seen)
                if j < PLOT_STARTS:
                    kept[j] = item

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        self.inner.finish(summary, summary_text, warnings, notes)
        plot_starts(self.header, summary, self.samples, self.seen, file=self.file)


def _colorless(file) -> bool:
    return not file.isatty() or bool(os.environ.get("NO_COLOR"))


def plot_starts(header: dict, summary: dict, samples: dict, seen: dict, *, file) -> None:
    import plotext as plt

    a, b = header["variables"]
    if not any(samples.values()):
        print("gradcli: note: nothing to plot (no starts)", file=sys.stderr)
        return
    markers, labels = _basin_markers(header, summary)
    width, height = 80, 24
    if file.isatty():
        import shutil

        width = max(40, min(shutil.get_terminal_size().columns, 120))
    for name, kept in samples.items():
        fig = plt.figure
        fig.clear()
        by_key: dict[str, list[tuple[float, float]]] = {}
        for x, y, key in kept:
            by_key.setdefault(key, []).append((x, y))
        for key, pts in by_key.items():
            marker = markers.setdefault(key, _MARKERS[len(markers) % len(_MARKERS)])
            fig.draw(fig.signal([p[0] for p in pts], [p[1] for p in pts], marker=marker))
        sampled = f", {len(kept)} of {seen[name]} drawn" if seen[name] > len(kept) else ""
        fig.title(f"{name}: the starts, marked by where they ended{sampled}")
        fig.label(a, axis="x")
        fig.label(b, axis="y")
        fig.plot_size(width, height)
        print(fig.build().string(colorless=_colorless(file)), file=file)
        reached = _starts_per_key(summary["basins"][name])
        for key, marker in markers.items():
            if reached.get(key):
                n = reached[key]
                print(f"  {marker}  {labels.get(key, key)}: {n} start{'s' if n != 1 else ''}", file=file)


def _basin_markers(header: dict, summary: dict) -> tuple[dict[str, str], dict[str, str]]:
    """One marker per basin key, the same in every optimizer's plot (stationary points in SymPy's order,
    basins of end points in the order they were found), and a label for each."""
    from gradcli.compute.descend.batch_records import stationary_key

    places = [(stationary_key(s["point"]), s) for s in header.get("stationary_points") or []]
    grouped = {b["index"]: b for counts in summary["basins"].values() for b in counts.get("basins", [])}
    places += [(f"basin {i}", grouped[i]) for i in sorted(grouped)]
    markers: dict[str, str] = {}
    labels: dict[str, str] = {}
    for key, s in places:
        markers.setdefault(key, _MARKERS[len(markers) % len(_MARKERS)])
        labels[key] = stationary_label(s)
    elsewhere = "not converged" if header.get("basins_from") == "end points" else "no stationary point reached"
    markers["elsewhere"], labels["elsewhere"] = _ELSEWHERE_MARKER, f"elsewhere ({elsewhere})"
    markers["diverged"], labels["diverged"] = _DIVERGED_MARKER, "diverged or unbounded"
    return markers, labels


def _starts_per_key(counts: dict) -> dict[str, int]:
    """One optimizer's starts per basin key."""
    from gradcli.compute.descend.batch_records import stationary_key

    reached = {stationary_key(s["point"]): s["starts"] for s in counts["stationary_points"]}
    reached.update({f"basin {b['index']}": b["starts"] for b in counts.get("basins", [])})
    reached["elsewhere"], reached["diverged"] = counts["elsewhere"], counts["diverged"]
    return reached


def sink_for(output: str, *, variables: list[str], plot: bool = False):
    """The writer for ``output`` (table, json, jsonl, csv), wrapped for --plot when asked."""
    if output == "jsonl":
        sink = JsonlSink()
    elif output == "json":
        sink = JsonSink(list_key="starts", split_summary=_summary_and_basins)
    elif output == "csv":
        sink = CsvSink(csv_rows)
    else:
        sink = TableSink()
    if plot:
        # The plot is data the user asked for, but JSON, JSON Lines and CSV on stdout must stay parseable.
        sink = PlotSink(sink, variables, file=sys.stdout if output == "table" else sys.stderr)
    return sink
