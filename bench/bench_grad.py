"""Time whole `gradcli grad` commands against bare scripts doing the same job.

Each round runs every contender once, in turn (alternating, so drifting machine load hits all of them
alike); the table shows the median wall time over the rounds and the ratio to the reference.

    python bench/bench_grad.py [--rounds 7]

Targets (issue 2): full `grad` within 1.15x the bare TF script; `--method symbolic,fd` within 1.3x the
bare SymPy script.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

EXPR = "(x1+5)*x2**2"
AT = "x1=2,x2=3"

BARE_TF = """
import tensorflow as tf
x1 = tf.Variable(2.0, dtype=tf.float64)
x2 = tf.Variable(3.0, dtype=tf.float64)
with tf.GradientTape(persistent=True) as tape:
    z = (x1 + 5) * x2 ** 2
print([g.numpy() for g in tape.gradient(z, [x1, x2])])
"""

BARE_SYMPY = """
import sympy as sp
x1, x2 = sp.symbols("x1 x2", real=True)
f = (x1 + 5) * x2 ** 2
point = {x1: 2, x2: 3}
for v in (x1, x2):
    d = sp.diff(f, v)
    print(v, d, float(d.evalf(30, subs=point)))
def g(a, b):
    return (a + 5) * b ** 2
h = 6.06e-6
print((g(2 + h, 3) - g(2 - h, 3)) / (2 * h), (g(2, 3 + h) - g(2, 3 - h)) / (2 * h))
"""


def gradcli_command() -> list[str]:
    exe = shutil.which("gradcli") or os.path.join(os.path.dirname(sys.executable), "gradcli")
    return [exe]


def time_once(cmd: list[str]) -> float:
    start = time.perf_counter()
    # Refusals exit 2 by design; anything else must succeed.
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    if rc not in (0, 2):
        raise SystemExit(f"{cmd} exited {rc}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="gradcli-bench-")
    bare_tf = os.path.join(tmp, "bare_tf.py")
    bare_sympy = os.path.join(tmp, "bare_sympy.py")
    with open(bare_tf, "w") as fh:
        fh.write(BARE_TF)
    with open(bare_sympy, "w") as fh:
        fh.write(BARE_SYMPY)
    g = gradcli_command()
    contenders = {
        "bare TF GradientTape script": [sys.executable, bare_tf],
        "gradcli grad (all three methods)": g + ["grad", EXPR, "--at", AT],
        "bare SymPy script (+ FD)": [sys.executable, bare_sympy],
        "gradcli grad --method symbolic,fd": g + ["grad", EXPR, "--at", AT, "--method", "symbolic,fd"],
        "gradcli --help": g + ["--help"],
        "gradcli grad '10**10**10' (refused, exit 2)": g + ["grad", "10**10**10", "--at", "x=1"],
        "gradcli grad 'sin(cos(exp(exp(exp(exp(1))))))' (refused)": g + ["grad", "sin(cos(exp(exp(exp(exp(1))))))",
                                                                         "--at", "x=1"],
    }
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for cmd in contenders.values():  # warm the file cache once
        time_once(cmd)
    for _ in range(args.rounds):
        for name, cmd in contenders.items():
            times[name].append(time_once(cmd))
    med = {k: statistics.median(v) for k, v in times.items()}
    ref = {
        "gradcli grad (all three methods)": "bare TF GradientTape script",
        "gradcli grad --method symbolic,fd": "bare SymPy script (+ FD)",
    }
    print(f"`{EXPR}` at {AT}, median of {args.rounds} alternating rounds, Python {sys.version.split()[0]}\n")
    print("| command | median wall time | vs reference |")
    print("|---|---:|---:|")
    for name in contenders:
        ratio = f"{med[name] / med[ref[name]]:.2f}x {ref[name].split(' (')[0]}" if name in ref else ""
        print(f"| {name} | {med[name]:.3f} s | {ratio} |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
