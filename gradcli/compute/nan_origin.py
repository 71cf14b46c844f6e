"""Where a NaN or an inf came from: the first node of the tape whose value, adjoint or tangent went wrong (not
finite, or far from its exact value while that is finite), and why: an overflow, an underflow, ``0 * inf`` in
the chain rule (where's untaken branch), digits lost to rounding.

:func:`origins` reads a whole :class:`gradcli.compute.trace.TraceReport` (``trace``'s own table);
gradcli.compute.tape_origin traces one expression for a caller's pointer and the batch cores' notes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradcli.dtypes import LARGEST, MACHINE_EPSILON, SMALLEST_NORMAL

# "Far from exact": a relative error above this power of the dtype's epsilon (float64 1.5e-8, float32 3.5e-4).
FAR_POWER = 0.5
WHAT = {"forward": "value", "reverse": "adjoint", "along": "tangent"}


@dataclass
class BadNode:
    """The first node that went wrong in one sweep.

    ``sweep``: "forward" (its value), "reverse" (its adjoint) or "along" (its tangent); ``node``: its name in
    ``gradcli trace`` (x1, v3); ``operation``: the op on its inputs' names ("exp(x)", "1 + v1");
    ``expression``: the sub-expression it is the value of; ``value`` and ``exact``: the tape's and SymPy's
    (None: NaN or undefined); ``why``: the reason, naming the inputs or terms that made it."""

    sweep: str
    node: str
    operation: str
    expression: str
    value: float | None
    exact: float | None
    why: str
    dtype: str = "float64"

    @property
    def message(self) -> str:
        """The trace's line: "adjoint of x is nan where the exact adjoint is 1.0: ..." """
        what = WHAT[self.sweep]
        return (f"{what} of {self.node} is {show(self.value, self.dtype)} where the exact {what} is "
                f"{show(self.exact)}: {self.why}")

    @property
    def pointer(self) -> str:
        """One line for a warning elsewhere (grad's), which names no trace node: the sub-expression first."""
        what = WHAT[self.sweep]
        where = self.expression if self.node == self.expression else f"{self.expression} (trace node {self.node})"
        return (f"the tape first goes wrong at {where}: its {what} is {show(self.value, self.dtype)}, exact "
                f"{show(self.exact)} ({self.why}); gradcli trace shows every node")

    def to_dict(self) -> dict:
        return {"sweep": self.sweep, "node": self.node, "operation": self.operation,
                "expression": self.expression, "value": self.value, "exact": self.exact, "why": self.why,
                "message": self.message}


def bad(value: float | None, exact: float | None, dtype: str) -> bool:
    """Not finite, or far from the exact value, where that is finite."""
    if value is None or exact is None or not math.isfinite(exact):
        return False
    if not math.isfinite(value):
        return True
    far = MACHINE_EPSILON[dtype] ** FAR_POWER
    return abs(value - exact) > far * abs(exact) and abs(value - exact) > SMALLEST_NORMAL[dtype]


def show(x: float | None, dtype: str = "float64") -> str:
    from gradcli.results import shortest

    if x is None:
        return "undefined"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    s = shortest(x, dtype)
    return f"{s:.6g}" if abs(s) >= 1e6 or (s != 0 and abs(s) < 1e-4) else repr(s)


def origins(report) -> list[BadNode]:
    """The first node of each sweep whose value went wrong (and, in the chain-rule sweeps, the first whose value
    is not finite, when that is another node), in the order forward, reverse, along; empty when none did or
    there are no exact values."""
    if not report.exact_available:
        return []
    nodes, dtype = report.nodes, report.dtype
    found: list[BadNode] = []

    def add(sweep: str, n, value, exact, why: str) -> None:
        found.append(BadNode(sweep, n.name, n.text, n.expression, value, exact, why, dtype))

    for n in nodes:  # forward: the first wrong value (its inputs are right: they come first)
        if bad(n.value, n.exact, dtype):
            add("forward", n, n.value, n.exact, _forward_why(n, nodes, dtype))
            break
    for sweep, attr, exact_attr, order in (
            ("reverse", "adjoint", "exact_adjoint", range(len(nodes) - 1, -1, -1)),
            ("along", "tangent", "exact_tangent", range(len(nodes)))):
        if sweep == "along" and report.along is None:
            continue
        first_bad = first_nonfinite = None
        for k in order:
            v, e = getattr(nodes[k], attr), getattr(nodes[k], exact_attr)
            if first_bad is None and bad(v, e, dtype):
                first_bad = k
            if first_nonfinite is None and v is not None and not math.isfinite(v) and e is not None \
                    and math.isfinite(e):
                first_nonfinite = k
        for k in dict.fromkeys(x for x in (first_bad, first_nonfinite) if x is not None):
            n = nodes[k]
            why = _reverse_why(n, nodes, dtype) if sweep == "reverse" else _along_why(n, nodes, dtype)
            add(sweep, n, getattr(n, attr), getattr(n, exact_attr), why)
    return found


def _forward_why(n, nodes, dtype: str) -> str:
    shown = ", ".join(f"{i.name} = {show(i.value, dtype)}" for i in (nodes[k] for k in n.inputs))
    head = f"{n.name} = {n.text}"
    if n.value is not None and math.isinf(n.value) and n.exact is not None and abs(n.exact) > LARGEST[dtype]:
        return f"{head} overflows {dtype} (largest finite {LARGEST[dtype]:.4g})" + (f" from {shown}" if shown else "")
    if n.value == 0 and n.exact and abs(n.exact) < SMALLEST_NORMAL[dtype]:
        return f"{head} underflows {dtype} to 0" + (f" from {shown}" if shown else "")
    # an input that overflowed where its exact value is beyond the dtype too (so not itself "wrong")
    over = [f"{i.name} = {i.text} overflowed {dtype}" for i in (nodes[k] for k in n.inputs)
            if i.value is not None and math.isinf(i.value) and i.exact is not None and abs(i.exact) > LARGEST[dtype]]
    also = f"; {', '.join(over)}" if over else ""
    if n.value is not None and math.isnan(n.value):
        return f"{head} is nan from {shown} (an undefined operation on them in {dtype}{also})"
    if n.value is not None and math.isinf(n.value):
        return f"{head} is {show(n.value)} from {shown} in {dtype}" + (f" ({also[2:]})" if over else "")
    return f"{head} loses its digits in {dtype} from {shown} (rounding or cancellation)"


def _untaken(user, nodes) -> bool:
    """Whether ``user``'s adjoint is zero because a where passed it nothing (its untaken branch)."""
    return any(nodes[u].op == "where" and partial == 0 for u, _, partial, _ in user.adjoint_terms)


def _zero_times_inf(adj: float, partial: float | None) -> bool:
    return adj == 0 and (partial is None or not math.isfinite(partial))


def _reverse_why(n, nodes, dtype: str) -> str:
    if not n.adjoint_terms:
        return f"it is the seed {show(n.seed)}"
    parts = []
    for user, adj, partial, term in n.adjoint_terms:
        u = nodes[user]
        text = (f"{show(adj, dtype)} × {show(partial, dtype)} = {show(term, dtype)} (the adjoint of {u.name} = "
                f"{u.text}, exact {show(u.exact_adjoint)}, times d{u.name}/d{n.name})")
        if _zero_times_inf(adj, partial) and (term is None or not math.isfinite(term)):
            if u.exact_adjoint == 0 and _untaken(u, nodes):
                text += (f": {u.name} is where's untaken branch, so its adjoint is 0, but d{u.name}/d{n.name} is "
                         f"{show(partial)} at {n.name} = {show(n.value, dtype)} and 0 × {show(partial)} is nan")
            elif u.exact_adjoint == 0:
                text += f": {u.name} does not reach the result here (adjoint 0), but d{u.name}/d{n.name} is not finite"
            else:
                text += f": {u.name}'s adjoint is 0 where it should be {show(u.exact_adjoint)}"
                if u.value is not None and not math.isfinite(u.value):
                    text += f", and d{u.name}/d{n.name} comes from its value {show(u.value)}"
        parts.append(text)
    seed = f" + the seed {show(n.seed)}" if n.seed else ""
    return f"adjoint of {n.name} = " + " + ".join(parts) + seed


def _along_why(n, nodes, dtype: str) -> str:
    if not n.tangent_terms:
        return f"it is the direction's {show(n.tangent, dtype)}"
    parts = [f"{show(p, dtype)} × {show(t, dtype)} = {show(j, dtype)} (d{n.name}/d{nodes[i].name} times the "
             f"tangent of {nodes[i].name})" for i, p, t, j in n.tangent_terms]
    return f"tangent of {n.name} = {n.text}: " + " + ".join(parts)
