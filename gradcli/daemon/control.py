"""``gradcli daemon start|stop|status|restart`` (imported only when one of them runs)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time

from gradcli import interrupts
from gradcli.daemon import client, protocol

# The daemon's program. Not ``-m gradcli.daemon.server``: multiprocessing runs a ``-m`` main module again in
# every process its fork server starts (as ``__mp_main__``), so each call's SymPy worker would import the
# daemon's modules anew (compiling them where no .pyc is written); ``-c`` has no main module to run again.
SERVE = "import sys; from gradcli.daemon.server import main; sys.exit(main())"
START_TIMEOUT_S = float(os.environ.get("GRADCLI_DAEMON_START_S", "120"))
STOP_TIMEOUT_S = 30.0


def status() -> dict | None:
    return client.request("status")


def describe(info: dict) -> str:
    rss = info.get("rss_kib")
    memory = f"{rss / 1024:.1f} MiB" if isinstance(rss, int) else "unknown"
    return "\n".join([
        "gradcli daemon: running",
        f"pid: {info.get('pid')}",
        f"uptime: {info.get('uptime_s')} s",
        f"version: {info.get('version')}",
        f"requests served: {info.get('served')}",
        f"running now: {info.get('running')}",
        f"spare: {'none' if info.get('spare') is None else 'pid ' + str(info['spare'])} (a child forked ahead of the "
        "next call, TensorFlow started)",
        f"memory (RSS): {memory}",
        f"socket: {info.get('socket')}",
    ])


def start() -> tuple[int, str]:
    info = status()
    if info is not None:
        return 0, f"gradcli daemon: already running (pid {info.get('pid')})"
    try:
        directory = protocol.runtime_dir(create=True)
    except OSError as exc:  # not private (another user may have made it first), or not creatable
        return 1, f"gradcli: error: {exc}"
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while not _lock_free() and time.monotonic() < deadline:  # a daemon that is stopping still holds it
        time.sleep(0.05)
    log = open(os.path.join(directory, protocol.LOG_NAME), "ab")
    env = {k: v for k, v in os.environ.items() if k != "GRADCLI_DAEMON"}
    tmp = env.get("TMPDIR", "")
    if os.path.basename(tmp).startswith(interrupts.PRIVATE_PREFIX):  # this run's own, removed at its exit
        env["TMPDIR"] = os.path.dirname(tmp)
    process = subprocess.Popen([sys.executable, "-c", SERVE], stdin=subprocess.DEVNULL,
                               stdout=log, stderr=log, start_new_session=True, close_fds=True, env=env,
                               cwd="/")
    log.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        info = status()
        if info is not None:
            return 0, f"gradcli daemon: started (pid {info.get('pid')})"
        if process.poll() is not None:
            info = status()  # another start won the race
            if info is not None:
                return 0, f"gradcli daemon: already running (pid {info.get('pid')})"
            return 1, (f"gradcli: error: the daemon exited ({process.returncode}) before serving; "
                       f"see {os.path.join(directory, protocol.LOG_NAME)}")
        time.sleep(0.1)
    process.kill()
    return 1, f"gradcli: error: the daemon did not start within {START_TIMEOUT_S:g} s"


def _lock_free() -> bool:
    try:
        fd = os.open(os.path.join(protocol.runtime_dir(), protocol.LOCK_NAME), os.O_RDWR)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def stop() -> tuple[int, str]:
    answer = client.request("stop")
    if answer is None:
        return 0, "gradcli daemon: not running"
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:  # running commands finish first
        if _lock_free():
            return 0, f"gradcli daemon: stopped (pid {answer.get('pid')})"
        time.sleep(0.05)
    return 1, f"gradcli: error: the daemon (pid {answer.get('pid')}) has not exited after {STOP_TIMEOUT_S:g} s"
