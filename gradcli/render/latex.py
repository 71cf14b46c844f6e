"""``-f latex``: a command's tables as LaTeX tabulars, for slides and papers.

Each view takes the command's ``-f json`` document, so the two cannot disagree: every number is written
exactly as the document writes it (every digit, ``1e-05`` as ``1e-05``), formulas, expressions and variable
names go through SymPy's ``latex``, and other text is escaped. Warnings and notes follow the tables, since a
slide needs them. The output uses plain LaTeX only (``tabular``, ``\\hline``, and for SymPy's amsmath commands
the kernel's: ``\\mathrm``, ``\\mbox``, a case distinction as an ``array``): no package to load. check's and
steps' views are in gradcli.render.check_latex and gradcli.render.steps_latex, descend's in
gradcli.render.descend_latex.
"""

from __future__ import annotations

import functools
import json
import re

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}",
            ">": r"\textgreater{}", "|": r"\textbar{}"}
MISSING = "--"  # a null of the document (undefined, not computed)


def escape(text: str) -> str:
    """Plain text for LaTeX's text mode (an expression SymPy cannot read, a warning)."""
    return "".join(_SPECIAL.get(ch, ch) for ch in str(text))


def number(x) -> str:
    """A number exactly as the JSON document has it; ``--`` for its null."""
    if x is None:
        return MISSING
    return json.dumps(x, allow_nan=False)


def formula(text: str | None) -> str:
    """A formula or expression gradcli printed, in math mode through SymPy's ``latex`` (gradcli's own
    parser reads it: nothing is evaluated as Python); as escaped typewriter text when it does not parse."""
    if not text:
        return ""
    from gradcli.errors import GradcliError

    try:
        from gradcli.expression.parser import parse
        from gradcli.methods.symbolic import symbols_for, to_sympy

        parsed = parse(text)
        return "$" + _sympy_latex(to_sympy(parsed.tree, symbols_for(parsed.variables))) + "$"
    except (GradcliError, RecursionError, KeyError):
        return r"\texttt{" + escape(text) + "}"


def variable(name: str) -> str:
    """A variable's name as SymPy writes its symbol: x1 -> $x_{1}$ (an underscore SymPy would misread,
    as in x__y or a_b_c, escaped: $\\mathit{x\\_\\_y}$)."""
    import sympy as sp

    return "$" + _sympy_latex(sp.Symbol(name)) + "$"


# Names SymPy's latex writes as they read: a name and digits (x1 -> x_{1}) or one subscript (x_i). It reads
# every other underscore as a sub- or superscript (x__y -> x^{y}, a_b_c -> a_{b c}, _x -> a bare _x).
_PLAIN_NAME = re.compile(r"[A-Za-z]+(\d*|_[A-Za-z0-9]+)")
# amsmath's commands SymPy writes, as the LaTeX kernel has them
_AMSMATH = {r"\operatorname{": r"\mathrm{", r"\text{": r"\mbox{"}


def _sympy_latex(expr) -> str:
    text = _printer().doprint(expr)
    for ams, kernel in _AMSMATH.items():
        text = text.replace(ams, kernel)
    return text


@functools.cache
def _printer():  # one printer (SymPy imported on the first formula)
    from sympy.logic.boolalg import true
    from sympy.printing.latex import LatexPrinter

    class PlainPrinter(LatexPrinter):
        """SymPy's LaTeX without amsmath (a case distinction as an array), with a variable's or a --rule
        function's name that SymPy would misread escaped whole."""

        def _deal_with_super_sub(self, string: str, style="plain") -> str:
            if _PLAIN_NAME.fullmatch(string):
                return super()._deal_with_super_sub(string, style)
            return r"\mathit{" + string.replace("_", r"\_") + "}"

        def _hprint_Function(self, func: str) -> str:
            if "_" not in func:  # a function's subscript would read as an index: soft_plus -> soft_{plus}
                return super()._hprint_Function(func)
            return r"\mathrm{" + func.replace("_", r"\_") + "}"

        def _print_Piecewise(self, expr) -> str:
            cases = [rf"{self._print(e)} & \mbox{{{'otherwise' if c == true else 'for '}}}"
                     + ("" if c == true else self._print(c)) for e, c in expr.args]
            return r"\left\{\begin{array}{ll} " + r" \\ ".join(cases) + r" \end{array}\right."

    return PlainPrinter()


def assignments(values: dict) -> str:
    return ", ".join(f"{variable(k)} = {number(v)}" for k, v in values.items())


def tabular(title: str, header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """A titled tabular: the first column left-aligned, the others right (numbers), unless ``align``."""
    align = align or "l" + "r" * (len(header) - 1)
    lines = [rf"\noindent {title}\par", rf"\noindent\begin{{tabular}}{{{align}}}", r"\hline",
             " & ".join(header) + r" \\", r"\hline"]
    lines += [" & ".join(row) + r" \\" for row in rows]
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines)


def line(text: str) -> str:
    return rf"\noindent {text}\par"


def document(command: str, parts: list[str], doc: dict) -> str:
    """The parts one after another (a blank line apart), then the warnings and notes."""
    diagnostics = [line(rf"\textbf{{warning:}} {escape(w)}") for w in doc.get("warnings", [])]
    diagnostics += [line(rf"\textit{{note:}} {escape(n)}") for n in doc.get("notes", [])]
    head = f"% gradcli {command} -f latex: numbers exactly as -f json writes them"
    return "\n\n".join([head, *parts, *diagnostics]) + "\n"


_METHOD = {"symbolic": "exact (SymPy)", "tape": "tape (TF)", "fd": "fd", "complex": "complex step"}


def _method_header(methods: list[str], labels: dict[str, str]) -> list[str]:
    """grad's, derivative's and jvp's columns per method: its value, its error against the exact column, fd's
    and the complex step's own error estimates (as the terminal table has them)."""
    header = []
    for m in methods:
        header.append(labels[m])
        if m != "symbolic" and "symbolic" in methods:
            header.append(f"{m} error")
        if m in ("fd", "complex"):
            header.append(rf"{m} $\pm$ estimate")
    return header


def _method_cells(methods: list[str], value, error, estimate) -> list[str]:
    cells = []
    for m in methods:
        cells.append(value(m))
        if m != "symbolic" and "symbolic" in methods:
            cells.append(number(error(m)))
        if m in ("fd", "complex"):
            cells.append(number(estimate(m)))
    return cells


def _setting_line(doc: dict) -> str:
    return line(f"at {assignments(doc['point'])} ({escape(doc['dtype'])})")


# ---------------------------------------------------------------------------------------------
# per command
# ---------------------------------------------------------------------------------------------
def grad_latex(doc: dict) -> str:
    methods = [m for m in _METHOD if m in doc["methods"]]
    unwatched = doc.get("tape_sources", {}).get("unwatched", [])
    parts = [_setting_line(doc)]
    if doc.get("fd_step"):
        parts.append(line(f"fd: {escape(doc['fd']['scheme'])} differences, step "
                          + ", ".join(f"$h$({variable(k)}) = {number(v)}" for k, v in doc["fd_step"].items())))
    formulas = doc.get("formulas") or [{} for _ in doc["results"]]

    def gradient_cell(values: dict, m: str, v: str, unconnected: list[str]) -> str:
        if m == "tape" and v in unwatched:
            return "None (not watched)"
        cell = number(values.get(m, {}).get(v))
        return cell + (" (unconnected)" if m == "tape" and v in unconnected else "")

    for r, formula_of in zip(doc["results"], formulas):
        header = ["variable"] + (["formula"] if "symbolic" in methods else []) + _method_header(methods, _METHOD)
        if "complex" in methods:
            header.append("complex step $h$")
        rows = []
        for v in doc["wrt"]:
            row = [variable(v)] + ([formula(formula_of.get(v))] if "symbolic" in methods else [])
            row += _method_cells(methods, lambda m: gradient_cell(r["gradient"], m, v, r["unconnected"]),
                                 lambda m: r["error"].get(m, {}).get(v),
                                 lambda m: (r.get(f"{m}_error_estimate") or {}).get(v))
            if "complex" in methods:
                row.append(number((r.get("complex_step") or {}).get(v)))
            rows.append(row)
        align = "ll" + "r" * (len(header) - 2) if "symbolic" in methods else None
        parts.append(tabular(f"gradient of {formula(r['expression'])} (value {number(r['value'])})", header, rows,
                             align))
    if doc.get("sum"):
        rows = [[variable(v)] + [gradient_cell(doc["sum"], m, v, []) for m in methods] for v in doc["wrt"]]
        parts.append(tabular("sum of all expressions (what tape.gradient([z1, z2, ...], x) returns)",
                             ["variable"] + [_METHOD[m] for m in methods], rows))
    return document("grad", parts, doc)


_DERIVATIVE = {"symbolic": "exact (SymPy)", "tape": "tape (nested)", "fd": "fd (stencil)", "complex": "complex step"}


def derivative_latex(doc: dict) -> str:
    methods = [m for m in _DERIVATIVE if m in doc["methods"]]
    formulas = doc.get("formulas")

    def at(values, k):
        return values[k] if values is not None and k < len(values) else None

    header = ["order"] + (["formula"] if formulas is not None else []) + _method_header(methods, _DERIVATIVE)
    if "fd" in methods:
        header += ["fd step", "fd points"]
    rows = []
    for k in range(doc["order"]):
        row = [str(k + 1)] + ([formula(at(formulas, k))] if formulas is not None else [])
        row += _method_cells(methods, lambda m: number(at(doc["derivatives"].get(m), k)),
                             lambda m: at(doc.get("error", {}).get(m), k),
                             lambda m: at(doc.get(f"{m}_error_estimate"), k))
        if "fd" in methods:
            row += [number(at(doc.get("fd_step"), k)), number(at(doc.get("fd_points"), k))]
        rows.append(row)
    title = (f"derivatives of {formula(doc['expression'])} by {variable(doc['variable'])} "
             f"(value {number(doc['value'])})")
    parts = [_setting_line(doc)]
    if "fd" in methods:
        parts.append(line(f"fd: {escape(doc['fd']['scheme'])}"))
    parts.append(tabular(title, header, rows, "ll" + "r" * (len(header) - 2) if formulas is not None else None))
    return document("derivative", parts, doc)


def _matrix(title: str, names: list[str], matrix) -> str:
    rows = [[variable(a)] + [number(x) for x in row] for a, row in zip(names, matrix)]
    return tabular(title, [""] + [variable(b) for b in names], rows)


def hessian_latex(doc: dict) -> str:
    names = doc["wrt"]
    parts = [line(f"Hessian of {formula(doc['expression'])} (value {number(doc['value'])})"), _setting_line(doc)]
    if doc.get("fd_step"):
        parts.append(line(f"fd: {escape(doc['fd']['scheme'])}, step "
                          + ", ".join(f"$h$({variable(k)}) = {number(v)}" for k, v in doc["fd_step"].items())))
    for m, matrix in doc["hessian"].items():
        parts.append(_matrix(_METHOD[m], names, matrix))
    if doc.get("fd_error_estimate") is not None:
        parts.append(_matrix(r"fd $\pm$ estimate, entry by entry", names, doc["fd_error_estimate"]))
    if doc.get("formulas"):
        rows = [[rf"$\partial^2/\partial {variable(names[i])[1:-1]}\,\partial {variable(names[j])[1:-1]}$",
                 formula(doc["formulas"][i][j])] for i in range(len(names)) for j in range(i, len(names))]
        parts.append(tabular("exact second derivatives", ["entry", "formula"], rows, "ll"))
    gradient = doc.get("gradient") or {}
    if gradient:
        header = ["variable"] + [_METHOD[m] for m in gradient] + (
            [r"fd $\pm$ estimate"] if doc.get("fd_gradient_error_estimate") else [])
        rows = [[variable(v)] + [number(gradient[m].get(v)) for m in gradient]
                + ([number(doc["fd_gradient_error_estimate"].get(v))] if doc.get("fd_gradient_error_estimate")
                   else []) for v in names]
        parts.append(tabular("gradient (is it zero: a critical point?)", header, rows))
    rows = [[_METHOD[m], MISSING if m == "symbolic" else number(doc["error"].get(m)),
             number(doc["symmetry"].get(m))] for m in doc["hessian"]]
    parts.append(tabular("each method", ["method", r"max $|H - H_{\mathrm{exact}}|$", r"max $|H - H^T|$"], rows))
    if doc.get("eigenvalues") is not None:
        rows = [["eigenvalues", ", ".join(number(x) for x in doc["eigenvalues"])],
                ["definiteness", escape(doc["definiteness"])],
                ["critical point", escape(doc.get("critical_point") or "no (the gradient is not zero here)")],
                ["condition number", number(doc.get("condition_number"))],
                [r"max stable learning rate ($2/\lambda_{\max}$)", number(doc.get("max_stable_learning_rate"))]]
        parts.append(tabular(f"analysis (of the {escape(doc['analysis_source'])} matrix)", ["", ""], rows, "ll"))
    return document("hessian", parts, doc)


_JVP = {"symbolic": "exact (SymPy)", "tape": "ForwardAccumulator", "fd": "fd along $v$", "complex": "complex step"}


def jvp_latex(doc: dict) -> str:
    methods = doc["methods"]
    parts = [_setting_line(doc), line(f"along $v$: {assignments(doc['along'])}")]
    steps = []
    if doc.get("fd_step") is not None:
        steps.append(f"fd step along $v$ {number(doc['fd_step'])}")
    if doc.get("complex_step") is not None:
        steps.append(f"complex step $h$ = {number(doc['complex_step'])}")
    if steps:
        parts.append(line("; ".join(steps)))
    rows = []
    for r in doc["results"]:
        rows.append([formula(r["expression"]), number(r["value"])]
                    + _method_cells(methods, lambda m: number(r["jvp"].get(m)), lambda m: r["error"].get(m),
                                    lambda m: r["error_estimate"].get(m)))
    parts.append(tabular(r"$J v$: the derivative along $v$", ["expression", "value"] + _method_header(methods, _JVP),
                         rows))
    return document("jvp", parts, doc)


def hvp_latex(doc: dict) -> str:
    from gradcli.render.hvp import LABELS

    methods = [m for m in doc["methods"] if m in doc["hvp"]]
    parts = [_setting_line(doc), line(f"along $v$: {assignments(doc['along'])}")]
    if doc.get("fd_step") is not None:
        parts.append(line(f"fd: central differences of the tape gradient along $v$, $h$ = {number(doc['fd_step'])}"))
    rows = [[escape(LABELS[m]), number(doc["seconds"].get(m)),
             MISSING if m == "exact" else number(doc["max_error"].get(m))] for m in methods]
    parts.append(tabular(f"$H v$ of {formula(doc['expression'])} (value {number(doc['value'])})",
                         ["method", "seconds", "max error"], rows))
    estimates = doc.get("fd_error_estimate")
    header = ["variable"] + [escape(LABELS[m]) for m in methods] + (
        [r"fd $\pm$ estimate"] if estimates and "fd-of-gradient" in methods else [])
    rows = []
    for i, v in enumerate(doc["variables"]):
        row = [variable(v)] + [number(doc["hvp"][m][i]) for m in methods]
        if estimates and "fd-of-gradient" in methods:
            row.append(number(estimates[i]))
        rows.append(row)
    parts.append(tabular("$H v$, entry by entry", header, rows))
    return document("hvp", parts, doc)


def trace_latex(doc: dict) -> str:
    nodes = doc["nodes"]
    exact = any(n.get("exact") is not None for n in nodes)
    parts = [_setting_line(doc)]
    if doc.get("along") is not None:
        parts.append(line(f"along $v$: {assignments(doc['along'])}"))
    for k, text in enumerate(doc["expressions"]):
        name = f"z_{{{k + 1}}}" if len(doc["expressions"]) > 1 else "z"
        parts.append(line(f"${name}$ = {formula(text)} = {escape(doc['outputs'][k])}"))
    header = ["node", "operation", "value"] + (["exact (SymPy)", "error"] if exact else []) + ["expression"]
    rows = [[escape(n["name"]), "input" if n["kind"] == "input" else escape(n["text"]), number(n["value"])]
            + ([number(n.get("exact")), number(n.get("error"))] if exact else []) + [formula(n["expression"])]
            for n in nodes]
    parts.append(tabular("forward: each node's value, as the tape records it", header, rows,
                         "ll" + "r" * (len(header) - 3) + "l"))
    header = ["node", "adjoint", "sum over its users", "tape.gradient"] + (["exact (SymPy)", "error"] if exact else [])
    rows = []
    for n in reversed(nodes):
        terms = [f"{number(t['term'])} ({escape(t['from'])}: {number(t['adjoint_of_user'])} $\\times$ "
                 f"{number(t['partial'])})" for t in n["adjoint_terms"]]
        if n.get("seed"):
            terms.insert(0, f"{number(n['seed'])} (seed)")
        rows.append([escape(n["name"]), number(n["adjoint"]), " + ".join(terms) or "0 (no recorded user)",
                     number(n["tf_adjoint"]) if n["recorded"] else "not recorded"]
                    + ([number(n.get("exact_adjoint")), number(n.get("adjoint_error"))] if exact else []))
    parts.append(tabular("reverse: each node's adjoint, users before inputs", header, rows,
                         "lrlr" + "r" * (len(header) - 4)))
    if doc.get("along") is not None:
        header = ["node", "tangent", "sum over its inputs", "ForwardAccumulator"] + (
            ["exact (SymPy)", "error"] if exact else [])
        rows = []
        for n in nodes:
            terms = [f"{number(t['term'])} ({escape(t['input'])}: {number(t['partial'])} $\\times$ "
                     f"{number(t['tangent_of_input'])})" for t in n["tangent_terms"]]
            rows.append([escape(n["name"]), number(n["tangent"]), " + ".join(terms) or "(the direction)",
                         number(n["tf_tangent"])]
                        + ([number(n.get("exact_tangent")), number(n.get("tangent_error"))] if exact else []))
        parts.append(tabular("forward along the direction: each node's tangent, inputs before users", header, rows,
                             "lrlr" + "r" * (len(header) - 4)))
    for o in doc.get("where_it_went_wrong", []):  # its message is in the warnings too; the values whole here
        parts.append(line(rf"\textbf{{where it went wrong}} ({escape(o['sweep'])}): node {escape(o['node'])}, "
                          f"value {number(o['value'])}, exact {number(o['exact'])}: {escape(o['why'])}"))
    return document("trace", parts, doc)


def eval_latex(doc: dict) -> str:
    at = f" at {assignments(doc['point'])}" if doc["point"] else ""  # a constant has no point
    rows = [[formula(doc["expression"]), number(doc["value"])]]
    return document("eval", [tabular(f"the value{at} ({escape(doc['dtype'])})", ["expression", "value"], rows)],
                    doc)


VIEWS = {"grad": grad_latex, "derivative": derivative_latex, "hessian": hessian_latex}


def latex_view(command: str):
    """The one-point ``-f latex`` writer of a batch command: prints the tabulars of its document."""
    view = VIEWS[command]

    def show(doc: dict) -> None:
        print(view(doc), end="")

    return show
