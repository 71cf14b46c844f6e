"""The constants of gradcli.compute.work's cost model, measured on this machine: the seconds per point of
each method of grad and hessian over a few sizes (tree nodes, variables), fitted as

    seconds per point = PER_UNIT x units_per_point + PER_OUTPUT x outputs_per_point

(gradcli.compute.work has both). Each size times the batch core's compute() on two chunk sizes after a
warm-up chunk, and takes the difference: what a point costs, without the fixed costs of a request (imports,
SymPy's one differentiation, TensorFlow's tracing). Prints the measurements, the fitted constants and the
ones gradcli.compute.work has now. Runs in about two and a half minutes on 2 cores (--quick: about one).

    python bench/work_estimate.py [--quick]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from gradcli.compute import work
from gradcli.compute.batch.grad import GradBatch
from gradcli.compute.batch.hessian import HessianBatch
from gradcli.expression.sources.shapes import PointChunk

# (terms, variables, small chunk, large chunk): a term is x_i*sin(x_j), 4 nodes
GRAD_SIZES = [(10, 4, 100, 2000), (100, 40, 20, 200), (400, 100, 4, 40), (550, 200, 2, 10)]
HESSIAN_SIZES = [(10, 4, 100, 1000), (50, 20, 10, 60), (100, 40, 2, 12), (200, 60, 1, 4)]
METHODS = {"grad": ["fd", "complex", "tape", "symbolic"], "hessian": ["fd", "tape", "symbolic"]}


def expression(terms: int, variables: int) -> str:
    return " + ".join(f"x{i % variables}*sin(x{(i * 7 + 1) % variables})" for i in range(terms))


def chunk(names: list[str], size: int, rng) -> PointChunk:
    return PointChunk({v: rng.uniform(0.5, 1.5, size) for v in names}, [{}] * size, [None] * size)


def best_time(core, points: PointChunk) -> float:
    """The quicker of two computes of ``points`` (the machine may be shared)."""
    times = []
    for _ in range(2):
        start = time.perf_counter()
        core.compute(points).lines()
        times.append(time.perf_counter() - start)
    return min(times)


def seconds_per_point(core, small: int, large: int) -> float:
    """The slope between a small and a large chunk, the large one grown until it takes 0.2 s (so that the
    difference is not noise), within the core's own chunk size."""
    rng = np.random.default_rng(0)
    core.start()
    core.header()  # SymPy's differentiation: once per request, not per point
    first = chunk(core.variables, small, rng)
    core.compute(first).lines()  # warm-up: TensorFlow traces its function
    t_small = best_time(core, first)
    limit = core.chunk_size(1_000_000)
    size = min(large, limit)
    while True:
        t_large = best_time(core, chunk(core.variables, size, rng))
        if t_large >= 0.2 or size >= limit or size >= 16 * large:
            break
        size = min(limit, size * 4)
    return max(t_large - t_small, 0.0) / (size - small)


def measure(command: str, method: str, sizes) -> list[tuple[int, int, float]]:
    rows = []
    for terms, variables, small, large in sizes:
        text = expression(terms, variables)
        core = (GradBatch([text], methods=method, symbolic_time_limit=120) if command == "grad"
                else HessianBatch(text, methods=method, symbolic_time_limit=120))
        nodes = work.node_count(core.trees)
        rows.append((nodes, len(core.wrt), seconds_per_point(core, small, large)))
    return rows


def fit(command: str, method: str, rows) -> tuple[float, float]:
    """Least squares of the relative error for (per unit, per output), neither negative, over the two
    largest sizes: there the limit bites, and a small size's seconds are mostly noise."""
    rows = rows[-2:]
    units = np.array([work.units_per_point(command, method, n, k) for n, k, _ in rows], dtype=float)
    outputs = np.array([work.outputs_per_point(command, k) for _, k, _ in rows], dtype=float)
    seconds = np.array([s for _, _, s in rows])
    kept = seconds > 0  # a difference lost in the noise says nothing
    units, outputs, seconds = units[kept], outputs[kept], seconds[kept]
    weights = 1 / seconds
    units, outputs, ones = units * weights, outputs * weights, seconds * weights
    (a, b), *_ = np.linalg.lstsq(np.stack([units, outputs], axis=1), ones, rcond=None)
    if b < 0:
        a, b = float(ones @ units / (units @ units)), 0.0
    elif a < 0:
        a, b = 0.0, float(ones @ outputs / (outputs @ outputs))
    return float(a), float(b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the two smaller sizes of each only")
    args = parser.parse_args()
    sizes = {"grad": GRAD_SIZES[:2] if args.quick else GRAD_SIZES,
             "hessian": HESSIAN_SIZES[:2] if args.quick else HESSIAN_SIZES}
    print(f"# {platform.machine()} {platform.processor() or ''} {time.strftime('%Y-%m-%d')}")
    print("| command | method | nodes | variables | s/point | model s/point (fit) | model s/point (now) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    fitted = {}
    for command, methods in METHODS.items():
        for method in methods:
            rows = measure(command, method, sizes[command])
            a, b = fitted[command, method] = fit(command, method, rows)
            for n, k, s in rows:
                model = a * work.units_per_point(command, method, n, k) + b * work.outputs_per_point(command, k)
                now = work.seconds_per_point(command, method, n, k)
                print(f"| {command} | {method} | {n} | {k} | {s:.3g} | {model:.3g} | {now:.3g} |")
    print()
    print("| command | method | PER_UNIT (fit) | PER_OUTPUT (fit) | PER_UNIT (now) | PER_OUTPUT (now) |")
    print("|---|---|---:|---:|---:|---:|")
    for (command, method), (a, b) in fitted.items():
        print(f"| {command} | {method} | {a:.2g} | {b:.2g} | {work.PER_UNIT[command, method]:.2g} | "
              f"{work.PER_OUTPUT[command, method]:.2g} |")


if __name__ == "__main__":
    main()
