"""The daemon's failures: killed outright in the middle of a call, and stopping by itself when idle. Each test
has its own daemon in a private XDG_RUNTIME_DIR (they end it); every subprocess has a timeout.

A daemon also stops when a gradcli source file changes. So that other work on the tree does not stop these
daemons, the processes here import a copy of the package made for the module (PYTHONPATH comes before the
editable install); a test that still sees that reason in the log starts over, a few times.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hang_guard import HANG_S

GRADCLI = str(Path(sys.executable).with_name("gradcli"))
RUN_TIMEOUT_S = 120
STALE = ("installation changed", "stale")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, PR_SET_PDEATHSIG: Linux")


SOURCE = Path(__file__).resolve().parent.parent / "gradcli"
_copy: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def package_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("src")
    shutil.copytree(SOURCE, root / "gradcli", ignore=shutil.ignore_patterns("__pycache__"))
    _copy["PYTHONPATH"] = str(root)
    found = subprocess.run([sys.executable, "-c", "import gradcli; print(gradcli.__file__)"],
                           env=_env(root, False), capture_output=True, text=True, timeout=60, cwd=root)
    assert found.stdout.startswith(str(root)), found
    yield
    _copy.clear()


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
    env.update({"XDG_RUNTIME_DIR": str(xdg), "COLUMNS": "100", "TF_CPP_MIN_LOG_LEVEL": "3"}, **_copy, **extra)
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


LONG_CALL = [GRADCLI, "descend", "x**2", "--from", "x=1", "--steps", "100000000", "--tol", "0"]


def running_call(xdg: Path) -> tuple[subprocess.Popen, int] | None:
    """A long call that the daemon (started if none runs) is running now, and the daemon's pid; None when
    the daemon stopped for a source edit instead (the call then ran cold: it is ended here)."""
    pid = daemon_pid(xdg) or start(xdg)
    caller = subprocess.Popen(LONG_CALL, env=_env(xdg, True), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if wait_for(lambda: status(xdg).get("running now") == "1", 30):
        return caller, pid
    caller.kill()
    caller.communicate(timeout=HANG_S)
    assert any(reason in log(xdg) for reason in STALE), log(xdg)
    return None


def test_a_killed_caller_or_daemon_ends_the_call_and_leaves_nothing(xdg):
    """SIGKILL to a caller: its process in the daemon goes. SIGKILL to the daemon while it runs a call: the
    caller exits 1 with one line (no traceback, no hang), the call's process and the daemon's helpers go
    too, and the socket left behind is a stale one: the next call runs cold, silently, with a cold run's
    output."""
    for _ in range(3):
        taken = running_call(xdg)
        if taken is None:
            continue
        caller, pid = taken
        before = descendants(pid)
        caller.kill()
        caller.communicate(timeout=HANG_S)
        assert wait_for(lambda: status(xdg).get("running now") in ("0", None), HANG_S), status(xdg)
        call_processes = before - descendants(pid)
        assert call_processes, "the call's process should have been the daemon's child"
        assert not any(alive(p) for p in call_processes)
        taken = running_call(xdg)
        if taken is None:
            continue
        caller, pid = taken
        try:
            helpers = descendants(pid)
            os.kill(pid, signal.SIGKILL)
            _, err = caller.communicate(timeout=HANG_S)
        finally:
            caller.kill()
        break
    else:
        pytest.fail("the daemon did not take the calls")
    assert caller.returncode == 1
    assert err == b"gradcli: error: the daemon stopped while running the command\n"
    assert wait_for(lambda: not any(alive(p) for p in helpers), HANG_S), [p for p in helpers if alive(p)]
    assert (xdg / "gradcli" / "daemon.sock").exists()  # a dead daemon's: nobody removed it

    args = ("eval", "x**2", "--at", "x=3")
    cold = gradcli(xdg, *args, daemon=False)
    fallback = gradcli(xdg, *args)
    assert (fallback.returncode, fallback.stdout, fallback.stderr) == (0, cold.stdout, cold.stderr)
    assert daemon_pid(xdg) is None


def test_an_idle_daemon_exits_by_itself_and_starts_over_a_stale_socket(xdg):
    """GRADCLI_DAEMON_IDLE=5: after a call and five quiet seconds the daemon removes its socket and exits,
    and its helper processes with it. It starts even though a dead daemon's socket file was there."""
    (xdg / "gradcli").mkdir(mode=0o700)
    for _ in range(3):
        dead = socket.socket(socket.AF_UNIX)
        dead.bind(str(xdg / "gradcli" / "daemon.sock"))
        dead.close()
        pid = start(xdg, GRADCLI_DAEMON_IDLE="5")  # 2 s passed before the status call on a loaded machine
        helpers = descendants(pid)  # multiprocessing's fork server and resource tracker
        assert status(xdg).get("requests served") == "0"
        call = gradcli(xdg, "eval", "x**2", "--at", "x=3")
        assert call.returncode == 0, call.stderr
        assert wait_for(lambda pid=pid: not alive(pid), HANG_S), "the daemon is still running"
        if not any(f"pid {pid} stopping: {reason}" in log(xdg) for reason in STALE):
            break
    else:
        pytest.fail("the daemon was stopped by source edits each time")
    assert f"pid {pid} stopping: idle for 5 s" in log(xdg), log(xdg)
    assert not (xdg / "gradcli" / "daemon.sock").exists()
    assert daemon_pid(xdg) is None
    assert wait_for(lambda: not any(alive(p) for p in helpers), HANG_S), [p for p in helpers if alive(p)]


def _stopped(pids: set[int]) -> set[int]:
    return {p for p in pids if (_stat_fields(p) or ["?"])[0] == "T"}


def test_ctrl_z_stops_the_warm_call_with_its_caller_and_fg_continues_both(xdg):
    pid = daemon_pid(xdg) or start(xdg)
    # a process group of its own in this session (a job, as a shell makes one): not an orphaned group,
    # where the kernel discards SIGTSTP
    caller = subprocess.Popen(LONG_CALL, env=_env(xdg, True), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              process_group=0)
    try:
        if not wait_for(lambda: status(xdg).get("running now") == "1", 30):
            pytest.skip("the daemon stopped for a source edit; the call ran cold")
        os.kill(caller.pid, signal.SIGTSTP)  # what the terminal sends the job on Ctrl-Z
        _, how = os.waitpid(caller.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(how), how
        assert wait_for(lambda: _stopped(descendants(pid)), 60), "the daemon's child was not stopped"
        os.kill(caller.pid, signal.SIGCONT)  # fg
        assert wait_for(lambda: not _stopped(descendants(pid)), HANG_S), "the daemon's child was not continued"
        assert caller.poll() is None
    finally:
        caller.send_signal(signal.SIGCONT)
        caller.terminate()
        _, err = caller.communicate(timeout=HANG_S)
    assert caller.returncode == 143 and err.decode() == "gradcli: terminated\n", (caller.returncode, err)
