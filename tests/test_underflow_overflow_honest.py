"""fd and the complex step where f over- or underflows inside, crosses a coordinate's 0, or oscillates finer
than the float spacing of its argument: the value is right within its estimate, or it is warned."""

from __future__ import annotations

import math

import gradcli


def first(result, method: str, variable: str):
    doc = result.to_dict()
    row = doc["results"][0]
    estimate = row.get(f"{method}_error_estimate", {}).get(variable) if method != "tape" else None
    return row["gradient"][method][variable], estimate, doc["warnings"]


def test_fd_estimate_covers_an_underflow_inside_f():
    # x**2 underflows to 0 at 1e-200: the stencil near x sees f = 0, the answer is 1/sqrt(2)
    for v in ("x", "y"):
        value, estimate, warnings = first(gradcli.grad("sqrt(x**2 + y**2)", at="x=1e-200,y=1e-200", method="fd"),
                                          "fd", v)
        truth = 1 / math.sqrt(2)
        assert abs(value - truth) <= estimate or any(f"/d{v}" in w and "fd" in w for w in warnings)
        assert not any("is at a kink" in w for w in warnings)  # the kink of |x| is at 0, not at 1e-200


def test_fd_x_squared_at_1e_300_is_within_its_estimate():
    value, estimate, _ = first(gradcli.grad("x**2", at="x=1e-300", method="fd"), "fd", "x")
    assert abs(value - 2e-300) <= estimate


def test_fd_stencil_that_crosses_a_pole_beside_the_point_is_not_kept():
    value, estimate, _ = first(gradcli.grad("x/y", at="x=1e-200,y=1e-200", method="fd"), "fd", "y")
    assert abs(value - -1e200) <= estimate
    assert estimate < 1e198


def test_fd_cannot_resolve_cos_at_1e22_and_says_so():
    _, _, warnings = first(gradcli.grad("cos(x)", at="x=1e22", method="fd"), "fd", "x")
    assert any(w.startswith("fd: d(cos(x))/dx cannot be resolved") for w in warnings)
    assert not any("is at a kink" in w for w in warnings)


def test_fd_cos_at_a_moderate_point_keeps_its_estimate():
    value, estimate, warnings = first(gradcli.grad("cos(x)", at="x=3", method="fd"), "fd", "x")
    assert abs(value + math.sin(3.0)) <= estimate < 1e-8 and not warnings


def test_complex_step_where_f_overflows_inside_is_not_a_number():
    for method in ("complex", "tape,fd,complex"):
        doc = gradcli.grad("sqrt(x**2 + y**2)", at="x=1e200,y=1e200", method=method).to_dict()
        assert doc["results"][0]["gradient"]["complex"] == {"x": None, "y": None}
        assert any("complex: undefined" in w for w in doc["warnings"])
