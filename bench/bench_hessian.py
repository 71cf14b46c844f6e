"""Time the Hessian as it grows: `gradcli hessian` (tape, fd, symbolic) against a bare TensorFlow
`tape.jacobian`-of-gradient script, on the chained Rosenbrock function

    f(x) = sum_{i=1}^{n-1} 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2      at x = (0.5, ..., 0.5)

In-process: TensorFlow is imported once up front (the import, ~4-7 s, would otherwise swamp
everything); each timed call is a fresh computation including its tf.function tracing, exactly
what one `gradcli hessian` command does after the import. Each round runs every contender once, in
turn (alternating, so drifting machine load hits all alike); the table shows medians.

    python bench/bench_hessian.py [--rounds 3] [--sizes 10,30,100]
"""

from __future__ import annotations

import argparse
import statistics
import time


def rosenbrock(n: int) -> str:
    return " + ".join(f"100*(x{i + 1} - x{i}**2)**2 + (1 - x{i})**2" for i in range(1, n))


def bare_tape_jacobian(n: int):
    """The reference: what a person writes by hand, vectorised TF ops, one traced function."""
    from gradcli.tape import load_tensorflow

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
    args = parser.parse_args()

    import numpy as np

    from gradcli.hessian import compute_hessian
    from gradcli.tape import load_tensorflow

    load_tensorflow()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:
        expr = rosenbrock(n)
        at = ",".join(f"x{i}=0.5" for i in range(1, n + 1))
        contenders = {
            "bare tape.jacobian": lambda: bare_tape_jacobian(n),
            "gradcli tape": lambda: compute_hessian(expr, at=at, methods="tape"),
            "gradcli fd": lambda: compute_hessian(expr, at=at, methods="fd"),
            "gradcli symbolic": lambda: compute_hessian(expr, at=at, methods="symbolic",
                                                        symbolic_time_limit=args.symbolic_timeout),
            "gradcli all three": lambda: compute_hessian(expr, at=at, symbolic_time_limit=args.symbolic_timeout),
        }
        times: dict[str, list[float]] = {k: [] for k in contenders}
        results = {}
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                start = time.perf_counter()
                results[name] = fn()
                times[name].append(time.perf_counter() - start)
        # Same matrix from the bare script and gradcli's tape.
        ref = results["bare tape.jacobian"]
        tape = np.array(results["gradcli tape"].hessian["tape"])
        fd_err = results["gradcli all three"].error.get("fd")
        assert np.max(np.abs(tape - ref)) <= 1e-9 * max(1.0, np.max(np.abs(ref))), n
        sym_ok = "symbolic" in results["gradcli symbolic"].hessian
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((n, med, sym_ok, fd_err))

    print(f"| n | bare tape.jacobian (s) | gradcli tape (s) | ratio | gradcli fd (s) | gradcli symbolic (s) "
          f"| all three (s) | fd max error |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, med, sym_ok, fd_err in rows:
        sym = f"{med['gradcli symbolic']:.2f}" + ("" if sym_ok else " (timed out)")
        err = "-" if fd_err is None else f"{fd_err:.1e}"
        print(f"| {n} | {med['bare tape.jacobian']:.2f} | {med['gradcli tape']:.2f} | "
              f"{med['gradcli tape'] / med['bare tape.jacobian']:.2f}x | {med['gradcli fd']:.3f} | {sym} | "
              f"{med['gradcli all three']:.2f} | {err} |")


if __name__ == "__main__":
    main()
