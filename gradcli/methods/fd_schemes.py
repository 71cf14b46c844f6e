"""The finite-difference formulas gradcli offers and the step rule each follows: plain constants, read by
the CLI's options as well as by the engine, so importing them costs nothing."""

from __future__ import annotations

import enum


class Scheme(str, enum.Enum):
    """The first-derivative formulas ``--scheme`` offers."""

    central = "central"
    forward = "forward"
    backward = "backward"
    richardson = "richardson"


SCHEMES = tuple(s.value for s in Scheme)
# Exponent p in step = eps**p * max(1, |x|): the step that balances truncation and rounding error.
STEP_POWER = {"central": 1 / 3, "forward": 1 / 2, "backward": 1 / 2, "richardson": 1 / 5}
SECOND_DIFFERENCE_POWER = 1 / 4
# Truncation order of each first-derivative scheme (error ~ h**p).
SCHEME_ORDER = {"central": 2, "forward": 1, "backward": 1, "richardson": 4}
# Stencil accuracies tried for k-th derivatives, widest first where the wide one leaves the domain.
ACCURACY_ORDERS = (2, 4, 6, 8)
DEFAULT_ACCURACY = 8
