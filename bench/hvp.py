"""Time H·v against one gradient on the chained Rosenbrock function over n variables

    f(x) = sum_{i=1}^{n-1} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2      at x_i = 0.5 + i/(10 n), along v_i = (-1)^i

The expression is too long for the parser's limits as one text past ~250 variables (10,000 characters, 5,000
nodes), so it is built here from one parsed pair of terms per i: the same tree a parse would give. In process:
TensorFlow is imported first (its 4-7 s would swamp everything); then the hvp batch core (`gradcli.compute.batch.hvp.HvpBatch`, through `run_batch` at one point) (every
method, exact included, SymPy in its forked worker) and one tape gradient of the same function
(`tape_gradients`, gradcli's grad column: the expression node by node on the tape, and the vectorised
evaluation hvp itself differentiates).

Then ``gradcli hvp`` over 1,000 points of a small function, with and without the exact column (the command
in process). Prints a markdown table for docs/benchmarks.md.

    python bench/hvp.py [--n 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time


def rosenbrock(n: int):
    """(Expression, --at text, --along text) for the chained Rosenbrock function of n variables."""
    from gradcli.expression import Add, Expression, parse

    terms = []
    for i in range(1, n):
        terms.extend(parse(f"100*(x{i + 1} - x{i}**2)**2 + (1 - x{i})**2").tree.terms)
    names = tuple(f"x{i}" for i in range(1, n + 1))
    expr = Expression(Add(tuple(terms)), source=f"chained Rosenbrock, n = {n}", variables=names)
    at = ",".join(f"x{i}={0.5 + i / (10 * n)!r}" for i in range(1, n + 1))
    along = ",".join(f"x{i}={(-1) ** i}" for i in range(1, n + 1))
    return expr, at, along


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import numpy as np

    from gradcli.expression.points import parse_point
    from gradcli.methods.tape import tape_gradients
    from gradcli.methods.tape_vectorise import vectorised_function
    from gradcli.methods.tf_runtime import load_tensorflow

    start = time.perf_counter()
    expr, at, along = rosenbrock(args.n)
    point = parse_point(at)
    print(f"n = {args.n}: expression built in {time.perf_counter() - start:.2f} s "
          f"({len(expr.tree.terms)} terms)")
    tf = load_tensorflow()
    x = np.array([point.values[k] for k in expr.variables])

    def vectorised_gradient():
        f = vectorised_function(expr.tree, list(expr.variables), "float64")
        V = tf.Variable(x)
        with tf.GradientTape() as tape:
            z = f(V)
        return tape.gradient(z, V).numpy()

    rows: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        record = hvp_at_one_point(expr, at, along)
        rows.setdefault("hvp command (all five methods)", []).append(time.perf_counter() - t0)
        for m, s in record["seconds"].items():
            rows.setdefault(f"  {m}", []).append(s)
        t0 = time.perf_counter()
        tape_gradients([expr.tree], {k: np.array([v]) for k, v in point.values.items()}, list(expr.variables))
        rows.setdefault("one grad call (tape_gradients, node by node)", []).append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        vectorised_gradient()
        rows.setdefault("one gradient, vectorised evaluation", []).append(time.perf_counter() - t0)
    for _ in range(args.rounds):  # many points: one chunked run of the command, in process, TensorFlow loaded
        for label, methods in (("without the exact column", "for,ror,rof,fd"), ("with it", "for,ror,rof,fd,symbolic")):
            rows.setdefault(f"hvp at {MANY_POINTS:,} points ({MANY_EXPRESSION}), {label}", []).append(
                time_many_points(methods))
    import os
    import platform

    print(f"bench/hvp.py --n {args.n} --rounds {args.rounds}: {time.strftime('%Y-%m-%d')}, "
          f"{platform.machine()}, {os.cpu_count()} CPU(s), TensorFlow {tf.__version__}\n")
    print("max |error| against symbolic: " + ", ".join(f"{m} {e:.2e}" for m, e in record["max_error"].items()) + "\n")
    print(f"| chained Rosenbrock, n = {args.n:,}, one point; then many points | median s | min s |")
    print("|---|---:|---:|")
    for name, times in rows.items():
        label = name.strip() if not name.startswith("  ") else f"&nbsp;&nbsp;{name.strip()}"
        print(f"| {label} | {statistics.median(times):.3f} | {min(times):.3f} |")


class Collected:
    """A sink (gradcli.compute.batch.engine.Sink) that keeps the header and the records."""

    def start(self, header: dict) -> None:
        self.header, self.records = header, []

    def write(self, batch) -> None:
        self.records += batch.records()

    def finish(self, summary: dict, summary_text: str, warnings: list[str], notes: list[str]) -> None:
        self.summary, self.notes = summary, notes


def hvp_at_one_point(expr, at: str, along: str, *, symbolic_time_limit: float = 120.0) -> dict:
    """The hvp record at the --at point, as the command computes it: the core, its one chunk, run_batch."""
    from gradcli.compute.batch.engine import run_batch
    from gradcli.compute.batch.hvp import HvpBatch
    from gradcli.compute.batch.points import point_chunks

    core = HvpBatch(expr, along=[along], symbolic_time_limit=symbolic_time_limit)
    sink = Collected()
    run_batch(core, point_chunks(core, points=None, grid=None, at=[at], batch_size=4096), sink)
    (record,) = sink.records
    return record


MANY_EXPRESSION = "(x1+5)*x2**2"
MANY_POINTS = 1000


def time_many_points(methods: str) -> float:
    """Seconds of ``gradcli hvp`` over a 40 x 25 grid (the command in process, its output discarded)."""
    from typer.testing import CliRunner

    from gradcli.cli import app

    started = time.perf_counter()
    result = CliRunner().invoke(app, ["hvp", MANY_EXPRESSION, "--grid", "x1=0:1:40,x2=0:1:25", "--along",
                                      "x1=1,x2=2", "-m", methods, "-f", "jsonl"])
    seconds = time.perf_counter() - started
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == MANY_POINTS, result.output[-500:]
    return seconds


if __name__ == "__main__":
    main()
