"""What the exact symbolic column costs in batches: `gradcli grad --grid` with the float64-only column (the
old path: SymPy's formula in NumPy float64 at every point) against the current one (float64 plus a running
rounding bound per point, 30-digit SymPy where the bound does not vouch for the value), and how many values
go to SymPy.

    python bench/symbolic_exact.py [--sizes 10000,1000000] [--rounds 1] [--methods symbolic,default]

Per expression and size: wall time of the whole command (jsonl to /dev/null, a fresh process each run,
old and new alternating), the share of symbolic values evaluated exactly (computed in process on the same
grid with the same rule the engine applies), and the column's own cost (bounded walk vs plain evaluation).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

EXPRESSIONS = {
    "rosenbrock": "(1 - x)**2 + 100*(y - x**2)**2",
    "smooth": "sin(x)*exp(y) + x**2*y",
    "cancelling": "(exp(x*y) - 1)/(x*y)",
}

# The CLI in a fresh interpreter; OLD swaps the exact column for the plain float64 evaluation.
RUN = """
import sys
if sys.argv[1] == "old":
    from gradcli.methods import symbolic, symbolic_values
    symbolic_values.ExactValues.column = lambda self, key, tree, points, size, skip=None: \\
        symbolic.evaluate(tree, points, size)
sys.argv = ["gradcli"] + sys.argv[2:]
from gradcli.launcher import main
main()
"""


def grid(n: int) -> str:
    side = max(1, round(n ** 0.5))
    return f"x=-2:2:{side},y=-1:3:{side}"


def grid_points(n: int):
    import numpy as np

    side = max(1, round(n ** 0.5))
    x, y = np.meshgrid(np.linspace(-2, 2, side), np.linspace(-1, 3, side), indexing="ij")
    return {"x": x.ravel(), "y": y.ravel()}, side * side


def shares(text: str, n: int) -> tuple[float, int, float, float]:
    """(share of gradient values needing exact evaluation, how many, seconds of the bounded walk, seconds of
    the plain float64 evaluation), over both partial derivatives."""
    import numpy as np

    from gradcli.expression import parse
    from gradcli.methods import symbolic
    from gradcli.methods.symbolic_values import bounded, untrusted

    tree = parse(text).tree
    formulas = symbolic.differentiate([tree], ["x", "y"], [(0, ("x",)), (0, ("y",))])[0]
    env, size = grid_points(n)
    f_undefined = ~np.isfinite(symbolic.evaluate(tree, env, size))
    need, walk, plain = 0, 0.0, 0.0
    for t in formulas.trees.values():
        start = time.perf_counter()
        symbolic.evaluate(t, env, size)
        plain += time.perf_counter() - start
        start = time.perf_counter()
        v, b, u = bounded(t, env)
        walk += time.perf_counter() - start
        need += int((np.broadcast_to(untrusted(v, b, u), (size,)) & ~f_undefined).sum())
    return need / (2 * size), need, walk, plain


def timed(which: str, text: str, n: int, methods: str | None) -> float:
    cmd = [sys.executable, "-c", RUN, which, "grad", text, "--grid", grid(n), "-f", "jsonl", "--batch-size", "65536"]
    if methods:
        cmd += ["-m", methods]
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{which} {text} {n}: exit {proc.returncode}\n{proc.stderr.decode()[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--methods", default="symbolic,default", help="comma list of -m values; default: all")
    parser.add_argument("--exprs", default=",".join(EXPRESSIONS))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| expression | points | -m | old s | new s | new/old | exact share | exact values | walk s | plain s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.exprs.split(","):
        text = EXPRESSIONS[name]
        for n in sizes:
            share, need, walk, plain = shares(text, n)
            for m in args.methods.split(","):
                methods = None if m == "default" else m
                old, new = [], []
                for _ in range(args.rounds):
                    old.append(timed("old", text, n, methods))
                    new.append(timed("new", text, n, methods))
                o, w = statistics.median(old), statistics.median(new)
                print(f"| {name} | {n} | {m} | {o:.2f} | {w:.2f} | {w / o:.2f} | {share:.3%} | {need} | "
                      f"{walk:.3f} | {plain:.3f} |", flush=True)


if __name__ == "__main__":
    main()
