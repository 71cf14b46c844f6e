"""The daemon's failures: killed outright in the middle of a call, and stopping by itself when idle. Each test
has its own daemon in a private XDG_RUNTIME_DIR (they end it); every subprocess has a timeout.

A daemon also stops when a gradcli source file changes (other work on the tree): a test that sees that
reason in the log starts over, a few times.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

GRADCLI = str(Path(sys.executable).with_name("gradcli"))
RUN_TIMEOUT_S = 120
STALE = ("installation changed", "stale")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, PR_SET_PDEATHSIG: Linux")


@pytest.fixture
def xdg(tmp_path):
    path = tmp_path / "xdg"
    path.mkdir(mode=0o700)
    try:
        yield path
    finally:
        pid = daemon_pid(path)
        if pid is not None:
            gradcli(path, "daemon", "stop", daemon=False)


def _env(xdg: Path, daemon: bool, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADCLI_")}
    env.update({"XDG_RUNTIME_DIR": str(xdg), "COLUMNS": "100", "TF_CPP_MIN_LOG_LEVEL": "3"}, **extra)
    if daemon:
        env["GRADCLI_DAEMON"] = "1"
    return env


def gradcli(xdg: Path, *args: str, daemon: bool = True, extra: dict | None = None,
            **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([GRADCLI, *args], env=_env(xdg, daemon, **(extra or {})), capture_output=True,
                          timeout=RUN_TIMEOUT_S, **kwargs)


def status(xdg: Path) -> dict[str, str]:
    lines = gradcli(xdg, "daemon", "status", daemon=False).stdout.decode().splitlines()
    return dict(line.split(": ", 1) for line in lines if ": " in line)


def daemon_pid(xdg: Path) -> int | None:
    pid = status(xdg).get("pid")
    return int(pid) if pid else None


def log(xdg: Path) -> str:
    path = xdg / "gradcli" / "daemon.log"
    return path.read_text() if path.exists() else ""


def start(xdg: Path, **extra: str) -> int:
    started = gradcli(xdg, "daemon", "start", daemon=False, extra=extra)
    assert started.returncode == 0, started.stderr
    pid = daemon_pid(xdg)
    assert pid is not None, log(xdg)
    return pid


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces


def alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def descendants(pid: int) -> set[int]:
    found, pending = set(), [pid]
    while pending:
        parent = pending.pop()
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                fields = _stat_fields(int(entry))
                if fields is not None and int(fields[1]) == parent and int(entry) not in found:
                    found.add(int(entry))
                    pending.append(int(entry))
    return found


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def test_a_daemon_killed_mid_call_ends_the_call_with_one_line_and_leaves_nothing(xdg):
    """SIGKILL to the daemon while it runs a call: the caller exits 1 with one line (no traceback, no
    hang), the call's process and the daemon's helpers go too, and the socket left behind is a stale
    one: the next call runs cold, silently, with a cold run's output."""
    call = [GRADCLI, "descend", "x**2", "--from", "x=1", "--steps", "100000000", "--tol", "0"]
    for _ in range(3):
        pid = start(xdg)
        caller = subprocess.Popen(call, env=_env(xdg, True), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            if not wait_for(lambda: status(xdg).get("running now") == "1", 30):
                caller.kill()
                caller.communicate(timeout=30)
                assert any(reason in log(xdg) for reason in STALE), log(xdg)
                continue  # stopped by a source edit: the call ran cold; again
            helpers = descendants(pid)
            assert helpers, "the call's process should be the daemon's child"
            os.kill(pid, signal.SIGKILL)
            out, err = caller.communicate(timeout=30)
        finally:
            caller.kill()
        break
    else:
        pytest.fail("the daemon did not take the call")
    assert caller.returncode == 1
    assert err == b"gradcli: error: the daemon stopped while running the command\n"
    assert wait_for(lambda: not any(alive(p) for p in helpers), 15), [p for p in helpers if alive(p)]
    assert (xdg / "gradcli" / "daemon.sock").exists()  # a dead daemon's: nobody removed it

    args = ("eval", "x**2", "--at", "x=3")
    cold = gradcli(xdg, *args, daemon=False)
    fallback = gradcli(xdg, *args)
    assert (fallback.returncode, fallback.stdout, fallback.stderr) == (0, cold.stdout, cold.stderr)
    assert daemon_pid(xdg) is None


def test_an_idle_daemon_exits_by_itself_and_starts_over_a_stale_socket(xdg):
    """GRADCLI_DAEMON_IDLE=2: after a call and two quiet seconds the daemon removes its socket and exits.
    It starts even though a dead daemon's socket file was there."""
    (xdg / "gradcli").mkdir(mode=0o700)
    for _ in range(3):
        dead = socket.socket(socket.AF_UNIX)
        dead.bind(str(xdg / "gradcli" / "daemon.sock"))
        dead.close()
        pid = start(xdg, GRADCLI_DAEMON_IDLE="2")
        assert status(xdg).get("requests served") == "0"
        call = gradcli(xdg, "eval", "x**2", "--at", "x=3")
        assert call.returncode == 0, call.stderr
        assert wait_for(lambda: not alive(pid), 60), "the daemon is still running"
        if not any(f"pid {pid} stopping: {reason}" in log(xdg) for reason in STALE):
            break
    else:
        pytest.fail("the daemon was stopped by source edits each time")
    assert f"pid {pid} stopping: idle for 2 s" in log(xdg), log(xdg)
    assert not (xdg / "gradcli" / "daemon.sock").exists()
    assert daemon_pid(xdg) is None
