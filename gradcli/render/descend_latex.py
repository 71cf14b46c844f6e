"""``descend -f latex`` (one start): the race and what it found as LaTeX tabulars, from the ``-f json``
document, numbers as the table writes them (gradcli.render.latex's helpers: plain LaTeX and graphicx, the race
split into tabulars of a few columns each, every one repeating the optimizer). Many starts have no such view: a tabular per start would be no slide (-f csv is)."""

from __future__ import annotations

from gradcli.render.latex import (MISSING, assignments, document, error_of, escape, formula, line, number, tabular, value,
                                  variable)


def descend_latex(doc: dict) -> str:
    names = doc["variables"]
    goal = "maximise" if doc["maximize"] else "minimise"
    parts = [line(f"{goal} {formula(doc['expression'])} from {assignments(doc['start'])} ({escape(doc['dtype'])})"),
             line(f"learning rate {number(doc['learning_rate'])}, at most {number(doc['max_steps'])} steps, "
                  rf"converged when $|\nabla f|$ < {number(doc['tol'])}; momentum {number(doc['momentum'])} "
                  f"(of momentum and nesterov); TensorFlow's setup {_seconds(doc['setup_seconds'])} s"),
             _race(doc, names)]
    stationary = doc.get("stationary_points")
    if stationary:
        rows = [[escape(s.get("kind") or "unclassified")] + [value(s["point"].get(v)) for v in names]
                + [value(s.get("value"))] for s in stationary]
        parts.append(tabular("stationary points (SymPy)", ["kind", *map(variable, names), "$f$"], rows))
    if doc.get("every") is not None:
        for name, history in (doc.get("trajectory") or {}).items():
            rows = [[number(h["step"])] + [value(h["point"].get(v)) for v in names]
                    + [value(h["value"]), error_of(h["gradient_norm"])] for h in history]
            parts.append(tabular(f"{escape(name)}: every {number(doc['every'])} steps",
                                 ["step", *map(variable, names), "$f$", r"$|\nabla f|$"], rows))
    return document("descend", parts, doc)


def _race(doc: dict, names: list[str]) -> str:
    """A row per optimizer: how it ended, where, the Hessian's word on the end point, and the stationary
    point (SymPy's nearest) or the basin of end points it ended in."""
    runs = doc["runs"]
    sympy = doc.get("stationary_points") is not None
    stopped = any(run.get("stopped_at") is not None or run.get("suggested_learning_rate") is not None
                  for run in runs)
    header = ["optimizer", "learning rate", "status", "steps", *map(variable, names), "$f$", r"$|\nabla f|$"]
    align = "lrlr" + "r" * (len(names) + 2)
    if stopped:
        header += ["stopped at step", "suggested learning rate"]
        align += "rr"
    header += ["end point (Hessian)",
               "nearest stationary point (SymPy)" if sympy else "basin (end points)", "seconds"]
    align += "llr"
    rows = []
    for run in runs:
        row = [escape(run["optimizer"]), number(run["learning_rate"]), escape(run["status"]), number(run["steps"]),
               *[value(run["final"].get(v)) for v in names], value(run["value"]), error_of(run["gradient_norm"])]
        if stopped:
            row += [number(run.get("stopped_at")), number(run.get("suggested_learning_rate"))]
        row += [escape(run.get("end_point_kind") or MISSING), _stationary(run) if sympy else _basin(run),
                _seconds(run.get("seconds"))]
        rows.append(row)
    title = (f"gradient descent (a run ends at a {'stationary point' if sympy else 'basin'} within "
             rf"{number(doc['stationary_tolerance'])} $\times \max(1, |p|)$ of it)")
    return tabular(title, header, rows, align, keys=1)


def _point(point: dict) -> str:
    """A point gradcli found (not one the user gave): its coordinates as values."""
    return ", ".join(f"{variable(k)} = {value(v)}" for k, v in point.items())


def _seconds(x) -> str:
    """A timing as the table writes it: to the hundredth of a second."""
    return MISSING if x is None else f"{x:.2f}"


def _stationary(run: dict) -> str:
    s = run.get("nearest_stationary_point")
    if s is None:
        return MISSING
    where = f"{escape(s.get('kind') or 'unclassified')} at {_point(s['point'])}"
    reached = "reached" if run.get("stationary_point") is not None else "not reached"
    return f"{where} (distance {error_of(s.get('distance'))}, {reached})"


def _basin(run: dict) -> str:
    b = run.get("basin")
    if b is None:
        return "-- (not converged)" if run["status"] != "converged" else MISSING
    return f"{number(b['index'])}: {escape(b.get('kind') or 'unclassified')} at {_point(b['point'])}"
