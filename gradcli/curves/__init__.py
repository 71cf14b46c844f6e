"""Implicit derivatives: dy/dx (and higher orders) of a curve given by an equation F = G, three ways.

- :mod:`gradcli.curves.equation`: the equation read by gradcli's own parser (each side), F - G as one tree;
- :mod:`gradcli.curves.exact`: SymPy's ``idiff`` on F - G, at 30 digits at the point as typed;
- :mod:`gradcli.curves.numeric`: the tape (-F_x/F_y from F's gradient, the second order from its Hessian)
  and fd along y(x), the level curve through the point followed by Newton's method;
- :mod:`gradcli.curves.report`: the three side by side, judged, with the point's residual.

No typer or rich here; SymPy and TensorFlow are imported when a derivative is taken.
"""
