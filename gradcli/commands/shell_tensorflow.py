"""TensorFlow for ``gradcli shell``: loaded in the background, and never at the expense of a line.

A line that does not use TensorFlow (``eval``, ``check``, SymPy's and fd's columns) must not wait for its
import (5-10 s, more under load); a line that uses it should find it loaded. So a thread imports it (with
:func:`gradcli.methods.tf_runtime.load_tensorflow`, the one quiet import), then SymPy for this process,
but only in moments the shell has nothing else to do:

- while the shell waits for its next line: at the prompt, or on a pipe with nothing to read yet (a pipe
  that holds the next lines already gives it no moment: its TensorFlow loads when a line needs it, as a
  plain command's does);
- while a line waits for the thread's work: it calls ``load_tensorflow`` (which waits for the thread's
  import instead of starting its own) or imports a module the thread is importing.

Otherwise, while a line runs, the thread stops before its next module (at Python's "import" audit event). An import is Python code holding the
GIL: on two cores a thread importing TensorFlow beside a line made the line 2.4x slower, and an
interactive first line waited 10-14 s when the shell waited for the import instead.

TensorFlow's import points file descriptor 2 at /dev/null while it runs (its C++ logging ignores
``sys.stderr``); the lines that run meanwhile speak through a duplicate of it
(:func:`gradcli.streams.move_diagnostics_off_descriptor_2`).
"""

from __future__ import annotations

import select
import sys
import threading
from contextlib import contextmanager
from typing import Callable

# How often a stopped loader looks whether the line it yields to now waits for it.
RECHECK_S = 0.05

_loader: "BackgroundLoad | None" = None


class BackgroundLoad:
    """The loading thread and the moments it may work in (see the module's docstring)."""

    def __init__(self, work: Callable[[], None], waited_in: Callable) -> None:
        """``work`` runs in the thread; the shell's thread inside ``waited_in`` waits for it (see _waited_for)."""
        self.free = threading.Event()  # set while the shell waits for its next line
        self.shell_thread = threading.get_ident()  # the one that runs the lines (it starts the load)
        self.done = threading.Event()
        self.work = work
        self.waited_in = waited_in.__code__
        self.thread = threading.Thread(target=self._run, daemon=True, name="gradcli-tensorflow")

    # ---- the thread ----
    def _run(self) -> None:
        sys.addaudithook(self._on_audit_event)  # (for good: hooks cannot be removed; a no-op once done)
        try:
            self.work()
        except Exception:  # the line that needs the module says what is wrong, in its own words
            pass
        finally:
            self.done.set()

    def _on_audit_event(self, event: str, args) -> None:
        """Python's "import" event comes before each new module's import, outside the import system's
        global lock: there the thread waits for a free moment (holding only the locks of the modules it
        is in the middle of importing, which _waited_for watches)."""
        if event == "import" and not self.done.is_set() and threading.get_ident() == self.thread.ident:
            while not self.free.is_set() and not self._waited_for():
                self.free.wait(RECHECK_S)

    def _waited_for(self) -> bool:
        """Whether another thread (the shell's, running a line) waits for this one: inside ``waited_in``
        (``load_tensorflow``, whose lock this thread holds), or for a module's import lock (a module this
        thread is importing stays locked until it is done). Or the shell's thread has ended."""
        frames = sys._current_frames()
        if self.shell_thread not in frames:
            return True
        for ident, frame in frames.items():
            if ident == self.thread.ident:
                continue
            if frame.f_code.co_name == "acquire" and frame.f_code.co_filename.startswith("<frozen importlib"):
                return True  # a module lock
            while frame is not None:
                if frame.f_code is self.waited_in:
                    return True
                frame = frame.f_back
        return False

    # ---- the shell ----
    @contextmanager
    def waiting_for_a_line(self, stream=None):
        """Around reading the next line: a free moment, unless ``stream`` (a pipe) has input ready."""
        if stream is None or not _input_ready(stream):
            self.free.set()
        try:
            yield
        finally:
            self.free.clear()


def _input_ready(stream) -> bool:
    """Whether reading ``stream`` now returns at once (a pipe with lines in it, or at its end); a stream
    without a descriptor (io.StringIO) always does."""
    try:
        return bool(select.select([stream.fileno()], [], [], 0)[0])
    except (AttributeError, OSError, ValueError):
        return True


def load_tensorflow_and_sympy() -> None:
    from gradcli.methods.tf_runtime import load_tensorflow

    load_tensorflow()
    import sympy  # noqa: F401  (some lines use SymPy in this process too)

    from gradcli.methods import symbolic  # noqa: F401


def start_loading() -> BackgroundLoad | None:
    """Start the background load (once per process) and return it; None where this process's messages
    do not go through gradcli's own standard error (the shell run in process, as the tests do: silencing
    descriptor 2 there, for as long as the load stays stopped, would take it from whoever captures it)."""
    global _loader
    if _loader is None:
        from gradcli import streams
        from gradcli.methods.tf_runtime import load_tensorflow

        if not streams.move_diagnostics_off_descriptor_2():
            return None
        _loader = BackgroundLoad(load_tensorflow_and_sympy, load_tensorflow)
        _loader.thread.start()
    return _loader
