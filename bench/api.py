"""Time the Python API against bare code doing the same job, in one process.

One call of ``gradcli.grad("(x1+5)*x2**2", at={"x1": 2, "x2": 3}, method=...)`` against:

- ``method="tape"``: a bare eager ``tf.GradientTape`` on the same expression (two tf.Variables, the
  product, ``tape.gradient``, the numbers back as Python floats);
- ``method="symbolic"``: bare SymPy: the expression from its text (``sympify``), ``diff`` by each variable,
  ``subs`` of the point, ``float``.

The calls alternate (one gradcli call, one bare call, ...) so that drifting machine load hits both alike,
after a warm-up of each (TensorFlow's and SymPy's imports, the first tracing); the figures are the median
seconds per call and the ratio gradcli / bare.

    python bench/api.py [--calls 300] [--warmup 20]

Targets: the tape within 3x the bare tape, symbolic within 1.5x bare SymPy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

EXPR = "(x1+5)*x2**2"
AT = {"x1": 2.0, "x2": 3.0}


def bare_tape():
    import tensorflow as tf

    x1 = tf.Variable(AT["x1"], dtype=tf.float64)
    x2 = tf.Variable(AT["x2"], dtype=tf.float64)
    with tf.GradientTape() as tape:
        z = (x1 + 5) * x2 ** 2
    return [float(g) for g in tape.gradient(z, [x1, x2])]


def bare_sympy():
    import sympy

    x1, x2 = sympy.symbols("x1 x2", real=True)
    f = sympy.sympify(EXPR, locals={"x1": x1, "x2": x2})
    point = {x1: AT["x1"], x2: AT["x2"]}
    return [float(sympy.diff(f, v).subs(point)) for v in (x1, x2)]


def gradcli_call(method: str):
    import gradcli

    def call():
        return gradcli.grad(EXPR, at=AT, method=method)

    return call


def alternate(ours, bare, calls: int, warmup: int) -> tuple[float, float]:
    """Median seconds per call of ``ours`` and ``bare``, called in turn."""
    for _ in range(warmup):
        ours()
        bare()
    times_ours, times_bare = [], []
    for _ in range(calls):
        start = time.perf_counter()
        ours()
        middle = time.perf_counter()
        bare()
        end = time.perf_counter()
        times_ours.append(middle - start)
        times_bare.append(end - middle)
    return statistics.median(times_ours), statistics.median(times_bare)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    import gradcli

    tape = gradcli.grad(EXPR, at=AT, method="tape").to_dict()["results"][0]["gradient"]["tape"]
    assert [tape["x1"], tape["x2"]] == bare_tape() == bare_sympy() == [9.0, 42.0]
    print(f"gradcli from {os.path.dirname(gradcli.__file__)}")
    print("| one call | gradcli median ms | bare median ms | ratio | target |")
    print("|---|---:|---:|---:|---:|")
    for method, bare, label, target in (("tape", bare_tape, "eager tf.GradientTape", 3.0),
                                         ("symbolic", bare_sympy, "SymPy sympify + diff + subs", 1.5)):
        ours, theirs = alternate(gradcli_call(method), bare, args.calls, args.warmup)
        print(f"| `method=\"{method}\"` vs {label} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | "
              f"{ours / theirs:.2f}x | {target:g}x |")


if __name__ == "__main__":
    main()
