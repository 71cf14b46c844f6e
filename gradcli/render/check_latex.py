"""``check -f latex``: the verdict, each expected derivative against SymPy's and the counterexample as LaTeX
tabulars, from the ``-f json`` document, numbers as the text view writes them (values with every digit) (gradcli.render.latex's helpers:
plain LaTeX and graphicx, each tabular scaled down to the line only where it is wider). The document is one verdict however many points were checked, so
--points and --grid have this view too."""

from __future__ import annotations

from gradcli.render.latex import MISSING, assignments, document, escape, formula, line, number, tabular, value, variable

_PROOF = {"equal": "expected $-$ exact is 0", "different": "expected $-$ exact is a nonzero constant",
          "unknown": "not decided"}


def check_latex(doc: dict) -> str:
    order = doc["order"]
    what = "derivative" if order == 1 else "derivatives"
    verdict = "passed" if doc["passed"] else "failed"
    parts = [line(f"check of the expected {what} of order {number(order)} of {formula(doc['expression'])} "
                  f"({escape(doc['dtype'])}): {escape(doc['decision'])}, {verdict}"),
             line(rf"agree where $|\mathrm{{expected}} - \mathrm{{exact}}| \le$ {number(doc['atol'])} + "
                  rf"{number(doc['rtol'])} $\times |\mathrm{{exact}}|$ (atol, rtol); "
                  f"{number(doc['points_checked'])} points checked, {number(doc['points_exact'])} of them at 30 "
                  f"digits, {number(doc['points_undecided'])} undecided")]
    proof = doc.get("proof") or {}
    rows = [[variable(e["variable"]), formula(e["expected"]) or MISSING, formula(e["exact"]) or MISSING,
             escape(e["decision"]), _proof(proof.get(e["variable"])),
             formula(e.get("sympy_difference")) or MISSING] for e in doc["expectations"]]
    parts.append(tabular(f"each expected {what}", ["variable", "expected", "exact (SymPy)", "decision",
                                                   "SymPy's proof", "expected $-$ exact (SymPy)"], rows, "llllll"))
    c = doc.get("counterexample")
    if c is not None:
        exact = next((e["exact"] for e in doc["expectations"] if e["variable"] == c["variable"]), None)
        rows = [["expected", formula(c["expected_formula"]), value(c["expected"])],
                ["exact (SymPy)", formula(exact) or MISSING, value(c["exact"])],
                [r"$|\mathrm{expected} - \mathrm{exact}|$", "", value(c["difference"])],
                ["allowed (atol + rtol $\\times |\\mathrm{exact}|$)", "", value(c["allowed"])]]
        parts.append(tabular(f"counterexample: the derivative of order {number(c['order'])} by "
                             f"{variable(c['variable'])} at {assignments(c['point'])}", ["", "formula", "value"],
                             rows, "llr"))
    return document("check", parts, doc)


def _proof(status: str | None) -> str:
    return _PROOF.get(status) or (escape(status) if status else MISSING)
