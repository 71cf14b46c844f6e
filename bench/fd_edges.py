"""fd Hessians at a domain edge (issue 8, item 3): how often is a one-sided value outside its own estimate?

Random functions finite on one side of x = a only, at x = a (seeded):

    f = (s (x - a))^p (1 + y^2) + c x y + g(y),   s = +-1, p in {2.25, 2.5, 3.5, 4.5}

whose exact Hessian there is [[0, c], [c, g''(y)]] (closed form: the mpmath oracle differentiates
two-sided, which leaves the domain too). Also functions whose second derivative is infinite at the edge
(sqrt(s (x - a)) h(y), (s (x - a))^1.5 h(y)): fd must not give them a number.

Run from the repository root: ``.venv/bin/python bench/fd_edges.py [cases]``.
"""

from __future__ import annotations

import math
import random
import sys
from collections import Counter

import numpy as np

from gradcli.expression import parse
from gradcli.methods import fd_error
from gradcli.methods.fd_hessian import fd_hessians
from gradcli.methods.fd_stencils import fd_derivatives

G = [("y**2", lambda y: 2.0), ("sin(y)", lambda y: -math.sin(y)), ("exp(y)", math.exp)]
POWERS = (2.25, 2.5, 3.5, 4.5)


def typed(v: float, dtype: str) -> float:
    return float(np.asarray(v, dtype=dtype))


def finite_edges(rng: random.Random, cases: int, dtype: str) -> Counter:
    out = Counter()
    for _ in range(cases):
        a, y, c = (typed(rng.uniform(lo, hi), dtype) for lo, hi in ((-3, 3), (0.2, 2), (-2, 2)))
        s, p, (g, g2) = rng.choice([1, -1]), rng.choice(POWERS), rng.choice(G)
        expr = f"({s}*(x - ({a!r})))**{p}*(1 + y**2) + ({c!r})*x*y + {g}"
        r = fd_hessians(parse(expr).tree, {"x": np.array([a]), "y": np.array([y])}, ["x", "y"], dtype=dtype)
        exact = np.array([[0.0, c], [c, g2(y)]])
        out["cases"] += 1
        if not np.all(np.isfinite(r.matrices[0])):
            out["not finite"] += 1
            out[f"not finite p={p}"] += 1
            continue
        out["one-sided"] += int(r.how[0] == fd_error.ONE_SIDED)
        out["warned"] += int(r.unresolved[0])
        outside = np.abs(r.matrices[0] - exact) > r.estimates[0] + 1e-12 * (1 + np.abs(exact))
        unwarned = bool(outside.any()) and not r.unresolved[0]
        out["outside"] += unwarned
        out[f"outside p={p}"] += unwarned
    return out


def infinite_edges(rng: random.Random, cases: int, dtype: str) -> Counter:
    out = Counter()
    for _ in range(cases):
        a, y = typed(rng.uniform(-3, 3), dtype), typed(rng.uniform(0.2, 2), dtype)
        s, (h, _) = rng.choice([1, -1]), rng.choice(G)
        root = rng.choice(["sqrt({})", "({})**1.5"]).format(f"{s}*(x - ({a!r}))")
        r = fd_hessians(parse(f"{root}*({h}) + x*y").tree, {"x": np.array([a]), "y": np.array([y])}, ["x", "y"],
                        dtype=dtype)
        out["cases"] += 1
        number = bool(np.isfinite(r.matrices[0, 0, 0]))
        out["given a number"] += number and not r.unresolved[0]
        out["warned"] += number and bool(r.unresolved[0])
    return out


def derivative_edges(rng: random.Random, cases: int, dtype: str) -> Counter:
    """Orders 1-4 of (s (x - a))^p + c x^2 at x = a (p > 4: every order finite, exact 2ca, 2c, 0, 0), and
    of (s (x - a))^q, q in {0.5, 1.5, 2.5, 3.5}, whose order ceil(q) is infinite there (the orders below
    are 0)."""
    out = Counter()
    for _ in range(cases):
        a, c = typed(rng.uniform(-3, 3), dtype), typed(rng.uniform(-2, 2), dtype)
        s, p, q = rng.choice([1, -1]), rng.choice((4.25, 4.5, 5.5, 6.5)), rng.choice((0.5, 1.5, 2.5, 3.5))
        d = fd_derivatives(parse(f"({s}*(x - ({a!r})))**{p} + ({c!r})*x**2").tree, {"x": np.array([a])}, "x", 4,
                           dtype=dtype)
        for k, exact in enumerate((2 * c * a, 2 * c, 0.0, 0.0)):
            value, estimate = d.values[0, k], d.estimates[0, k]
            out["finite values"] += 1
            if not math.isfinite(value):
                out["not finite"] += 1
            elif abs(value - exact) > estimate + 1e-12 * (1 + abs(exact)):
                warned = bool(fd_error.cannot_resolve(value, estimate, dtype, k + 1))
                out["outside, warned" if warned else "outside"] += 1
        inf = fd_derivatives(parse(f"({s}*(x - ({a!r})))**{q}").tree, {"x": np.array([a])}, "x", 4, dtype=dtype)
        order = math.ceil(q)
        out["infinite values"] += 1
        value, estimate = inf.values[0, order - 1], inf.estimates[0, order - 1]
        if math.isfinite(value):
            warned = bool(fd_error.cannot_resolve(value, estimate, dtype, order))
            out["infinite given a number, warned" if warned else "infinite given a number"] += 1
    return out


def hard_edges(rng: random.Random, cases: int, dtype: str) -> Counter:
    """The hard end (found in review): b x^2 + A (±x)^p (1 + y^2) + c x y + g(y) at x = 0 with p within 0.1
    of an integer (finite: 2.01 .. 3.02; infinite: 1.5 .. 1.98, 0.5, 1.02) and A from 1e-8 to 1e6, where the
    one-sided differences converge or diverge too slowly, or too far below rounding, for any step to show it."""
    out = Counter()
    g_more = G + [("0", lambda y: 0.0)]
    for _ in range(cases):
        s, y, c = rng.choice([1, -1]), round(rng.uniform(0.2, 2), 3), round(rng.uniform(-2, 2), 3)
        b = rng.choice([0, round(rng.uniform(-3, 3), 3)])
        a, (g, g2) = rng.choice([1, -1, 1e3, -1e3, 1e-3, 1e6, 1e-8]), rng.choice(g_more)
        finite = rng.random() < 0.7
        p = rng.choice([2.02, 2.05, 2.1, 2.25, 2.5, 3.02, 2.01] if finite else [1.5, 1.6, 1.9, 1.98, 0.5, 1.02])
        expr = f"{b}*x**2 + {a}*({s}*x)**{p}*(1+y**2) + {c}*x*y + {g}"
        r = fd_hessians(parse(expr).tree, {"x": np.array([0.0]), "y": np.array([y])}, ["x", "y"], dtype=dtype)
        m, e, warned = r.matrices[0], r.estimates[0], bool(r.unresolved[0])
        out["cases"] += 1
        if not finite:
            out["infinite given a number, unwarned"] += bool(np.isfinite(m[0, 0])) and not warned
        elif not np.all(np.isfinite(m)):
            out["not finite"] += 1
        else:
            exact = np.array([[2 * b, c], [c, g2(y)]])
            out["outside, unwarned"] += bool(np.any(np.abs(m - exact) > e + 1e-12 * (1 + np.abs(exact)))) and not warned
    return out


def main(cases: int = 400) -> None:
    rng = random.Random(8)
    for dtype in ("float64", "float32"):
        finite = finite_edges(rng, cases, dtype)
        infinite = infinite_edges(rng, cases // 4, dtype)
        by_power = ", ".join(f"p={p}: {finite['outside p=' + str(p)]}" for p in POWERS)
        missing = ", ".join(f"p={p}: {finite['not finite p=' + str(p)]}" for p in POWERS)
        print(f"{dtype}: finite Hessian at the edge: {finite['cases']} cases, {finite['one-sided']} one-sided, "
              f"{finite['not finite']} not finite ({missing}), {finite['warned']} warned 'cannot be resolved', "
              f"{finite['outside']} unwarned with an entry outside its estimate ({by_power}); "
              f"infinite (d2/dx2 of x^0.5, x^1.5): {infinite['cases']} cases, {infinite['given a number']} "
              f"given a number unwarned, {infinite['warned']} given one with the warning")
        d = derivative_edges(rng, cases // 4, dtype)
        print(f"{dtype}: derivatives 1-4 at the edge: {d['finite values']} finite values, {d['not finite']} not "
              f"finite, {d['outside']} outside their estimate unwarned ({d['outside, warned']} warned); "
              f"{d['infinite values']} infinite ones, {d['infinite given a number']} given a number unwarned "
              f"({d['infinite given a number, warned']} warned)")
        hard = hard_edges(rng, cases // 4 * 3, dtype)
        print(f"{dtype}: hard edges: {hard['cases']} cases, {hard['outside, unwarned']} finite ones outside their "
              f"estimate unwarned, {hard['infinite given a number, unwarned']} infinite ones given a number "
              f"unwarned, {hard['not finite']} finite ones not finite")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
