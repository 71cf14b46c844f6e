"""Imported only by the fork server of ``gradcli shell`` (see gradcli.commands.shell_sympy): a small
derivative, printed, evaluated and simplified, so that SymPy's lazy imports and caches are paid for once
there, not by every worker forked from it (simplify's first call imports sympy.physics.units: 0.2 s of
every check line's proof)."""

import sympy

_x, _y = sympy.symbols("x y", real=True)
_d = (sympy.sin(_x) * _y ** 2 + sympy.exp(_x) / _y).diff(_x)
str(_d)
_d.subs({_x: sympy.Rational(1, 3), _y: 2}).evalf(30)
sympy.simplify((_x + 5) * _y ** 2 - _y ** 2 * _x + sympy.sin(_x) ** 2)  # check's proofs: simplify imports more
del _x, _y, _d
