"""Limits that the command line states in its help as well as enforces (no NumPy here: ``--help`` reads
them)."""

# Rows a run's kept trajectory has at most (--every, a plot, a CSV trajectory): past it the kept steps are
# thinned evenly, so memory does not grow with --steps.
TRAJECTORY_MAX_ROWS = 100_000
