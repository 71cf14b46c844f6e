"""Time the Hessian as it grows: `gradcli hessian` (tape, fd, symbolic) against a bare TensorFlow
`tape.jacobian`-of-gradient script, on the chained Rosenbrock function

    f(x) = sum_{i=1}^{n-1} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2      at x = (0.5, ..., 0.5)

In-process: TensorFlow is imported once up front (the import, ~4-7 s, would otherwise swamp
everything); each timed call is a fresh computation including its tf.function tracing, exactly
what one `gradcli hessian` command does after the import (gradcli's caches of compiled expressions and
traced functions are cleared before each call, so every call is a cold start like the bare script's).
Each round runs every contender once, in turn (alternating, so drifting machine load hits all alike); the
tables show medians.

The tape table: `gradcli tape` is `gradcli.hessian(..., method="tape")` in its default mode (the guide's
rows up to 10 variables, else all rows stacked in one outer gradient); then each mode of
`gradcli.methods.tape.tape_hessians` on its own, and the jacobian mode once more with its traced function
reused ("warm", what a batch runner's second chunk costs). The second table (fd, symbolic) is left out with
--tape-only.

    python bench/bench_hessian.py [--rounds 3] [--sizes 10,30,100] [--tape-only]
"""

from __future__ import annotations

import argparse
import statistics
import time


def rosenbrock(n: int) -> str:
    return " + ".join(f"100*(x{i + 1} - x{i}**2)**2 + (1 - x{i})**2" for i in range(1, n))


def bare_tape_jacobian(n: int):
    """The reference: what a person writes by hand, vectorised TF ops, one traced function."""
    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()

    @tf.function
    def hessian(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                z = tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
            g = inner.gradient(z, x)
        return outer.jacobian(g, x)

    return hessian(tf.fill([n], tf.constant(0.5, dtype=tf.float64))).numpy()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="10,30,100")
    parser.add_argument("--symbolic-timeout", type=float, default=30.0)
    parser.add_argument("--tape-only", action="store_true", help="leave out the fd and symbolic contenders")
    args = parser.parse_args()

    import numpy as np

    from gradcli.expression import parse
    import gradcli
    from gradcli.compute.batch.hessian import TAPE_MODE_TEXT
    from gradcli.methods.tape import clear_caches, tape_hessians
    from gradcli.methods.tf_runtime import load_tensorflow

    load_tensorflow()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:
        expr = rosenbrock(n)
        at = ",".join(f"x{i}=0.5" for i in range(1, n + 1))
        names = [f"x{i}" for i in range(1, n + 1)]
        point = {k: np.array([0.5]) for k in names}

        def cold(fn):
            def run():
                clear_caches()
                return fn()
            return run

        def hessian(**options):
            return lambda: gradcli.hessian(expr, at=at, **options).to_dict()

        def mode(m):
            return lambda: tape_hessians(parse(expr).tree, point, names, mode=m).matrices[0]

        contenders = {
            "bare tape.jacobian": lambda: bare_tape_jacobian(n),
            "gradcli tape": cold(hessian(method="tape")),
            "stacked": cold(mode("stacked")),
            "jacobian": cold(mode("jacobian")),
            "jacobian, warm": mode("jacobian"),
        }
        if not args.tape_only:
            contenders.update({
                "gradcli fd": hessian(method="fd"),
                "gradcli symbolic": hessian(method="symbolic", symbolic_timeout=args.symbolic_timeout),
                "gradcli all three": cold(hessian(symbolic_timeout=args.symbolic_timeout)),
            })
        times: dict[str, list[float]] = {k: [] for k in contenders}
        results = {}
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                start = time.perf_counter()
                results[name] = fn()
                times[name].append(time.perf_counter() - start)
        # Same matrix from the bare script and gradcli's tape, in every mode.
        ref = results["bare tape.jacobian"]
        scale = max(1.0, np.max(np.abs(ref)))
        for name in ("gradcli tape", "stacked", "jacobian", "jacobian, warm"):
            m = results[name]["hessian"]["tape"] if name == "gradcli tape" else results[name]
            assert np.max(np.abs(np.array(m) - ref)) <= 1e-9 * scale, (n, name)
        mode_used = {text: m for m, text in TAPE_MODE_TEXT.items()}[results["gradcli tape"]["tape"]["mode"]]
        sym_ok = "symbolic" in results["gradcli symbolic"]["hessian"] if not args.tape_only else None
        fd_err = results["gradcli all three"]["error"].get("fd") if not args.tape_only else None
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((n, med, sym_ok, fd_err, mode_used))

    print("| n | bare tape.jacobian (s) | gradcli tape (s) | ratio | its mode | stacked (s) | jacobian (s) "
          "| jacobian, warm (s) |")
    print("|---:|---:|---:|---:|---|---:|---:|---:|")
    for n, med, _, _, mode_used in rows:
        bare = med["bare tape.jacobian"]
        print(f"| {n} | {bare:.3f} | {med['gradcli tape']:.3f} | {med['gradcli tape'] / bare:.2f}x | {mode_used} "
              f"| {med['stacked']:.3f} | {med['jacobian']:.3f} | {med['jacobian, warm']:.3f} |")
    if args.tape_only:
        return
    print()
    print("| n | gradcli fd (s) | gradcli symbolic (s) | all three (s) | fd max error |")
    print("|---:|---:|---:|---:|---:|")
    for n, med, sym_ok, fd_err, _ in rows:
        sym = f"{med['gradcli symbolic']:.2f}" + ("" if sym_ok else " (timed out)")
        err = "-" if fd_err is None else f"{fd_err:.1e}"
        print(f"| {n} | {med['gradcli fd']:.3f} | {sym} | {med['gradcli all three']:.2f} | {err} |")


if __name__ == "__main__":
    main()
