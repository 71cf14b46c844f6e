"""``descend`` from 400 starts (a 20 x 20 --grid) against ``descend`` from one start, as whole processes.

The issue's target: 400 starts within 2x one start. Both are run as the user runs them (a fresh
``gradcli`` process: Python, TensorFlow's import, SymPy's search in its worker, tracing, the loop,
the output), in turn each round so that drifting machine load hits both alike; the table gives
medians. The extrapolated cost of 400 separate one-start processes is shown for scale.

Then, in this process (TensorFlow already imported), the core alone
(:class:`gradcli.compute.descend.core.DescentCore`): from one start (a batch of one), and over the 400 starts
(tracing included; TensorFlow's one-time setup excluded).

    python bench/bench_descend_batch.py [--rounds 3]

Prints markdown tables of medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HIMMELBLAU = "(x**2+y-11)**2+(x+y**2-7)**2"
GRID = "x=-5:5:20,y=-5:5:20"
START = "x=-5,y=-5"
SCENARIOS = [  # (label, options): manual converges in tens of steps, adam mostly uses its 1000
    ("manual, lr 0.01", ["-o", "manual", "--lr", "0.01"]),
    ("adam, lr 0.01", ["-o", "adam", "--lr", "0.01"]),
]
GRADCLI = [sys.executable, "-m", "gradcli"]


def time_process(args: list[str]) -> float:
    t = time.perf_counter()
    done = subprocess.run(GRADCLI + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t
    if done.returncode not in (0, 1):
        raise SystemExit(f"gradcli {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def time_cores(options: list[str]) -> tuple[float, float]:
    from gradcli.compute.descend import plan_descent, start_chunk
    from gradcli.compute.descend.core import DescentCore
    from gradcli.expression.sources import grid_points

    optimizer, lr = options[1], float(options[3])
    plan = plan_descent(HIMMELBLAU, start=START, optimizers=optimizer, lr=lr)
    t = time.perf_counter()
    core = DescentCore(plan, stationary_time_limit=0)
    core.setup_seconds = 0.0  # no warm-up run: the first core's time includes the first tracing, as before
    core.compute(start_chunk(plan))
    one = time.perf_counter() - t
    many = plan_descent(HIMMELBLAU, optimizers=optimizer, lr=lr)
    core = DescentCore(many, stationary_time_limit=0)
    core.setup_seconds = 0.0
    t = time.perf_counter()
    for chunk in grid_points(GRID, variables=core.variables, chunk_size=1024).chunks():
        core.compute(chunk)
    return one, time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    rows = []
    for label, options in SCENARIOS:
        one_args = ["descend", HIMMELBLAU, "--from", START, *options, "-f", "json"]
        many_args = ["descend", HIMMELBLAU, "--grid", GRID, *options, "-f", "jsonl"]
        one, many = [], []
        for _ in range(args.rounds):
            one.append(time_process(one_args))
            many.append(time_process(many_args))
        rows.append((label, statistics.median(one), statistics.median(many)))

    print(f"Himmelblau, float64, at most 1000 steps; whole `gradcli descend` processes (default "
          f"--stationary-timeout 2), median of {args.rounds} rounds on {os.cpu_count()} CPU(s).\n")
    print("| optimizer | one start (--from) | 400 starts (--grid 20x20) | ratio | 400 one-start processes |")
    print("|---|---:|---:|---:|---:|")
    for label, one, many in rows:
        print(f"| {label} | {one:.2f} s | {many:.2f} s | {many / one:.2f}x | ~{400 * one:.0f} s |")

    from gradcli.methods.tf_runtime import load_tensorflow

    load_tensorflow()
    import keras  # noqa: F401  (imported once, outside the timings)

    print("\nThe cores in one process (TensorFlow imported; tracing included; no SymPy):\n")
    print("| optimizer | DescentCore, one start | DescentCore, 400 starts | per start |")
    print("|---|---:|---:|---:|")
    for label, options in SCENARIOS:
        cores = [time_cores(options) for _ in range(args.rounds)]
        one = statistics.median(c[0] for c in cores)
        many = statistics.median(c[1] for c in cores)
        print(f"| {label} | {one:.3f} s | {many:.3f} s | {many / 400 * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
