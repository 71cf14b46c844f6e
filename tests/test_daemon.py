"""``gradcli daemon`` and ``GRADCLI_DAEMON=1``: real processes, a private XDG_RUNTIME_DIR, the daemon always
stopped at the end. Warm output must be byte-identical to a cold run's; without a daemon a call runs cold.

(A daemon stops when a gradcli source file changes. The processes here import a copy of the package made
for the module, so that other work on the tree does not stop the daemon; a test that needs it running still
starts it again first.)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

GRADCLI = str(Path(sys.executable).with_name("gradcli"))
RUN_TIMEOUT_S = 120

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_PEERCRED, /proc: Linux")


_copy: dict[str, str] = {}  # PYTHONPATH: the module's copy of the package (it comes before the editable install)


def _env(xdg: Path, daemon: bool, columns: str = "100") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADCLI_")}
    env.update({"XDG_RUNTIME_DIR": str(xdg), "COLUMNS": columns, "TF_CPP_MIN_LOG_LEVEL": "3"}, **_copy)
    if daemon:
        env["GRADCLI_DAEMON"] = "1"
    return env


def gradcli(xdg: Path, *args: str, daemon: bool = True, columns: str = "100",
            **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([GRADCLI, *args], env=_env(xdg, daemon, columns), capture_output=True,
                          timeout=RUN_TIMEOUT_S, **kwargs)


def served(xdg: Path) -> int | None:
    result = gradcli(xdg, "daemon", "status", daemon=False)
    for line in result.stdout.decode().splitlines():
        if line.startswith("requests served: "):
            return int(line.split(": ", 1)[1])
    return None


@pytest.fixture(scope="module", autouse=True)
def package_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("src")
    shutil.copytree(Path(__file__).resolve().parent.parent / "gradcli", root / "gradcli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _copy["PYTHONPATH"] = str(root)
    yield
    _copy.clear()


@pytest.fixture(scope="module")
def xdg(package_copy, tmp_path_factory):
    path = tmp_path_factory.mktemp("xdg")
    path.chmod(0o700)
    started = gradcli(path, "daemon", "start", daemon=False)
    assert started.returncode == 0, started.stderr
    try:
        yield path
    finally:
        gradcli(path, "daemon", "stop", daemon=False)


def ensure_running(xdg: Path) -> None:
    if served(xdg) is None:
        started = gradcli(xdg, "daemon", "start", daemon=False)
        assert started.returncode == 0, started.stderr


@pytest.fixture
def running(xdg):
    """The module's daemon, started again if a source edit made it stop."""
    ensure_running(xdg)
    return xdg


def through_daemon(xdg: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """A call the daemon served (its count went up by one). An edit of a gradcli source file in between
    stops the daemon (the call then ran cold, rightly): that is tried again, a few times."""
    for _ in range(4):
        ensure_running(xdg)
        before = served(xdg)
        result = gradcli(xdg, *args, **kwargs)
        if before is not None and served(xdg) == before + 1:
            return result
    pytest.fail("the daemon did not serve the call")


def test_status_reports_pid_uptime_version_requests_and_memory(running):
    result = gradcli(running, "daemon", "status", daemon=False)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    for field in ("pid: ", "uptime: ", "version: ", "requests served: ", "memory (RSS): "):
        assert field in text, text
    import gradcli as package

    assert f"version: {package.__version__}\n" in text
    pid = int(text.split("pid: ", 1)[1].split()[0])
    os.kill(pid, 0)  # alive


def _spare(xdg: Path) -> int | None:
    text = gradcli(xdg, "daemon", "status", daemon=False).stdout.decode()
    line = next(line for line in text.splitlines() if line.startswith("spare: "))
    return None if line.startswith("spare: none") else int(line.split()[2])


def test_a_spare_child_takes_the_next_call_and_a_new_one_waits_after_it(running):
    """The child forked ahead of the call (TensorFlow started in it) runs the call; once no call runs, the
    daemon forks the next spare. Each spare serves one call: no state passes from one call to the next."""
    deadline = time.monotonic() + 60
    while (first := _spare(running)) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first is not None
    result = through_daemon(running, "grad", "x**2", "--at", "x=3", "-m", "tape", "-f", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["results"][0]["gradient"]["tape"] == {"x": 6.0}
    with pytest.raises(ProcessLookupError):  # it ran the call and exited
        for _ in range(100):
            os.kill(first, 0)
            time.sleep(0.1)
    while (second := _spare(running)) in (None, first) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert second not in (None, first)


def test_the_sympy_fork_server_runs_the_daemons_warm_up(running):
    """The fork server that each call's SymPy worker comes from imports gradcli.daemon.sympy_warm after the
    shell's preloads; its jobs run without an error (a failing one is swallowed there: only warmth is lost)."""
    pid = int(gradcli(running, "daemon", "status", daemon=False).stdout.decode().split("pid: ", 1)[1].split()[0])
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    commands = [Path(f"/proc/{c}/cmdline").read_bytes().decode(errors="replace") for c in children]
    server = [c for c in commands if "multiprocessing.forkserver" in c]
    assert server and "gradcli.daemon.sympy_warm" in server[0], commands

    from gradcli.daemon import sympy_warm

    sympy_warm._warm()


def test_the_daemons_warm_requests_succeed_without_tensorflow(tmp_path):
    """Each request the daemon runs before it serves (their failures are swallowed there: only warmth would be
    lost) exits 0 with TensorFlow blocked as the daemon blocks it, and none of them leaves a thread behind."""
    code = ("import sys, threading; sys.modules['tensorflow'] = None\n"
            "from gradcli import launcher; from gradcli.daemon.warm import WARM_REQUESTS\n"
            "codes = [launcher.run_command(list(argv)) for argv in WARM_REQUESTS]\n"
            "[t.join(30) for t in threading.enumerate() if t is not threading.main_thread()]\n"
            "print('codes', codes, 'threads', threading.active_count(), file=sys.stderr)")
    env = _env(tmp_path, False)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            timeout=RUN_TIMEOUT_S, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    from gradcli.daemon.warm import WARM_REQUESTS

    assert f"codes {[0] * len(WARM_REQUESTS)} threads 1" in result.stderr, result.stderr


def test_socket_is_private_to_this_user(running):
    directory = running / "gradcli"
    sock = directory / "daemon.sock"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_ISSOCK(sock.stat().st_mode)
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert sock.stat().st_uid == directory.stat().st_uid == os.getuid()


def test_the_peer_uid_is_the_connecting_processs():
    from gradcli.daemon.server import peer_uid

    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert peer_uid(a) == os.getuid()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_reach_the_socket(running):
    """A process of uid 65534 (forked, then setuid) gets no answer: no way into the 0700 directory or the
    0600 socket, and the daemon would close a connection of another uid unanswered (SO_PEERCRED)."""
    path = str(running / "gradcli" / "daemon.sock")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # only system calls here, then _exit
        outcome = b"answered"
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(5)
            s.connect(path)
            s.sendall(b"\0\0\0\x0e{\"op\":\"status\"}")
            if not s.recv(10):
                outcome = b"closed"
        except OSError as exc:
            outcome = f"refused {exc.errno}".encode()
        os.write(write_end, outcome)
        os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    outcome = os.read(read_end, 100)
    os.close(read_end)
    assert outcome.startswith(b"refused") or outcome == b"closed", outcome


POINTS = b"x,y\n1,2\n3,-4\n"


@pytest.mark.parametrize("args, columns, stdin, code", [
    (("grad", "x**2*sin(y)", "--at", "x=1,y=2"), "80", None, 0),  # the table, folded to 80 columns
    (("grad", "x**2*sin(y)", "--at", "x=1,y=2", "-f", "json"), "100", None, 0),
    (("grad", "log(x)", "--at", "x=-1"), "100", None, 1),  # warnings on stderr, exit 1
    (("eval", "x", "--at", "y=1"), "100", None, 2),  # a usage error
    (("grad", "x**2*y", "--points", "-"), "100", POINTS, 0),  # many points, read from the caller's stdin
    (("hessian", "x**2*y", "--at", "x=1,y=2", "--format", "json"), "100", None, 0),
], ids=["grad-table-80", "grad-json", "warning-exit1", "usage-exit2", "points-stdin", "hessian-json"])
def test_a_warm_call_is_byte_identical_to_a_cold_one(running, args, columns, stdin, code, tmp_path):
    cold = gradcli(running, *args, daemon=False, cwd=tmp_path, input=stdin, columns=columns)
    warm = through_daemon(running, *args, cwd=tmp_path, input=stdin, columns=columns)
    assert cold.returncode == code, cold.stderr
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)


def test_the_callers_directory_and_stdin_are_used(running, tmp_path):
    (tmp_path / "f.txt").write_text("x**3\n")
    cold = gradcli(running, "eval", "--file", "f.txt", "--at", "x=2", daemon=False, cwd=tmp_path)
    warm = through_daemon(running, "eval", "--file", "-", "--at", "x=2", cwd=tmp_path, input=b"x**3\n")
    assert cold.returncode == 0, cold.stderr
    assert (warm.returncode, warm.stdout) == (0, cold.stdout)


def test_two_concurrent_calls_each_get_their_own_output(running):
    """The first call waits on its stdin (the pipe is held open) while the second runs and ends: the two run
    side by side in the daemon, and each caller gets its own output only."""
    first, second = ("grad", "x**2*y", "--points", "-"), ("grad", "sin(y)*y", "--at", "y=1", "-f", "json")
    cold_first = gradcli(running, *first, daemon=False, input=POINTS)
    cold_second = gradcli(running, *second, daemon=False)
    for _ in range(4):
        ensure_running(running)
        before = served(running)
        waiting = subprocess.Popen([GRADCLI, *first], env=_env(running, True), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            other = gradcli(running, *second)
            out, err = waiting.communicate(POINTS, timeout=RUN_TIMEOUT_S)
        finally:
            waiting.kill()
        if before is not None and served(running) == before + 2:
            break
    else:
        pytest.fail("the daemon did not serve both calls")
    assert (other.returncode, other.stdout, other.stderr) == (0, cold_second.stdout, cold_second.stderr)
    assert (waiting.returncode, out, err) == (0, cold_first.stdout, cold_first.stderr)


def test_a_piped_shell_runs_in_the_daemon(running):
    script = b'grad "x**2" --at x=3\neval "x+" --at x=1\ngrad "sin(x)" --at x=1 -f json\n'
    cold = gradcli(running, "shell", daemon=False, input=script)
    warm = through_daemon(running, "shell", input=script)
    assert cold.returncode == 2, cold.stderr  # the last failure's code, as from a script
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)


@pytest.mark.parametrize("argv, variables, terminal", [
    (["shell"], {}, True),  # an interactive shell: the terminal and its job control are the caller's
    ([], {"_GRADCLI_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "gradcli gr"}, False),  # a TAB
    (["--show-completion", "bash"], {}, False),
], ids=["shell-on-a-terminal", "tab-completion", "show-completion"])
def test_calls_the_client_leaves_to_a_cold_run(running, argv, variables, terminal):
    """The client does not even connect (run_through_daemon gives None, nothing is served): a cold run of
    these is not started here, it needs no test."""
    code = ("import os, sys; master, slave = os.openpty(); os.dup2(slave, 0) if sys.argv[1] == 'tty' else None;"
            "from gradcli.daemon.client import run_through_daemon; print(run_through_daemon(sys.argv[2:]))")
    for _ in range(4):
        ensure_running(running)
        before = served(running)
        result = subprocess.run([sys.executable, "-c", code, "tty" if terminal else "pipe", *argv],
                                env={**_env(running, True), **variables}, capture_output=True, text=True,
                                timeout=30, stdin=subprocess.DEVNULL)
        assert (result.returncode, result.stdout) == (0, "None\n"), result.stderr
        if before is not None and served(running) == before:
            return
    pytest.fail("the daemon kept stopping (source edits)")


def test_a_closed_stdout_is_left_to_a_cold_run(running):
    """With descriptor 1 closed, the client's socket would have taken its number (and the daemon's child
    would have written into the socket): the call runs cold, which says that stdout is closed."""
    cmd = ["bash", "-c", 'exec "$0" "$@" >&-', GRADCLI, "eval", "x", "--at", "x=3"]
    cold = subprocess.run(cmd, env=_env(running, False), capture_output=True, timeout=RUN_TIMEOUT_S)
    closed = b"gradcli: error: cannot write the output: standard output is closed\n"
    assert (cold.returncode, cold.stderr) == (1, closed)
    for _ in range(4):
        ensure_running(running)
        before = served(running)
        warm = subprocess.run(cmd, env=_env(running, True), capture_output=True, timeout=RUN_TIMEOUT_S)
        assert (warm.returncode, warm.stderr) == (cold.returncode, cold.stderr)
        if before is not None and served(running) == before:
            return
    pytest.fail("the daemon kept stopping (source edits)")


def test_without_a_daemon_the_call_runs_cold(tmp_path):
    empty = tmp_path / "x"
    empty.mkdir(mode=0o700)
    args = ("eval", "x**2", "--at", "x=3")
    cold = gradcli(empty, *args, daemon=False)
    fallback = gradcli(empty, *args)
    assert (fallback.returncode, fallback.stdout, fallback.stderr) == (0, cold.stdout, cold.stderr)
    # a socket left by a dead daemon: connection refused, a cold run again
    (empty / "gradcli").mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(empty / "gradcli" / "daemon.sock"))
    dead.close()
    stale = gradcli(empty, *args)
    assert (stale.returncode, stale.stdout, stale.stderr) == (0, cold.stdout, cold.stderr)
    assert gradcli(empty, "daemon", "status", daemon=False).returncode == 1


def test_ctrl_c_reaches_the_command_and_exits_130(running):
    process = subprocess.Popen([GRADCLI, "descend", "x**2", "--from", "x=1", "--steps", "100000000", "--tol", "0"],
                               env=_env(running, True), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(1.5)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130
    assert err.endswith(b"gradcli: interrupted\n"), err


def test_timing_five_warm_calls_against_one_cold(running, capsys):
    args = ("grad", "x**2*sin(y)", "--at", "x=1,y=2")
    start = time.perf_counter()
    cold = gradcli(running, *args, daemon=False)
    cold_s = time.perf_counter() - start
    warm_s = []
    before = served(running)
    for _ in range(5):
        start = time.perf_counter()
        warm = gradcli(running, *args)
        warm_s.append(time.perf_counter() - start)
        assert warm.stdout == cold.stdout
    after = served(running)
    count = after - before if None not in (before, after) else "not all (a source edit stopped it)"
    with capsys.disabled():
        print(f"\ncold: {cold_s:.2f} s; warm: " + ", ".join(f"{s:.2f}" for s in warm_s)
              + f" s (mean {sum(warm_s) / 5:.2f} s; served by the daemon: {count})")


def test_a_stale_client_is_refused_and_the_daemon_stops_then_restart(running):
    from gradcli.daemon import protocol

    env = _env(running, False)
    code = ("import os, socket, sys; from gradcli.daemon import protocol, world; s = socket.socket(socket.AF_UNIX);"
            "s.connect(protocol.socket_path());"
            "protocol.send(s, {'op': 'run', 'argv': ['eval', 'x'], 'cwd': '/', 'env': {}, 'stamp': 'old',"
            " 'world': world.describe()}, fds=[0, 1, 2, os.open('/', os.O_RDONLY)]); print(protocol.receive(s))")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
    assert "refused" in result.stdout and "stale" in result.stdout, result
    for _ in range(100):
        if served(running) is None:
            break
        time.sleep(0.1)
    assert served(running) is None
    assert not (running / "gradcli" / protocol.SOCKET_NAME).exists()
    restarted = gradcli(running, "daemon", "restart", daemon=False)
    assert restarted.returncode == 0, restarted.stderr
    assert served(running) == 0
    stopped = gradcli(running, "daemon", "stop", daemon=False)
    assert stopped.returncode == 0 and b"stopped" in stopped.stdout
    assert served(running) is None


def test_every_docs_example_through_the_daemon_prints_what_the_docs_show(running, tmp_path):
    """Each ```console example of README.md and docs/ (tests/test_docs_examples.py holds them equal to an
    in-process run) run as a plain `gradcli` call that the daemon serves: the same output, stdout and, where the
    example shows it, stderr in the order written, and the same exit code."""
    import docs_tools

    failures, commands = [], 0
    before = served(running)
    for path in docs_tools.doc_files():
        for n, block in enumerate(docs_tools.parse_blocks(path)):
            cwd = tmp_path / f"{path.stem}-{n}"
            cwd.mkdir()
            for command in block.commands:
                parsed = docs_tools.parse_command(command.text)
                if parsed.kind == "cat":
                    (cwd / parsed.argv[0]).write_text("".join(line + "\n" for line in command.expected))
                    continue
                commands += 1
                stdin = (cwd / parsed.stdin).read_bytes() if parsed.stdin else b""
                result = subprocess.run([GRADCLI, *parsed.argv], env=_env(running, True, str(block.width)),
                                        cwd=cwd, input=stdin, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT if parsed.with_stderr else subprocess.PIPE,
                                        timeout=RUN_TIMEOUT_S)
                lines = result.stdout.decode().split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                if parsed.echo_status:
                    lines.append(str(result.returncode))
                elif result.returncode != 0:
                    lines.append(f"(exit {result.returncode})")
                if not docs_tools.matches(command.expected, lines):
                    failures.append(f"{path.name}:{command.line + 1}: $ {command.text}\n"
                                    f"{docs_tools.diff(command.expected, lines)}")
    assert not failures, "\n".join(failures)
    assert commands >= 25 and served(running) == before + commands  # every one was the daemon's, none ran cold


# ---- a warm call runs in the caller's world: umask, limits, niceness, mount namespace, PYTHON* ----------------

def _count_served(xdg: Path, run) -> tuple[subprocess.CompletedProcess, int]:
    """``run()``'s result, and how many calls the daemon served meanwhile."""
    ensure_running(xdg)
    before = served(xdg)
    result = run()
    return result, served(xdg) - before


def test_a_warm_svg_has_the_mode_the_callers_umask_gives(running, tmp_path):
    def private():
        os.umask(0o077)

    modes = {}
    for daemon in (False, True):
        out = tmp_path / f"{daemon}.svg"
        result, count = _count_served(running, lambda: gradcli(running, "eval", "x**2", "--at", "x=3", "--svg",
                                                                str(out), daemon=daemon, preexec_fn=private))
        assert result.returncode == 0, result.stderr
        assert count == int(daemon)  # the warm one was the daemon's
        modes[daemon] = stat.S_IMODE(out.stat().st_mode)
    assert modes == {False: 0o600, True: 0o600}  # was 0o644 warm: the daemon's umask


def test_a_warm_call_under_a_file_size_limit_fails_as_a_cold_one(running, tmp_path):
    import resource

    unlimited = gradcli(running, "eval", "x**2", "--at", "x=3", "--svg", str(tmp_path / "whole.svg"), daemon=False)
    assert unlimited.returncode == 0, unlimited.stderr
    limit = (tmp_path / "whole.svg").stat().st_size // 2  # as ulimit -f N would, below what the file needs

    def tiny_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    results = {}
    for daemon in (False, True):
        folder = tmp_path / ("warm" if daemon else "cold")
        folder.mkdir()
        result, count = _count_served(running, lambda: gradcli(
            running, "eval", "x**2", "--at", "x=3", "--svg", "out.svg", daemon=daemon, preexec_fn=tiny_files,
            cwd=folder))
        assert count == int(daemon)
        results[daemon] = (result.returncode, result.stdout, result.stderr)
    assert results[True] == results[False]
    assert results[True][0] == 1 and b"File too large" in results[True][2], results[True]


def test_other_python_variables_or_mount_namespace_run_cold(running, tmp_path):
    cold = gradcli(running, "eval", "x**2", "--at", "x=3", daemon=False)
    for variables in ({"PYTHONIOENCODING": "latin-1"}, {"PYTHONWARNINGS": "error"}):
        env = dict(_env(running, True), **variables)
        result, count = _count_served(running, lambda: subprocess.run(
            [GRADCLI, "eval", "x**2", "--at", "x=3"], env=env, capture_output=True, timeout=RUN_TIMEOUT_S))
        assert (count, result.returncode, result.stdout) == (0, 0, cold.stdout), variables
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
        pytest.skip("no unshare -m here (it needs root or user namespaces)")
    result, count = _count_served(running, lambda: subprocess.run(
        ["unshare", "-m", GRADCLI, "eval", "x**2", "--at", "x=3"], env=_env(running, True), capture_output=True,
        timeout=RUN_TIMEOUT_S))
    assert (count, result.returncode, result.stdout) == (0, 0, cold.stdout)


def test_the_world_a_child_may_take_and_the_one_it_may_not():
    from gradcli.daemon import world

    own = world.describe()
    assert world.why_not_here(own) is None
    assert "mount namespace" in world.why_not_here({**own, "mount_namespace": "mnt:[1]"})
    assert "PYTHON" in world.why_not_here({**own, "python": {**own["python"], "PYTHONHASHSEED": "1"}})
    assert "niceness" in world.why_not_here({**own, "nice": own["nice"] - 1})
    stack = {**own["limits"], "RLIMIT_STACK": [own["limits"]["RLIMIT_STACK"][0] // 2] * 2}
    assert "stack limit" in world.why_not_here({**own, "limits": stack})
    assert world.why_not_here({**own, "limits": "none"}) == "malformed request"
    nicer = {**own, "nice": own["nice"] + 5, "umask": 0o027,
             "limits": {**own["limits"], "RLIMIT_FSIZE": [1 << 20, 1 << 20]}}
    assert world.why_not_here(nicer) is None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child becomes the caller and says what it became
        world.enter(nicer)
        os.write(write, json.dumps([world.describe()["nice"], world.describe()["umask"],
                                    world.describe()["limits"]["RLIMIT_FSIZE"]]).encode())
        os._exit(0)
    os.close(write)
    became = json.loads(os.read(read, 1000))
    os.waitpid(pid, 0)
    assert became == [own["nice"] + 5, 0o027, [1 << 20, 1 << 20]]


def test_daemon_start_refuses_a_folder_that_is_not_private_in_one_line(tmp_path):
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    (xdg / "gradcli").mkdir(mode=0o755)
    (xdg / "gradcli").chmod(0o755)  # as another user could have made /tmp/gradcli-<uid> first
    result = gradcli(xdg, "daemon", "start", daemon=False)
    assert result.returncode == 1
    line = result.stderr.decode()
    assert line.count("\n") == 1 and "Traceback" not in line, line
    assert f"{xdg / 'gradcli'} is not a private folder of this user" in line and "mode 0755" in line, line
    assert "uid" in line  # its owner
