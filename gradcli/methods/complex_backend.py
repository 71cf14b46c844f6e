"""The complex-step method's arithmetic: gradcli's expression tree evaluated with complex NumPy numbers
(complex128 for float64, complex64 for float32), each function continued analytically by the function
table's ``complex`` column (:mod:`gradcli.expression.functions`), powers with a constant integer exponent by
multiplication, and a NaN imaginary part where a real power's base is on log's cut.
"""

from __future__ import annotations

import math

from gradcli.expression.evaluate import Backend
from gradcli.expression.functions import complex_functions

COMPLEX_DTYPE = {"float64": "complex128", "float32": "complex64"}
_BACKENDS: dict[str, Backend] = {}


def numpy_module():
    import numpy as np

    return np


def _int_pow(np, t):
    """x**n for a constant integer n, by multiplication (binary powers): exact continuation for any sign of x,
    where exp(n log z) would put a rounded pi into a tiny imaginary part."""
    def power(z, n: int):
        result, base, k = None, z, abs(n)
        while k:
            if k & 1:
                result = base if result is None else result * base
            k >>= 1
            if k:
                base = base * base
        if result is None:
            result = np.ones_like(z) if np.ndim(z) else t(1)
        return t(1) / result if n < 0 else result
    return power


def _pow(np, t):
    int_pow = _int_pow(np, t)

    def pw(a, b):
        if np.ndim(b) == 0 and np.imag(b) == 0 and float(np.real(b)).is_integer() and abs(np.real(b)) < 2 ** 31:
            return int_pow(a, int(np.real(b)))
        with np.errstate(all="ignore"):
            out = np.power(a, b)
        # a real power of a base <= 0 is on log's branch cut or at its branch point: no complex step there
        # when either side is perturbed; unperturbed, the imaginary part is 0 (not exp(b log a)'s residue)
        edge = np.real(a) <= 0
        perturbed = (np.imag(a) != 0) | (np.imag(b) != 0)
        nan = t(complex(0.0, math.nan))
        return np.where(edge, np.where(perturbed, np.real(out) + nan, np.real(out) + t(0)), out)
    return pw


def complex_backend(dtype: str) -> Backend:
    """The complex-step backend for ``dtype`` ("float64" -> complex128, "float32" -> complex64)."""
    if dtype in _BACKENDS:
        return _BACKENDS[dtype]
    np = numpy_module()
    t = np.dtype(COMPLEX_DTYPE[dtype]).type
    backend = Backend(name=f"numpy-{COMPLEX_DTYPE[dtype]}", const=t, pow=_pow(np, t), div=np.divide,
                      functions=complex_functions(np, t), int_pow=_int_pow(np, t))
    _BACKENDS[dtype] = backend
    return backend
