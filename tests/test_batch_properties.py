"""Property: a batch gives, point by point, what single points give (one engine: the same digits)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import VARS, points, smooth_expressions

from gradcli.expression import parse
from gradcli.methods import fd, fd_hessian, fd_stencils, symbolic
from gradcli.methods.tape import tape_derivatives, tape_gradients, tape_hessians


def batch_of(pts: list[dict]) -> dict:
    return {v: np.array([p[v] for p in pts], dtype=np.float64) for v in VARS}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=smooth_expressions(), pts=st.lists(points, min_size=2, max_size=5),
       dtype=st.sampled_from(["float64", "float32"]))
def test_batch_equals_single_points(text, pts, dtype):
    tree = parse(text).tree
    many = batch_of(pts)
    g = fd.fd_gradients(tree, many, VARS, dtype=dtype)
    t = tape_gradients([tree], many, VARS, dtype=dtype)
    h = fd_hessian.fd_hessians(tree, many, VARS, dtype=dtype)
    th = tape_hessians(tree, many, VARS, dtype=dtype)
    d = fd_stencils.fd_derivatives(tree, many, "x", 3, dtype=dtype)
    td = tape_derivatives(tree, many, "x", 3, dtype=dtype)
    for i, p in enumerate(pts):
        one = batch_of([p])
        np.testing.assert_array_equal(g.values[i], fd.fd_gradients(tree, one, VARS, dtype=dtype).values[0])
        np.testing.assert_array_equal(t.gradients[0, i], tape_gradients([tree], one, VARS, dtype=dtype).gradients[0, 0])
        np.testing.assert_array_equal(h.matrices[i], fd_hessian.fd_hessians(tree, one, VARS, dtype=dtype).matrices[0])
        np.testing.assert_array_equal(th.matrices[i], tape_hessians(tree, one, VARS, dtype=dtype).matrices[0])
        np.testing.assert_array_equal(d.values[i], fd_stencils.fd_derivatives(tree, one, "x", 3, dtype=dtype).values[0])
        np.testing.assert_array_equal(td.values[i], tape_derivatives(tree, one, "x", 3, dtype=dtype).values[0])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=smooth_expressions(), pts=st.lists(points, min_size=1, max_size=4))
def test_exact_formulas_in_float64_match_the_30_digit_values(text, pts):
    """The batch's symbolic column (float64 of SymPy's formula) against SymPy's own evalf at 30 digits."""
    from gradcli.methods import symbolic as sym30

    e = parse(text)
    formulas = symbolic.differentiate([e.tree], VARS, [(0, ("x",)), (0, ("x", "y"))])[0]
    syms = sym30.symbols_for(VARS)
    f = sym30.to_sympy(e.tree, syms)
    many = batch_of(pts)
    for key in (("x",), ("x", "y")):
        got = symbolic.evaluate(formulas.trees[key], many, len(pts))
        d = f
        for v in key:
            d = d.diff(syms[v])
        for i, p in enumerate(pts):
            want = float(d.evalf(30, subs={syms[k]: v for k, v in p.items()}))
            assert got[i] == pytest.approx(want, rel=1e-12, abs=1e-12)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=smooth_expressions(), pts=st.lists(points, min_size=1, max_size=4),
       dtype=st.sampled_from(["float64", "float32"]),
       methods=st.sampled_from(["symbolic,tape,fd", "tape,fd", "fd", "symbolic,fd", "tape"]),
       with_fields=st.booleans())
def test_fast_json_lines_are_the_dict_records_byte_for_byte(tmp_path_factory, text, pts, dtype, methods,
                                                             with_fields):
    """grad writes JSON lines from column fragments (no dicts): the same text json_line gives the dicts."""
    from gradcli.compute.batch.engine import json_line
    from gradcli.compute.batch.grad import GradBatch
    from gradcli.expression.sources import open_points

    path = tmp_path_factory.mktemp("pts") / "p.csv"
    header = "id,x,y\n" if with_fields else "x,y\n"
    rows = pts + [{"x": 0.0, "y": -1e300}]  # an extreme point: overflows, undefined values, warnings
    path.write_text(header + "".join((f"p{i}," if with_fields else "") + f"{p['x']!r},{p['y']!r}\n"
                                     for i, p in enumerate(rows)))
    core = GradBatch([text], wrt="x,y", methods=methods, dtype=dtype)
    core.start()
    core.header()
    for chunk in open_points(str(path), variables=core.variables).chunks():
        batch = core.compute(chunk)
        assert batch.lines() == [json_line(r) for r in batch.records()]
