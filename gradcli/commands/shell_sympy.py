"""SymPy's jobs in a long-lived ``gradcli shell``: always in a killable process, never in a thread.

Why: :class:`gradcli.methods.worker.BoundedJob` forks a process for a SymPy job only while TensorFlow is
not loaded (forking a process that runs TensorFlow's threads is unsafe); after that the job runs in a
thread, which cannot be stopped at its deadline. In a one-shot command such a thread dies with the
process. In the shell it lives on, holding the GIL: after ``grad "x**x**x**x" --at x=10`` every later line
stalled. So the shell starts multiprocessing's *fork server* at once: a fresh interpreter (exec'd, so
safe whatever this process loads later) that imports SymPy on the other core while the first line
imports TensorFlow, and forks each worker from there in milliseconds. Before each line, once TensorFlow
is loaded, the shell offers one such worker (:func:`gradcli.methods.worker.offer_worker`, the slot
:func:`~gradcli.methods.worker.prestart_worker` fills), and the line's first SymPy job is handed to it, with the worker module's own protocol, deadline
and kill. (Before TensorFlow is loaded the launcher's ordinary fork is used, as in a one-shot command.)

A worker's life stays tied to the shell's: the fork server exits when the shell does (even by SIGKILL:
its end of a pipe closes), and the worker gets SIGKILL when the fork server dies (parent-death signal,
set by the worker module).
"""

from __future__ import annotations

import os

# Imported by the fork server once, so that a worker starts with them loaded.
PRELOAD = ["ctypes", "gradcli.methods.worker", "sympy", "gradcli.methods.symbolic", "gradcli.compute.batch.grad",
           "gradcli.commands.shell_sympy_warm"]

_context = None  # multiprocessing's "forkserver" context, once started


def start_fork_server() -> None:
    """Start the fork server now (it loads SymPy while the first line runs); without one (no fork server
    on this platform, no process to spare) the jobs run as in a one-shot command."""
    global _context
    if _context is not None:
        return
    try:
        import multiprocessing
        from multiprocessing import forkserver

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__, *PRELOAD])
        forkserver.ensure_running()
    except (ValueError, OSError, ImportError):
        return
    _context = context


def prepare_worker() -> None:
    """Before a line: once TensorFlow is loaded, a worker from the fork server waits for its SymPy job."""
    from gradcli.methods.worker import offer_worker

    if _context is not None:  # without a fork server the jobs run as in a one-shot command
        offer_worker(lambda: ServerWorker(_context))


class ServerWorker:
    """A worker for :func:`gradcli.methods.worker.offer_worker`: ``conn`` to send the job, ``process`` to kill."""

    def __init__(self, context):
        self.conn, child = context.Pipe()
        lifeline_reader, lifeline_writer = context.Pipe(duplex=False)
        self.process = context.Process(target=serve_one_job, args=(child, lifeline_reader), daemon=True,
                                       name="gradcli-sympy")
        self.process.start()
        child.close()
        lifeline_reader.close()
        _lifelines.append((self.process, lifeline_writer))
        _close_dead_lifelines()


# The shell's ends of its workers' lifelines: open while the shell lives (see watch_the_shell).
_lifelines: list = []


def _close_dead_lifelines() -> None:
    for entry in list(_lifelines):
        process, writer = entry
        if not process.is_alive():
            writer.close()
            _lifelines.remove(entry)


def serve_one_job(conn, lifeline) -> None:
    """In the worker (a child of the fork server, which is its parent for the parent-death signal)."""
    from gradcli.methods.worker import serve_one_job

    watch_the_shell(lifeline)
    serve_one_job(conn, os.getppid())


def watch_the_shell(lifeline) -> None:
    """Fork a watchdog that SIGKILLs this worker's process group once the shell's end of ``lifeline``
    closes: when the shell ends in any way, SIGKILL included. (The fork server outlives the shell while a
    worker runs, so the parent-death signal alone would leave a busy worker to its own deadline.) A
    process, not a thread: SymPy's big-integer work can hold the GIL for seconds."""
    import signal

    try:
        os.setpgid(0, 0)  # the worker leads its group before the watchdog joins it
        watchdog = os.fork()
    except OSError:  # no process to spare: the worker's own deadline still ends it
        return
    if watchdog:
        lifeline.close()
        return
    try:
        _die_with_parent()
        while os.read(lifeline.fileno(), 1):
            pass
    except OSError:
        pass
    finally:
        os.killpg(0, signal.SIGKILL)
        os._exit(0)


def _die_with_parent() -> None:
    """Linux's parent-death signal: the watchdog goes when its worker goes."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
