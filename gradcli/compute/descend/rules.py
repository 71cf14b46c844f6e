"""The stopping rules' codes and thresholds, shared by the compiled loop and the post-mortem.

The rules themselves, in the order each step applies them, are listed in the package docstring.
"""

from __future__ import annotations

# How far the value may move from f(start), relative to max(1, |f(start)|), before the run is called
# diverged (upwards) or unbounded (downwards): no honest descent travels 30 orders of magnitude.
VALUE_BOUND = 1e30
# A point unchanged for this many consecutive steps is a fixed point of the iteration in this dtype.
STALL_STEPS = 100
# Steps kept for the post-mortem of a run that ran out of steps (oscillation, runaway).
WINDOW = 32

# Loop status codes inside the compiled loop.
RUNNING, CONVERGED, MAX_STEPS, DIVERGED, UNBOUNDED, STALLED = range(6)
# The status each final code is first reported as (the post-mortem may refine max_steps).
STATUS_NAME = {CONVERGED: "converged", MAX_STEPS: "max_steps", DIVERGED: "diverged",
               UNBOUNDED: "unbounded", STALLED: "converged"}
