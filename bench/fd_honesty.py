"""How honest are gradcli's fd values? (issue 8, items 1-6: the measurement behind the README's numbers.)

Random smooth expressions at random points (seeded), each fd value against the mpmath oracle in
tests/oracle.py (60 digits, no gradcli code): derivatives of orders 1-6 (float64) and 1-4 (float32),
gradients and Hessians of two variables. Counts

- outside: |fd - exact| above fd's own stated estimate (fd_error_estimate), with no warning about it;
- gross:   |fd - exact| above an honest tolerance (relative 1e-5 in float64, at least 1e-8 absolute; 1e-2
           in float32, at least 1e-4) with no warning: what an unwarned user would be misled by.

Run from the repository root: ``.venv/bin/python bench/fd_honesty.py [cases]``. To measure another
version, put its ``gradcli`` package first on PYTHONPATH (it needs no estimate: "outside" is then n/a).
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))

import oracle  # noqa: E402

import gradcli  # noqa: E402

UNARY = ["sin({})", "cos({})", "tanh({})", "atan({})", "sigmoid({})", "exp({}/2)", "sqrt(1 + ({})**2)",
         "log(2 + sin({}))", "erf({})", "({})**2", "({})**3/5", "exp(sin({}))", "1/(1.5 + cos({}))"]


def expression(rng: random.Random, names: list[str], depth: int = 3) -> str:
    if depth == 0 or rng.random() < 0.25:
        leaf = rng.choice(names + ["1.5", "0.5"])
        return f"{rng.choice(['2', '0.5', '-1.5', '3'])}*{leaf}" if leaf in names and rng.random() < 0.5 else leaf
    kind = rng.choice(["unary", "unary", "add", "mul", "sub"])
    if kind == "unary":
        return rng.choice(UNARY).format(expression(rng, names, depth - 1))
    a, b = expression(rng, names, depth - 1), expression(rng, names, depth - 1)
    return {"add": f"({a}) + ({b})", "mul": f"({a})*({b})", "sub": f"({a}) - ({b})"}[kind]


def honest(dtype: str, exact: float) -> float:
    return max(1e-8, 1e-5 * abs(exact)) if dtype == "float64" else max(1e-4, 1e-2 * abs(exact))


class Tally:
    def __init__(self):
        self.values = self.outside = self.gross = self.warned = 0

    def add(self, got, exact, estimate, warned: bool, dtype: str) -> None:
        if got is None or not math.isfinite(got):
            return
        self.values += 1
        err = abs(got - exact)
        self.warned += warned
        if not warned and estimate is not None and err > estimate:
            self.outside += 1
        if not warned and err > honest(dtype, exact):
            self.gross += 1


def derivative_case(rng, tally: Tally, dtype: str) -> None:
    expr = expression(rng, ["x"])
    x = f"{rng.uniform(-2, 2):.3f}"
    order = rng.randint(1, 6 if dtype == "float64" else 4)
    try:
        exact = [float(oracle.oracle_derivative(expr, "x", {"x": x}, k)) for k in range(1, order + 1)]
    except (oracle.Undefined, oracle.Unsupported):
        return
    r = gradcli.derivative(expr, at=f"x={x}", order=order, method="symbolic,fd", dtype=dtype).to_dict()
    for k, (fd, estimate, want) in enumerate(zip(r["derivatives"]["fd"], r["fd_error_estimate"], exact), start=1):
        warned = any(f"derivative {k}" in w and "fd" in w for w in r["warnings"])
        tally.add(fd, want, estimate, warned, dtype)


def gradient_case(rng, tally: Tally, dtype: str) -> None:
    expr = expression(rng, ["x", "y"])
    point = {"x": f"{rng.uniform(-2, 2):.3f}", "y": f"{rng.uniform(-2, 2):.3f}"}
    try:
        exact = {v: float(oracle.oracle_partial(expr, point, {v: 1})) for v in point}
    except (oracle.Undefined, oracle.Unsupported):
        return
    r = gradcli.grad(expr, at=",".join(f"{k}={v}" for k, v in point.items()), method="symbolic,fd",
                     dtype=dtype).to_dict()
    res = r["results"][0]
    for v in point:
        warned = any(f"/d{v}" in w and "fd" in w for w in r["warnings"])
        tally.add(res["gradient"]["fd"].get(v), exact[v], res.get("fd_error_estimate", {}).get(v), warned, dtype)


def hessian_case(rng, tally: Tally, dtype: str) -> None:
    expr = expression(rng, ["x", "y"])
    point = {"x": f"{rng.uniform(-2, 2):.3f}", "y": f"{rng.uniform(-2, 2):.3f}"}
    try:
        exact = [[float(e) for e in row] for row in oracle.oracle_hessian(expr, point)]
    except (oracle.Undefined, oracle.Unsupported):
        return
    r = gradcli.hessian(expr, at=",".join(f"{k}={v}" for k, v in point.items()), method="symbolic,fd",
                        dtype=dtype).to_dict()
    warned = any("fd" in w for w in r["warnings"])  # the Hessian warning names only the worst entry
    estimates = r.get("fd_error_estimate")
    for i in range(2):
        for j in range(2):
            tally.add(r["hessian"]["fd"][i][j], exact[i][j], estimates[i][j] if estimates else None, warned, dtype)


def main(cases: int = 200) -> None:
    rng = random.Random(8)
    tallies = {}
    for n in range(cases):
        kind, dtype = [("derivative", "float64"), ("derivative", "float64"), ("derivative", "float32"),
                       ("grad", "float64"), ("hessian", "float64")][n % 5]
        tally = tallies.setdefault((kind, dtype), Tally())
        {"derivative": derivative_case, "grad": gradient_case, "hessian": hessian_case}[kind](rng, tally, dtype)
    print(f"{'values':>22} {'values':>7} {'warned':>7} {'outside estimate, unwarned':>27} {'gross, unwarned':>16}")
    total = Tally()
    for (kind, dtype), t in sorted(tallies.items()):
        print(f"{kind + ' ' + dtype:>22} {t.values:>7} {t.warned:>7} {t.outside:>27} {t.gross:>16}")
        for name in ("values", "outside", "gross", "warned"):
            setattr(total, name, getattr(total, name) + getattr(t, name))
    print(f"{'all':>22} {total.values:>7} {total.warned:>7} {total.outside:>27} {total.gross:>16}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
