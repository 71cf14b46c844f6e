"""The expression on one tensor of all its variables, alike terms of a sum vectorised: the evaluation that
the all-at-once Hessian modes of :mod:`gradcli.methods.tape` differentiate (see that module's docstring).

A sum such as ``100*(x2 - x1**2)**2 + 100*(x3 - x2**2)**2 + ...`` has terms that differ only in their
variables; they are computed as one term over gathered columns, a few dozen ops instead of a few per variable.
Also here: the small per-process cache of compiled expressions and traced functions.

TensorFlow is imported inside the functions only: importing this module stays cheap.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Any, Callable

from gradcli.expression.evaluate import PYTHON_FLOAT64, compile_expression, evaluate
from gradcli.expression import Add, Call, Mul, Neg, Node, Pow, Var, is_constant
from gradcli.expression.tree import map_children

# Terms of a sum are vectorised (one gathered term) when at least this many share their form.
MIN_GROUP = 3

# Per-process caches keep at most this many entries (compiled expressions here, traced functions in
# gradcli.methods.tape_hessian), the least recently used dropped first.
CACHE_SIZE = 32
# (tree, columns, dtype) -> the function vectorised_function made
VECTORISED: OrderedDict = OrderedDict()


def cached(cache: OrderedDict, key, make):
    """``cache[key]``, made by ``make()`` on a miss (an LRU cache of CACHE_SIZE entries)."""
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = cache[key] = make()
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)
    return value


# Names no parsed variable can have (identifiers never hold a NUL): sums of alike terms, and slots.
_GROUP = "\0group"
_SLOT = "\0slot"


class _LazyEnv(dict):
    """Variable name -> tensor, each made on first use (one slice or one gathered group per name)."""

    def __init__(self, make: Callable[[str], Any]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, key: str):
        value = self[key] = self._make(key)
        return value


def _signature(node: Node, slots: dict[str, int]):
    """The form of ``node`` with its variables numbered by first appearance (constants by their value):
    two terms with the same signature differ only in which variables they use."""
    if is_constant(node):
        return ("c", float.hex(float(evaluate(node, {}, PYTHON_FLOAT64))))
    if isinstance(node, Var):
        return ("v", slots.setdefault(node.name, len(slots)))
    if isinstance(node, Neg):
        return ("neg", _signature(node.operand, slots))
    if isinstance(node, Add):
        return ("add", tuple((s, _signature(t, slots)) for s, t in node.terms))
    if isinstance(node, Mul):
        return ("mul", tuple((d, _signature(f, slots)) for d, f in node.factors))
    if isinstance(node, Pow):
        return ("pow", _signature(node.base, slots), _signature(node.exponent, slots))
    if isinstance(node, Call):
        return ("call", node.func, tuple(_signature(a, slots) for a in node.args))
    raise TypeError(node)


def _rename(node: Node, names: dict[str, str]) -> Node:
    if isinstance(node, Var):
        return Var(names[node.name])
    return map_children(node, lambda child: _rename(child, names))


def _group_terms(node: Node, groups: list[tuple[Node, list[list[str]]]]) -> Node:
    """``node`` with each set of at least MIN_GROUP alike terms of a sum replaced by one variable named
    ``_GROUP + i``; ``groups[i]`` is (template over slot variables, per slot the members' variable names)."""
    if is_constant(node) or isinstance(node, Var):
        return node
    if not isinstance(node, Add):
        return map_children(node, lambda child: _group_terms(child, groups))
    keyed = []
    members: dict[Any, list[int]] = {}
    for i, (sign, term) in enumerate(node.terms):
        if is_constant(term):
            keyed.append((None, None))
            continue
        slots: dict[str, int] = {}
        key = (sign, _signature(term, slots))
        keyed.append((key, slots))
        members.setdefault(key, []).append(i)
    terms = []
    for i, (sign, term) in enumerate(node.terms):
        key, slots = keyed[i]
        alike = members.get(key, []) if key is not None else []
        if len(alike) < MIN_GROUP:
            terms.append((sign, _group_terms(term, groups)))
        elif alike[0] == i:  # the whole group stands where its first member stood (so the first sign stays +)
            template = _rename(term, {name: f"{_SLOT}{k}" for name, k in slots.items()})
            columns: list[list[str]] = [[] for _ in slots]
            for m in alike:
                member_slots: dict[str, int] = {}
                _signature(node.terms[m][1], member_slots)
                for name, k in member_slots.items():
                    columns[k].append(name)
            terms.append((sign, Var(f"{_GROUP}{len(groups)}")))
            groups.append((template, columns))
    if len(terms) == 1 and terms[0][0] > 0:
        return terms[0][1]
    return replace(node, terms=tuple(terms))


def vectorised_function(tree: Node, columns: list[str], dtype: str) -> Callable[[Any], Any]:
    """``f(V)``: ``tree`` evaluated on a tensor V of shape [..., len(columns)] whose last axis holds the
    variables in the order of ``columns``; the result has V's leading shape (a scalar if ``tree`` is constant).

    The terms of a sum that share a form (MIN_GROUP or more) become one term over gathered columns, summed
    with ``reduce_sum``: same values up to the order of the additions. Cached per (tree, columns, dtype).
    """
    def make():
        from gradcli.methods.tf_runtime import load_tensorflow, tf_backend

        tf = load_tensorflow()
        backend = tf_backend(dtype)
        index = {name: i for i, name in enumerate(columns)}
        groups: list[tuple[Node, list[list[str]]]] = []
        outer = compile_expression(_group_terms(tree, groups), backend)
        compiled = []
        for template, slot_names in groups:
            indices = [tf.constant([index[name] for name in names], dtype=tf.int32) for names in slot_names]
            compiled.append((compile_expression(template, backend), indices))

        def f(v):
            columns_of_v: list = []

            def make_entry(name: str):
                if name.startswith(_GROUP):
                    fn, indices = compiled[int(name[len(_GROUP):])]
                    gathered = {f"{_SLOT}{k}": tf.gather(v, idx, axis=-1) for k, idx in enumerate(indices)}
                    r = fn(gathered)
                    first = gathered[f"{_SLOT}0"]
                    if r.shape.rank != first.shape.rank:
                        r = tf.broadcast_to(r, tf.shape(first))
                    return tf.reduce_sum(r, axis=-1)
                if not columns_of_v:  # one op for every single variable (cheaper than a slice each)
                    columns_of_v.extend(tf.unstack(v, num=len(columns), axis=-1))
                return columns_of_v[index[name]]

            return outer(_LazyEnv(make_entry))

        return f

    return cached(VECTORISED, (tree, tuple(columns), dtype), make)
