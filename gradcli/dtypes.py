"""The floating-point types gradcli computes in, and their facts (no NumPy here: ``--help`` reads them)."""

DTYPES = ("float64", "float32")
# The gap between 1 and the next float: 2**-52 and 2**-23.
MACHINE_EPSILON = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07}
# The largest finite value (numpy.finfo(dtype).max).
LARGEST = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38}
# The smallest positive normal value (numpy.finfo(dtype).tiny): below it values are subnormal.
SMALLEST_NORMAL = {"float64": 2.2250738585072014e-308, "float32": 1.1754943508222875e-38}
