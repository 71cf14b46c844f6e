"""Time propagate's Monte Carlo on a 10-variable expression: 100,000 samples (drawn, correlated through L, and
evaluated by gradcli's vectorised evaluator), after start-up.

    f = sum_i sin(x_i) * exp(x_{i+1} / 10) + x_1*x_10 / (1 + x_5**2)   at x_i = i/10 ± 0.01 i

In process: imports and one warm-up call first (start-up: NumPy's, SymPy's and TensorFlow's imports, the
SymPy worker), then ``rounds`` timed runs of (a) the Monte Carlo alone (gradcli.uncertainty.monte_carlo:
drawing, evaluating, the statistics) and (b) the whole ``gradcli.propagate`` call (the gradient three ways,
the exact Hessian, Monte Carlo, the interval, the verdict). Prints a markdown table for docs/benchmarks.md.

    python bench/propagate.py [--samples 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

N = 10


def expression() -> str:
    terms = [f"sin(x{i})*exp(x{i + 1}/10)" for i in range(1, N)]
    return " + ".join(terms) + f" + x1*x{N}/(1 + x5**2)"


def at_text() -> str:
    return ",".join(f"x{i}={i / 10}±{0.01 * i}" for i in range(1, N + 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    import gradcli
    from gradcli.expression import parse
    from gradcli.uncertainty.inputs import Correlations
    from gradcli.uncertainty.monte_carlo import sample_values, stats
    from gradcli.uncertainty.points import one_point

    text, at = expression(), at_text()
    expr = parse(text)
    correlations = Correlations({("x1", "x2"): 0.5, ("x3", "x7"): -0.3})
    point = one_point([at], list(expr.variables), correlations)
    gradcli.propagate(text, at=at, samples=1000)  # start-up

    def monte_carlo() -> None:
        values = sample_values([expr.tree], point.names, point.means, point.lower, samples=args.samples, seed=0,
                               distribution="normal")
        stats(values[0])

    def whole() -> None:
        gradcli.propagate(text, at=at, samples=args.samples, correlation=["x1,x2=0.5", "x3,x7=-0.3"])

    rows = []
    for label, fn in ((f"Monte Carlo alone, {args.samples:,} samples", monte_carlo),
                      (f"gradcli.propagate (all four ways), {args.samples:,} samples", whole)):
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        rows.append((label, statistics.median(times), min(times)))
    print(f"{N} variables: `{text}`\n")
    print("| what | median | fastest |\n|---|---:|---:|")
    for label, median, fastest in rows:
        print(f"| {label} | {median:.3f} s | {fastest:.3f} s |")


if __name__ == "__main__":
    main()
