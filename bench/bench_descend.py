"""10,000 Adam steps on the Rosenbrock function: gradcli's compiled loop against a bare TensorFlow loop and
the guide's eager loop.

Contenders, run in turn each round (alternating, so drifting machine load hits all of them alike):
- gradcli's core (:class:`gradcli.compute.descend.core.DescentCore` from one start, a batch of one) with
  XLA (what ``descend`` uses when more than 5,000 steps are allowed) and as a plain ``tf.function`` (what
  shorter runs use); the time is the run's own ``seconds``: building the variables and the optimizer,
  tracing, compiling and stepping (TensorFlow's one-time setup is timed apart, as ``descend`` does);
- a bare TensorFlow loop, the program ``descend --show-code`` prints: two scalar ``tf.Variable`` s, Keras'
  Adam, a ``tf.function`` whose ``while`` autograph makes a ``tf.while_loop``, with and without XLA, the
  time likewise including building, tracing and compiling (the issue's yardstick: gradcli within 1.5x);
- the guide's eager loop: ``with tf.GradientTape()`` + ``optimizer.apply_gradients`` once per step in
  Python. 10,000 eager steps take tens of seconds, so it runs ``EAGER_STEPS`` steps (after a short
  warm-up) and the per-step time is multiplied by 10,000.
- TensorFlow's import time, in a fresh interpreter (the issue's yardstick: the 10,000 steps must take
  well under it).

    python bench/bench_descend.py [--rounds 3] [--eager-steps 300]

Prints a markdown table of medians, then each round's gradcli / bare ratio (their range).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

STEPS = 10_000
ROSENBROCK = "100*(y-x**2)**2+(1-x)**2"
START = {"x": -1.2, "y": 1.0}
LR = 0.01


def time_import() -> float:
    code = "import time, os; os.environ['TF_CPP_MIN_LOG_LEVEL']='3'; t=time.perf_counter(); import tensorflow; " \
           "print(time.perf_counter()-t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def time_gradcli(jit: bool) -> tuple[float, str]:
    from gradcli.compute.descend import plan_descent, start_chunk
    from gradcli.compute.descend.core import DescentCore

    plan = plan_descent(ROSENBROCK, start=f"x={START['x']},y={START['y']}", optimizers="adam", lr=LR, steps=STEPS,
                        tol=0.0)
    core = DescentCore(plan, stationary_time_limit=0, jit=jit)
    (record,) = core.compute(start_chunk(plan)).records()
    (run,) = record["runs"]
    assert run["steps"] == STEPS, run
    return run["seconds"], f"x={run['final']['x']:.6f}, y={run['final']['y']:.6f}"


def time_bare(jit: bool) -> tuple[float, str]:
    """The bare TensorFlow loop: variables, Adam, one tf.function (tracing and compiling included)."""
    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()
    import keras

    t = time.perf_counter()
    x = tf.Variable(START["x"], dtype=tf.float64)
    y = tf.Variable(START["y"], dtype=tf.float64)
    keras.config.set_floatx("float64")
    optimizer = keras.optimizers.Adam(learning_rate=LR)
    optimizer.build([x, y])

    @tf.function(jit_compile=jit)
    def descend():
        step = tf.constant(0, dtype=tf.int64)
        while step < STEPS:
            with tf.GradientTape() as tape:
                z = 100 * (y - x ** 2) ** 2 + (1 - x) ** 2
            grads = tape.gradient(z, [x, y])
            optimizer.apply_gradients(zip(grads, [x, y]))
            step += 1
        return step

    steps = int(descend())
    elapsed = time.perf_counter() - t
    keras.config.set_floatx("float32")
    assert steps == STEPS
    return elapsed, f"x={float(x.numpy()):.6f}, y={float(y.numpy()):.6f}"


def time_eager(steps: int) -> float:
    """Per-step seconds of the guide's loop (eager tape + apply_gradients), after a warm-up."""
    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()
    import keras

    x = tf.Variable(START["x"], dtype=tf.float64)
    y = tf.Variable(START["y"], dtype=tf.float64)
    optimizer = keras.optimizers.Adam(learning_rate=LR)

    def step():
        with tf.GradientTape() as tape:
            z = 100 * (y - x ** 2) ** 2 + (1 - x) ** 2
        grads = tape.gradient(z, [x, y])
        optimizer.apply_gradients(zip(grads, [x, y]))

    for _ in range(10):
        step()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--eager-steps", type=int, default=300)
    args = parser.parse_args()

    from gradcli.methods.tf_runtime import load_tensorflow

    load_tensorflow()
    import keras  # noqa: F401  (imported once, outside the timings)
    from gradcli.compute.descend.core import warm_up_xla

    warm_up_xla()  # XLA's one-time start, outside the timings (descend bills it to setup_seconds, not a run)

    results: dict[str, list[float]] = {"xla": [], "graph": [], "bare_xla": [], "bare_graph": [], "eager": [],
                                       "import": []}
    where = bare = ""
    for _ in range(args.rounds):
        t, where = time_gradcli(jit=True)
        results["xla"].append(t)
        t, _ = time_gradcli(jit=False)
        results["graph"].append(t)
        t, bare = time_bare(jit=True)
        results["bare_xla"].append(t)
        t, _ = time_bare(jit=False)
        results["bare_graph"].append(t)
        results["eager"].append(time_eager(args.eager_steps) * STEPS)
        results["import"].append(time_import())

    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"10,000 Adam steps (lr {LR}) on Rosenbrock from (-1.2, 1), float64; median of {args.rounds} rounds "
          f"on {os.cpu_count()} CPU(s). gradcli ended at {where}, the bare loop at {bare}.\n")
    print("| contender | 10,000 steps | per step | vs TF import | vs the bare loop alike |")
    print("|---|---:|---:|---:|---:|")
    rows = [
        ("gradcli `descend` core, tf.function + XLA (incl. tracing and compiling)", med["xla"], med["bare_xla"]),
        ("gradcli `descend` core, tf.function only (incl. tracing)", med["graph"], med["bare_graph"]),
        ("bare TensorFlow loop, tf.function + XLA (incl. tracing and compiling)", med["bare_xla"], None),
        ("bare TensorFlow loop, tf.function only (incl. tracing)", med["bare_graph"], None),
        (f"the guide's eager loop (tape + apply_gradients; {args.eager_steps} steps timed, scaled to {STEPS:,})",
         med["eager"], None),
        ("`import tensorflow` (fresh interpreter)", med["import"], None),
    ]
    for label, seconds, bare_seconds in rows:
        per_step = "-" if label.startswith("`import") else f"{seconds / STEPS * 1e6:.1f} µs"
        ratio = "-" if bare_seconds is None else f"{seconds / bare_seconds:.2f}x"
        print(f"| {label} | {seconds:.3f} s | {per_step} | {seconds / med['import']:.2f}x | {ratio} |")
    # Each round's own ratio: the contenders of one round ran back to back, under the same load.
    for mode, bare_mode, label in (("xla", "bare_xla", "with XLA"), ("graph", "bare_graph", "without XLA")):
        ratios = [g / b for g, b in zip(results[mode], results[bare_mode])]
        print(f"\ngradcli / bare loop {label}, per round: {min(ratios):.2f}x-{max(ratios):.2f}x "
              f"({', '.join(f'{r:.2f}' for r in ratios)})", end="")
    print()


if __name__ == "__main__":
    main()
