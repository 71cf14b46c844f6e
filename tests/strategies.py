"""Hypothesis strategies the property tests share."""

from __future__ import annotations

from hypothesis import strategies as st

# Smooth everywhere on the reals, with derivatives of moderate size on [-2, 2].
UNARY = ["sin({})", "cos({})", "tanh({})", "atan({})", "sigmoid({})", "exp({}/4)", "sqrt(1 + ({})**2)",
         "log(2 + sin({}))", "erf({})", "({})**2", "({})**3/5"]
VARS = ["x", "y"]


@st.composite
def smooth_expressions(draw, depth=2):
    if depth == 0 or draw(st.booleans()):
        leaf = draw(st.sampled_from(VARS + ["1.5", "0.5"]))
        if leaf in VARS and draw(st.booleans()):
            leaf = f"{draw(st.sampled_from(['2', '0.5', '-1.5']))}*{leaf}"
        return leaf
    kind = draw(st.sampled_from(["unary", "add", "mul", "sub"]))
    if kind == "unary":
        return draw(st.sampled_from(UNARY)).format(draw(smooth_expressions(depth=depth - 1)))
    a = draw(smooth_expressions(depth=depth - 1))
    b = draw(smooth_expressions(depth=depth - 1))
    return {"add": f"({a}) + ({b})", "mul": f"({a})*({b})", "sub": f"({a}) - ({b})"}[kind]


points = st.fixed_dictionaries({v: st.floats(-2, 2, allow_nan=False).map(lambda t: round(t, 3)) for v in VARS})
