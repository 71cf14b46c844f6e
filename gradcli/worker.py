"""SymPy's work in the background, with a deadline: a daemon thread, or a forked process that runs
on the other core (and can be killed at the deadline) while gradcli imports TensorFlow or renders.

This module imports only the standard library: the console script calls :func:`prestart_worker`
before Typer is even imported, so that SymPy's import (most of a symbolic command's time) starts at once.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable


class SymbolicTimeout(Exception):
    """SymPy did not finish within the time limit (the caller leaves the column out with a note)."""


def _fork_safe() -> bool:
    # Forking is only safe before TensorFlow has started its threads.
    return hasattr(os, "fork") and "tensorflow" not in sys.modules


def _reply(conn, fn: Callable, args: tuple) -> None:
    try:
        payload = ("value", fn(*args))
    except BaseException as exc:
        payload = ("error", exc)
    try:
        conn.send(payload)
    except Exception as exc:  # an unpicklable exception: keep its words
        conn.send(("error", RuntimeError(f"{type(payload[1]).__name__}: {payload[1]} ({exc})")))


def _worker_main(conn) -> None:
    """A pre-started worker: pay for importing SymPy now, then run the one job the parent sends."""
    import sympy  # noqa: F401  (the point of starting early)

    try:
        fn, args = conn.recv()
    except (EOFError, OSError):  # the parent did not need us
        return
    _reply(conn, fn, args)


class _Worker:
    def __init__(self):
        import multiprocessing  # only here: it costs ~10 ms of imports

        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child,), daemon=True, name="gradcli-sympy")
        self.process.start()
        child.close()


_worker: _Worker | None = None


def prestart_worker() -> None:
    """Fork a process that imports SymPy at once, while this one imports Typer and parses options.

    The next :func:`start_bounded` with ``parallel=True`` hands its job to it (SymPy's import is most
    of a symbolic command's time). An unused worker is a daemon: it ends with gradcli.
    """
    global _worker
    if _worker is None and _fork_safe():
        _worker = _Worker()


class Pending:
    """SymPy work started in the background; :meth:`result` waits for it up to the deadline."""

    def __init__(self, fn: Callable[..., Any], args: tuple, seconds: float, *, parallel: bool):
        global _worker
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.process = None
        if parallel and _worker is not None:
            worker, _worker = _worker, None
            try:
                worker.conn.send((fn, args))  # fn must be a module-level function: it is pickled
                self.conn, self.process = worker.conn, worker.process
                return
            except Exception:
                worker.process.kill()
        # A forked process runs on the other core while this one carries on (importing TensorFlow,
        # evaluating stencils), and can be killed at the deadline.
        if parallel and _fork_safe():
            self._start_process(fn, args)
        else:
            self._start_thread(fn, args)

    def _start_thread(self, fn, args):
        self.box: dict[str, Any] = {}

        def target():
            try:
                self.box["value"] = fn(*args)
            except BaseException as exc:  # re-raised in the caller's thread
                self.box["error"] = exc

        self.thread = threading.Thread(target=target, daemon=True, name="gradcli-sympy")
        self.thread.start()

    def _start_process(self, fn, args):
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self.conn, sender = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_reply, args=(sender, fn, args), daemon=True, name="gradcli-sympy")
        self.process.start()
        sender.close()

    def result(self) -> Any:
        remaining = max(0.0, self.deadline - time.monotonic())
        if self.process is not None:
            if not self.conn.poll(remaining):
                self.process.kill()
                raise SymbolicTimeout(f"SymPy took longer than {self.seconds:g} s")
            try:
                kind, value = self.conn.recv()
            except EOFError:  # the worker died without a word (killed, out of memory)
                raise SymbolicTimeout("the SymPy worker stopped without an answer") from None
            self.process.join()
        else:
            self.thread.join(remaining)
            if self.thread.is_alive():
                raise SymbolicTimeout(f"SymPy took longer than {self.seconds:g} s")
            kind = "error" if "error" in self.box else "value"
            value = self.box[kind]
        if kind == "error":
            raise value
        return value


def start_bounded(fn: Callable[..., Any], seconds: float, *args: Any, parallel: bool = False) -> Pending:
    """Start ``fn(*args)`` (SymPy work) in the background; ``.result()`` returns its value or raises
    :class:`SymbolicTimeout` once ``seconds`` have passed.

    ``parallel=True`` asks for a separate process (the pre-started worker if there is one, which needs
    ``fn`` to be a module-level function), for when the caller has other slow work to do meanwhile;
    otherwise a daemon thread (SymPy cannot be interrupted: a thread past its deadline is abandoned
    and dies with the process).
    """
    return Pending(fn, args, seconds, parallel=parallel)


def run_bounded(fn: Callable[[], Any], seconds: float) -> Any:
    """Run ``fn`` and give up after ``seconds`` with :class:`SymbolicTimeout`."""
    return start_bounded(fn, seconds).result()


