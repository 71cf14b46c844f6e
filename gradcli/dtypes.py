"""The floating-point types gradcli computes in, and their facts (no NumPy here: ``--help`` reads them)."""

DTYPES = ("float64", "float32")
# The gap between 1 and the next float: 2**-52 and 2**-23.
MACHINE_EPSILON = {"float64": 2.220446049250313e-16, "float32": 1.1920928955078125e-07}
