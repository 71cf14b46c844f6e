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
# Truncation order of each first-derivative scheme (error ~ h**p): the accuracy its stencil is built for
# (gradcli.methods.fd_stencils.named_stencil builds the stencils, offsets and weights, from it).
SCHEME_ORDER = {"central": 2, "forward": 1, "backward": 1, "richardson": 4}


def step_power(order: int, accuracy: int) -> float:
    """Exponent p in step = eps**p * max(1, |x|) for a stencil for f^(order) with error ~h**accuracy: the
    step that balances truncation (h**accuracy) against rounding (eps / h**order)."""
    return 1.0 / (order + accuracy)


STEP_POWER = {name: step_power(1, accuracy) for name, accuracy in SCHEME_ORDER.items()}
SECOND_DIFFERENCE_POWER = step_power(2, 2)
# Stencil accuracies tried for k-th derivatives, widest first where the wide one leaves the domain.
ACCURACY_ORDERS = (2, 4, 6, 8)
DEFAULT_ACCURACY = 8
