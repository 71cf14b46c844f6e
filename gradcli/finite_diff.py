"""Finite differences, evaluated in the chosen dtype so that float32 shows float32's real error.

Formulas are written exactly as a person writes them (``(f(x+h) - f(x-h)) / (2*h)``), so
``--eps 1e-3`` reproduces the TensorFlow guide's 7.999999999999119 for 3x^2+2x-1 at 1.

Default steps follow the dtype's machine epsilon and the scheme's order (times max(1, |x|)):
forward/backward sqrt(eps), central eps^(1/3), Richardson eps^(1/5), second differences eps^(1/4).
"""

from __future__ import annotations

import enum
from typing import Any, Callable

from gradcli.errors import UsageError
from gradcli.evaluate import PYTHON_FLOAT64, Backend, compile_expression, numpy_backend
from gradcli.expr import Node

MACHINE_EPSILON = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07}


class Scheme(str, enum.Enum):
    central = "central"
    forward = "forward"
    backward = "backward"
    richardson = "richardson"


# Exponent p in step = eps**p * max(1, |x|): the step that balances truncation and rounding error.
_STEP_POWER = {Scheme.central: 1 / 3, Scheme.forward: 1 / 2, Scheme.backward: 1 / 2, Scheme.richardson: 1 / 5}
SECOND_DIFFERENCE_POWER = 1 / 4


def default_step(scheme: Scheme | str, dtype: str, x: float) -> float:
    """The step the scheme uses at ``x`` when ``--eps`` is not given."""
    return MACHINE_EPSILON[dtype] ** _STEP_POWER[Scheme(scheme)] * max(1.0, abs(x))


def second_difference_step(dtype: str, x: float) -> float:
    return MACHINE_EPSILON[dtype] ** SECOND_DIFFERENCE_POWER * max(1.0, abs(x))


def check_step(eps: float | None, values: dict[str, float], names, dtype: str, *, power: int = 1) -> None:
    """Refuse an ``--eps`` that vanishes next to a variable's value in the dtype (x + h == x), or whose
    ``power`` (h**2 for second differences, h**k for order k) underflows to zero."""
    if eps is None:
        return
    t = cast(dtype)
    h = t(eps)
    for name in names:
        x = t(values[name])
        if h == 0 or x + h == x or x - h == x:
            raise UsageError(f"--eps {eps:g} vanishes next to {name}={values[name]:g} in {dtype} "
                             f"(x + h == x): use a larger step")
    if power > 1 and float(h) ** power == 0:
        raise UsageError(f"--eps {eps:g} is too small: h**{power} underflows to 0")


def backend_for(dtype: str) -> Backend:
    """Python floats for float64 (no NumPy import on the fast path), NumPy for float32."""
    return PYTHON_FLOAT64 if dtype == "float64" else numpy_backend(dtype)


def cast(dtype: str) -> Callable[[float], Any]:
    if dtype == "float64":
        return float
    import numpy as np

    return np.dtype(dtype).type


# ---------------------------------------------------------------------------------------------
# One-dimensional formulas; ``f`` takes and returns numbers of one dtype.
# ---------------------------------------------------------------------------------------------
def central_difference(f: Callable, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


def forward_difference(f: Callable, x, h):
    return (f(x + h) - f(x)) / h


def backward_difference(f: Callable, x, h):
    return (f(x) - f(x - h)) / h


def richardson_difference(f: Callable, x, h):
    """Central differences at h and h/2 combined to cancel the h^2 term: error O(h^4)."""
    d1 = central_difference(f, x, h)
    d2 = central_difference(f, x, h / 2)
    return d2 + (d2 - d1) / 3


FORMULAS = {
    Scheme.central: central_difference,
    Scheme.forward: forward_difference,
    Scheme.backward: backward_difference,
    Scheme.richardson: richardson_difference,
}


def fd_gradient(tree: Node, values: dict[str, float], wrt: list[str], *, scheme: Scheme | str = Scheme.central,
                dtype: str = "float64", eps: float | None = None) -> tuple[dict[str, float], dict[str, float]]:
    """Partial derivatives of ``tree`` at one point: :func:`gradcli.methods.fd.fd_gradients` on a batch
    of one. Returns (derivative per variable, step used per variable), as Python floats."""
    import numpy as np

    from gradcli.methods.fd import fd_gradients

    check_step(eps, values, wrt, dtype)
    result = fd_gradients(tree, {k: np.array([v], dtype=np.float64) for k, v in values.items()}, wrt,
                          scheme=Scheme(scheme).value, dtype=dtype, eps=eps)
    derivatives = dict(zip(wrt, result.values[0].tolist()))
    steps = dict(zip(wrt, result.steps[0].tolist()))
    return derivatives, steps


class _quiet_numpy:
    """NumPy warns on overflow and invalid values; gradcli reports non-finite results itself."""

    def __init__(self, dtype: str):
        self.ctx = None
        if dtype != "float64":
            import numpy as np

            self.ctx = np.errstate(all="ignore")

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()
        return self

    def __exit__(self, *exc):
        if self.ctx is not None:
            return self.ctx.__exit__(*exc)
        return False
