"""Imported only by the daemon's SymPy fork server (see :func:`gradcli.daemon.warm.warm_up`), after the shell's
own warm-up (:mod:`gradcli.commands.shell_sympy_warm`): the jobs a warm call hands its worker, run once here
on small expressions, so that their first-use costs (gradcli's formula printing, SymPy's evaluation at a
point, modules imported on first use) are paid once in the fork server and not by every call's worker (a
worker is forked from it for each call, and exits with the call: 10-20 ms of a warm ``grad``).

What it leaves behind is SymPy's cache of these expressions, which holds results, not settings: a later job
gets the same answer with or without it (the daemon's tests compare warm calls with cold ones byte for byte).
Nothing here may stop the fork server: a failure only leaves it less warm.
"""


def _warm() -> None:
    from gradcli.expression.parser import parse
    from gradcli.methods.symbolic import differentiate
    from gradcli.methods.symbolic_values import differentiate_at

    # grad at a point (first derivatives), hessian (first and second), derivative (one variable, orders 1-3)
    tree = parse("x**2*sin(y) + exp(x)/y - log(1 + x**2) + sqrt(y)").tree
    first = [(0, ("x",)), (0, ("y",))]
    second = [*first, (0, ("x", "x")), (0, ("x", "y")), (0, ("y", "y"))]
    differentiate_at([tree], ["x", "y"], first, [{"x": 1.0, "y": 2.0}])
    differentiate_at([tree], ["x", "y"], second, [{"x": 0.5, "y": 1.5}])
    one = parse("cos(x)**3 + tanh(x) - x**5/7").tree
    differentiate_at([one], ["x"], [(0, ("x",) * k) for k in (1, 2, 3)], [{"x": 0.25}])
    differentiate([tree], ["x", "y"], first)  # --points / --grid: the formulas alone, evaluated in the caller


try:
    _warm()
except Exception:  # noqa: BLE001 - a warm-up that fails costs warmth only
    pass
