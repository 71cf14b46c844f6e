"""Fault injection on the installed command (issue 10, items 1, 2 and 5): signals to a running command
(with and without a terminal), the SymPy worker's death with gradcli (checked by session in /proc),
TensorFlow's temporary files, and closed, full or abandoned stdout and stderr.

Real subprocess runs, kept few: TensorFlow only where the compiled loop is the point, ``-m fd`` elsewhere.
The timeouts are hang guards, not speed assertions.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hang_guard import HANG_S

from test_installed import GRADCLI

LONG_DESCENT = ["descend", "x**2+y**2", "--from", "x=1,y=1", "--steps", "1000000000000", "--tol", "0"]
# SymPy works on this for minutes (the worker holds it; gradcli waits up to --symbolic-timeout)
SLOW_SYMPY = ["grad", "x**x**x**x", "--at", "x=10", "-m", "symbolic,fd", "--symbolic-timeout", "120"]
FULL = "No space left on device"


def environment(tmp_path: Path) -> dict:
    return dict(os.environ, TMPDIR=str(tmp_path), TF_CPP_MIN_LOG_LEVEL="3")


def session_members(sid: int) -> list[tuple[int, int, str]]:
    """(pid, parent, state) of every live process of session ``sid`` (zombies are dead: left out)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        state, parent, session = fields[0], int(fields[1]), int(fields[3])
        if session == sid and state not in "ZX":
            members.append((int(entry), parent, state))
    return members


def wait_for(condition, what: str, process: subprocess.Popen, limit: float = HANG_S) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert process.poll() is None, f"gradcli ended before {what}: {process.returncode}"
        assert time.monotonic() < deadline, f"no {what} after {limit} s"
        time.sleep(0.05)


def no_session_survivors(sid: int) -> list:
    """The session's live processes, given a moment for a parent-death signal to land."""
    deadline = time.monotonic() + HANG_S
    while session_members(sid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return session_members(sid)


def kill_session(process: subprocess.Popen) -> None:
    """Clean up after a failed test: every live process of the session (workers have groups of their own)."""
    for pid, _, _ in session_members(process.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    process.wait()


def leftovers(tmp_path: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))


def traced(tmp_path: Path) -> bool:
    """TensorFlow's autograph has written its generated source: the descent is being compiled or run."""
    return any(tmp_path.rglob("__autograph_generated_file*"))


def wait_for_the_compiled_loop(tmp_path: Path, process: subprocess.Popen) -> None:
    """Until autograph has written its last file (no new one for 2 s): Python's part of tracing is over,
    and the process is inside TensorFlow's call (compiling, then the loop), where Python handles no signal."""
    wait_for(lambda: traced(tmp_path), "tracing", process)
    count, since = -1, time.monotonic()
    while time.monotonic() - since < 2.0:
        now = len(list(tmp_path.rglob("__autograph_generated_file*")))
        if now != count:
            count, since = now, time.monotonic()
        time.sleep(0.1)


# ---- signals -------------------------------------------------------------------------------------


def test_sigint_ends_a_compiled_descent_without_a_terminal(tmp_path):
    # Python's handler waits for the compiled loop to return (minutes here); gradcli's watcher does not.
    process = subprocess.Popen([GRADCLI, *LONG_DESCENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=environment(tmp_path), start_new_session=True)
    try:
        wait_for_the_compiled_loop(tmp_path, process)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=HANG_S)
        survivors = no_session_survivors(process.pid)
    finally:
        kill_session(process)
    assert process.returncode == 130, err
    assert err == "gradcli: interrupted\n" and out == ""
    assert survivors == []  # the SymPy worker (stationary points) included
    assert leftovers(tmp_path) == []  # autograph's files and the private directory are gone


def test_sigterm_ends_a_descent_on_a_terminal(tmp_path):
    master, slave = pty.openpty()
    process = subprocess.Popen([GRADCLI, *LONG_DESCENT], stdout=subprocess.PIPE, stderr=slave, text=True,
                               env=environment(tmp_path), start_new_session=True)
    os.close(slave)
    shown: list[bytes] = []

    def drain() -> None:  # the progress bar must not fill the terminal's buffer
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the last writer closed the terminal
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        wait_for(lambda: traced(tmp_path) and shown, "a progress bar", process)
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=HANG_S)
        survivors = no_session_survivors(process.pid)
    finally:
        kill_session(process)
        reader.join(5)
        os.close(master)
    assert process.returncode == 143
    assert b"gradcli: terminated" in b"".join(shown) and out == ""
    assert survivors == []  # the SymPy worker (stationary points) included
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["TERM", "KILL"])
def test_the_sympy_worker_dies_with_gradcli(tmp_path, sig):
    process = subprocess.Popen([GRADCLI, *SLOW_SYMPY], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=environment(tmp_path), start_new_session=True)
    try:
        wait_for(lambda: any(parent == process.pid for _, parent, _ in session_members(process.pid)),
                 "a SymPy worker", process)
        time.sleep(0.5)  # the worker is at work
        process.send_signal(sig)
        process.communicate(timeout=HANG_S)
        survivors = no_session_survivors(process.pid)
    finally:
        kill_session(process)
    assert survivors == []  # before: the worker ran on, its parent now init, to SymPy's deadline and past
    if sig == signal.SIGTERM:
        assert process.returncode == 143
        assert leftovers(tmp_path) == []
    else:  # nothing runs after SIGKILL: the private directory waits for the next run (see below)
        assert all(p.startswith("gradcli-tmp-") for p in leftovers(tmp_path))


SELF_DEADLINE = """
import time
from gradcli.methods import worker
job = worker.BoundedJob(time.sleep, (60,), 0.2, parallel=True)
job._timer.cancel()  # as if gradcli could not kill it (stopped, or busy in C)
job.process.join(30)
print(job.process.exitcode)  # None: still running
"""


def test_a_forked_job_ends_itself_past_its_deadline():
    # In a fresh interpreter: forking is refused once TensorFlow is loaded, as it may be in this one.
    result = subprocess.run([sys.executable, "-c", SELF_DEADLINE], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == [str(-signal.SIGALRM)], result.stderr


def test_a_later_run_removes_the_directory_of_a_killed_one(tmp_path, monkeypatch):
    from gradcli import interrupts

    killed = tmp_path / f"{interrupts.PRIVATE_PREFIX}1-dead"  # its lock file, unlocked: its owner is gone
    killed.mkdir()
    (killed / ".lock").touch()
    (killed / "__autograph_generated_file1.py").touch()
    live = tmp_path / f"{interrupts.PRIVATE_PREFIX}2-live"  # locked by a run still going
    live.mkdir()
    held = os.open(live / ".lock", os.O_CREAT | os.O_WRONLY)
    fresh = tmp_path / f"{interrupts.PRIVATE_PREFIX}{os.getpid()}-new"  # being created by a live run: not locked yet, but new
    fresh.mkdir()
    (fresh / ".lock").touch()
    old = time.time() - 2 * interrupts.STALE_AFTER_S
    for path in (killed, live):
        os.utime(path, (old, old))
    try:
        assert interrupts._lock(held, wait=True)
        interrupts._remove_stale(str(tmp_path))
    finally:
        os.close(held)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, fresh.name])


# ---- streams ---------------------------------------------------------------------------------------


def run_shell(tmp_path: Path, line: str) -> subprocess.CompletedProcess:
    """``line`` through sh, with "$G" the installed command (redirections such as >&- need a shell)."""
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=120,
                          env=dict(environment(tmp_path), G=GRADCLI))


@pytest.mark.parametrize("args", ["--version", "grad x**2 --at x=1 -m fd -f json"])
def test_stdout_on_a_full_disk(tmp_path, args):
    result = run_shell(tmp_path, f'"$G" {args} >/dev/full')
    assert (result.returncode, result.stderr) == (1, f"gradcli: error: cannot write the output: {FULL}\n")


@pytest.mark.parametrize("output", ["json", "table"])
def test_stdout_closed_is_not_a_silent_success(tmp_path, output):
    result = run_shell(tmp_path, f'"$G" grad x**2 --at x=1 -m fd -f {output} >&-')
    expected = "gradcli: error: cannot write the output: standard output is closed\n"
    assert (result.returncode, result.stderr) == (1, expected)


def test_stderr_closed_keeps_warnings_off_stdout(tmp_path):
    # A warning (the value is not finite there) that used to land on stdout after the JSON.
    line = '"$G" grad "sqrt(x)" --at x=0 -m fd -f json'
    closed, open_ = run_shell(tmp_path, line + " 2>&-"), run_shell(tmp_path, line)
    assert "gradcli: warning" in open_.stderr
    assert closed.stdout == open_.stdout and json.loads(closed.stdout)
    assert closed.returncode == open_.returncode


def test_parse_error_with_stderr_on_a_full_disk_still_exits_2(tmp_path):
    result = run_shell(tmp_path, '"$G" grad "x**" --at x=1 2>/dev/full')
    assert (result.returncode, result.stdout) == (2, "")


@pytest.mark.parametrize("args", [["grad", "x**2", "--at", "x=1", "-m", "fd"],
                                  ["descend", "x**2", "--from", "x=1", "--steps", "3", "-f", "csv"]],
                         ids=["grad", "descend-csv"])
def test_broken_pipe_exits_141_quietly(tmp_path, args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has left before the first write: every write is EPIPE
    try:
        result = subprocess.run([GRADCLI, *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
                                timeout=120, env=environment(tmp_path))
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (141, "")


# ---- memory: a run inside the documented limits stays under ~2 GB (issue 10, item 3) ------------------------
# The largest Hessian allowed (100 variables): a sparse cyclic cubic keeps SymPy quick.
HESSIAN_LIMIT = ["hessian", "+".join(f"x{i}**2*x{(i + 1) % 100}" for i in range(100)),
                 "--at", ",".join(f"x{i}=0.5" for i in range(100)), "-f", "json"]
TWO_GB = 2 * 2**30


def test_a_hessian_at_the_variable_limit_runs_within_2_gb_of_address_space(tmp_path):
    """Under ``ulimit -v`` 2 GB (RLIMIT_AS). Only without TensorFlow: TensorFlow reserves far more address
    space than it uses and dies by SIGSEGV under such a limit whatever the input (the next test measures
    its resident memory instead)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (TWO_GB, TWO_GB))

    done = subprocess.run([GRADCLI, *HESSIAN_LIMIT, "-m", "symbolic,fd"], capture_output=True, text=True,
                          env=environment(tmp_path), preexec_fn=limit, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert len(doc["hessian"]["fd"]) == 100 and "tensorflow" not in done.stderr.lower()


# Run by a fresh interpreter, whose own resident size is small: Linux carries the forking process's peak
# into the child's (the address space it copies, or shares under vfork, until exec), so wait4 straight from
# pytest would count the test process, grown by whatever tests ran before, as the child's peak.
PEAK_RSS = """
import os, sys
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ)
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def test_a_tensorflow_hessian_at_the_variable_limit_peaks_under_2_gb_resident(tmp_path):
    """The tape's Hessian of 100 variables: the peak resident memory of gradcli (and the workers it
    waited for), as the kernel reports it to ``wait4`` for this one child."""
    with open(tmp_path / "err", "wb") as err:
        measured = subprocess.run([sys.executable, "-c", PEAK_RSS, GRADCLI, *HESSIAN_LIMIT, "-m", "tape"],
                                  stdout=subprocess.PIPE, stderr=err, env=environment(tmp_path), text=True)
    document, measure = measured.stdout.rstrip("\n").rsplit("\n", 1)  # gradcli's JSON, then the wrapper's line
    code, peak_kib = map(int, measure.split())
    assert code == 0, (tmp_path / "err").read_text()[-2000:]
    assert len(json.loads(document)["hessian"]["tape"]) == 100
    assert peak_kib * 1024 < TWO_GB, f"peak RSS {peak_kib / 2**20:.2f} GB"
