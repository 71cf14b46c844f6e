"""How honest is the complex step (``-m complex``)? Random smooth expressions at random points over every
scale (|x| from 1e-300 to 1e200 in float64, 1e-40 to 1e38 in float32; seeded), each complex-step value
against the exact derivative (mpmath through the independent oracle's translation, tests/oracle.py; see
tests/test_complex_honest.exact_gradient). Counts, over the finite values where f is defined:

- silent:       |value - exact| above its stated estimate (plus the exact value's rounding to the dtype),
                or no finite estimate, with no warning: what the rule forbids;
- warned:       values with a complex-step warning ("cannot be resolved");
- false alarms: warned values that were within their estimate after all (their share of all values); a
                warning that grew the estimate to cover the error counts here too, so also
- right anyway: warned values within 1000 eps (relative) of the exact value: warnings the value did not
                need.

Run from the repository root: ``.venv/bin/python bench/complex_honesty.py [cases] [--before PATH]``;
``--before`` measures another gradcli/methods/complex_step.py (``git show REV:gradcli/methods/complex_step.py``
into a file), which has no warnings of its own.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import random
import signal
import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))

import mpmath  # noqa: E402
import numpy as np  # noqa: E402

from gradcli.expression import parse  # noqa: E402
from oracle import Undefined, Unsupported  # noqa: E402
from strategies import UNARY  # noqa: E402
from test_complex_honest import exact_gradient, rounding_of  # noqa: E402


def expression(rng: random.Random, names: list[str], depth: int = 2) -> str:
    """tests/strategies.smooth_expressions, drawn from a seeded generator."""
    if depth == 0 or rng.random() < 0.5:
        leaf = rng.choice(names + ["1.5", "0.5"])
        return f"{rng.choice(['2', '0.5', '-1.5'])}*{leaf}" if leaf in names and rng.random() < 0.5 else leaf
    kind = rng.choice(["unary", "add", "mul", "sub"])
    if kind == "unary":
        return rng.choice(UNARY).format(expression(rng, names, depth - 1))
    a, b = expression(rng, names, depth - 1), expression(rng, names, depth - 1)
    return {"add": f"({a}) + ({b})", "mul": f"({a})*({b})", "sub": f"({a}) - ({b})"}[kind]


def point(rng: random.Random, names, dtype: str) -> dict[str, float]:
    low, high = (-300, 200) if dtype == "float64" else (-40, 38)
    return {v: float(np.float64(round(rng.uniform(-2, 2), 3) * 10.0 ** rng.randint(low, high)).astype(dtype))
            for v in names}


class _Slow(Exception):
    pass


def _alarm(signum, frame):
    raise _Slow()


def measure(cases: int, module, seed: int = 20240611) -> dict:
    rng = random.Random(seed)
    tally = {"values": 0, "silent": 0, "warned": 0, "false_alarms": 0, "right_anyway": 0, "skipped": 0}
    examples = []
    signal.signal(signal.SIGALRM, _alarm)
    for _ in range(cases):
        dtype = rng.choice(["float64", "float32"])
        expr = expression(rng, ["x", "y"])
        names = list(parse(expr).variables)
        pt = point(rng, names, dtype)
        signal.alarm(20)
        try:
            exact = exact_gradient(expr, pt)
        except (Undefined, Unsupported, _Slow):
            tally["skipped"] += 1
            continue
        finally:
            signal.alarm(0)
        r = module.complex_gradients(parse(expr).tree, {k: np.array([v]) for k, v in pt.items()}, names, dtype=dtype)
        if not math.isfinite(float(r.function[0])):
            tally["skipped"] += 1
            continue
        unresolved = getattr(r, "unresolved", None)
        for j, v in enumerate(names):
            got, est = float(r.values[0, j]), float(r.estimates[0, j])
            if not math.isfinite(got):
                continue
            tally["values"] += 1
            warned = bool(unresolved is not None and unresolved[0, j])
            err = float(abs(mpmath.mpf(got) - exact[v]))
            within = math.isfinite(est) and err <= est + rounding_of(exact[v], dtype)
            tally["warned"] += warned
            tally["false_alarms"] += warned and within
            tally["right_anyway"] += warned and err <= 1e3 * float(np.finfo(dtype).eps) * abs(float(exact[v])) \
                + rounding_of(exact[v], dtype)
            if warned and len(examples) < 12:
                examples.append(("warned", within, expr, pt, dtype, v, got, est, float(exact[v]), unresolved[0, j]))
            if not within and not warned:
                tally["silent"] += 1
                if len(examples) < 40:
                    examples.append(("silent", expr, pt, dtype, v, got, est, float(exact[v])))
    tally["examples"] = examples
    return tally


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="?", type=int, default=500)
    parser.add_argument("--before", help="another complex_step.py to measure")
    parser.add_argument("--seed", type=int, default=20240611)
    args = parser.parse_args()
    if args.before:
        spec = importlib.util.spec_from_file_location("complex_step_before", args.before)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        from gradcli.methods import complex_step as module
    t = measure(args.cases, module, args.seed)
    share = t["false_alarms"] / t["values"] if t["values"] else 0.0
    print(f"{args.cases} cases ({t['skipped']} skipped: f or its derivative not real there), {t['values']} values: "
          f"{t['silent']} silent wrong, {t['warned']} warned, {t['false_alarms']} false alarms ({share:.1%}), "
          f"{t['right_anyway']} right anyway")
    for e in sorted(t["examples"], key=lambda e: e[0] != "silent"):
        print(" ", e)


if __name__ == "__main__":
    main()
