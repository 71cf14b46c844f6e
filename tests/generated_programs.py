"""Running the programs gradcli prints (``--show-code``) in the test's own interpreter, as a student would
paste them: a fresh interpreter per program costs TensorFlow's import each time (seconds), and the text is
gradcli's own output, never user input."""

from __future__ import annotations

import contextlib
import io
import runpy
import tempfile
from pathlib import Path


def run_generated(source: str, name: str = "program.py") -> str:
    """What the program prints on stdout, run as ``__main__`` from a file of its own (tf.function's
    AutoGraph reads a function's source, which a string passed to exec does not have)."""
    out = io.StringIO()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(source, encoding="utf-8")
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(path), run_name="__main__")
    return out.getvalue()
