"""How the symbolic column is evaluated at many points, in plain numbers: the digits of an exact evaluation,
when the float64 value of a formula stands for the exact one instead, what a run may spend on exact ones, and
what a batch's header says of it all. :mod:`gradcli.methods.symbolic` evaluates exactly,
:mod:`gradcli.methods.symbolic_values` chooses where (its docstring says why these numbers)."""

from __future__ import annotations

import math

# Digits for evaluating exact values; float64 needs 17, the rest guards against cancellation.
EVAL_DIGITS = 30
# A float64 value is kept where its rounding bound is at most this fraction of it (2**-40 ~ 9.1e-13, 8192 ulp).
TRUSTED = 2.0 ** -40
# An exact (30-digit) evaluation is a point's own affair: every point whose float64 value is not vouched for
# gets one, and one that runs past this bound is cut, its value left in float64 (counted in a note). No
# budget is shared between points: a point's digits must not depend on what else its run (or an engine's
# partition) held.
EXACT_POINT_SECONDS = 1.0

# What a batch's header says of its symbolic values.
EVALUATION = (f"float64 evaluation of the exact formula where its running rounding-error bound is within "
              f"2^{math.log2(TRUSTED):.0f} (~{TRUSTED:.1e}) of the value; elsewhere (cancellation, overflow, "
              f"underflow, not finite) the formula at {EVAL_DIGITS} digits at the point's float64 coordinates, "
              f"rounded to float64, within {EXACT_POINT_SECONDS:g} s per point (a note "
              "counts any left in float64)")
