"""Rendering of :class:`gradcli.compute.steps.StepsReport`: the error table (dtypes side by side when the
width allows, formula columns in blocks when it does not: nothing is cut), the marked steps, CSV, JSON and
the log-log plot (plotext, as ``descend --plot``: colour only on a terminal without NO_COLOR, ASCII when
the output cannot encode box drawing)."""

from __future__ import annotations

import math
import sys

from gradcli.compute.steps import FORMULA_NAMES, StepsReport
from gradcli.compute.steps_sweep import DtypeSweep
from gradcli.render.common import to_csv, to_json
from gradcli.render.layout import terminal_width, wrap_plain

GAP = 4  # columns between tables side by side
COLUMN_GAP = 1  # between the grid's columns: a step and 8 formulas fit in 80 columns
MIN_WIDTH = 20
_MARKERS = ["+", "x", "o", "*", "#", "@", "%", "&", "="]
# for cells two formulas share at every step (the legend names both)
COMBINED_MARKERS = ["$", "~", "^", "="]
PLOT_HEIGHT = 22
MARKS = (("D", "default"), ("B", "best"), ("T", "theory"))


def steps_json(report: StepsReport) -> str:
    return to_json(report.to_dict())


def steps_csv(report: StepsReport) -> str:
    """One row per (dtype, formula, step): the sweep's steps, then the marked ones (kind says which)."""
    header = ["dtype", "formula", "accuracy", "kind", "step", "error"]
    rows = []
    for s in report.sweeps:
        for f in s.formulas:
            rows += [[s.dtype, f.name, f.accuracy, "sweep", h, e] for h, e in zip(s.steps, f.errors)]
            rows += [[s.dtype, f.name, f.accuracy, kind, getattr(f, f"{kind}_step"), getattr(f, f"{kind}_error")]
                     for _, kind in MARKS if getattr(f, f"{kind}_step") is not None]
    return to_csv(header, rows)


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------
def _cell(e: float | None) -> str:
    if e is None:
        return "-"
    return "0" if e == 0 else f"{e:.1e}"


def _grid_blocks(sweep: DtypeSweep, width: int) -> list[list[str]]:
    """The error grid as lines: a column per formula, a row per step, in blocks of as many columns as fit."""
    names = [f.name for f in sweep.formulas]
    cells = [[_cell(e) for e in f.errors] for f in sweep.formulas]
    steps = [f"{h:.1e}" for h in sweep.steps]
    step_w = max(len("h"), *map(len, steps))
    widths = [max(len(n), *map(len, c)) for n, c in zip(names, cells)]
    blocks, start = [], 0
    while start < len(names):
        end, used = start, step_w
        while end < len(names) and (end == start or used + COLUMN_GAP + widths[end] <= width):
            used += COLUMN_GAP + widths[end]
            end += 1
        gap = " " * COLUMN_GAP
        lines = ["h".rjust(step_w) + "".join(gap + names[j].rjust(widths[j]) for j in range(start, end))]
        for i, h in enumerate(steps):
            lines.append(h.rjust(step_w) + "".join(gap + cells[j][i].rjust(widths[j]) for j in range(start, end)))
        blocks.append(lines)
        start = end
    return blocks


def _marked_lines(sweep: DtypeSweep) -> list[str]:
    """A row per formula: its default, best and theory steps and their errors."""
    head = ["formula", "p", "default h", "error", "best h", "error", "theory h*", "error"]
    rows = [[f.name, str(f.accuracy), _cell(f.default_step), _cell(f.default_error), _cell(f.best_step),
             _cell(f.best_error), _cell(f.theory_step), _cell(f.theory_error)] for f in sweep.formulas]
    widths = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths)))
    return [fmt(head), *map(fmt, rows)]


def _title(report: StepsReport, sweep: DtypeSweep) -> str:
    n, v = report.order, report.variable
    d = f"d/d{v}" if n == 1 else f"d^{n}/d{v}^{n}"
    return f"{sweep.dtype}: |error| of {d} {report.expression} at {v} = {sweep.x!r} (exact {sweep.exact!r})"


def _panel(report: StepsReport, sweep: DtypeSweep, width: int) -> list[str]:
    lines = wrap_plain(_title(report, sweep), width, indent=2)
    for block in _grid_blocks(sweep, width):
        lines += block + [""]
    marked = _marked_lines(sweep)
    if max(map(len, marked)) <= width:
        lines += marked
    else:  # too narrow for one row per formula: a line per marked step
        for f in sweep.formulas:
            lines.append(f.name)
            lines += [f"  {kind} h {_cell(getattr(f, kind + '_step'))}  error {_cell(getattr(f, kind + '_error'))}"
                      for _, kind in MARKS]
    return lines


def _side_by_side(panels: list[list[str]], width: int) -> list[str] | None:
    widths = [max(map(len, p)) for p in panels]
    if sum(widths) + GAP * (len(panels) - 1) > width:
        return None
    rows = max(map(len, panels))
    out = []
    for i in range(rows):
        parts = [(p[i] if i < len(p) else "").ljust(w) for p, w in zip(panels, widths)]
        out.append((" " * GAP).join(parts).rstrip())
    return out


def steps_table(report: StepsReport, *, file=None) -> None:
    file = file or sys.stdout
    width = max(MIN_WIDTH, terminal_width(file, default=160))
    _say(f"steps: {', '.join(s.dtype for s in report.sweeps)}; h from 1e-1 to eps (x max(1, |x|)), every half "
         "decade; '-': no finite value", file, width)
    # panels are laid out at the width they get: alone, or half of it side by side
    half = (width - GAP * (len(report.sweeps) - 1)) // max(1, len(report.sweeps))
    together = _side_by_side([_panel(report, s, half) for s in report.sweeps], width) \
        if len(report.sweeps) > 1 and half >= 60 else None
    lines = together or [line for s in report.sweeps for line in _panel(report, s, width) + [""]]
    print("\n".join(lines).rstrip("\n"), file=file)
    _say("marked: default = the step grad and derivative take, eps^(1/(n+p)) x max(1, |x|) (complex: its power "
         "of two); best = the smallest error found in the sweep, a finer search around its minimum and the "
         "default and theory steps; theory = argmin of truncation |c f^(n+p)| h^p + rounding eps |f| sum|w| / h^n",
         file, width)


def _say(text: str, file, width: int) -> None:
    for line in wrap_plain(text, width, indent=2):
        print(line, file=file)


# ---------------------------------------------------------------------------------------------
# The plot
# ---------------------------------------------------------------------------------------------
def _floor(sweep: DtypeSweep) -> float:
    """Where an error of exactly 0 is drawn: a decade under the smallest error, at most eps |exact| / 10."""
    nonzero = [e for f in sweep.formulas for e in f.errors if e]
    low = min(nonzero) if nonzero else 1e-16
    return min(low, 1e-17 * max(1.0, abs(sweep.exact))) / 10


def _decade_ticks(low: float, high: float, width: int) -> list[int]:
    lo, hi = math.floor(low), math.ceil(high)
    every = max(1, math.ceil((hi - lo + 1) / max(2, width // 8)))
    return list(range(hi, lo - 1, -every))[::-1]


def _points(sweep: DtypeSweep, f, floor: float) -> list[tuple[float, float]]:
    return [(math.log10(h), math.log10(max(e, floor))) for h, e in zip(sweep.steps, f.errors) if e is not None]


def _inside(canvas: str) -> str:
    """The plot area of a built figure (its tick labels and axis titles left out: "error" has an 'o')."""
    rows = []
    for line in canvas.splitlines():
        cut = min((k for k in (line.find("\u2502"), line.find("\u2524")) if k >= 0), default=-1)
        if cut >= 0:
            rows.append(line[cut + 1:])
    return "\n".join(rows)


def _draw(fig, report, sweep, drawn, combined, marks, floor, width: int) -> str:
    """Draw the formulas in the order ``drawn`` ((formula, marker)), then ``combined`` ((points, marker):
    cells two formulas share), then the marked steps; the plot area as text, to see which markers show."""
    fig.clear()
    all_y = []
    for f, marker in drawn:
        pts = _points(sweep, f, floor)
        signal = fig.signal([p[0] for p in pts], [p[1] for p in pts], marker=marker)
        signal.lines()
        fig.draw(signal)
        all_y += [p[1] for p in pts]
    for pts, marker in combined:
        fig.draw(fig.signal([p[0] for p in pts], [p[1] for p in pts], marker=marker))
    for x, y, letter in marks:
        fig.draw(fig.text(x, y, letter))
    xs = [math.log10(h) for h in sweep.steps]
    fig.ruler("x").ticks(*_labels(_decade_ticks(min(xs), max(xs), width)))
    if all_y:
        fig.ruler("y").ticks(*_labels(_decade_ticks(min(all_y), max(all_y), 20 * 4)))
    fig.label("step h", axis="x")
    fig.label("|error|", axis="y")
    fig.plot_size(width, PLOT_HEIGHT)
    return _inside(fig.build().string(colorless=True))


def _visible_order(fig, report, sweep, shown, marks, floor, width):
    """Formulas drawn later cover earlier ones where they share a cell (forward's errors are backward's
    wherever truncation rules, and both have 1 point per step): draw the least visible last, until every
    formula shows in a cell of its own or no order does better. Formulas that still show nowhere (the same
    errors as another at every step) get a combined marker in the cells they share."""
    order, best = list(shown), None
    for _ in range(len(shown) + 1):
        inside = _draw(fig, report, sweep, order, [], marks, floor, width)
        counts = {f.name: inside.count(m) for f, m in order}
        score = (sum(1 for c in counts.values() if c), min(counts.values()))
        if best is None or score > best[2]:
            best = (list(order), counts, score)
        if min(counts.values()) > 0:
            break
        again = [fm for fm in order if counts[fm[0].name]] + [fm for fm in order if not counts[fm[0].name]]
        if again == order:
            break
        order = again
    order, counts, _ = best
    ys = [y for f, _ in order for _, y in _points(sweep, f, floor)]
    row = (max(ys) - min(ys)) / (PLOT_HEIGHT - 4)  # the plot area's rows, in decades (the frame and ticks: 4)
    combined, labels = [], []
    spare = iter(m for m in COMBINED_MARKERS if m not in {m for _, m in order})
    for f, marker in order:
        if counts[f.name]:
            continue
        mine = dict(_points(sweep, f, floor))
        # the formula it hides under: the one sharing the most of its cells, and only there the combined mark
        shared = []
        for g, _ in order:
            theirs = dict(_points(sweep, g, floor))
            same = [(x, y) for x, y in mine.items() if g is not f and abs(theirs.get(x, math.inf) - y) <= row / 2]
            shared.append((len(same), same, g))
        count, same, under = max(shared, key=lambda t: t[0])
        sign = next(spare, None)
        if not count or sign is None:
            continue
        combined.append((same, sign))
        labels.append((sign, f"{f.name} ({marker}) and {under.name} in the same cells"))
    return order, combined, labels


def _plot_one(report: StepsReport, sweep: DtypeSweep, *, file, width: int) -> None:
    import plotext as plt

    from gradcli.render import terminal_plot as tp

    floor = _floor(sweep)
    fig = plt.figure
    markers = tp.markers(file, _MARKERS)
    # a formula keeps its marker whichever others are drawn (forward is always '+')
    shown = [(f, markers[FORMULA_NAMES.index(f.name) % len(markers)]) for f in sweep.formulas
             if _points(sweep, f, floor)]
    marks, mark_legend = [], []
    for letter, kind, h, e, label in _marked_steps(report, sweep):
        marks.append((math.log10(h), math.log10(max(e, floor)), letter))
        mark_legend.append((letter, label))
    order, combined, combined_legend = _visible_order(fig, report, sweep, shown, marks, floor, width) \
        if shown else ([], [], [])
    _draw(fig, report, sweep, order, combined, marks, floor, width)
    legend = [(m, f"{f.name} (error ~ h^{f.accuracy})") for f, m in shown] + combined_legend + mark_legend
    tp.print_title(_title(report, sweep) + " (log-log)", file=file, width=width)
    tp.print_figure(fig, file=file, width=width, height=PLOT_HEIGHT)
    legend.append((" ", f"an error of exactly 0 is drawn at the bottom, 1e{math.floor(math.log10(floor))}"))
    tp.print_legend(legend, file=file, width=width)


def _marked_steps(report: StepsReport, sweep: DtypeSweep) -> list[tuple[str, str, float, float, str]]:
    """(letter, kind, h, error, legend text) of the marked formula's default, best and theory steps that lie
    within the sweep's range (the steps as x + h takes them may pass its ends by an ulp)."""
    marked = next((f for f in sweep.formulas if f.name == report.marked), None)
    found = []
    for letter, kind in MARKS if marked else ():
        h, e = getattr(marked, f"{kind}_step"), getattr(marked, f"{kind}_error")
        if h is None or e is None or not sweep.steps[-1] * (1 - 1e-9) <= h <= sweep.steps[0] * (1 + 1e-9):
            continue
        found.append((letter, kind, h, e, f"{kind} step of {marked.name}: h = {h:.2g}, error {_cell(e)}"))
    return found


def _labels(ticks: list[int]) -> tuple[list[int], list[str]]:
    return ticks, [f"1e{t}" for t in ticks]


def steps_plot(report: StepsReport, *, file=None) -> None:
    """A log-log plot per dtype: every formula's error against h, the marked formula's steps as D, B, T."""
    from gradcli.render import terminal_plot as tp

    file = file or sys.stdout
    width = tp.plot_width(file)
    for k, sweep in enumerate(report.sweeps):
        if k:
            print(file=file)
        _plot_one(report, sweep, file=file, width=width)


# ---------------------------------------------------------------------------------------------
# The picture (--plot-file)
# ---------------------------------------------------------------------------------------------
def plot_panels(report: StepsReport) -> list:
    """What ``steps_plot`` draws, as :class:`gradcli.render.plot_file.Panel` objects, one per dtype: every
    formula's errors at the sweep's steps (an error of exactly 0 at the plot's floor, no point where there is
    no finite value), the marked formula's default, best and theory steps as D, B and T."""
    from gradcli.render.plot_file import Mark, Panel, Series

    panels = []
    for sweep in report.sweeps:
        floor = _floor(sweep)
        series = [Series(f"{f.name} (error ~ h^{f.accuracy})", list(sweep.steps),
                         [None if e is None else max(e, floor) for e in f.errors],
                         style=FORMULA_NAMES.index(f.name), gid=f"{sweep.dtype}-{f.name}")
                  for f in sweep.formulas if _points(sweep, f, floor)]
        marks = [Mark(letter, f"{letter}: {label}", h, max(e, floor), gid=f"{sweep.dtype}-{kind}")
                 for letter, kind, h, e, label in _marked_steps(report, sweep)]
        zero = any(e == 0 for f in sweep.formulas for e in f.errors)
        note = f"an error of exactly 0 is drawn at the bottom, {floor:.1e}" if zero else None
        panels.append(Panel(_title(report, sweep) + " (log-log)", "step h", "|error|", series, marks, note))
    return panels
