"""SymPy's derivatives as text in gradcli's own language, so that a printed formula can be pasted back.

SymPy's ``str`` writes Euler's number as ``E``, ``abs`` as ``Abs``, ``Piecewise((1, x > 0), (0, True))`` and
conditions with ``&``/``|``/``~``: gradcli reads none of them (``E`` would be a variable). This printer keeps
SymPy's layout (``2*e*x``, ``1/(2*sqrt(x))``) and writes everything else in the language: ``e``, ``abs``,
``where(x > 0, 1, 0)``, conditions with ``and``/``or``/``not``, and ``sign``/``Heaviside`` (which the language
has no name for) as the ``where`` they stand for. What the language cannot say at all (an impulse
``DiracDelta``, infinities, a Piecewise that is undefined outside its branches) keeps SymPy's text: a formula
is never printed as something it is not.
"""

from __future__ import annotations

from functools import cache

from gradcli.expression.functions import TABLE


class _NotInTheLanguage(Exception):
    pass


# SymPy class name -> gradcli name, for the calls SymPy keeps (number functions only: where and the
# comparisons are printed by hand below).
_NAMES = {f.sympy_class: f.name for f in TABLE if f.sympy_class is not None and f.kind == "number"}
_RELATIONS = {"StrictLessThan": "<", "LessThan": "<=", "StrictGreaterThan": ">", "GreaterThan": ">=",
              "Equality": "==", "Unequality": "!="}


@cache
def _printer():
    from sympy.printing.str import StrPrinter

    class LanguagePrinter(StrPrinter):
        def _print_Exp1(self, expr):
            return "e"

        def _print_Function(self, expr):
            name = type(expr).__name__
            if getattr(type(expr), "_gradcli_rule", None) is not None:
                gradcli_name = name  # a --rule's call reads back while that rule is given
            else:
                gradcli_name = _NAMES.get(name)
            if gradcli_name is None:
                raise _NotInTheLanguage(name)
            return f"{gradcli_name}({self.stringify(expr.args, ', ')})"

        def _print_Abs(self, expr):
            return f"abs({self._print(expr.args[0])})"

        def _print_Max(self, expr):
            return f"max({self.stringify(expr.args, ', ')})"

        def _print_Min(self, expr):
            return f"min({self.stringify(expr.args, ', ')})"

        def _print_sign(self, expr):
            a = self._print(expr.args[0])
            return f"where({a} > 0, 1, where({a} < 0, -1, 0))"

        def _print_Heaviside(self, expr):
            # SymPy's Heaviside(a) is 1/2 at 0; Heaviside(a, h0) is h0 there
            a = self._print(expr.args[0])
            at_zero = self._print(expr.args[1]) if len(expr.args) > 1 else "1/2"
            return f"where({a} > 0, 1, where({a} < 0, 0, {at_zero}))"

        def _print_Piecewise(self, expr):
            import sympy as sp

            *branches, (last, last_condition) = expr.args
            if last_condition is not sp.true:
                raise _NotInTheLanguage("Piecewise undefined outside its branches")
            out = self._print(last)
            for value, condition in reversed(branches):
                out = f"where({self.condition(condition)}, {self._print(value)}, {out})"
            return out

        def condition(self, cond, inside: str | None = None) -> str:
            """where's condition: comparisons with and, or, not (not binds tightest, then and, then or)."""
            import sympy as sp

            name = type(cond).__name__
            if name in _RELATIONS:
                return f"{self._print(cond.lhs)} {_RELATIONS[name]} {self._print(cond.rhs)}"
            if isinstance(cond, (sp.And, sp.Or)):
                word = "and" if isinstance(cond, sp.And) else "or"
                text = f" {word} ".join(self.condition(a, word) for a in cond.args)
                return f"({text})" if inside is not None and inside != word else text
            if isinstance(cond, sp.Not):
                return f"not {self.condition(cond.args[0], 'not')}"
            if cond is sp.true or cond is sp.false:
                return "0 == 0" if cond is sp.true else "0 != 0"
            raise _NotInTheLanguage(name)

        def _print_Relational(self, expr):
            return self.condition(expr)

        def _refuse(self, expr):
            raise _NotInTheLanguage(type(expr).__name__)

        _print_DiracDelta = _print_Derivative = _print_Subs = _print_Integral = _refuse
        _print_Infinity = _print_NegativeInfinity = _print_ComplexInfinity = _print_NaN = _refuse
        _print_ImaginaryUnit = _refuse

    return LanguagePrinter()


def formula_text(expr) -> str:
    """``expr`` in gradcli's language where the language can say it, else SymPy's own text."""
    try:
        return _printer().doprint(expr)
    except _NotInTheLanguage:
        return str(expr)
