"""The console script's first step under ``GRADCLI_DAEMON=1``: hand the call to the daemon, if one runs
and takes it (standard library only; nothing heavy is imported before this decides).

:func:`run_through_daemon` returns the command's exit code, or None when the daemon did not take the
call (no socket, refused, stale, busy beyond :data:`READY_WITHIN_S`, any protocol error before the
command started): the console script then runs the command itself, as if no daemon existed. Once the
daemon has said "go", the command is the daemon's: no second run, whatever happens.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys

from gradcli.daemon import protocol, world

CONNECT_TIMEOUT_S = 0.5
# The daemon answers a request in milliseconds; one busy beyond this is left alone (a cold run it is).
READY_WITHIN_S = float(os.environ.get("GRADCLI_DAEMON_READY_S", "2.0"))
RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)
# Not handed over: the daemon's own subcommands (it may be the one being stopped), and shell completion,
# which reads variables the daemon does not pass (_GRADCLI_COMPLETE, COMP_LINE, ...) and looks for the
# caller's shell among its parent processes; completion stays light run cold.
NOT_HANDED = ("daemon", "--show-completion", "--install-completion")
COMPLETION_VARIABLE = "_GRADCLI_COMPLETE"


def connect(timeout: float = CONNECT_TIMEOUT_S) -> socket.socket | None:
    """A connection to the daemon's socket, or None (no directory, no socket, refused)."""
    try:
        path = protocol.socket_path()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def request(op: str, timeout: float = 5.0) -> dict | None:
    """A one-frame request (``status``, ``stop``): the answer, or None when no daemon answers."""
    sock = connect()
    if sock is None:
        return None
    try:
        sock.settimeout(timeout)
        protocol.send(sock, {"op": op})
        return protocol.receive(sock)
    except (OSError, protocol.ProtocolError):
        return None
    finally:
        sock.close()


def run_through_daemon(argv: list[str]) -> int | None:
    if argv[:1] and argv[0] in NOT_HANDED or COMPLETION_VARIABLE in os.environ:
        return None
    if sys.__stdin__ is None or sys.__stdout__ is None or sys.__stderr__ is None:
        # A descriptor 0-2 closed when Python started: the next one opened (this socket) would take its
        # number, and the daemon would get the socket itself as the caller's stdout. A cold run says so.
        return None
    if argv[:1] == ["shell"] and _isatty(0):
        # An interactive shell owns the terminal: Ctrl-Z would stop this process and not the daemon's
        # child, which would go on reading the terminal beside the caller's shell. It runs cold.
        return None
    try:
        # the directory as a descriptor: the child enters this very directory, whatever its path names there
        directory = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:  # gone or unreadable: a cold run says what it says
        return None
    try:
        sock = connect()
        if sock is None:
            return None
        with sock:
            return _run(sock, argv, directory)
    finally:
        os.close(directory)


def _run(sock: socket.socket, argv: list[str], directory: int) -> int | None:
    try:
        protocol.send(sock, {"op": "run", "argv": argv, "cwd": os.getcwd(), "world": world.describe(),
                             "env": protocol.caller_environment(), "stamp": protocol.install_stamp()},
                      fds=[0, 1, 2, directory])
        sock.settimeout(READY_WITHIN_S)
        answer = protocol.receive(sock)
    except (OSError, protocol.ProtocolError):
        return None
    if answer.get("ready") is not True:
        return None
    wakeup_r, wakeup_w = os.pipe()
    os.set_blocking(wakeup_w, False)
    previous = _relay_signals(wakeup_w)
    try:
        try:
            protocol.send(sock, {"go": True})
        except OSError:
            return None  # not started: the daemon sees the connection close before any "go"
        return _wait_for_exit(sock, wakeup_r)
    finally:
        signal.set_wakeup_fd(-1)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        os.close(wakeup_r)
        os.close(wakeup_w)


def exit_now(code: int) -> None:
    """Never returns: end the calling process with the command's exit code, leaving out Python's finalization (5-10 ms of
    a warm call: every module freed one by one), which has nothing to do here: the client has no thread,
    no buffered output, no file of its own open. Exit handlers that something registered still run."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(code)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _relay_signals(wakeup_w: int) -> dict:
    """Signals that would end a cold run are written to ``wakeup_w`` instead, to be sent to the child, and
    Ctrl-Z (SIGTSTP) too, to stop the child with this process; one the caller set to be ignored stays
    ignored (``nohup``)."""
    previous = {}
    signal.set_wakeup_fd(wakeup_w, warn_on_full_buffer=False)
    for signum in (*RELAYED, signal.SIGTSTP):
        handler = signal.getsignal(signum)
        if handler is not signal.SIG_IGN:
            previous[signum] = handler
            signal.signal(signum, lambda *_: None)
    return previous


def _wait_for_exit(sock: socket.socket, wakeup_r: int) -> int:
    sock.settimeout(None)
    last_signal = None
    while True:
        try:
            ready, _, _ = select.select([sock, wakeup_r], [], [])
        except InterruptedError:  # pragma: no cover - Python retries select itself
            continue
        if wakeup_r in ready:
            for signum in os.read(wakeup_r, 64):
                if signum == signal.SIGTSTP:
                    _stop_with_the_child(sock)
                elif signum in RELAYED:
                    last_signal = signum
                    try:
                        protocol.send(sock, {"signal": signum})
                    except OSError:
                        pass
        if sock in ready:
            try:
                answer = protocol.receive(sock)
            except (OSError, protocol.ProtocolError):
                if last_signal is not None:
                    return 128 + last_signal
                os.write(2, b"gradcli: error: the daemon stopped while running the command\n")
                return 1
            if isinstance(answer.get("exit"), int):
                return answer["exit"]


def _stop_with_the_child(sock: socket.socket) -> None:
    """Ctrl-Z: the child stops (SIGSTOP: the daemon's process group is an orphan's, where SIGTSTP is
    discarded), then this process, as the shell's job; once continued (``fg``, ``bg``), the child too."""
    try:
        protocol.send(sock, {"signal": int(signal.SIGSTOP)})
    except OSError:
        return
    handler = signal.signal(signal.SIGTSTP, signal.SIG_DFL)
    try:
        os.kill(os.getpid(), signal.SIGTSTP)  # returns once continued
    finally:
        signal.signal(signal.SIGTSTP, handler)
    try:
        protocol.send(sock, {"signal": int(signal.SIGCONT)})
    except OSError:
        pass
