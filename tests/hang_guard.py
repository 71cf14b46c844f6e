"""How long a test waits for a process it started (to end, to start its worker, to leave no member behind)
before calling it hung.

A backstop against a hang, never a measure of speed: on a loaded CI machine a process may take many times
its usual seconds, and a test that waits a fixed 30 s fails there although nothing is wrong. A process that
is wrong ends with the wrong exit code or output, which the test checks; one that hangs is stopped here.
"""

HANG_S = 600.0
