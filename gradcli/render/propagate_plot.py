"""``propagate --plot FILE.svg``: the Monte Carlo histogram of each expression (a density: bar areas sum to 1)
with the linear and second-order normals drawn over it, an SVG written by hand (no drawing library: the same
numbers give the same bytes)."""

from __future__ import annotations

import math
from html import escape

WIDTH, HEIGHT = 720, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50
BINS = 60
CURVE_POINTS = 200
COLOURS = {"histogram": "#9ecae1", "linear": "#d62728", "second_order": "#2ca02c"}


def plot_problem(path: str) -> str | None:
    """Why ``path`` cannot take the plot (None: it can)."""
    if not path.lower().endswith(".svg"):
        return f"--plot {path}: the plot is an SVG picture; name it FILE.svg"
    return None


def _normal_pdf(x: float, mean: float, sd: float) -> float:
    return math.exp(-0.5 * ((x - mean) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))


def _panel(doc_result: dict, values, top: float) -> list[str]:
    """One expression's axes, histogram and curves, ``top`` pixels down."""
    import numpy as np

    good = values[np.isfinite(values)]
    out = [f'<g id="{escape("panel-" + doc_result["expression"], quote=True)}">',
           f'<text x="{LEFT}" y="{top - 12:.1f}" font-size="14">{escape(doc_result["expression"])}: Monte Carlo '
           f'histogram, linear and second-order normals</text>']
    if good.size == 0:
        return out + [f'<text x="{LEFT}" y="{top + 40}">no finite sample</text>', "</g>"]
    lo, hi = (float(v) for v in np.quantile(good, [0.001, 0.999]))
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    counts, edges = np.histogram(good, bins=BINS, range=(lo, hi))
    density = counts / (good.size * (edges[1] - edges[0]))
    curves = _curves(doc_result, lo, hi)
    peak = max([float(density.max()), 1e-300] + [y for c in curves.values() for y in c[1] if math.isfinite(y)])
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - lo) / (hi - lo) * w

    def py(y: float) -> float:
        return top + h - min(y, peak) / peak * h

    out.append(f'<rect x="{LEFT}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#444"/>')
    out.append('<g id="histogram">')
    for c, a, b in zip(density, edges[:-1], edges[1:]):
        out.append(f'<rect x="{px(a):.2f}" y="{py(c):.2f}" width="{px(b) - px(a):.2f}" height="{top + h - py(c):.2f}" '
                   f'fill="{COLOURS["histogram"]}"/>')
    out.append("</g>")
    for key, (xs, ys) in curves.items():
        points = " ".join(f"{px(x):.2f},{py(y):.2f}" for x, y in zip(xs, ys))
        out.append(f'<polyline id="{key}" points="{points}" fill="none" stroke="{COLOURS[key]}" stroke-width="2"/>')
    for i in range(5):
        x = lo + (hi - lo) * i / 4
        out.append(f'<text x="{px(x):.2f}" y="{top + h + 18}" font-size="11" text-anchor="middle">{x:.4g}</text>')
    out.append(_legend(doc_result, top))
    return out + ["</g>"]


def _curves(r: dict, lo: float, hi: float) -> dict:
    """The linear and second-order normals' densities over [lo, hi] (a spike where a sd is 0)."""
    out = {}
    for key in ("linear", "second_order"):
        mean, sd = r["mean"][key], r["sd"][key]
        if mean is None or sd is None:
            continue
        if sd <= (hi - lo) / (10 * CURVE_POINTS):  # narrower than a pixel: a vertical line at the mean
            out[key] = ([mean, mean], [0.0, float("inf")])
            continue
        xs = [lo + (hi - lo) * i / (CURVE_POINTS - 1) for i in range(CURVE_POINTS)]
        out[key] = (xs, [_normal_pdf(x, mean, sd) for x in xs])
    return out


def _legend(r: dict, top: float) -> str:
    lines = [("histogram", f"Monte Carlo: mean {r['mean']['monte_carlo']:.4g}, sd {r['sd']['monte_carlo']:.4g}")]
    for key, label in (("linear", "linear"), ("second_order", "second order")):
        if r["mean"][key] is not None and r["sd"][key] is not None:
            lines.append((key, f"{label}: mean {r['mean'][key]:.4g}, sd {r['sd'][key]:.4g}"))
    parts = []
    for i, (key, text) in enumerate(lines):
        y = top + 16 + 16 * i
        parts.append(f'<rect x="{WIDTH - RIGHT - 250}" y="{y - 9}" width="12" height="10" fill="{COLOURS[key]}"/>'
                     f'<text x="{WIDTH - RIGHT - 232}" y="{y}" font-size="11">{escape(text)}</text>')
    return "".join(parts)


def plot_svg(doc: dict, values) -> str:
    """The picture of a one-point propagation (``values``: its Monte Carlo values, an expression a row)."""
    panels = []
    for k, r in enumerate(doc["results"]):
        panels += _panel(r, values[k], TOP + k * HEIGHT)
    height = HEIGHT * len(doc["results"])
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">\n'
            f'<rect width="{WIDTH}" height="{height}" fill="white"/>\n' + "\n".join(panels) + "\n</svg>\n")
