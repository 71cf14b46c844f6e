"""The daemon: one warm process that forks a child per request (:func:`main`, started by ``gradcli daemon
start``); :mod:`gradcli.daemon.child` is what a child runs.

Why forking from here is safe: the daemon imports TensorFlow but never runs an op, so TensorFlow's
runtime (its thread pools, the eager context) has not started; the only thread besides the main one is
OpenBLAS's pool from NumPy, which handles fork itself (pthread_atfork). Each child then initialises
TensorFlow's runtime for itself on its first op (~50 ms), as a cold run would after its import; the daemon
keeps one child forked ahead of the next call (its spare) that has done that already. The
daemon checks its thread count before every fork and stops (clients then run cold) should an import
ever start more threads. SymPy's killable job processes come, as in ``gradcli shell``, from
multiprocessing's fork server (:mod:`gradcli.commands.shell_sympy`), started by exec before TensorFlow
is imported.

The main process is single-threaded and runs one select loop: the listening socket, the connections of
running commands (signals to relay; a closed one kills its child), and a wakeup pipe for SIGCHLD,
SIGTERM and SIGINT. It stops when told to, on SIGTERM, after ``GRADCLI_DAEMON_IDLE`` seconds without a
request (default 900), or when gradcli's version or installation changes (the install stamp).
"""

from __future__ import annotations

import fcntl
import os
import selectors
import signal
import socket
import struct
import sys
import time

from gradcli.daemon import child, protocol, warm, world

IDLE_S = float(os.environ.get("GRADCLI_DAEMON_IDLE", "900"))
# A child forked ahead of the next call, TensorFlow's runtime started in it ("0": none, each call's child
# starts it: 40-50 ms on an idle machine, 70-100 ms on a busy one, of a warm call's 0.2-0.3 s). It is forked when no command runs, so its
# start never competes with a call for the CPU.
SPARE = os.environ.get("GRADCLI_DAEMON_SPARE", "1") != "0"
SPARE_FAILURES = 3  # spares that died unused before their call: no more are made (calls fork as they come)
MAX_RUNNING = int(os.environ.get("GRADCLI_DAEMON_MAX_RUNNING", "8"))
REQUEST_TIMEOUT_S = 2.0  # a connection that does not send its whole request (or its "go") in this time
CHECK_EVERY_S = 5.0
RELAYABLE = {int(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                               signal.SIGSTOP, signal.SIGCONT)}  # the last two: the caller's Ctrl-Z and fg


class Daemon:
    def __init__(self, directory: str, allowed_threads: int, stamp: str):
        self.directory = directory
        self.path = os.path.join(directory, protocol.SOCKET_NAME)
        self.allowed_threads = allowed_threads
        self.stamp = stamp
        self.started = time.time()
        self.pid = os.getpid()
        self.served = 0
        self.last_activity = time.monotonic()
        self.running: dict[int, socket.socket] = {}  # child pid -> its client's connection
        self.caller_gone: set[int] = set()  # of those, the ones whose client has closed (done, or killed)
        self.spare: tuple[int, socket.socket] | None = None  # (pid, the end its call is handed over on)
        self.spare_failures = 0
        self.stopping = False
        self.selector = selectors.DefaultSelector()
        self.wakeup_r, wakeup_w = os.pipe()
        os.set_blocking(self.wakeup_r, False)
        os.set_blocking(wakeup_w, False)
        signal.set_wakeup_fd(wakeup_w, warn_on_full_buffer=False)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda *_: None)
        old_umask = os.umask(0o177)  # the socket is created 0600, no moment wider
        try:
            try:
                os.unlink(self.path)  # a dead daemon's (the lock says no other lives)
            except FileNotFoundError:
                pass
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(self.path)
        finally:
            os.umask(old_umask)
        self.inode = os.stat(self.path).st_ino
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wakeup_r, selectors.EVENT_READ, "signal")

    # ---- the loop -------------------------------------------------------------------------------

    def serve(self) -> None:
        next_check = time.monotonic() + CHECK_EVERY_S
        self._fork_spare()
        while not (self.stopping and not self.running):
            for key, _ in self.selector.select(timeout=1.0):
                if key.data == "accept":
                    self._accept()
                elif key.data == "signal":
                    self._on_signals()
                else:
                    self._from_client(key.data, key.fileobj)
            now = time.monotonic()
            if not self.running and now - self.last_activity > IDLE_S:
                self.stop(f"idle for {IDLE_S:g} s")
            if now >= next_check:
                next_check = now + CHECK_EVERY_S
                self._reap()
                if protocol.install_stamp() != self.stamp:
                    self.stop("gradcli's installation changed")
                elif not self._socket_is_ours():
                    self.stop("its socket was removed or replaced")

    def stop(self, reason: str = "stopped") -> None:
        """No new requests (the socket goes at once); the loop ends once running commands have."""
        if self.stopping:
            return
        self.stopping = True
        print(f"gradcli daemon: pid {os.getpid()} stopping: {reason}", file=sys.stderr, flush=True)
        self._end_spare()
        try:
            self.selector.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        if self._socket_is_ours():
            try:
                os.unlink(self.path)
            except OSError:
                pass
        self.listener.close()

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def _on_signals(self) -> None:
        try:
            data = os.read(self.wakeup_r, 512)
        except BlockingIOError:
            return
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            if signum in data:
                self.stop(signal.Signals(signum).name)
        self._reap()

    # ---- the spare ------------------------------------------------------------------------------

    def _fork_spare(self) -> None:
        """A child forked now for the next call (see :func:`child.wait_as_spare`), when none waits, no command
        runs and forking is safe. A child whose caller has gone counts as done: it has said its exit code and
        only its process's teardown is left (or it is being killed), so the next spare need not wait for it
        (a call that follows at once would otherwise find the spare still starting TensorFlow)."""
        if not SPARE or self.stopping or self.spare is not None or set(self.running) - self.caller_gone \
                or self.spare_failures >= SPARE_FAILURES or warm.thread_count() > self.allowed_threads:
            return
        ours, theirs = socket.socketpair()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            ours.close()
            child.wait_as_spare(self.pid, [self.wakeup_r, *([_lock_fd] if _lock_fd is not None else [])],
                                [self.selector, self.listener, *self.running.values()], theirs)  # never returns
        theirs.close()
        self.spare = (pid, ours)

    def _take_spare(self) -> tuple[int, socket.socket] | None:
        """The spare, if it still lives (it is this call's now)."""
        spare, self.spare = self.spare, None
        if spare is not None and self._exited(spare[0]):
            spare[1].close()
            self.spare_failures += 1
            return None
        return spare

    def _end_spare(self) -> None:
        spare, self.spare = self.spare, None
        if spare is not None:
            _kill(spare[0], signal.SIGKILL)
            spare[1].close()
            try:
                os.waitpid(spare[0], 0)
            except ChildProcessError:
                pass

    @staticmethod
    def _exited(pid: int) -> bool:
        try:
            return os.waitpid(pid, os.WNOHANG)[0] != 0
        except ChildProcessError:
            return True

    # ---- children -------------------------------------------------------------------------------

    def _reap(self) -> None:
        if self.spare is not None and self._exited(self.spare[0]):  # died before its call came
            self.spare[1].close()
            self.spare = None
            self.spare_failures += 1
        self._reap_calls()
        self._fork_spare()

    def _reap_calls(self) -> None:
        for pid in list(self.running):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 1 << 8
            if not done:
                continue
            conn = self.running.pop(pid)
            self.caller_gone.discard(pid)
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code  # killed by a signal: as shells report it
            try:
                conn.settimeout(1.0)
                protocol.send(conn, {"exit": code})
            except OSError:
                pass
            self._close(conn)
            self.last_activity = time.monotonic()

    def _close(self, conn: socket.socket) -> None:
        try:
            self.selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        conn.close()

    def _from_client(self, pid: int, conn: socket.socket) -> None:
        """A running command's client: a signal to relay, or its end (the caller is gone: so is the child)."""
        try:
            conn.settimeout(REQUEST_TIMEOUT_S)
            message = protocol.receive(conn)
        except (OSError, protocol.ProtocolError):
            message = None
        if pid not in self.running:
            return
        if message is None:
            self.selector.unregister(conn)
            _kill(pid, signal.SIGKILL)
            self.caller_gone.add(pid)
            self._fork_spare()
        elif message.get("signal") in RELAYABLE:
            _kill(pid, message["signal"])

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        fds: list[int] = []
        try:
            conn.setblocking(True)
            conn.settimeout(REQUEST_TIMEOUT_S)
            if peer_uid(conn) != os.getuid():  # another user (root included) is not served
                conn.close()
                return
            message = protocol.receive(conn, fds, max_fds=4)
            op = message.get("op")
            if op == "status":
                protocol.send(conn, self.status())
            elif op == "stop":
                self.stop("asked to stop")
                protocol.send(conn, {"stopping": True, "pid": os.getpid(), "running": len(self.running)})
            elif op == "run":
                if self._run(conn, message, fds):
                    return  # the connection is the command's now
            else:
                protocol.send(conn, {"refused": f"unknown op {op!r}"})
        except (OSError, protocol.ProtocolError):
            pass
        finally:
            for fd in fds:
                os.close(fd)
        conn.close()

    def _run(self, conn: socket.socket, message: dict, fds: list[int]) -> bool:
        argv, cwd, env = message.get("argv"), message.get("cwd"), message.get("env")
        why = None
        if len(fds) != 4 or not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) \
                or not isinstance(cwd, str) or not isinstance(env, dict) \
                or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            why = "malformed request"
        elif self.stopping:
            why = "stopping"
        elif message.get("stamp") != self.stamp or protocol.install_stamp() != self.stamp:
            why = "stale: gradcli changed since the daemon started"
            self.stop(why)
        elif len(self.running) >= MAX_RUNNING:
            why = "busy"
        elif (unlike := world.why_not_here(message.get("world"))) is not None:
            why = unlike
        elif warm.thread_count() > self.allowed_threads:
            why = "unsafe to fork: threads were started"
            self.stop(why)
        if why:
            protocol.send(conn, {"refused": why})
            return False
        protocol.send(conn, {"ready": True})
        if protocol.receive(conn).get("go") is not True:
            return False
        for stream in (sys.stdout, sys.stderr):  # nothing of the daemon's log may reach the caller
            stream.flush()
        call = child.Call(argv, cwd, env, message["world"])
        pid = self._hand_to_spare(call, fds, conn)
        if pid is None:
            pid = os.fork()
        if pid == 0:
            child.serve_call(self.pid, [self.wakeup_r, *([_lock_fd] if _lock_fd is not None else [])],
                             [self.selector, self.listener, *self.running.values()], call, fds,
                             conn)  # never returns
        for fd in fds:
            os.close(fd)
        fds.clear()
        self.served += 1
        self.last_activity = time.monotonic()
        self.running[pid] = conn
        conn.setblocking(False)
        self.selector.register(conn, selectors.EVENT_READ, pid)
        return True

    def _hand_to_spare(self, call: child.Call, fds: list[int], conn: socket.socket) -> int | None:
        """The call given to the spare (its pid), or None: no spare, or it could not take the call. The
        spare gets the caller's connection too, to say the exit code on (see :func:`child.serve_call`)."""
        spare = self._take_spare()
        if spare is None:
            return None
        pid, control = spare
        try:
            control.settimeout(REQUEST_TIMEOUT_S)
            protocol.send(control, call.message(), [*fds, conn.fileno()])
        except (OSError, protocol.ProtocolError):
            _kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            self.spare_failures += 1
            return None
        finally:
            control.close()
        return pid

    def status(self) -> dict:
        return {"pid": os.getpid(), "uptime_s": round(time.time() - self.started, 1),
                "version": self.stamp.split("|", 1)[0], "served": self.served, "running": len(self.running),
                "rss_kib": _rss_kib(), "socket": self.path, "idle_timeout_s": IDLE_S,
                "spare": None if self.spare is None else self.spare[0]}


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket, as the kernel saw it at connect()."""
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                          struct.calcsize("3i")))
    return uid


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def _rss_kib() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


_lock_fd: int | None = None  # held (flock) for the daemon's life: one daemon per directory


def main() -> int:
    global _lock_fd
    if sys.path[:1] == [""]:  # ``python -c``'s: the directory of the moment, which in a child is the caller's
        del sys.path[0]
    directory = protocol.runtime_dir(create=True)
    _lock_fd = lock_fd = os.open(os.path.join(directory, protocol.LOCK_NAME), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("gradcli daemon: another daemon is running", file=sys.stderr)
        return 0
    stamp = protocol.install_stamp()
    allowed = warm.warm_up()
    daemon = Daemon(directory, allowed, stamp)
    print(f"gradcli daemon: pid {os.getpid()} serving on {daemon.path} ({allowed} threads)", file=sys.stderr,
          flush=True)
    try:
        daemon.serve()
    finally:
        daemon.stop("exiting")
        os.close(lock_fd)  # a new daemon may start now, while this interpreter tears TensorFlow down
    return 0


if __name__ == "__main__":
    sys.exit(main())
