"""``eval``: the value of an expression at a point or at many, for scripts (no SymPy, no TensorFlow). The
command line and the Python API both run it here; the core is gradcli.compute.batch.value, the writers
gradcli.render.value and gradcli.render.batch."""

from __future__ import annotations


def run_eval(expression: str, *, at, points: str | None = None, grid: str | None = None, dtype: str = "float64",
             batch_size: int = 4096, sink):
    """The value at the --at point (a batch of one) or at every point of ``points``/``grid``, each written to
    ``sink`` as its chunk finishes; returns the run's summary (``failed``: some value is undefined, exit 1)."""
    from gradcli.compute.batch.engine import run_batch
    from gradcli.compute.batch.value import ValueBatch, value_chunks

    core = ValueBatch(expression, dtype=dtype)
    chunks = value_chunks(core, at=at, points=points, grid=grid, batch_size=batch_size)
    return run_batch(core, chunks, sink)
