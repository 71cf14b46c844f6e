"""``-f latex``: a command's tables as LaTeX tabulars, for slides and papers.

Each view takes the command's ``-f json`` document, so the two cannot disagree, and writes its numbers as the
terminal's table does: a value with every digit (``--digits N``: N significant digits), an error or an error
estimate in three significant digits, a step in three; what the user gave (the point, a tolerance) exactly.
Formulas, expressions and variable names go through SymPy's ``latex``, and other text is escaped. Warnings and
notes follow the tables, since a slide needs them.

The output fits a 16:9 beamer frame and an A4 page: each tabular is measured in a box and scaled down to
``\\linewidth`` only when it is wider (graphicx's ``\\resizebox``, the one package to load), and a table of
more than :data:`MAX_COLUMNS` columns, or one much wider than a page's line, is split into tabulars of fewer,
each repeating the key column, since one scaled to the line would be too small to read. Otherwise plain LaTeX (``tabular``, ``\\hline``, and for SymPy's
amsmath commands the kernel's: ``\\mathrm``, ``\\mbox``, a case distinction as an ``array``). check's and
steps' views are in gradcli.render.check_latex and gradcli.render.steps_latex, descend's in
gradcli.render.descend_latex.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
from contextvars import ContextVar

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}",
            ">": r"\textgreater{}", "|": r"\textbar{}"}
MISSING = "--"  # a null of the document (undefined, not computed)


def escape(text: str) -> str:
    """Plain text for LaTeX's text mode (an expression SymPy cannot read, a warning)."""
    return "".join(_SPECIAL.get(ch, ch) for ch in str(text))


# the --digits of the command writing LaTeX (None: every digit, as the table)
_value_digits: ContextVar[int | None] = ContextVar("gradcli_latex_digits", default=None)
DIGITS = (1, 17)  # 17 significant digits round-trip every float64


@contextlib.contextmanager
def value_digits(digits: int | None):
    """Values written in this block (this context) carry ``digits`` significant digits (None: all)."""
    token = _value_digits.set(digits)
    try:
        yield
    finally:
        _value_digits.reset(token)


def number(x) -> str:
    """A number exactly as the JSON document has it (what the user gave, a count); ``--`` for its null."""
    if x is None:
        return MISSING
    return json.dumps(x, allow_nan=False)


def value(x) -> str:
    """A computed value as the table writes it: every digit float64 needs (``repr``), or ``--digits``
    significant ones; an integer whole; ``--`` for a null."""
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return number(x)
    if isinstance(x, int):
        return str(x)
    digits = _value_digits.get()
    if digits is None or not math.isfinite(x):
        return repr(x)
    return f"{x:.{digits}g}"


def error_of(x) -> str:
    """An error or an error estimate as the table writes it: three significant digits (0 as 0)."""
    if x is None:
        return MISSING
    return "0" if x == 0 else f"{x:.2e}"


def step(x) -> str:
    """A step size as the table writes it: three significant digits."""
    if x is None:
        return MISSING
    return f"{x:.3g}"


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


MAX_COLUMNS = 8  # more, and a tabular scaled to a slide's line is too small to read: it is split
# About how wide a tabular may be before it is split, in points at 10pt: an A4 article's line (345pt) is what
# it is scaled to, and below about 0.7 of its size a table is hard to read
MAX_WIDTH_PT = 490
_COMMAND = re.compile(r"\\[A-Za-z]+|[{}$^_]")


def _width_pt(cell: str) -> float:
    """A cell's rough width at 10pt: its text without LaTeX's commands and braces, 5pt a character."""
    return 5 * len(_COMMAND.sub("", cell))


def tabular(title: str, header: list[str], rows: list[list[str]], align: str | None = None, *,
            keys: int = 1) -> str:
    """A titled tabular: the first column left-aligned, the others right (numbers), unless ``align``. More
    than :data:`MAX_COLUMNS` columns, or wider than about :data:`MAX_WIDTH_PT`: tabulars of the ``keys``
    first columns and a share of the others each. Each is set in a box and scaled down to the line where it
    is wider (:func:`fitted`)."""
    align = align or "l" + "r" * (len(header) - 1)
    widths = [12 + max(_width_pt(row[c]) for row in [header, *rows]) for c in range(len(header))]
    key_width = sum(widths[:keys])
    pieces, piece, width = [], [], key_width
    for c in range(keys, len(header)):
        if piece and (len(piece) + keys >= MAX_COLUMNS or width + widths[c] > MAX_WIDTH_PT):
            pieces.append(piece)
            piece, width = [], key_width
        piece.append(c)
        width += widths[c]
    pieces.append(piece)
    blocks = []
    for piece in pieces:
        columns = [*range(keys), *piece]
        lines = [rf"\begin{{tabular}}{{{''.join(align[c] for c in columns)}}}", r"\hline",
                 " & ".join(header[c] for c in columns) + r" \\", r"\hline"]
        lines += [" & ".join(row[c] for c in columns) + r" \\" for row in rows]
        lines += [r"\hline", r"\end{tabular}"]
        blocks.append(fitted("\n".join(lines)))
    return "\n".join([rf"\noindent {title}\par", "\n\\smallskip\n".join(blocks)])


def fitted(box: str) -> str:
    """``box`` (a tabular) as it is, or scaled down to ``\\linewidth`` when it is wider."""
    return "\n".join([r"\noindent\sbox{\gradclibox}{%", box + "}%",
                       r"\ifdim\wd\gradclibox>\linewidth\resizebox{\linewidth}{!}{\usebox{\gradclibox}}%",
                       r"\else\usebox{\gradclibox}\fi\par"])


def line(text: str) -> str:
    return rf"\noindent {text}\par"


def document(command: str, parts: list[str], doc: dict) -> str:
    """The parts one after another (a blank line apart), then the warnings and notes."""
    diagnostics = [line(rf"\textbf{{warning:}} {escape(w)}") for w in doc.get("warnings", [])]
    diagnostics += [line(rf"\textit{{note:}} {escape(n)}") for n in doc.get("notes", [])]
    head = (f"% gradcli {command} -f latex: needs \\usepackage{{graphicx}} (a table wider than the line is "
            "scaled to it); numbers as the table writes them")
    box = r"\ifdefined\gradclibox\else\newsavebox{\gradclibox}\fi"  # pasted twice: defined once
    return "\n\n".join([head + "\n" + box, *parts, *diagnostics]) + "\n"


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
            cells.append(error_of(error(m)))
        if m in ("fd", "complex"):
            cells.append(error_of(estimate(m)))
    return cells


def _seconds(x) -> str:
    """A timing as the table writes it: to the millisecond."""
    return MISSING if x is None else f"{x:.3f}"


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
                          + ", ".join(f"$h$({variable(k)}) = {step(v)}" for k, v in doc["fd_step"].items())))
    formulas = doc.get("formulas") or [{} for _ in doc["results"]]

    def gradient_cell(values: dict, m: str, v: str, unconnected: list[str]) -> str:
        if m == "tape" and v in unwatched:
            return "None (not watched)"
        cell = value(values.get(m, {}).get(v))
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
                row.append(step((r.get("complex_step") or {}).get(v)))
            rows.append(row)
        align = "ll" + "r" * (len(header) - 2) if "symbolic" in methods else None
        parts.append(tabular(f"gradient of {formula(r['expression'])} (value {value(r['value'])})", header, rows,
                             align, keys=1))
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
        row += _method_cells(methods, lambda m: value(at(doc["derivatives"].get(m), k)),
                             lambda m: at(doc.get("error", {}).get(m), k),
                             lambda m: at(doc.get(f"{m}_error_estimate"), k))
        if "fd" in methods:
            row += [step(at(doc.get("fd_step"), k)), number(at(doc.get("fd_points"), k))]
        rows.append(row)
    title = (f"derivatives of {formula(doc['expression'])} by {variable(doc['variable'])} "
             f"(value {value(doc['value'])})")
    parts = [_setting_line(doc)]
    if "fd" in methods:
        parts.append(line(f"fd: {escape(doc['fd']['scheme'])}"))
    parts.append(tabular(title, header, rows, "ll" + "r" * (len(header) - 2) if formulas is not None else None))
    return document("derivative", parts, doc)


def _matrix(title: str, names: list[str], matrix, cell=None, marked=frozenset()) -> str:
    """A matrix, each entry through ``cell`` (a value's form unless told); the ``marked`` (row, column)
    names get the structural-zero mark."""
    cell = cell or value
    rows = [[variable(a)] + [cell(x) + (r"$^{*}$" if (a, b) in marked else "") for b, x in zip(names, row)]
            for a, row in zip(names, matrix)]
    return tabular(title, [""] + [variable(b) for b in names], rows)


STRUCTURAL_ZERO = ("$^{*}$ structural zero: the tape returned None (the gradient entry does not depend on that "
                   "variable); shown as 0")


def hessian_latex(doc: dict) -> str:
    names = doc["wrt"]
    parts = [line(f"Hessian of {formula(doc['expression'])} (value {value(doc['value'])})"), _setting_line(doc)]
    if doc.get("fd_step"):
        parts.append(line(f"fd: {escape(doc['fd']['scheme'])}, step "
                          + ", ".join(f"$h$({variable(k)}) = {step(v)}" for k, v in doc["fd_step"].items())))
    structural = {tuple(p) for p in doc.get("structural_zeros", [])}
    for m, matrix in doc["hessian"].items():
        parts.append(_matrix(_METHOD[m], names, matrix, marked=structural if m == "tape" else frozenset()))
    if structural and "tape" in doc["hessian"]:
        parts.append(line(STRUCTURAL_ZERO))
    if doc.get("fd_error_estimate") is not None:
        parts.append(_matrix(r"fd $\pm$ estimate, entry by entry", names, doc["fd_error_estimate"], error_of))
    if doc.get("formulas"):
        rows = [[rf"$\partial^2/\partial {variable(names[i])[1:-1]}\,\partial {variable(names[j])[1:-1]}$",
                 formula(doc["formulas"][i][j])] for i in range(len(names)) for j in range(i, len(names))]
        parts.append(tabular("exact second derivatives", ["entry", "formula"], rows, "ll"))
    gradient = doc.get("gradient") or {}
    if gradient:
        header = ["variable"] + [_METHOD[m] for m in gradient] + (
            [r"fd $\pm$ estimate"] if doc.get("fd_gradient_error_estimate") else [])
        rows = [[variable(v)] + [value(gradient[m].get(v)) for m in gradient]
                + ([error_of(doc["fd_gradient_error_estimate"].get(v))] if doc.get("fd_gradient_error_estimate")
                   else []) for v in names]
        parts.append(tabular("gradient (is it zero: a critical point?)", header, rows))
    rows = [[_METHOD[m], MISSING if m == "symbolic" else error_of(doc["error"].get(m)),
             error_of(doc["symmetry"].get(m))] for m in doc["hessian"]]
    parts.append(tabular("each method", ["method", r"max $|H - H_{\mathrm{exact}}|$", r"max $|H - H^T|$"], rows))
    if doc.get("eigenvalues") is not None:
        rows = [["eigenvalues", ", ".join(value(x) for x in doc["eigenvalues"])],
                ["definiteness", escape(doc["definiteness"])],
                ["critical point", escape(doc.get("critical_point") or "no (the gradient is not zero here)")],
                ["condition number", value(doc.get("condition_number"))],
                [r"max stable learning rate ($2/\lambda_{\max}$)", value(doc.get("max_stable_learning_rate"))]]
        parts.append(tabular(f"analysis (of the {escape(doc['analysis_source'])} matrix)", ["", ""], rows, "ll"))
    return document("hessian", parts, doc)


_JVP = {"symbolic": "exact (SymPy)", "tape": "ForwardAccumulator", "fd": "fd along $v$", "complex": "complex step"}


def jvp_latex(doc: dict) -> str:
    methods = doc["methods"]
    parts = [_setting_line(doc), line(f"along $v$: {assignments(doc['along'])}")]
    steps = []
    if doc.get("fd_step") is not None:
        steps.append(f"fd step along $v$ {step(doc['fd_step'])}")
    if doc.get("complex_step") is not None:
        steps.append(f"complex step $h$ = {step(doc['complex_step'])}")
    if steps:
        parts.append(line("; ".join(steps)))
    rows = []
    for r in doc["results"]:
        rows.append([formula(r["expression"]), value(r["value"])]
                    + _method_cells(methods, lambda m: value(r["jvp"].get(m)), lambda m: r["error"].get(m),
                                    lambda m: r["error_estimate"].get(m)))
    parts.append(tabular(r"$J v$: the derivative along $v$", ["expression", "value"] + _method_header(methods, _JVP),
                         rows))
    return document("jvp", parts, doc)


def hvp_latex(doc: dict) -> str:
    from gradcli.render.hvp import LABELS

    methods = [m for m in doc["methods"] if m in doc["hvp"]]
    parts = [_setting_line(doc), line(f"along $v$: {assignments(doc['along'])}")]
    if doc.get("fd_step") is not None:
        parts.append(line(f"fd: central differences of the tape gradient along $v$, $h$ = {step(doc['fd_step'])}"))
    rows = [[escape(LABELS[m]), _seconds(doc["seconds"].get(m)),
             MISSING if m == "exact" else error_of(doc["max_error"].get(m))] for m in methods]
    parts.append(tabular(f"$H v$ of {formula(doc['expression'])} (value {value(doc['value'])})",
                         ["method", "seconds", "max error"], rows))
    estimates = doc.get("fd_error_estimate")
    header = ["variable"] + [escape(LABELS[m]) for m in methods] + (
        [r"fd $\pm$ estimate"] if estimates and "fd-of-gradient" in methods else [])
    rows = []
    for i, v in enumerate(doc["variables"]):
        row = [variable(v)] + [value(doc["hvp"][m][i]) for m in methods]
        if estimates and "fd-of-gradient" in methods:
            row.append(error_of(estimates[i]))
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
    rows = [[escape(n["name"]), "input" if n["kind"] == "input" else escape(n["text"]), value(n["value"])]
            + ([value(n.get("exact")), error_of(n.get("error"))] if exact else []) + [formula(n["expression"])]
            for n in nodes]
    parts.append(tabular("forward: each node's value, as the tape records it", header, rows,
                         "ll" + "r" * (len(header) - 3) + "l"))
    header = ["node", "adjoint", "sum over its users", "tape.gradient"] + (["exact (SymPy)", "error"] if exact else [])
    rows = []
    for n in reversed(nodes):
        terms = [f"{value(t['term'])} ({escape(t['from'])}: {value(t['adjoint_of_user'])} $\\times$ "
                 f"{value(t['partial'])})" for t in n["adjoint_terms"]]
        if n.get("seed"):
            terms.insert(0, f"{value(n['seed'])} (seed)")
        rows.append([escape(n["name"]), value(n["adjoint"]), " + ".join(terms) or "0 (no recorded user)",
                     value(n["tf_adjoint"]) if n["recorded"] else "not recorded"]
                    + ([value(n.get("exact_adjoint")), error_of(n.get("adjoint_error"))] if exact else []))
    parts.append(tabular("reverse: each node's adjoint, users before inputs", header, rows,
                         "lrlr" + "r" * (len(header) - 4)))
    if doc.get("along") is not None:
        header = ["node", "tangent", "sum over its inputs", "ForwardAccumulator"] + (
            ["exact (SymPy)", "error"] if exact else [])
        rows = []
        for n in nodes:
            terms = [f"{value(t['term'])} ({escape(t['input'])}: {value(t['partial'])} $\\times$ "
                     f"{value(t['tangent_of_input'])})" for t in n["tangent_terms"]]
            rows.append([escape(n["name"]), value(n["tangent"]), " + ".join(terms) or "(the direction)",
                         value(n["tf_tangent"])]
                        + ([value(n.get("exact_tangent")), error_of(n.get("tangent_error"))] if exact else []))
        parts.append(tabular("forward along the direction: each node's tangent, inputs before users", header, rows,
                             "lrlr" + "r" * (len(header) - 4)))
    for o in doc.get("where_it_went_wrong", []):  # its message is in the warnings too; the values whole here
        parts.append(line(rf"\textbf{{where it went wrong}} ({escape(o['sweep'])}): node {escape(o['node'])}, "
                          f"value {value(o['value'])}, exact {value(o['exact'])}: {escape(o['why'])}"))
    return document("trace", parts, doc)


def eval_latex(doc: dict) -> str:
    at = f" at {assignments(doc['point'])}" if doc["point"] else ""  # a constant has no point
    rows = [[formula(doc["expression"]), value(doc["value"])]]
    return document("eval", [tabular(f"the value{at} ({escape(doc['dtype'])})", ["expression", "value"], rows)],
                    doc)


VIEWS = {"grad": grad_latex, "derivative": derivative_latex, "hessian": hessian_latex}


def latex_view(command: str):
    """The one-point ``-f latex`` writer of a batch command: prints the tabulars of its document."""
    view = VIEWS[command]

    def show(doc: dict) -> None:
        print(view(doc), end="")

    return show
