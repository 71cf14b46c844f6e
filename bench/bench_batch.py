"""Many points in one process: `gradcli grad/hessian --points/--grid` against one point, and against bare
batched TensorFlow and JAX scripts on the same points.

Each round runs every contender once, in turn (alternating, so drifting machine load hits all alike);
the table shows the median wall time over the rounds, the ratio to the single-point command, and the
peak RSS of the process tree's largest process (ru_maxrss of the children).

    python bench/bench_batch.py [--rounds 3] [--quick]

Targets (issue 7): grad of Rosenbrock at 10,000 points, all three methods, jsonl: within 1.5x the
single-point grad; 1,000,000 points with -m tape,fd: within 3x the single-point grad, peak RSS under
2 GB; hessian at 10,000 points within 2x the single-point hessian.
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

ROSENBROCK = "(1 - x)**2 + 100*(y - x**2)**2"

BARE_TF = """
import tensorflow as tf
n = int(__import__("sys").argv[1])
x = tf.Variable(tf.linspace(tf.constant(-2.0, tf.float64), 2.0, n))
y = tf.Variable(tf.linspace(tf.constant(-1.0, tf.float64), 3.0, n))
with tf.GradientTape() as tape:
    z = tf.reduce_sum((1 - x) ** 2 + 100 * (y - x ** 2) ** 2)
gx, gy = tape.gradient(z, [x, y])
print(float(tf.reduce_sum(gx)), float(tf.reduce_sum(gy)))
"""

BARE_JAX = """
import sys
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
n = int(sys.argv[1])
f = lambda p: (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2
pts = jnp.stack([jnp.linspace(-2.0, 2.0, n), jnp.linspace(-1.0, 3.0, n)], axis=1)
g = jax.vmap(jax.grad(f))(pts)
print(float(g.sum()))
"""


def gradcli() -> str:
    return shutil.which("gradcli") or os.path.join(os.path.dirname(sys.executable), "gradcli")


def grid(n: int) -> str:
    """About n points on a square grid over Rosenbrock's valley."""
    side = max(1, round(n ** 0.5))
    return f"x=-2:2:{side},y=-1:3:{side}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="skip the 1,000,000-point run")
    args = parser.parse_args()
    g = gradcli()
    work = tempfile.mkdtemp()
    tf_script = os.path.join(work, "bare_tf.py")
    jax_script = os.path.join(work, "bare_jax.py")
    open(tf_script, "w").write(BARE_TF)
    open(jax_script, "w").write(BARE_JAX)
    try:
        import jax  # noqa: F401

        have_jax = True
    except ImportError:
        have_jax = False

    contenders = {
        "grad, 1 point (reference)": [g, "grad", ROSENBROCK, "--at", "x=0.5,y=0.5", "-f", "json"],
        "grad, 10,000 points, jsonl": [g, "grad", ROSENBROCK, "--grid", grid(10_000), "-f", "jsonl"],
        "bare TF script, 10,000 points": [sys.executable, tf_script, "10000"],
        "hessian, 1 point": [g, "hessian", ROSENBROCK, "--at", "x=0.5,y=0.5", "-f", "json"],
        "hessian, 10,000 points, jsonl": [g, "hessian", ROSENBROCK, "--grid", grid(10_000), "-f", "jsonl"],
    }
    if have_jax:
        contenders["bare JAX vmap(grad), 10,000 points"] = [sys.executable, jax_script, "10000"]
    if not args.quick:
        contenders["grad -m tape,fd, 1,000,000 points, jsonl"] = [
            g, "grad", ROSENBROCK, "--grid", grid(1_000_000), "-m", "tape,fd", "-f", "jsonl",
            "--batch-size", "65536"]
        contenders["bare TF script, 1,000,000 points"] = [sys.executable, tf_script, "1000000"]
    times: dict[str, list[float]] = {k: [] for k in contenders}
    rss: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, cmd in contenders.items():
            # a fresh child each time: measure its RSS alone by running it under a tiny wrapper
            wrapper = [sys.executable, "-c", "import resource,subprocess,sys;"
                       "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL);"
                       "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,file=sys.stderr);"
                       "sys.exit(r.returncode)", *cmd]
            start = time.perf_counter()
            proc = subprocess.run(wrapper, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            times[name].append(time.perf_counter() - start)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"{name} exited {proc.returncode}")
            rss[name] = max(rss.get(name, 0.0), int(proc.stderr.decode().split()[-1]) / 1024)
    ref = statistics.median(times["grad, 1 point (reference)"])
    href = statistics.median(times["hessian, 1 point"])
    print("| contender | median s | x single point | peak RSS MB |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        base = href if name.startswith("hessian") else ref
        print(f"| {name} | {statistics.median(ts):.2f} | {statistics.median(ts) / base:.2f} | {rss[name]:.0f} |")


if __name__ == "__main__":
    main()
