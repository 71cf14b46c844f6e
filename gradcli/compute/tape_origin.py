"""Where the tape first went wrong, found by tracing it: for a caller with one expression and a point
(:func:`first_bad_node`), and for the batch cores' notes (:func:`origin_note`: once per expression and run).
Built on the trace (gradcli.compute.trace), which names the origins (gradcli.compute.nan_origin)."""

from __future__ import annotations

from collections.abc import Mapping

from gradcli.compute.nan_origin import BadNode
from gradcli.compute.trace import compute_trace
from gradcli.errors import UsageError
from gradcli.results import point_text


def first_bad_node(tree, point, dtype: str = "float64", *, along: Mapping[str, float] | None = None,
                   symbolic_time_limit: float = 10.0) -> BadNode | None:
    """The first node whose forward value (else adjoint, else tangent along ``along``) went wrong on the tape,
    or None.

    ``tree``: the expression (a parsed :class:`gradcli.expression.Expression`, its ``.tree``, or its text);
    ``point``: a :class:`gradcli.expression.points.Point` (its typed exact values are the reference), a
    mapping {variable: float} (each float taken exactly), or ``--at`` text; ``dtype``: "float64" or
    "float32"; ``along``: a direction {variable: float} for the tangents too.

    None also where nothing can be said: no exact values within ``symbolic_time_limit`` seconds, or an
    expression the trace does not take (more than 400 nodes, --rule's functions, a constant). Use
    ``.pointer`` for one line of text, ``.message`` for the trace's wording, ``.to_dict()`` for JSON."""
    try:
        direction = None if along is None else ",".join(f"{k}={float(v)!r}" for k, v in along.items())
        report = compute_trace([tree], at=point, dtype=dtype, along=direction,
                               symbolic_time_limit=symbolic_time_limit)
    except UsageError:
        return None
    return report.origins[0] if report.origins else None


# ---------------------------------------------------------------------------------------------
# The report's origins
# ---------------------------------------------------------------------------------------------
def origin_note(core, i: int, into: list[str] | None = None, point: dict | None = None) -> bool:
    """For a batch core (grad's, hessian's, derivative's: its ``exprs``, ``trees``, ``origins``, ``at_point``),
    once per expression and run: the first node of the tape whose value or adjoint went wrong, and why
    (gradcli trace shows them all), as a note (``into``: as a warning there, where no exact column warns about
    the tape). True when there is such a node. At many points, the first ``point`` asked about is traced and
    named in the note (each trace costs a tape of its own: one per expression, however many points went
    wrong)."""
    where = ""
    if core.at_point is not False:
        point = {v: float(core.at_point.values[v]) for v in core.variables}
    elif point is None:
        return False
    else:
        where = f" at {point_text(point)}"
    if i not in core.origins:
        bad = first_bad_node(core.trees[i], point, core.dtype, symbolic_time_limit=core.time_limit)
        core.origins[i] = bad
        if bad is not None:
            (core.notes if into is None else into).append(f"{core.exprs[i].text}{where}: {bad.pointer}")
    return core.origins[i] is not None
