"""``steps -f latex``: each dtype's sweep (every step and every formula's error there) and its marked steps as
LaTeX tabulars, from the ``-f json`` document: steps and errors in three significant digits, values as the
table writes them (gradcli.render.latex's helpers: plain LaTeX and graphicx; the sweep's formulas split into
tabulars of a few columns each, every one repeating the step column)."""

from __future__ import annotations

from gradcli.render.latex import assignments, document, error_of, escape, formula, line, number, step, tabular, value, variable

_MARKS = (("default", "default $h$"), ("best", "best $h$"), ("theory", "theory $h^*$"))


def steps_latex(doc: dict) -> str:
    n, v = doc["order"], variable(doc["variable"])[1:-1]
    d = f"$d/d{v}$" if n == 1 else f"$d^{{{n}}}/d{v}^{{{n}}}$"
    parts = [line(f"{d} {formula(doc['expression'])} (order {number(n)}) at {assignments(doc['point'])}: "
                  f"value {value(doc['value'])}, exact derivative {value(doc['exact'])}"),
             line("$h$ from 1e-1 to eps (times $\\max(1, |x|)$), every half decade; -- : no finite value")]
    for sweep in doc["sweeps"]:
        formulas = sweep["formulas"]
        where = (f"{escape(sweep['dtype'])}: $|$error$|$ of {d} at ${v}$ = {number(sweep['x'])} "
                 f"(exact {value(sweep['exact'])})")
        rows = [[step(h)] + [error_of(f["errors"][i]) for f in formulas] for i, h in enumerate(sweep["steps"])]
        parts.append(tabular(where, ["$h$", *(escape(f["formula"]) for f in formulas)], rows,
                             "r" * (len(formulas) + 1)))
        header = ["formula", "accuracy $p$", "points"]
        for _, label in _MARKS:
            header += [label, "error"]
        rows = [[escape(f["formula"]), number(f["accuracy"]), number(f["points"])]
                + [(step if key == "step" else error_of)((f.get(kind) or {}).get(key))
                   for kind, _ in _MARKS for key in ("step", "error")]
                for f in formulas]
        parts.append(tabular(f"{escape(sweep['dtype'])}: the marked steps", header, rows))
    parts.append(line("default: the step grad and derivative take, $\\epsilon^{1/(n+p)} \\max(1, |x|)$ (complex: "
                      "its power of two); best: the smallest error found in the sweep, a finer search around its "
                      "minimum and the default and theory steps; theory: the argmin of truncation plus rounding"))
    return document("steps", parts, doc)
