"""gradcli shell: many command lines in one process (in process with a StringIO for stdin, and once
through a real pipe)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from gradcli.commands import shell_input, shell_loop
from gradcli.commands.shell_input import terminal_lines
from gradcli.commands.shell_loop import LineNumberedStream, run_lines, run_shell, worse
from gradcli.launcher import run_command

GRADCLI = shutil.which("gradcli") or os.path.join(os.path.dirname(sys.executable), "gradcli")

GRAD_FD = 'grad "(x1+5)*x2**2" --at x1=2,x2=3 -m fd,symbolic -f json'
GRAD_TAPE = 'grad "3*x**2+2*x-1" --at x=1 -m tape -f json'
HESSIAN = 'hessian "x**2*y" --at x=1,y=2 -m symbolic,fd -f json'
EVAL = 'eval "x**2 + sin(y)" --at x=2,y=0'
DERIVATIVE = 'derivative "sin(x)" --at x=0 --order 2 -m symbolic,fd -f json'


def session(text: str) -> tuple[int, str, str]:
    """``gradcli shell`` in process, reading ``text`` as from a pipe: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_shell(io.StringIO(text), interactive=False)
    return code, out.getvalue(), err.getvalue()


def alone(line: str) -> tuple[int, str, str]:
    """The same line as its own ``gradcli`` run (the console script's path, in process)."""
    import shlex

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_command(shlex.split(line))
    return code, out.getvalue(), err.getvalue()


def json_stream(text: str) -> list:
    """JSON documents one after another, read with a streaming decoder."""
    decoder, docs, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return docs
        doc, i = decoder.raw_decode(text, i)
        docs.append(doc)


def test_same_output_as_separate_runs_in_order():
    lines = [GRAD_FD, GRAD_TAPE, HESSIAN, EVAL, DERIVATIVE]
    code, out, err = session("# derivatives of the guide\n\n" + "\n".join(lines) + "\n")
    separate = [alone(line) for line in lines]
    assert code == max(s[0] for s in separate) == 0
    assert out == "".join(s[1] for s in separate)
    # warnings, if any, as the commands print them, with their line numbers (after a comment and a blank)
    assert err == "".join(s[2].replace("gradcli: ", f"gradcli: line {n}: ") for n, s in enumerate(separate, 3))


def test_json_documents_one_after_another_parse_with_a_streaming_decoder():
    code, out, _ = session("\n".join([GRAD_FD, GRAD_TAPE, HESSIAN]) + "\n")
    docs = json_stream(out)
    assert code == 0 and [d["command"] for d in docs] == ["grad", "grad", "hessian"]
    assert docs[0]["results"][0]["gradient"]["symbolic"] == {"x1": 9.0, "x2": 42.0}
    assert docs[1]["results"][0]["gradient"]["tape"] == {"x": 8.0}


def test_a_bad_line_in_the_middle_is_reported_with_its_number_and_the_session_goes_on():
    bad = 'grad "x**" --at x=1 -f json'
    code, out, err = session("\n".join([GRAD_FD, bad, EVAL, "grad x --at x=1 --no-such-option", GRAD_FD]))
    assert code == 2
    assert out == alone(GRAD_FD)[1] + alone(EVAL)[1] + alone(GRAD_FD)[1]
    bad_alone = alone(bad)
    assert bad_alone[0] == 2
    # the command's own message, with the line number after "gradcli: "
    first, *carets = bad_alone[2].splitlines()
    assert err.splitlines()[:len(carets) + 1] == [first.replace("gradcli: ", "gradcli: line 2: ", 1), *carets]
    assert "gradcli: line 4: error: No such option: --no-such-option" in err


def test_exit_code_is_the_worst_of_the_commands():
    assert worse(0, 1) == 1 and worse(1, 2) == 2 and worse(2, 1) == 2 and worse(2, 130) == 130
    undefined = 'eval "log(x)" --at x=-1'
    assert session(f"{EVAL}\n{undefined}\n{EVAL}\n")[0] == 1
    code, _, err = session(f"{undefined}\neval x --at y=1\n{EVAL}\n")
    assert code == 2 and "line 1: warning:" in err and "line 2: error:" in err


def test_the_same_grad_twice_and_after_a_failure_gives_the_same_output():
    failing = 'grad "1/x" --at x=0 -m symbolic,fd -f json'
    code, out, _ = session("\n".join([GRAD_FD, GRAD_TAPE, failing, "grad (x --at x=1", GRAD_FD, GRAD_TAPE]))
    docs = json_stream(out)
    assert code == 2 and len(docs) == 5
    assert docs[0] == docs[3] and docs[1] == docs[4]


def test_sympy_works_for_many_commands():
    lines = [f'grad "x**{k}*y" --at x=2,y=3 -m symbolic -f json' for k in range(2, 9)]
    code, out, err = session("\n".join(lines))
    docs = json_stream(out)
    assert (code, err) == (0, "")
    assert [d["results"][0]["gradient"]["symbolic"]["x"] for d in docs] == [k * 2 ** (k - 1) * 3 for k in range(2, 9)]


def test_a_sympy_job_past_its_deadline_is_killed_and_later_lines_run(monkeypatch):
    """After the tape has loaded TensorFlow a SymPy job would run in a thread that cannot be stopped (it
    stalled every later line); the shell hands each job to a process from its fork server instead."""
    import threading

    def sympy_threads():
        return {t for t in threading.enumerate() if t.name == "gradcli-sympy" and t.is_alive()}

    before = sympy_threads()  # (other tests of this process may have left one finishing its work)
    slow = 'grad "x**x**x**x" --at x=10 --symbolic-timeout 0.5 -m symbolic,fd -f json'
    code, out, err = session("\n".join([GRAD_TAPE, slow, GRAD_FD]))
    docs = json_stream(out)
    assert code == 1 and "symbolic column left out: SymPy took longer than 0.5 s" in err
    assert docs[1]["methods"] == ["fd"] and docs[2] == json_stream(alone(GRAD_FD)[1])[0]
    assert not sympy_threads() - before


def test_comments_blank_lines_exit_and_a_leading_gradcli():
    code, out, err = session(f"  # a comment\n\n   \ngradcli {EVAL}  # trailing words\nexit\n{EVAL}\n")
    assert (code, out, err) == (0, "4.0\n", "")
    assert session(f"{EVAL}\nquit\neval y --at y=1\n")[1] == "4.0\n"


def test_help_lists_the_commands_and_help_cmd_is_its_help():
    code, out, _ = session("help\nhelp eval\n")
    assert code == 0
    for name in ("grad", "hessian", "derivative", "descend", "eval", "check", "exit, quit"):
        assert f"  {name} " in out
    assert "--dtype" in out  # eval's own options


@pytest.mark.parametrize("line, words", [
    ("shell", "already in gradcli shell"),
    ("grad x --points - -m fd", "--points -: standard input is the shell's own input"),
    ("grad 'x --at x=1", "cannot split the line: no closing quotation"),
    ("bogus x", "No such command 'bogus'"),
])
def test_refused_lines(line, words):
    code, out, err = session(f"{line}\n{EVAL}\n")
    assert code == 2 and out == "4.0\n"
    assert err.startswith("gradcli: line 1: error: ") and words in err


def test_a_shell_inside_a_shell_is_refused_even_when_called_directly():
    from gradcli.errors import UsageError

    code, _, err = session("eval x --at x=1\n")
    assert code == 0
    shell_loop._active = True
    try:
        with pytest.raises(UsageError):
            run_shell(io.StringIO(""), interactive=False)
    finally:
        shell_loop._active = False


def test_bytes_that_are_not_text_fail_their_line_as_the_command_would():
    from gradcli.cli import app
    from typer.testing import CliRunner

    data = b'eval "x\xff" --at x=1\n' + EVAL.encode() + b"\n"
    result = CliRunner().invoke(app, ["shell"], input=data)
    assert result.exit_code == 2 and result.stdout == "4.0\n"
    assert result.stderr.startswith("gradcli: line 1: error: ")


def test_the_typer_command_reads_standard_input(invoke, runner):
    from gradcli.cli import app

    result = runner.invoke(app, ["shell"], input=f"{EVAL}\neval y --at x=1\n")
    assert result.exit_code == 2 and result.stdout == "4.0\n"
    assert result.stderr.startswith("gradcli: line 2: error: ")


def test_line_numbers_go_only_before_gradcli_messages_at_line_starts():
    target = io.StringIO()
    stream = LineNumberedStream(target, "gradcli: line 7: ")
    stream.write("gradcli: error: bad")
    stream.write(" input gradcli: x\n")
    stream.write("  x**\n    ^\ngradcli: note: a\nother\n")
    assert target.getvalue() == ("gradcli: line 7: error: bad input gradcli: x\n  x**\n    ^\n"
                                 "gradcli: line 7: note: a\nother\n")


def test_ctrl_c_at_a_pipe_ends_with_130_and_at_a_terminal_cancels(monkeypatch, tmp_path, capsys):
    def lines_then_interrupt():
        yield 1, EVAL
        raise KeyboardInterrupt

    assert run_lines(lines_then_interrupt(), interactive=False) == 130
    assert capsys.readouterr() == ("4.0\n", "gradcli: interrupted\n")
    # at a terminal: Ctrl-C at the prompt cancels the line, Ctrl-C during a command returns to the prompt
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    (tmp_path / "gradcli").mkdir()
    (tmp_path / "gradcli" / "history").write_text("grad 'x**2' --at x=3\n")
    typed = iter([EVAL, KeyboardInterrupt, "interrupted command", "eval 2*x --at x=3", EOFError])

    def read(prompt):
        assert prompt == "gradcli> "
        item = next(typed)
        if isinstance(item, type):
            raise item
        return item

    real_run = shell_loop.run_command_line

    def run(argv):
        if argv[0] == "interrupted":
            raise KeyboardInterrupt
        return real_run(argv)

    monkeypatch.setattr(shell_loop, "run_command_line", run)
    assert run_lines(terminal_lines(read), interactive=True) == 130
    out, err = capsys.readouterr()
    assert out == "4.0\n6.0\n" and "gradcli: interrupted" in err and "line" not in err
    # the history is read and written back (input() adds typed lines to it only at a real terminal)
    assert "grad 'x**2' --at x=3" in (tmp_path / "gradcli" / "history").read_text()


def test_an_unwritable_history_is_no_error(monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))  # a file where a directory should be
    typed = iter([EVAL])

    def read(prompt):
        try:
            return next(typed)
        except StopIteration:
            raise EOFError from None

    assert run_lines(terminal_lines(read), interactive=True) == 0
    assert capsys.readouterr().out == "4.0\n"


def test_completion_offers_commands_then_the_commands_options():
    assert shell_input.completion_candidates([], "he") == ["help ", "hessian "]
    assert "--at " in shell_input.completion_candidates(["grad", "x"], "--a")
    assert shell_input.completion_candidates(["grad"], "x") == []


def test_a_real_pipe_through_the_installed_command():
    """One process for every line: the tape (TensorFlow), SymPy's workers before and after it, a bad line;
    the messages of the lines while TensorFlow loads (its import silences descriptor 2) are all there."""
    undefined = 'eval "log(x)" --at x=-1'
    lines = [undefined, GRAD_FD, GRAD_TAPE, "grad 'x**2' --at x=3 -f json", "grad x --at", GRAD_FD, EVAL]
    done = subprocess.run([GRADCLI, "shell"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 2, done.stderr
    warning = alone(undefined)[2]
    assert warning.startswith("gradcli: warning: ")
    first, second = done.stderr.splitlines(keepends=True)
    assert first == warning.replace("gradcli: ", "gradcli: line 1: ", 1)
    assert second.startswith("gradcli: line 5: error: ")
    docs = json_stream(done.stdout[:done.stdout.rindex("4.0\n")])
    assert docs[0] == docs[3] == json_stream(alone(GRAD_FD)[1])[0]
    assert docs[1]["results"][0]["gradient"]["tape"] == {"x": 8.0}
    assert docs[2]["results"][0]["gradient"] == {"symbolic": {"x": 6.0}, "tape": {"x": 6.0}, "fd": {"x": 6.0}}
    assert done.stdout.endswith("\n4.0\n")


def test_the_prompt_goes_to_stderr_when_stdout_is_not_the_terminal(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("eval x --at x=1\n"))
    assert shell_input.read_at_prompt("gradcli> ") == "eval x --at x=1"
    assert capsys.readouterr() == ("", "gradcli> ")


def test_completion_lines_behave_as_on_the_command_line():
    """--show-completion SHELL in a session: the named shell's script, as `gradcli --show-completion SHELL`
    prints it (the second one was an internal error: Typer reads its switch when it builds the command)."""
    lines = ["--show-completion bash", "--show-completion zsh", EVAL, "--show-completion bash"]
    code, out, err = session("\n".join(lines) + "\n")
    assert code == 0 and "error" not in err, err
    bash, zsh = alone(lines[0]), alone(lines[1])
    assert out == bash[1] + zsh[1] + alone(EVAL)[1] + bash[1]


def test_a_session_of_csv_lines_of_one_shape_is_one_csv():
    """One header for consecutive CSV lines with the same columns (a script appends rows); a different shape
    writes its own header, and the next line of the first shape its header again."""
    grad = ['grad "x**2" --at x=1 -f csv', 'grad "x**2" --at x=2 -f csv', 'grad "x**2" --grid x=3:4:2 -f csv']
    other = 'hessian "x*y" --at x=1,y=1 -f csv'
    code, out, _ = session("\n".join([*grad, other, grad[0]]) + "\n")
    rows = out.splitlines()
    header = alone(grad[0])[1].splitlines()[0]
    assert code == 0 and rows[0] == header
    assert rows.count(header) == 2 and len(rows) == 1 + 4 + 2 + 2
    assert [float(r.split(",")[0]) for r in rows[1:5]] == [1.0, 2.0, 3.0, 4.0]


def _state(pid: int) -> str | None:
    """A process's state letter (Z: ended, not yet reaped), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def _ends_soon(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _state(pid) in (None, "Z"):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal and /proc")
def test_the_fork_server_dies_with_the_process_that_started_it(tmp_path):
    """What the fork server does first (importing gradcli.commands.shell_sympy with the variable naming its
    parent): it gets SIGKILL when that parent ends, whatever it is doing (it waited for its SymPy import)."""
    from gradcli.commands.shell_sympy import SERVER_PARENT_VARIABLE

    parent_code = f"""
import os, subprocess, sys
env = dict(os.environ, {SERVER_PARENT_VARIABLE}=str(os.getpid()))
child = subprocess.Popen([sys.executable, "-c", "import gradcli.commands.shell_sympy, time; print('ready', flush=True); time.sleep(60)"], env=env)
print(child.pid, flush=True)
child.wait()
"""
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert parent.stdout.readline() == "ready\n"  # its import is done: the signal is set
        parent.kill()
        parent.wait()
        assert _ends_soon(child), "the child outlived its parent"
    finally:
        parent.kill()
        if _state(child) not in (None, "Z"):
            os.kill(child, 9)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_the_shell_names_itself_to_its_fork_server_which_ends_with_it():
    shell = subprocess.Popen([GRADCLI, "shell"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    server = None
    try:
        shell.stdin.write(EVAL + "\n")
        shell.stdin.flush()
        assert shell.stdout.readline() == "4.0\n"
        servers = [pid for pid in _children(shell.pid) if b"multiprocessing.forkserver" in _cmdline(pid)]
        assert len(servers) == 1
        server = servers[0]
        with open(f"/proc/{server}/environ", "rb") as environ:  # as it was when the server started
            assert f"GRADCLI_FORK_SERVER_PARENT={shell.pid}".encode() in environ.read().split(b"\0")
        shell.kill()  # no chance to close anything
        shell.wait()
        assert _ends_soon(server)
    finally:
        shell.kill()
        if server is not None and _state(server) not in (None, "Z"):
            os.kill(server, 9)


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except OSError:
                pass
    return found


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read()
    except OSError:
        return b""


def _background_load(work):
    from gradcli.commands.shell_tensorflow import BackgroundLoad

    def waiting_for_it():
        assert loader.done.wait(20), "the background work never went on"

    loader = BackgroundLoad(work, waiting_for_it)
    return loader, waiting_for_it


def _modules(tmp_path, monkeypatch, prefix: str) -> tuple[str, str]:
    """Two fresh modules: OUTER imports INNER."""
    outer, inner = f"{prefix}_outer", f"{prefix}_inner"
    (tmp_path / f"{inner}.py").write_text("VALUE = 42\n")
    (tmp_path / f"{outer}.py").write_text(f"import {inner}\nVALUE = {inner}.VALUE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return outer, inner


def test_the_background_load_stops_while_a_line_runs_and_goes_on_when_the_shell_waits(tmp_path, monkeypatch):
    import importlib

    outer, inner = _modules(tmp_path, monkeypatch, "gradcli_test_free_moments")
    loader, _ = _background_load(lambda: importlib.import_module(outer))
    loader.thread.start()
    time.sleep(0.3)  # a line runs: the thread waits before its first module
    assert not loader.done.is_set() and inner not in sys.modules
    read, write = os.pipe()
    try:
        with open(read, closefd=False) as stream:
            os.write(write, b"eval x --at x=1\n")
            with loader.waiting_for_a_line(stream):  # input is ready: no free moment
                assert not loader.free.is_set()
            os.read(read, 100)
            with loader.waiting_for_a_line(stream):  # nothing to read: the shell would wait
                assert loader.free.is_set()
                assert loader.done.wait(20)
    finally:
        os.close(read)
        os.close(write)
    assert not loader.free.is_set() and sys.modules[outer].VALUE == 42


@pytest.mark.parametrize("how", ["imports a module the thread is importing", "waits inside the named function"])
def test_a_line_that_needs_the_background_work_gets_it(tmp_path, monkeypatch, how):
    """No deadlock: the thread, stopped with a module half imported (its lock held) or with the lock of
    load_tensorflow held, goes on when the line waits for it."""
    import importlib
    import signal

    outer, inner = _modules(tmp_path, monkeypatch, f"gradcli_test_waited_{len(how)}")
    loader, waiting_for_it = _background_load(lambda: importlib.import_module(outer))
    loader.thread.start()
    for _ in range(200):  # the thread is inside OUTER's import, stopped before INNER's
        if outer in sys.modules:
            break
        time.sleep(0.01)
    assert outer in sys.modules and inner not in sys.modules

    def deadlocked(*_):
        raise AssertionError("the line waited forever for the background work")

    previous = signal.signal(signal.SIGALRM, deadlocked)
    signal.alarm(30)
    try:
        if how.startswith("imports"):
            assert importlib.import_module(outer).VALUE == 42
        else:
            waiting_for_it()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert loader.done.wait(20)


def test_a_worker_that_answered_serves_later_jobs_and_one_that_failed_or_overran_is_ended():
    """In the shell SymPy's workers come from the fork server and are kept between jobs (a check line has
    two: no process started for either); an error or a deadline still ends the worker, as in a command."""
    from gradcli.methods.worker import BoundedJob, SymbolicTimeout

    assert session(f"{EVAL}\n")[0] == 0  # the fork server is this process's source of workers now
    pids = [BoundedJob(os.getpid, (), 30, parallel=True).result() for _ in range(8)]
    assert os.getpid() not in pids and len(set(pids)) < len(pids)
    failing = BoundedJob(divmod, (1, 0), 30, parallel=True)
    with pytest.raises(ZeroDivisionError):
        failing.result()
    overrunning = BoundedJob(time.sleep, (30,), 0.3, parallel=True)
    with pytest.raises(SymbolicTimeout):
        overrunning.result()
    assert not failing.process.is_alive() and not overrunning.process.is_alive()
    later = [BoundedJob(os.getpid, (), 30, parallel=True).result() for _ in range(3)]
    assert failing.process.pid not in later and overrunning.process.pid not in later
