"""SymPy's jobs in a long-lived ``gradcli shell``: always in a killable process, never in a thread, and
from a process that has SymPy loaded already.

Why: a one-shot command forks each SymPy job (:class:`gradcli.methods.worker.BoundedJob`) from itself, and
the fork imports SymPy (0.3-0.8 s a job, two jobs for a ``check`` line); once TensorFlow is loaded it may
not fork at all, and the job runs in a thread, which cannot be stopped at its deadline (in the shell such
a thread lives on, holding the GIL: after ``grad "x**x**x**x" --at x=10`` every later line stalled). So the
shell starts multiprocessing's *fork server* first thing: a fresh interpreter (exec'd, so safe whatever
this process loads later) that imports SymPy on the other core while the shell starts, and forks each
worker from there in milliseconds. :func:`prepare_worker` makes it the source of every SymPy job's worker
(:func:`gradcli.methods.worker.use_worker_source`) and keeps two started ahead; the job is handed to one
with the worker module's own protocol, deadline and kill, and a worker that answered serves later jobs.

A worker's life stays tied to the shell's: the fork server gets SIGKILL the moment the shell ends, even
mid-import (Linux's parent-death signal, set as its first preload; elsewhere its end of a pipe closes,
which it sees once its preloads are done), each worker gets SIGKILL when the fork server dies
(parent-death signal, set by the worker module), and a watchdog kills a busy worker when the shell's end
of its lifeline closes.
"""

from __future__ import annotations

import os

# Imported by the fork server once, so that a worker starts with them loaded.
PRELOAD = ["ctypes", "gradcli.methods.worker", "sympy", "gradcli.methods.symbolic", "gradcli.compute.batch.grad",
           "gradcli.compute.check", "gradcli.commands.shell_sympy_warm"]

WORKERS_AHEAD = 2  # started before a line needs them: a check line has two SymPy jobs
_context = None  # multiprocessing's "forkserver" context, once started
_server_ready = False  # a worker has started: the fork server's preloads are done
# Set only while the fork server is started, to the shell's pid: the fork server (which imports this module
# first) knows by it whose death it must not outlive.
SERVER_PARENT_VARIABLE = "GRADCLI_FORK_SERVER_PARENT"


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
        os.environ[SERVER_PARENT_VARIABLE] = str(os.getpid())
        try:
            forkserver.ensure_running()
        finally:
            os.environ.pop(SERVER_PARENT_VARIABLE, None)
    except (ValueError, OSError, ImportError):
        return
    _context = context


def fork_server_running() -> bool:
    return _context is not None


def prepare_worker() -> None:
    """From now on every SymPy job of this process gets a worker of the fork server, and (once the server
    is ready) WORKERS_AHEAD wait for the next jobs already (called before and after each line: the next
    line's start while this one's output is read)."""
    from gradcli.methods.worker import prestart_worker, use_worker_source

    if _context is not None:  # without a fork server the jobs run as in a one-shot command
        use_worker_source(lambda: ServerWorker(_context))
        if _server_ready:  # (until then a start waits for its preloads: a line without SymPy must not)
            prestart_worker(WORKERS_AHEAD)


def die_with_the_shell() -> None:
    """In the fork server, as it imports this module (its first preload, before SymPy): SIGKILL when the
    shell that started it ends (Linux's parent-death signal). A shell that ended already is not waited for."""
    parent = os.environ.pop(SERVER_PARENT_VARIABLE, None)
    if parent is None:  # the shell itself, the daemon's child, a worker
        return
    _die_with_parent()
    if str(os.getppid()) != parent:
        os._exit(0)


class ServerWorker:
    """A worker for :func:`gradcli.methods.worker.use_worker_source`: ``conn`` to send the job, ``process`` to kill."""

    def __init__(self, context):
        global _server_ready
        self.conn, child = context.Pipe()
        lifeline_reader, lifeline_writer = context.Pipe(duplex=False)
        self.process = context.Process(target=serve_one_job, args=(child, lifeline_reader), daemon=True,
                                       name="gradcli-sympy")
        self.process.start()  # (waits for the fork server's preloads, the first time)
        _server_ready = True
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
    """Linux's parent-death signal: this process gets SIGKILL when its parent ends (the watchdog its worker,
    the fork server the shell)."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


die_with_the_shell()
