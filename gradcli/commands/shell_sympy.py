"""SymPy's jobs in a long-lived ``gradcli shell``: always in a killable process, never in a thread.

Why: :class:`gradcli.methods.worker.BoundedJob` forks a process for a SymPy job only while TensorFlow is
not loaded (forking a process that runs TensorFlow's threads is unsafe); after that the job runs in a
thread, which cannot be stopped at its deadline. In a one-shot command such a thread dies with the
process. In the shell it lives on, holding the GIL: after ``grad "x**x**x**x" --at x=10`` every later line
stalled. So the shell starts multiprocessing's *fork server* at once: a fresh interpreter (exec'd, so
safe whatever this process loads later) that imports SymPy on the other core while the first line
imports TensorFlow, and forks each worker from there in milliseconds. Before each line, once TensorFlow
is loaded, the shell puts one such worker in the slot :func:`gradcli.methods.worker.prestart_worker`
fills, and the line's first SymPy job is handed to it, with the worker module's own protocol, deadline
and kill. (Before TensorFlow is loaded the launcher's ordinary fork is used, as in a one-shot command.)

A worker's life stays tied to the shell's: the fork server exits when the shell does (even by SIGKILL:
its end of a pipe closes), and the worker gets SIGKILL when the fork server dies (parent-death signal,
set by the worker module).
"""

from __future__ import annotations

import os

# Imported by the fork server once, so that a worker starts with them loaded.
PRELOAD = ["ctypes", "gradcli.methods.worker", "sympy", "gradcli.methods.symbolic", "gradcli.compute.grad",
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
    from gradcli.methods import worker

    if _context is None or worker._worker is not None or worker._fork_safe():
        return
    try:
        worker._worker = ServerWorker(_context)
    except OSError:  # no process to spare: the job runs in a thread, as in a one-shot command
        pass


class ServerWorker:
    """What :data:`gradcli.methods.worker._worker` holds: ``conn`` to send the job, ``process`` to kill."""

    def __init__(self, context):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=serve_one_job, args=(child,), daemon=True, name="gradcli-sympy")
        self.process.start()
        child.close()


def serve_one_job(conn) -> None:
    """In the worker (a child of the fork server, which is its parent for the parent-death signal)."""
    from gradcli.methods import worker

    worker._worker_main(conn, os.getppid())
