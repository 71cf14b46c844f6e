"""A batch of P points for the tapes of :mod:`gradcli.methods.tape`: which variables an expression uses,
the common length P of their [P] arrays, and the conversions between those arrays and tensors' values.

NumPy is imported inside the functions only: importing this module stays cheap.
"""

from __future__ import annotations

from typing import Any, Mapping

from gradcli.expression import Node, Var, walk


def variables_of(tree: Node) -> list[str]:
    """The variables ``tree`` contains, in order of first appearance."""
    seen: dict[str, None] = {}
    for node in walk(tree):
        if isinstance(node, Var):
            seen.setdefault(node.name, None)
    return list(seen)


def batch_size(points: Mapping[str, Any], names) -> int:
    """P: the common length of the [P] arrays of ``names`` (of any array in ``points`` if names is empty;
    1 when there is none). Raises ValueError for a missing name or arrays of different shapes."""
    import numpy as np

    shapes = {}
    for name in names:
        if name not in points:
            raise ValueError(f"no values for variable '{name}'")
        shapes[name] = np.shape(points[name])
    if not shapes:
        shapes = {k: np.shape(v) for k, v in points.items()}
    if not shapes:
        return 1
    distinct = set(shapes.values())
    if len(distinct) != 1 or len(next(iter(distinct))) != 1:
        raise ValueError(f"points must be arrays of one shape [P]; got {shapes}")
    return next(iter(distinct))[0]


def column(points: Mapping[str, Any], name: str, dtype: str, size: int):
    """The [P] values of ``name`` in ``dtype`` (numpy rounds float64 to float32 to nearest, as TF does)."""
    import numpy as np

    values = np.asarray(points[name], dtype=np.float64).reshape(-1)
    if values.shape[0] != size:
        raise ValueError(f"variable '{name}' has {values.shape[0]} values, expected {size}")
    with np.errstate(over="ignore"):  # a value beyond float32's range becomes inf: reported as not finite
        return values.astype(dtype)


def broadcast(values, size: int):
    """A [P] float64 array from a tensor's values (a constant expression gives a scalar)."""
    import numpy as np

    return np.broadcast_to(np.asarray(values, dtype=np.float64), (size,)).copy()
