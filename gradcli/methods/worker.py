"""SymPy's work in the background, with a deadline: :class:`BoundedJob`.

This module imports only the standard library: the console script calls :func:`prestart_worker`
before Typer is even imported, so that SymPy's import (most of a symbolic command's time) starts at once.
"""

from __future__ import annotations

import contextvars
import math
import os
import signal
import sys
import threading
import time
from typing import Any, Callable

from gradcli import interrupts

# A worker ends itself this long after its job's deadline, should the parent's timer not have killed it.
SELF_DEADLINE_GRACE_S = 1.0
# A job's time limit counts from when SymPy is imported and ready (its import alone takes 1-2 s, more under
# load: a 2 s limit would otherwise be spent before any work); the import itself may take this long.
IMPORT_ALLOWANCE_S = 30.0
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class SymbolicTimeout(Exception):
    """SymPy did not finish within the time limit (the caller leaves the column out with a note)."""


class AbandonedJob(BaseException):
    """Raised inside a job's thread once nobody waits for its answer (its deadline passed, or it was
    cancelled). A BaseException, so that SymPy's own ``except Exception`` clauses do not swallow it."""


def _fork_safe() -> bool:
    # Forking is only safe before TensorFlow has started its threads (see BoundedJob).
    return hasattr(os, "fork") and "tensorflow" not in sys.modules


# Set (in its context) by a caller whose jobs run in threads, never in a process of their own: the Python
# API's calls. A process per call costs a fork and a pickled round trip (1-2 ms idle, hundreds of ms on a
# loaded machine) where SymPy's work is a millisecond; the CLI's one job a run keeps its killable process.
_jobs_in_threads: contextvars.ContextVar[bool] = contextvars.ContextVar("gradcli_jobs_in_threads", default=False)


class jobs_in_threads:
    """``with jobs_in_threads():`` the BoundedJobs started in the block (in this context) run in threads."""

    def __enter__(self):
        self._token = _jobs_in_threads.set(True)
        return self

    def __exit__(self, *exc):
        _jobs_in_threads.reset(self._token)


def _clear_async_exception() -> None:
    """Drop an exception sent to this thread that has not been raised yet."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.get_ident()), None)


def in_an_import(frame) -> bool:
    """Whether ``frame`` or a caller of it runs the import machinery."""
    while frame is not None:  # (the frozen importlib's file name, or its module's, where it is not frozen)
        if frame.f_code.co_filename.startswith("<frozen importlib") or \
                frame.f_globals.get("__name__") in ("importlib._bootstrap", "importlib._bootstrap_external"):
            return True
        frame = frame.f_back
    return False


def _enter_worker(parent: int) -> None:
    """First thing in a forked worker: tie its life to gradcli's, whatever happens to gradcli.

    - its own process group (the parent sets it too, whichever runs first), which gradcli kills on exit
      and on SIGINT/SIGTERM (:mod:`gradcli.interrupts`); a terminal's Ctrl-C reaches gradcli alone;
    - on Linux, a parent-death signal: SIGKILL when gradcli dies, even by SIGKILL (it is sent when the
      thread that forked exits: workers are forked from the main thread);
    - default signal actions (gradcli's handlers would remove the parent's temporary directory)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    interrupts.reset_in_child()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no libc to call: the process group and the deadline remain
            pass
    if os.getppid() != parent:  # gradcli died before the parent-death signal was set
        os._exit(1)


def _end_by_deadline(seconds: float) -> None:
    """The worker's own deadline: SIGALRM's default action ends it, even inside a long C call."""
    if math.isfinite(seconds):
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, max(0.0, seconds) + SELF_DEADLINE_GRACE_S)


def _start_forked(ctx, target, args: tuple):
    """Fork a worker running ``target(*args)`` in its own process group, known to gradcli.interrupts."""
    process = ctx.Process(target=target, args=args, daemon=True, name="gradcli-sympy")
    process.start()
    try:
        os.setpgid(process.pid, process.pid)
    except OSError:  # the child did it first, or it has exited already
        pass
    interrupts.register_worker(process.pid)
    return process


def _run_job(conn, parent: int, fn: Callable, args: tuple, kwargs: dict, seconds: float) -> None:
    """A forked job's process: enter, import SymPy, say so (the time limit starts now), set its own
    deadline, work, answer."""
    _enter_worker(parent)
    _end_by_deadline(IMPORT_ALLOWANCE_S)
    import sympy  # noqa: F401  (the work's own import, outside its time limit)

    _ready(conn, seconds)
    _reply(conn, fn, args, kwargs)


def _ready(conn, seconds: float) -> None:
    """Tell the parent that SymPy is imported (its clock for the job starts there), and start ours."""
    conn.send(("ready", time.monotonic()))  # CLOCK_MONOTONIC: one clock for parent and child
    _end_by_deadline(seconds)


def _reply(conn, fn: Callable, args: tuple, kwargs: dict) -> None:
    try:
        payload = ("value", fn(*args, **kwargs))
    except BaseException as exc:
        payload = ("error", exc)
    try:
        conn.send(payload)
    except Exception as exc:  # an unpicklable exception: keep its words
        conn.send(("error", RuntimeError(f"{type(payload[1]).__name__}: {payload[1]} ({exc})")))


def serve_one_job(conn, parent: int) -> None:
    """A pre-started worker's body: pay for importing SymPy now, then run the job sent on ``conn`` by
    ``parent`` (the process that will kill it), with the job's own deadline; and the next one, while the
    parent keeps it (a worker source's worker that answered goes back to the waiting ones, see
    :func:`use_worker_source`; other workers are killed after one job). Public for workers started
    elsewhere."""
    _enter_worker(parent)
    import sympy  # noqa: F401  (the point of starting early)

    while True:
        try:
            fn, args, kwargs, seconds = conn.recv()
        except (EOFError, OSError):  # the parent did not need us (any more)
            return
        _ready(conn, seconds)
        _reply(conn, fn, args, kwargs)
        signal.setitimer(signal.ITIMER_REAL, 0)  # this job's deadline is over


class _Worker:
    def __init__(self):
        import multiprocessing  # only here: it costs ~10 ms of imports

        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.process = _start_forked(ctx, serve_one_job, (child, os.getpid()))
        child.close()


_waiting: list = []  # started workers, the next parallel job takes the first
MAX_WAITING = 4  # a worker source's workers kept for later jobs at most
# Where the ``parallel`` jobs' workers come from instead of a fork of this process (see use_worker_source).
_worker_source: Callable[[], Any] | None = None


def use_worker_source(start: Callable[[], Any] | None) -> None:
    """From now on every ``parallel`` job (and :func:`prestart_worker`) gets its worker from ``start()``
    instead of a fork of this process: ``gradcli shell``'s fork server, whose workers start in milliseconds
    with SymPy imported, and which stays safe to use once TensorFlow is loaded here. ``None``: fork again.

    ``start()`` returns the worker: an object with ``conn`` (a multiprocessing connection to a process
    running :func:`serve_one_job`) and ``process`` (a multiprocessing.Process, killed at the deadline). An
    OSError from it (no process to spare) makes that job run as it would without a source."""
    global _worker_source
    _worker_source = start


def _from_source() -> Any | None:
    if _worker_source is None:
        return None
    try:
        return _worker_source()
    except (OSError, EOFError):  # no process to spare, or the source is gone
        return None


def prestart_worker(count: int = 1) -> None:
    """Start a worker that imports SymPy at once, while this process imports Typer and parses options (or,
    in ``gradcli shell``, while the line before is written and read); from a worker source, up to ``count``
    of them (a ``check`` line has two jobs).

    The next :class:`BoundedJob` with ``parallel=True`` hands its job to it. An unused worker is a
    daemon: it ends with gradcli.
    """
    if _worker_source is not None:
        while len(_waiting) < count:
            worker = _from_source()
            if worker is None:
                return
            _waiting.append(worker)
    elif not _waiting and _fork_safe():
        _waiting.append(_Worker())


def _take_waiting_worker() -> Any | None:
    while _waiting:
        worker = _waiting.pop(0)
        if worker.process.is_alive():
            return worker
        _end(worker)
    return None


def _keep_for_later(worker) -> None:
    """A worker source's worker that answered: it serves the next job (no new process for it)."""
    if len(_waiting) < MAX_WAITING and worker.process.is_alive():
        _waiting.append(worker)
    else:
        _end(worker)


def _end(worker) -> None:
    worker.process.kill()
    worker.process.join()
    interrupts.forget_worker(worker.process.pid)
    worker.conn.close()


def waiting_worker() -> Any | None:
    """The worker the next ``parallel`` :class:`BoundedJob` will take, if one waits."""
    return _waiting[0] if _waiting else None


class CancelFlag:
    """What a cancellable work function gets as ``cancel``: it calls :meth:`check` between derivatives.
    A plain attribute, so that it pickles (the pre-started worker is sent its arguments pickled)."""

    def __init__(self) -> None:
        self.cancelled = False

    def check(self) -> None:
        if self.cancelled:
            raise SymbolicTimeout("cancelled")


class BoundedJob:
    """``fn(*args)`` (SymPy's work) started in the background; :meth:`result` returns its value, re-raises
    its error, or raises :class:`SymbolicTimeout` ("SymPy took longer than N s") once ``seconds`` have passed.

    Why a job, and why it is run the way it is (the one place this is told):

    - SymPy can take unbounded time on small inputs (``x**x**x**x`` at 10), so every command gives it a
      deadline and leaves the symbolic column (or the stationary points) out past it.
    - SymPy's big-integer work holds the GIL. A thread past its deadline cannot be interrupted, and it
      slows (or, for long enough, stalls) everything else gradcli does. So with ``parallel=True`` the job
      runs in a *forked process*: on the other core, alongside what this process does meanwhile
      (importing TensorFlow, taping, evaluating stencils, descending, rendering), and killable.
    - Forking is only safe before TensorFlow is imported (it starts threads whose locks a child could
      inherit held). Commands therefore start their job first, before anything imports TensorFlow; once
      it is loaded (and without ``parallel``) the job runs in a *daemon thread* instead.
    - A timer fires at the deadline, even while this process is busy: it kills a forked process (past
      its deadline it would only take a core from the rest) and reaps it (no zombie), unless its answer
      is already in the pipe. For a thread it sets the job's :class:`CancelFlag` (with
      ``cancellable=True``, ``fn`` is called with ``cancel=`` that flag and checks it between
      derivatives) and raises :class:`AbandonedJob` in the thread at its next bytecode (a long C call,
      such as one big-integer product, ends first): in a long-lived process (a notebook, the API in a
      server) an abandoned SymPy thread would otherwise simplify on for minutes, taking the GIL from
      everything else. A thread in the middle of an import is interrupted once the import is over (an
      exception there would leave the module half-initialised; the look at its stack is a moment before
      the exception is raised, so an import begun in between can still be cut: rare, and only in a thread
      nobody waits for).
    - :func:`prestart_worker` (called by ``gradcli.launcher`` for ``grad``) forks a process that imports
      SymPy while Typer loads; the first ``parallel`` job is handed to it, pickled. Work functions are
      therefore module-level, with picklable arguments and results.
    - Where a worker source is set (:func:`use_worker_source`: ``gradcli shell``'s fork server), every
      ``parallel`` job without a waiting worker gets a fresh one from it, TensorFlow loaded or not; one
      that answered in time waits for the next job (a job past its deadline or failing ends its worker).

    :meth:`cancel` (alias :meth:`stop`) is for a caller that no longer needs the answer: the process is
    killed and reaped, the thread is told to stop, and :meth:`result` raises :class:`SymbolicTimeout`.
    """

    def __init__(self, fn: Callable[..., Any], args: tuple, seconds: float, *,
                 parallel: bool = False, cancellable: bool = False):
        self.seconds = seconds
        self.started = time.monotonic()
        # the limit counts from SymPy's readiness (told by the worker, or the thread's import); until
        # then, the latest moment it may start
        self.deadline = self.started + seconds + IMPORT_ALLOWANCE_S
        self._ready_at: float | None = None
        self._timer: threading.Timer | None = None
        self.flag = CancelFlag()
        self.process = None  # a multiprocessing.Process, or None for a thread
        self.thread: threading.Thread | None = None
        self._outcome: tuple[str, Any] | None = None  # ("value", v) or ("error", exc), once known
        self._killed = False  # by the timer, at the deadline
        self._reusable = None  # a worker source's worker, kept for later jobs once it has answered
        self._finished = False
        self._lock = threading.Lock()
        kwargs = {"cancel": self.flag} if cancellable else {}
        parallel = parallel and not _jobs_in_threads.get()
        if parallel:
            job = (fn, args, kwargs, seconds)  # pickled: fn must be module-level
            if not self._hand_to(_take_waiting_worker(), job):
                self._hand_to(_from_source(), job)
        if self.process is None:
            if parallel and _fork_safe():
                self._start_process(fn, args, kwargs)
            else:
                self._start_thread(fn, args, kwargs)
        if math.isfinite(seconds) and self.process is not None:
            # a worker ends itself at its own deadline (SIGALRM, counted from its readiness); this timer
            # is the backstop for a worker whose SymPy import never finished
            self._start_timer(seconds + IMPORT_ALLOWANCE_S)

    def _hand_to(self, worker, job: tuple) -> bool:
        """Send the job to a started worker; False (and the worker ended) when there is none or it fails."""
        if worker is None:
            return False
        try:
            worker.conn.send(job)
        except Exception:
            worker.process.kill()
            worker.process.join()
            interrupts.forget_worker(worker.process.pid)
            return False
        self.conn, self.process = worker.conn, worker.process
        if _worker_source is not None:
            self._reusable = worker
        return True

    def _start_timer(self, seconds: float) -> None:
        self._timer = threading.Timer(max(0.0, seconds), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _became_ready(self, at: float) -> None:
        self._ready_at = max(at, self.started)
        self.deadline = self._ready_at + self.seconds

    def _start_thread(self, fn, args, kwargs) -> None:
        self._box: dict[str, Any] = {}

        def target():
            try:
                import sympy  # noqa: F401  (outside the time limit, as in a worker process)

                with self._lock:
                    self._became_ready(time.monotonic())
                    if math.isfinite(self.seconds) and not self._finished:
                        self._start_timer(self.seconds)  # sets the cancel flag at the deadline
                self._box["value"] = fn(*args, **kwargs)
            except BaseException as exc:  # re-raised in the caller's thread
                self._box.setdefault("error", exc)
            while True:  # no AbandonedJob may outlive the job: none is sent once it is done, one sent is cleared
                try:
                    with self._lock:
                        self._thread_done = True
                        _clear_async_exception()
                    return
                except AbandonedJob:  # it fired before it could be cleared
                    continue

        self._thread_done = False
        # in a copy of the caller's context: what it has in force for its call (its --rule s) holds in the job
        context = contextvars.copy_context()
        self.thread = threading.Thread(target=context.run, args=(target,), daemon=True, name="gradcli-sympy")
        self.thread.start()

    def _start_process(self, fn, args, kwargs) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        self.conn, sender = ctx.Pipe(duplex=False)
        self.process = _start_forked(ctx, _run_job, (sender, os.getpid(), fn, args, kwargs, self.seconds))
        sender.close()

    def _timed_out(self) -> tuple[str, Exception]:
        return "error", SymbolicTimeout(f"SymPy took longer than {self.seconds:g} s")

    def _expire(self) -> None:
        """The timer, at the deadline (in its own thread)."""
        with self._lock:
            if self._finished:
                return
            self.flag.cancelled = True
            self._interrupt_thread()
            if self.process is not None and not self.conn.poll():  # an answer in the pipe is kept for result()
                self._killed = True
                self.process.kill()
                self.process.join()
                interrupts.forget_worker(self.process.pid)
            elif self.process is not None:
                self.process.is_alive()  # reaps it if it has exited after answering

    def _interrupt_thread(self) -> None:
        """End the job's thread, if it still runs its job (see the class docstring): at once, or once out of an
        import. Called with ``self._lock`` held: the thread says it is done under the same lock, so the
        exception never reaches a thread that has finished (or another that took its ident)."""
        thread = self.thread
        if thread is None or self._thread_done or thread.ident is None:
            return
        if in_an_import(sys._current_frames().get(thread.ident)):
            retry = threading.Timer(0.05, self._interrupt_later)
            retry.daemon = True
            retry.start()
            return
        import ctypes

        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(AbandonedJob))

    def _interrupt_later(self) -> None:
        with self._lock:
            self._interrupt_thread()

    def result(self) -> Any:
        if self._outcome is None:
            self._outcome = self._wait()
            self._finish()
        kind, value = self._outcome
        if kind == "error":
            raise value
        return value

    def _wait(self) -> tuple[str, Any]:
        if self.thread is not None:
            while self.thread.is_alive() and time.monotonic() < self.deadline:  # the deadline moves once ready
                self.thread.join(min(0.05, max(0.0, self.deadline - time.monotonic())))
            if self.thread.is_alive():
                return self._timed_out()
            if "error" in self._box:
                if self.flag.cancelled and isinstance(self._box["error"], (SymbolicTimeout, AbandonedJob)):
                    return self._timed_out()  # it stopped at its cancel flag, or was ended, at the deadline
                return "error", self._box["error"]
            return "value", self._box["value"]
        try:
            while True:
                if not self.conn.poll(max(0.0, self.deadline - time.monotonic())):
                    return self._timed_out()
                kind, value = self.conn.recv()
                if kind != "ready":
                    return kind, value
                self._became_ready(value)
        except (EOFError, OSError):  # killed at the deadline (a reset on the pre-started worker's socket),
            # ended by its own deadline (SIGALRM), or it died without a word (out of memory)
            self.process.join(1.0)
            if self._killed or self.process.exitcode == -signal.SIGALRM:
                return self._timed_out()
            return "error", SymbolicTimeout("the SymPy worker stopped without an answer")

    def _finish(self) -> None:
        """Stop the timer; end and reap the process (a worker source's worker that answered is kept)."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._finished:
                return
            self._finished = True
            self.flag.cancelled = True
            self._interrupt_thread()
            if self._reusable is not None and self._outcome is not None and self._outcome[0] == "value" \
                    and not self._killed:
                _keep_for_later(self._reusable)
            elif self.process is not None:
                self.process.kill()  # (its answer, if any, is in hand: nothing is left for it to do)
                self.process.join()
                interrupts.forget_worker(self.process.pid)
                self.conn.close()

    def cancel(self) -> None:
        """The caller no longer needs the answer: kill and reap the process, or tell the thread to stop."""
        if self._outcome is None:
            self._outcome = ("error", SymbolicTimeout("the SymPy job was cancelled"))
        self._finish()

    stop = cancel
