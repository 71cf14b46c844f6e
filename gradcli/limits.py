"""Limits that the command line states in its help as well as enforces (no NumPy here: ``--help`` reads
them)."""

# Rows a run's kept trajectory has at most (--every, a plot, a CSV trajectory): past it the kept steps are
# thinned evenly, so memory does not grow with --steps.
TRAJECTORY_MAX_ROWS = 100_000

# The longest expression (characters): what the parser takes, and what --file reads (comments and line breaks
# included). 1,000,000 characters are about 500,000 terms and operators: parsed in ~3 s and ~160 MB.
EXPRESSION_MAX_CHARS = 1_000_000
# The longest expression typed as an argument (each EXPR of a command, also on a `gradcli shell` line): what
# a person types; a generated one goes in --file.
COMMAND_LINE_EXPRESSION_MAX_CHARS = 10_000

# The longest line `gradcli shell` reads (bytes). An expression on a line is at most 10,000 characters
# (COMMAND_LINE_EXPRESSION_MAX_CHARS) and options add a few hundred more; 100 kB leaves room for long --at
# lists while a runaway input (a binary file, endless zeros) costs 100 kB of memory per line, not all of it.
# Larger expressions go in --file.
SHELL_MAX_LINE_BYTES = 100_000
# An over-long shell line is read past (and refused) up to this many bytes; past that the input has no
# lines at all (/dev/zero, /dev/full, a binary file) and the shell ends with a usage error.
SHELL_MAX_SKIP_BYTES = 64 * 1024 * 1024

# The most row text (bytes of input lines) one --points chunk holds, besides its row count: 4,096 rows of
# 1 MiB each would be 4 GiB in memory at once; at 64 MiB a chunk of wide rows stays near a few hundred MB
# with the fields' Python objects, and narrow rows still fill whole chunks.
POINTS_CHUNK_MAX_BYTES = 64 << 20

# The most work one grad/hessian/derivative request may be, as the seconds gradcli.compute.work estimates it
# takes on the bench machine (bench/work_estimate.py): past an hour a request is refused before anything is
# computed, with its numbers and how to split it, instead of running for days. A stream on stdin, whose
# length is unknown, is refused once the points it has given reach the limit.
WORK_MAX_SECONDS = 3600.0
