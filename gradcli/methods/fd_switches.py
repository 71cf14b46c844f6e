"""Whether a kink fd's stencil sees is a switch of the model functions (min, max, clip, where, abs, relu) beside
the point rather than at it, decided from the tree: a switch argument (min/max's difference of two arguments,
clip's distance to a bound, abs/relu's argument, where's comparison) changes sign within the stencil, and none
is zero at the point within float64's rounding of its terms. fd's one-sided slopes alone cannot tell a kink at
x from one 1e-8 beside it (every two-sided step that resolves the value straddles it); the tree can. Where it
cannot (atan2's cut, a kink of sqrt(x**2), no switch near), the kink stays fd's to report."""

from __future__ import annotations

from gradcli.expression.tree import Call, Node, RuleCall, inline_rules, walk

_UNDECIDED = frozenset({"atan2"})
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
# Two float64 values this close (relative) may stand for a tie of the exact ones.
TIE_ULPS = 64.0


def _switch_arguments(tree: Node):
    """(a, b) pairs whose tie is a switch of a model function (b None: a's zero); None where the tree has a
    function whose jumps the walk does not know."""
    pairs = []
    for node in walk(inline_rules(tree)):
        if not isinstance(node, Call) or isinstance(node, RuleCall):
            continue
        if node.func in _UNDECIDED:
            return None
        if node.func in ("abs", "relu"):
            pairs.append((node.args[0], None))
        elif node.func in ("min", "max"):
            pairs += [(a, b) for k, a in enumerate(node.args) for b in node.args[k + 1:]]
        elif node.func == "clip":
            pairs += [(node.args[0], node.args[1]), (node.args[0], node.args[2])]
        elif node.func in _COMPARISONS:
            pairs.append((node.args[0], node.args[1]))
    return pairs


def _gaps(pairs, points, size: int):
    """[(a - b at the points, whether that difference may be a tie within rounding)] per pair."""
    import numpy as np

    from gradcli.methods.symbolic import evaluate

    eps = np.finfo(np.float64).eps
    out = []
    for a, b in pairs:
        va = np.broadcast_to(evaluate(a, points, size), (size,)).astype(np.float64)
        vb = np.zeros(size) if b is None else np.broadcast_to(evaluate(b, points, size), (size,)).astype(np.float64)
        tie = (np.abs(va - vb) <= TIE_ULPS * eps * np.maximum(np.abs(va), np.abs(vb))) | ~np.isfinite(va - vb)
        out.append((va - vb, tie))
    return out


def switch_beside(tree: Node, env, variable: str, width, size: int):
    """[size] bool: a switch of a model function lies within ``width`` of the point along ``variable`` (its
    argument changes sign across [x - width, x + width]) and the point is not at it (no switch argument ties
    there): a kink fd's stencil sees there is the switch beside x, not one at x. False where the tree cannot
    tell (a function it does not know, no switch near, or the point at a switch)."""
    import numpy as np

    pairs = _switch_arguments(tree)
    if not pairs:
        return np.zeros(size, dtype=bool)
    with np.errstate(all="ignore"):
        points = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), (size,)) for k, v in env.items()}
        width = np.broadcast_to(np.asarray(width, dtype=np.float64), (size,))
        tied = np.zeros(size, dtype=bool)
        for _, tie in _gaps(pairs, points, size):
            tied |= tie
        lo = _gaps(pairs, {**points, variable: points[variable] - width}, size)
        hi = _gaps(pairs, {**points, variable: points[variable] + width}, size)
        near = np.zeros(size, dtype=bool)
        for (g_lo, t_lo), (g_hi, t_hi) in zip(lo, hi):
            near |= (np.sign(g_lo) != np.sign(g_hi)) | t_lo | t_hi
    return near & ~tied
