"""What gradcli does when it is told to stop, and what it must not leave behind.

- SIGINT and SIGTERM end every command promptly, with exit 130 / 143 and ``gradcli: interrupted`` /
  ``gradcli: terminated`` on stderr, whether or not a terminal is attached; SIGHUP, SIGQUIT and SIGUSR1
  alike (exit 129 / 131 / 138).
- The forked SymPy workers (:mod:`gradcli.methods.worker`) are killed with their process groups first.
- TensorFlow's temporary files (autograph writes ``__autograph_generated_file*.py`` for every traced
  ``tf.function`` and removes them only at a normal exit) go to a private directory, removed at exit and
  on these signals; one left by a run killed with SIGKILL is removed by the next run.

Why not ``KeyboardInterrupt``: Python runs signal handlers in the main thread between bytecodes, and a
compiled TensorFlow loop is one call that can run for minutes (Ctrl-C then waits for it to return). The
signal's C handler still writes the signal number to the *wakeup fd*, so a watcher thread reading it
wakes at once (TensorFlow releases the GIL while it computes) and ends the process from there. The main
thread's Python handler does the same when it gets there first.

Standard library only: the console script installs this before Typer is imported.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import threading
import time

# Every signal whose default action ends the process and that is sent to stop a run (not a crash): a
# hangup (closed terminal, dropped ssh), Ctrl-\\, and SIGUSR1 (whose default also kills) end gradcli as
# SIGTERM does, or the run goes on after its terminal is gone, or dies leaving its private directory.
WORD = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up",
        signal.SIGQUIT: "quit", signal.SIGUSR1: "stopped by SIGUSR1"}
EXIT_CODE = {signum: 128 + signum for signum in WORD}  # as shells report a death by the signal
PRIVATE_PREFIX = "gradcli-tmp-"
# A private directory whose owner is gone is removed by a later run only once it is this old: a run
# that has just created its directory has not locked it yet.
STALE_AFTER_S = 60.0

_worker_pids: set[int] = set()
_ending = threading.Lock()
_sigint_raises = False  # see cancel_with_keyboard_interrupt
_private_tmp: str | None = None
_lock_fd: int | None = None
_diagnostics_fd = 2  # stderr as it was at start (see install)


def register_worker(pid: int) -> None:
    """A forked worker (the leader of its own process group) to kill when gradcli ends."""
    _worker_pids.add(pid)


def forget_worker(pid: int) -> None:
    _worker_pids.discard(pid)


def kill_workers() -> None:
    """SIGKILL every registered worker's process group, and the worker itself (it may not have made its
    group yet). No waiting: a dead parent's children are reaped by init. Only children not yet reaped:
    a reaped one's number may belong to another process by now."""
    for pid in list(_worker_pids):
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:  # it had exited: now reaped
                continue
        except ChildProcessError:
            continue
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:  # already gone
                pass


def install() -> None:
    """Handlers for the signals of :data:`WORD`, the watcher thread, and the private temporary directory.

    Only in the main thread (Python's rule for signal handlers); a signal the caller set to be ignored
    (``nohup``, a background job of a non-interactive shell) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    global _diagnostics_fd
    _use_private_tmp()
    atexit.register(_at_exit)
    try:  # TensorFlow's import points fd 2 at /dev/null for seconds: the ending's line must still show
        _diagnostics_fd = os.dup(2)
    except OSError:
        _diagnostics_fd = 2
    wanted = [s for s in EXIT_CODE if signal.getsignal(s) is not signal.SIG_IGN]
    if not wanted:
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # the wakeup fd must not block the C handler
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    for signum in wanted:
        signal.signal(signum, _on_signal)
    threading.Thread(target=_watch, args=(read_end,), daemon=True, name="gradcli-signals").start()


def reset_in_child() -> None:
    """In a forked worker: default signal actions and no wakeup fd, so that a signal sent to it does not
    run gradcli's ending (which removes the parent's temporary directory)."""
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass
    for signum in EXIT_CODE:
        if signal.getsignal(signum) is _on_signal:
            try:
                signal.signal(signum, signal.SIG_DFL)
            except ValueError:  # pragma: no cover - only the main thread may; workers fork from it
                pass


def cancel_with_keyboard_interrupt(enabled: bool = True) -> None:
    """While enabled, SIGINT raises KeyboardInterrupt in the main thread (Python's own behaviour) instead
    of ending gradcli: for an interactive prompt where Ctrl-C cancels the line (``gradcli shell``).
    SIGTERM still ends it."""
    global _sigint_raises
    _sigint_raises = enabled


def _on_signal(signum, frame) -> None:
    if signum == signal.SIGINT and _sigint_raises:
        raise KeyboardInterrupt
    end(signum)


def _watch(read_end: int) -> None:
    while True:
        try:
            data = os.read(read_end, 64)
        except OSError:
            return
        if not data:
            return
        for signum in data:
            if signum in EXIT_CODE and not (signum == signal.SIGINT and _sigint_raises):
                end(signum)


def end(signum: int) -> None:
    """Kill the workers, remove the private directory, say why on stderr, exit 128 + signum. The first
    caller (watcher thread or main thread) does it; a second one waits for the exit."""
    _ending.acquire()
    kill_workers()
    _remove_private_tmp()
    try:
        os.write(_diagnostics_fd, f"gradcli: {WORD[signum]}\n".encode())
    except OSError:  # stderr closed or full: the exit code still says it
        pass
    os._exit(EXIT_CODE[signum])


def _at_exit() -> None:
    kill_workers()
    _remove_private_tmp()


# ---- the private temporary directory ------------------------------------------------------------


def _use_private_tmp() -> None:
    """TMPDIR (read by Python's tempfile and by TensorFlow's C++) becomes a fresh directory inside the
    one the caller gave (or /tmp). It holds a lock file, locked while this run (or its worker) lives."""
    global _private_tmp, _lock_fd
    base = os.environ.get("TMPDIR") or "/tmp"
    path = os.path.join(base, f"{PRIVATE_PREFIX}{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.mkdir(path, 0o700)
        _lock_fd = os.open(os.path.join(path, ".lock"), os.O_CREAT | os.O_WRONLY, 0o600)
        _lock(_lock_fd, wait=True)
    except OSError:  # no writable temporary directory: leave TMPDIR as it is
        return
    _remove_stale(base)
    _private_tmp = path
    os.environ["TMPDIR"] = path
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # computed again from TMPDIR on next use


def _lock(fd: int, *, wait: bool) -> bool:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return wait
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        return True
    except OSError:
        return False


def _remove_stale(base: str) -> None:
    """Directories left by runs killed with SIGKILL: their lock can be taken (the kernel released it)."""
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(PRIVATE_PREFIX)]
    except OSError:
        return
    for entry in entries:
        try:
            if time.time() - entry.stat().st_mtime < STALE_AFTER_S and _owner_alive(entry.name):
                continue
            fd = os.open(os.path.join(entry.path, ".lock"), os.O_WRONLY)
        except OSError:
            continue
        try:
            if _lock(fd, wait=False):
                shutil.rmtree(entry.path, ignore_errors=True)
        finally:
            os.close(fd)


def _owner_alive(name: str) -> bool:
    """Whether the run named in ``gradcli-tmp-<pid>-<random>`` may still live (a young directory of a
    dead pid needs no waiting; its lock is still checked, as the pid may be of another pid namespace)."""
    try:
        pid = int(name[len(PRIVATE_PREFIX):].split("-", 1)[0])
    except ValueError:
        return True
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _remove_private_tmp() -> None:
    global _private_tmp
    path, _private_tmp = _private_tmp, None
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
