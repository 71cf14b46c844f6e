"""Where ``check`` looks when SymPy cannot decide: points chosen from both formulas' features, then more
points where the formulas come closest to differing.

Uniform samples miss what is narrow: ``exp(-1e4*x**2)`` is 0 to float64's precision outside |x| < 0.3,
a pole's neighbourhood is a vanishing share of a box, and a cancellation (``1 - cos(x)`` near 0) lives at
small scales. So the points are:

- random samples in the box (``--samples``) and a geometric ladder closing in on its centre and on 0;
- the features of the expression, the expected formulas and SymPy's derivatives: where a denominator, a
  power's base or a function's argument at its domain edge is zero (poles, branch points), where a kink's
  argument is (abs, sign, max/min, comparisons), where an exponential's argument is -1 or 1 (the edge of
  the band where it is O(1)), and where a sum is zero (its terms cancel). Each feature function is scanned
  along each variable (through the box's centre and through a few samples), its local minima of |g| are
  refined, and a geometric ladder closes in on each from both sides: the scales of the band, the pole and
  the cancellation all lie on it;
- a dense sweep (a grid for one variable, uniform points for several);
- refinement: around the points where |expected - exact| is the largest share of the tolerance, points at
  geometrically shrinking offsets, a few rounds (:func:`around`).
"""

from __future__ import annotations

from fractions import Fraction

from gradcli.expression.tree import Add, Call, Mul, Node, Num, Pow, Var, walk

MAX_TRIES = 50  # random candidates per wanted sample, before giving up on a domain too small to hit
# Ladder points per side of each centre: half-widths 2^0 .. 2^-(LADDER - 1) of the box (down to ~1e-12 of it).
LADDER = 40
# Points of the dense sweep: a grid for one variable (spacing 6e-5 of the box), uniform points for several.
DENSE = 2**16
# Points of each feature scan along a variable, and the features kept per scan (the smallest |g| first).
SCAN = 4097
FEATURES_PER_SCAN = 12
# Feature functions taken from the formulas (the first ones found, outermost first), scan lines per
# variable besides the one through the centre (through the first random samples), and scans in all (a
# function along a variable through a base point: ~10 ms each), taken through the centre first.
MAX_FEATURE_FUNCTIONS = 48
EXTRA_LINES = 2
MAX_SCANS = 64
# Refinement: rounds, points refined per round, and offsets around each (half-widths 2^-1 .. 2^-REFINE_DEPTH).
REFINE_ROUNDS = 3
REFINE_POINTS = 6
REFINE_DEPTH = 44

# Functions whose argument's zero is a feature (a kink, a jump, a branch point or a domain edge), and those
# whose argument's +-1 is (the edge of the band where they are neither flat nor exploding, or a domain edge).
_ZERO_ARGUMENT = frozenset({"abs", "sign", "heaviside", "dirac_delta", "relu", "sqrt", "log", "log2", "log10"})
_UNIT_ARGUMENT = frozenset({"exp", "expm1", "sinh", "cosh", "tanh", "sigmoid", "softplus", "erf", "asin",
                            "acos", "atanh", "acosh", "log1p", "logsumexp"})
ONE = Num(Fraction(1), "1")
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_KINKS = frozenset({"max", "min", "clip"})


def feature_functions(trees: list[Node]) -> list[Node]:
    """The functions whose zeros (or near-zeros: the minima of |g|) are features of ``trees``."""
    out: list[Node] = []
    seen: set = set()

    def add(node: Node) -> None:
        if node not in seen and not _constant(node):
            seen.add(node)
            out.append(node)

    for tree in trees:
        for node in walk(tree):
            if isinstance(node, Add):
                add(node)  # its terms cancel where it is 0
            elif isinstance(node, Mul):
                for divide, factor in node.factors:
                    if divide:
                        add(factor)
            elif isinstance(node, Pow) and not _positive_integer(node.exponent):
                add(node.base)
            elif isinstance(node, Call) and node.args:
                if node.func in _ZERO_ARGUMENT:
                    add(node.args[0])
                elif node.func in _UNIT_ARGUMENT:
                    for arg in node.args:
                        add(Add(((1, arg), (-1, ONE))))
                        add(Add(((1, arg), (1, ONE))))
                elif node.func in _COMPARISONS or node.func in _KINKS:
                    first = node.args[0]
                    for other in node.args[1:4]:
                        add(Add(((1, first), (-1, other))))
                elif node.func in ("tan", "sec"):
                    add(Call("cos", node.args))
                elif node.func in ("cot", "csc"):
                    add(Call("sin", node.args))
            if len(out) >= MAX_FEATURE_FUNCTIONS:
                return out
    return out


def kink_functions(tree: Node) -> list[Node]:
    """The functions whose zeros are the kinks and jumps of ``tree`` (abs, sign, relu, max/min/clip, where's
    comparisons): there the derivative does not exist, and SymPy's value (sign(0) = 0) is a convention."""
    out: list[Node] = []
    for node in walk(tree):
        if not isinstance(node, Call) or not node.args:
            continue
        if node.func in ("abs", "sign", "heaviside", "relu"):
            out.append(node.args[0])
        elif node.func in _COMPARISONS or node.func in _KINKS:
            out += [Add(((1, node.args[0]), (-1, other))) for other in node.args[1:]]
    return [g for g in out if not _constant(g)]


def _constant(node: Node) -> bool:
    return not _names(node)


def _names(node: Node) -> set[str]:
    return {n.name for n in walk(node) if isinstance(n, Var)}


def _positive_integer(node: Node) -> bool:
    return isinstance(node, Num) and node.value.denominator == 1 and node.value > 0


def random_points(variables: list[str], box: tuple[float, float], samples: int, seed: int, ok, cast) -> dict:
    """``samples`` points uniform in the box where ``ok(points) -> bool mask`` holds (undefined ones skipped);
    ``cast`` rounds coordinates to the dtype checked."""
    import numpy as np

    rng = np.random.default_rng(seed)
    kept = {v: np.empty(0) for v in variables}
    for _ in range(MAX_TRIES):
        candidates = {v: cast(rng.uniform(box[0], box[1], samples)) for v in variables}
        mask = ok(candidates)
        for v in variables:
            kept[v] = np.concatenate([kept[v], candidates[v][mask]])
        if len(kept[variables[0]]) >= samples:
            break
    return {v: a[:samples] for v, a in kept.items()}


def ladder_values(centre: float, half: float, box: tuple[float, float]):
    """A centre and points closing in on it from both sides, half-widths half*2^0 .. half*2^-(LADDER-1)."""
    import numpy as np

    offsets = half * 2.0 ** -np.arange(LADDER)
    return np.clip(np.concatenate([[centre], centre + offsets, centre - offsets]), box[0], box[1])


def ladder_points(variables: list[str], box: tuple[float, float], cast) -> dict:
    """Points closing in geometrically on the box's centre (and on 0 when the box holds it), every variable
    at the same offset."""
    import numpy as np

    low, high = box
    half = (high - low) / 2
    centres = [low + half] + ([0.0] if low < 0.0 < high and low + half != 0.0 else [])
    values = np.unique(cast(np.concatenate([ladder_values(c, half, box) for c in centres])))
    return {v: values.copy() for v in variables}


def dense_points(variables: list[str], box: tuple[float, float], seed: int, cast) -> dict:
    """:data:`DENSE` points filling the box: an even grid for one variable, uniform random points for more."""
    import numpy as np

    if len(variables) == 1:
        return {variables[0]: cast(np.linspace(box[0], box[1], DENSE))}
    rng = np.random.default_rng(seed + 1)
    return {v: cast(rng.uniform(box[0], box[1], DENSE)) for v in variables}


def feature_points(functions: list[Node], variables: list[str], box: tuple[float, float], bases: list[dict],
                   cast) -> dict:
    """Ladders closing in on each feature of ``functions`` (:func:`feature_functions`), found along each
    variable through each of ``bases`` (points of the box)."""
    import numpy as np

    low, high = box
    half = (high - low) / 2
    line = np.unique(np.concatenate([np.linspace(low, high, SCAN),
                                     *(ladder_values(c, half, box) for c in {low + half, 0.0} if low <= c <= high)]))
    scans = [(b, g, v) for b in range(len(bases)) for g in functions for v in variables if v in _names(g)]
    found: dict[tuple[int, str], list[float]] = {}
    for b, g, v in scans[:MAX_SCANS]:
        env = {w: np.full(line.size, bases[b][w]) for w in variables}
        env[v] = line
        found.setdefault((b, v), []).extend(minima_of_abs(g, env, v, line))
    chunks: dict[str, list] = {v: [] for v in variables}
    for (b, v), spots in found.items():
        if not spots:
            continue
        spots = np.unique(cast(np.concatenate([ladder_values(x, half, box) for x in spots])))
        for w in variables:
            chunks[w].append(spots if w == v else np.full(spots.size, bases[b][w]))
    if not chunks[variables[0]]:
        return {v: np.empty(0) for v in variables}
    return {v: np.concatenate(c) for v, c in chunks.items()}


def minima_of_abs(g: Node, env: dict, v: str, line) -> list[float]:
    """Where |g| has a local minimum along ``line`` (the values of ``v`` in ``env``), refined by ternary
    search between the neighbouring grid points: zeros (sign changes among them) and near-zeros alike."""
    import numpy as np

    from gradcli.methods.symbolic import evaluate

    size = line.size
    a = np.abs(evaluate(g, env, size))
    a = np.where(np.isnan(a), np.inf, a)
    if size < 3 or not np.isfinite(a).any():
        return []
    inner = np.arange(1, size - 1)
    local = inner[(a[inner] <= a[inner - 1]) & (a[inner] <= a[inner + 1]) & np.isfinite(a[inner])
                  & ((a[inner] < a[inner - 1]) | (a[inner] < a[inner + 1]))]
    ends = [k for k in (0, size - 1) if np.isfinite(a[k]) and a[k] < a[1 if k == 0 else size - 2]]
    local = np.concatenate([local, np.array(ends, dtype=int)])
    if local.size == 0:
        return []
    local = local[np.argsort(a[local], kind="stable")][:FEATURES_PER_SCAN]
    left = line[np.maximum(local - 1, 0)]
    right = line[np.minimum(local + 1, size - 1)]
    others = {w: c[:1].repeat(local.size) for w, c in env.items() if w != v}
    for _ in range(80):  # ternary search: the bracket shrinks by 2/3 each step, below float64's spacing
        m1, m2 = left + (right - left) / 3, right - (right - left) / 3
        f1 = np.abs(evaluate(g, {**others, v: m1}, local.size))
        f2 = np.abs(evaluate(g, {**others, v: m2}, local.size))
        f1, f2 = np.where(np.isnan(f1), np.inf, f1), np.where(np.isnan(f2), np.inf, f2)
        keep_left = f1 <= f2
        right = np.where(keep_left, m2, right)
        left = np.where(keep_left, left, m1)
    return [float(x) for x in np.concatenate([line[local], (left + right) / 2])]


def around(points: list[dict[str, float]], variables: list[str], box: tuple[float, float], seed: int,
           cast) -> dict:
    """Points near each of ``points`` at offsets half*2^-1 .. half*2^-REFINE_DEPTH: along each variable,
    and (for several variables) along a random direction, both ways."""
    import numpy as np

    low, high = box
    half = (high - low) / 2
    offsets = half * 2.0 ** -np.arange(1, REFINE_DEPTH + 1)
    offsets = np.concatenate([offsets, -offsets])
    rng = np.random.default_rng(seed + 2)
    chunks: dict[str, list] = {v: [] for v in variables}
    for p in points:
        directions = [np.eye(len(variables))[i] for i in range(len(variables))]
        if len(variables) > 1:
            d = rng.normal(size=len(variables))
            directions.append(d / np.linalg.norm(d))
        for d in directions:
            for i, v in enumerate(variables):
                chunks[v].append(cast(np.clip(p[v] + d[i] * offsets, low, high)))
    if not chunks[variables[0]]:
        return {v: np.empty(0) for v in variables}
    return {v: np.concatenate(c) for v, c in chunks.items()}
