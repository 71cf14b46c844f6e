"""Plots drawn into a picture file, PNG or SVG by the file's extension, where a picture beats a terminal plot
(a slide, a report, a zoom into where two formulas' errors cross).

The drawing is matplotlib's, an optional extra (``pip install "gradcli[plot]"``): the most widely used and
maintained plotting library for Python, whose log axes label decades as powers of ten and whose SVG and
PNG writers need nothing beyond it (no browser, no system library). It is imported only when a picture is
asked for (``import matplotlib`` costs ~0.3 s; a plain run and ``--help`` never pay it), and drawn on the
Agg canvas through :class:`matplotlib.figure.Figure`, without pyplot: no global figure state, no GUI
backend chosen from the environment. The same plot gives the same bytes: the SVG's element ids come from a
fixed hash salt and it carries no date.

A command describes what to draw as :class:`Panel` objects (one per set of axes, stacked in one picture);
this module knows nothing of any command's numbers.
"""

from __future__ import annotations

import math
import os
import textwrap
from dataclasses import dataclass, field

PICTURE_SUFFIXES = (".png", ".svg")
INSTALL_HINT = 'pip install "gradcli[plot]"'
SVG_HASH_SALT = "gradcli"
TITLE_COLUMNS = 90  # a long expression wraps onto more title lines: nothing is cut
PANEL_SIZE = (11.0, 6.0)  # inches per panel, the legend beside the axes
# the most decades labelled on an axis (more: every other one, the rest a minor tick), so the labels never
# run into each other
MOST_LABELS = {"x": 10, "y": 20}
PNG_DPI = 110
# A series keeps its look (marker and colour) by its style index, whichever other series are drawn. Open
# markers of different shapes: where two series share points (forward and backward where truncation rules)
# both stay visible.
MARKERS = ["+", "x", "o", "*", "s", "^", "v", "D", "P"]
# every other series dashed: a series drawn over another's line (the same errors) leaves it showing
LINE_STYLES = ["-", "--"]
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]


@dataclass
class Series:
    """One line of points; ``y`` None where there is no finite value (the line breaks there). ``line``
    False: the markers alone (a scatter of points, and its legend entry a marker)."""

    label: str
    x: list[float]
    y: list[float | None]
    style: int = 0
    line: bool = True
    gid: str | None = None  # the SVG group's id (a test or a stylesheet finds the series by it)


@dataclass
class Mark:
    """A point picked out on the plot by a letter, and named in the legend."""

    letter: str
    label: str
    x: float
    y: float
    gid: str | None = None


@dataclass
class Panel:
    title: str
    x_label: str
    y_label: str
    series: list[Series]
    marks: list[Mark] = field(default_factory=list)
    note: str | None = None  # a line under the legend's entries
    x_log: bool = True
    y_log: bool = True


def picture_problem(path: str) -> str | None:
    """Why ``path`` cannot be drawn into (its extension, or matplotlib missing), or None: checked before
    anything is computed."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in PICTURE_SUFFIXES:
        return f"{os.path.basename(path)!r} is not a picture file name: end it in .png or .svg"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"drawing a picture needs matplotlib, which is not installed: {INSTALL_HINT}"
    return None


def write_plot_file(panels: list[Panel], path: str) -> None:
    """Draw the panels, stacked, into ``path`` (PNG or SVG by its extension)."""
    from gradcli.errors import UsageError
    from gradcli.output_files import write_whole

    problem = picture_problem(path)
    if problem:
        raise UsageError(problem)
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    svg = path.lower().endswith(".svg")
    # svg.fonttype none: the text stays text (searchable, selectable on a slide), not glyph outlines
    settings = {"svg.hashsalt": SVG_HASH_SALT, "svg.fonttype": "none", "font.size": 10}
    with matplotlib.rc_context(settings):
        width, height = PANEL_SIZE
        figure = Figure(figsize=(width, height * max(1, len(panels))))
        FigureCanvasAgg(figure)
        axes = figure.subplots(max(1, len(panels)), 1, squeeze=False)[:, 0]
        for ax, panel in zip(axes, panels):
            _draw_panel(ax, panel)
        figure.tight_layout()
        metadata = {"Date": None} if svg else {"Software": None}
        write_whole(path, lambda file: figure.savefig(file, format="svg" if svg else "png", dpi=PNG_DPI,
                                                      metadata=metadata, bbox_inches="tight"), binary=True)


def _text(text: str) -> str:
    """Text as written: a '$' would start matplotlib's math mode."""
    return text.replace("$", r"\$")


def _draw_panel(ax, panel: Panel) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogFormatterSciNotation, LogLocator

    for s in panel.series:
        marker = MARKERS[s.style % len(MARKERS)]
        colour = COLOURS[s.style % len(COLOURS)]
        ys = [math.nan if y is None else y for y in s.y]
        ax.plot(s.x, ys, marker=marker, color=colour, markerfacecolor="none", markersize=7, linewidth=1.2,
                linestyle=LINE_STYLES[s.style % len(LINE_STYLES)] if s.line else "none", label=_text(s.label),
                gid=s.gid)
    handles, labels = ax.get_legend_handles_labels()
    for m in panel.marks:
        ax.plot([m.x], [m.y], marker="o", markersize=13, markerfacecolor="none", markeredgecolor="black",
                markeredgewidth=1.2, linestyle="none", gid=m.gid)
        ax.annotate(m.letter, (m.x, m.y), xytext=(7, 7), textcoords="offset points", fontweight="bold")
        handles.append(Line2D([], [], marker=f"${m.letter}$", color="black", linestyle="none", markersize=9))
        labels.append(_text(m.label))
    if panel.note:
        handles.append(Line2D([], [], linestyle="none"))
        labels.append(_text(panel.note))
    if panel.x_log:
        ax.set_xscale("log")
    if panel.y_log:
        ax.set_yscale("log")
    for name, axis, log in (("x", ax.xaxis, panel.x_log), ("y", ax.yaxis, panel.y_log)):
        if log:  # decades, labelled as powers of ten
            axis.set_major_locator(LogLocator(base=10, numticks=MOST_LABELS[name]))
            axis.set_major_formatter(LogFormatterSciNotation(base=10))
    ax.set_xlabel(_text(panel.x_label))
    ax.set_ylabel(_text(panel.y_label))
    ax.set_title(_text(textwrap.fill(panel.title, TITLE_COLUMNS)), fontsize=10, loc="left")
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
