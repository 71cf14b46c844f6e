"""Hostile input and faults, second round: CSV columns that would be lost, signals beyond SIGINT/SIGTERM,
closed or odd standard streams, the shell's lines and files, and bounds checked before memory is taken.

Real subprocesses where signals and streams matter (short ones: ``-m fd``, no TensorFlow unless it is the
point); the rest in-process. Timeouts are hang guards, not speed assertions.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hang_guard import HANG_S

GRADCLI = [sys.executable, "-m", "gradcli"]


def environment(tmp_path: Path) -> dict:
    return dict(os.environ, TMPDIR=str(tmp_path), TF_CPP_MIN_LOG_LEVEL="3")


def sh(tmp_path: Path, line: str, *, timeout: float = 60, input: str | None = None) -> subprocess.CompletedProcess:
    """``line`` through sh, with "$G" running gradcli (redirections such as <&- need a shell)."""
    env = dict(environment(tmp_path), G=" ".join(GRADCLI))
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=timeout, env=env,
                          input=input, cwd=tmp_path)


def one_error_line(result) -> str:
    """The one line of stderr (a subprocess's or the in-process runner's result), neither traceback nor
    internal error."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return lines[0]


# ---- CSV: no column lost ----------------------------------------------------------------------------


@pytest.mark.parametrize("command, column", [
    (["grad", "x**2"], "value"), (["grad", "x**2"], "status"), (["grad", "x**2"], "warnings"),
    (["grad", "x**2"], "fd_dx"), (["hessian", "x**2"], "value"), (["derivative", "x**2"], "fd_d1"),
])
def test_a_pass_through_column_named_like_an_output_column_is_refused(tmp_path, invoke, command, column):
    points = tmp_path / "p.csv"
    points.write_text(f"x,{column}\n1,mine\n")
    result = invoke(*command, "--points", str(points), "-f", "csv", "-m", "fd")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert f"the input column '{column}' clashes" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_json_keeps_a_pass_through_named_like_an_output_under_fields(tmp_path, invoke):
    points = tmp_path / "p.csv"
    points.write_text("x,value\n1,mine\n")
    result = invoke("grad", "x**2", "--points", str(points), "-f", "jsonl", "-m", "fd")
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["fields"] == {"value": "mine"} and record["results"][0]["value"] == 1.0


def test_descend_refuses_a_pass_through_named_final_x(tmp_path, invoke):
    points = tmp_path / "p.csv"
    points.write_text("x,final_x\n1,2\n")
    result = invoke("descend", "x**2", "--points", str(points), "-f", "csv", "--steps", "2")
    assert result.exit_code == 2 and result.stdout == ""
    assert "the input column 'final_x' clashes" in one_error_line(result)


def test_csv_from_a_json_lines_file_has_every_key(tmp_path, invoke):
    points = tmp_path / "p.jsonl"
    points.write_text('{"x": 1}\n{"x": 2, "tag": "t"}\n{"x": 3, "other": 5}\n')
    result = invoke("grad", "x**2", "--points", str(points), "-f", "csv", "-m", "fd")
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0])[:3] == ["tag", "other", "x"]
    assert [(r["tag"], r["other"], r["x"]) for r in rows] == [("", "", "1.0"), ("t", "", "2.0"), ("", "5", "3.0")]


def test_csv_from_a_json_lines_stream_refuses_a_key_the_first_record_lacks(tmp_path):
    text = '{"x": 1, "tag": "a"}\n{"x": 2}\n{"x": 3, "late": 1}\n'
    result = subprocess.run([*GRADCLI, "grad", "x**2", "--points", "-", "-f", "csv", "-m", "fd"], input=text,
                            capture_output=True, text=True, timeout=60, env=environment(tmp_path))
    assert result.returncode == 2
    assert "--points, line 3: the key 'late' is not in the first record" in one_error_line(result)
    rows = list(csv.DictReader(io.StringIO(result.stdout)))  # the rows before it stay
    assert [(r["tag"], r["x"]) for r in rows] == [("a", "1.0"), ("", "2.0")]


# ---- JSON Lines pass-through values and parse errors --------------------------------------------------


def test_a_huge_integer_passes_through_and_1e400_is_refused(tmp_path, invoke):
    big = tmp_path / "big.jsonl"
    big.write_text('{"x": 1, "id": 123456789012345678901234567890}\n')
    for fmt in ("jsonl", "csv", "json"):
        result = invoke("grad", "x", "--points", str(big), "-f", fmt, "-m", "fd")
        assert result.exit_code == 0, result.stderr
        assert "123456789012345678901234567890" in result.stdout
    for value in ("1e400", "-1e400", "[1, 2e999]"):
        over = tmp_path / "over.jsonl"
        over.write_text(f'{{"x": 1, "t": {value}}}\n')
        result = invoke("grad", "x", "--points", str(over), "-f", "jsonl", "-m", "fd")
        assert result.exit_code == 2, (value, result.stderr)
        assert "over.jsonl:1:" in result.stderr and "beyond the float64 range" in result.stderr
        assert "internal error" not in result.stderr


@pytest.mark.parametrize("suffix, text, message", [
    (".jsonl", '{"x": 1}\n{"x" 1}\n', ":2: invalid JSON: a ':' is missing after a key (column 6)"),
    (".jsonl", '{"x": \n', ":1: invalid JSON: a value is missing or is not JSON (at the end of the line)"),
    (".jsonl", '{"x": 1} 2\n', ":1: invalid JSON: there is more text after the object"),
    (".csv", 'x\n"1"2\n', ":2: malformed CSV: a quoted field must end with '\"' followed by ','"),
    (".csv", 'x\n"1\n', ":2: malformed CSV: a quoted field has no closing '\"' before the end of the input"),
])
def test_parse_errors_are_worded_as_gradcli_s_own(tmp_path, invoke, suffix, text, message):
    points = tmp_path / f"p{suffix}"
    points.write_text(text)
    result = invoke("grad", "x", "--points", str(points), "-m", "fd")
    assert result.exit_code == 2
    assert message in result.stderr, result.stderr
    for python in ("Expecting", "delimiter", "expected after", "unexpected end of data"):
        assert python not in result.stderr


# ---- signals: a hangup, Ctrl-\ and SIGUSR1 end gradcli as SIGTERM does ---------------------------------

# SymPy works on this for minutes in its forked worker while gradcli waits (up to --symbolic-timeout)
SLOW_SYMPY = ["grad", "x**x**x**x", "--at", "x=10", "-m", "symbolic,fd", "--symbolic-timeout", "120"]


def session_members(sid: int) -> list[int]:
    """The live processes of session ``sid`` (zombies are dead: left out)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] not in "ZX":
                members.append(int(entry))
    return members


def wait_until(condition, what: str, process: subprocess.Popen, limit: float = HANG_S) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert process.poll() is None, f"gradcli ended before {what}: {process.returncode}"
        assert time.monotonic() < deadline, f"no {what} after {limit} s"
        time.sleep(0.05)


@pytest.mark.parametrize("sig, code, word", [(signal.SIGHUP, 129, "hung up"), (signal.SIGQUIT, 131, "quit"),
                                             (signal.SIGUSR1, 138, "stopped by SIGUSR1")])
def test_hangup_quit_and_usr1_end_a_one_point_command_and_its_worker(tmp_path, sig, code, word):
    process = subprocess.Popen([*GRADCLI, *SLOW_SYMPY], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=environment(tmp_path), start_new_session=True)
    try:
        wait_until(lambda: len(session_members(process.pid)) >= 2 and any(tmp_path.iterdir()),
                   "SymPy's worker", process)
        time.sleep(0.3)
        os.kill(process.pid, sig)
        _, err = process.communicate(timeout=HANG_S)
        assert (process.returncode, err.decode()) == (code, f"gradcli: {word}\n")
        deadline = time.monotonic() + HANG_S
        while session_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert session_members(process.pid) == []
        assert list(tmp_path.iterdir()) == []  # the private TMPDIR is gone
    finally:
        for pid in session_members(process.pid):
            os.kill(pid, signal.SIGKILL)
        process.wait()


def test_a_private_directory_of_a_dead_pid_is_removed_at_once(tmp_path):
    from gradcli import interrupts

    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid is free now (and not reused within this test)
    left = tmp_path / f"{interrupts.PRIVATE_PREFIX}{dead.pid}-abcd"
    left.mkdir()
    (left / ".lock").touch()
    interrupts._remove_stale(str(tmp_path))
    assert not left.exists()


def test_ctrl_c_during_tensorflow_s_import_says_interrupted(tmp_path):
    # TensorFlow's import points fd 2 at /dev/null while it runs: the line must reach the real stderr
    process = subprocess.Popen([*GRADCLI, "grad", "sin(x)", "--at", "x=1", "-m", "tape"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=environment(tmp_path), start_new_session=True)
    try:
        maps = Path(f"/proc/{process.pid}/maps")
        wait_until(lambda: "tensorflow" in maps.read_text(), "TensorFlow's import", process)
        os.kill(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=HANG_S)
        assert (process.returncode, err.decode()) == (130, "gradcli: interrupted\n")
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


# ---- closed and odd standard streams -------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    ("shell", "gradcli: error: cannot read the command lines: standard input is closed"),
    ("grad x --points - -m fd", "gradcli: error: --points <stdin>: cannot be read: standard input is closed"),
    ("grad --file - --at x=1 -m fd", "gradcli: error: --file <stdin>: standard input is closed"),
    ("grad x --points /dev/stdin -m fd", "gradcli: error: --points /dev/stdin: is standard input, which is closed"),
    ("grad --file /proc/self/fd/0 --at x=1 -m fd",
     "gradcli: error: --file /proc/self/fd/0 is standard input, which is closed"),
])
def test_a_closed_stdin_is_an_unusable_input(tmp_path, args, message):
    result = sh(tmp_path, f"$G {args} <&-")
    assert (result.returncode, one_error_line(result), result.stdout) == (2, message, "")


def test_odd_standard_streams_give_one_line_and_the_exit_code(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # stdin a FIFO (its writer gone at once): no expression, exit 2
    result = sh(tmp_path, f"(: > {fifo} &) ; $G grad --file - --at x=1 -m fd < {fifo}")
    assert result.returncode == 2 and "has no expression" in one_error_line(result)
    # stdin /dev/full (endless zero bytes): one line too long, exit 2
    result = sh(tmp_path, "$G grad x --points - -m fd < /dev/full")
    assert result.returncode == 2 and "line longer than" in one_error_line(result)
    # stdout /dev/full, stderr closed: nothing to say it on, the exit code says it
    result = sh(tmp_path, "$G grad x --at x=1 -m fd > /dev/full 2>&-")
    assert (result.returncode, result.stderr) == (1, "")
    # everything closed
    result = sh(tmp_path, "$G grad x --points - -m fd <&- >&- 2>&-")
    assert (result.returncode, result.stdout, result.stderr) == (2, "", "")


# ---- the shell: long lines, its own stdin, its history -------------------------------------------------


def test_an_overlong_shell_line_is_refused_and_the_next_runs(tmp_path):
    from gradcli.limits import SHELL_MAX_LINE_BYTES

    script = f'eval "{"x+" * SHELL_MAX_LINE_BYTES}x" --at x=1\neval x --at x=2\n'
    started = time.monotonic()
    result = sh(tmp_path, "$G shell", input=script)
    assert time.monotonic() - started < 30
    assert result.returncode == 2 and result.stdout == "2.0\n"
    assert one_error_line(result).startswith(f"gradcli: line 1: error: the line is longer than "
                                             f"{SHELL_MAX_LINE_BYTES:,} bytes")


def test_splitting_a_long_line_takes_linear_time():
    from gradcli.commands.shell_loop import split_line

    for text in ('eval "' + "x+" * 500_000 + 'x" --at x=1', 'eval "' + "x+" * 500_000):
        started = time.monotonic()
        try:
            split_line(text)
        except ValueError:
            pass
        assert time.monotonic() - started < 2.0  # shlex: about a minute


@pytest.mark.parametrize("text", [
    "", "a b", "a#b c", "a 'b c' d", 'a "b \\" \\x c"', "a\\ b", "''", '""x', "a # c\nb", "x\\", "'a", '"a\\',
    '"a\\"', "a\r\tb", "é 'ü'#x",
])
def test_split_line_splits_as_shlex_does(text):
    import shlex

    from gradcli.commands.shell_loop import split_line

    try:
        expected = shlex.split(text, comments=True)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc).lower()):
            split_line(text)
    else:
        assert split_line(text) == expected


@pytest.mark.parametrize("name", ["/dev/stdin", "/proc/self/fd/0", "/dev/fd/0"])
def test_a_shell_line_cannot_read_the_shell_s_own_stdin(tmp_path, name):
    script = f"grad x --points {name} -m fd\ngrad --file {name} --at x=1 -m fd\neval x --at x=3\n"
    result = sh(tmp_path, "$G shell", input=script)
    assert result.returncode == 2 and result.stdout == "3.0\n", result.stderr
    lines = result.stderr.splitlines()
    assert lines == [f"gradcli: line 1: error: --points {name}: is standard input, the shell's own command lines "
                     "here; give a file",
                     f"gradcli: line 2: error: --file {name} is standard input, the shell's own command lines "
                     "here; give a file"]


def test_a_fifo_at_the_history_path_is_left_alone(tmp_path):
    from gradcli.commands import shell_input

    fifo = tmp_path / "history"
    os.mkfifo(fifo)
    assert not shell_input.regular_or_absent(str(fifo))  # returns at once: opened without blocking
    assert not shell_input.regular_or_absent(str(tmp_path))
    assert shell_input.regular_or_absent(str(tmp_path / "none"))
    (tmp_path / "file").write_text("grad x\n")
    assert shell_input.regular_or_absent(str(tmp_path / "file"))


def test_the_shell_at_a_terminal_with_a_fifo_as_history_does_not_hang(tmp_path):
    import pty

    state = tmp_path / "state"
    (state / "gradcli").mkdir(parents=True)
    os.mkfifo(state / "gradcli" / "history")
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.environ.update(environment(tmp_path), XDG_STATE_HOME=str(state))
        os.execv(sys.executable, [*GRADCLI, "shell"])
    seen = b""
    try:
        deadline = time.monotonic() + HANG_S
        while b"gradcli> " not in seen:
            assert time.monotonic() < deadline, seen
            seen += os.read(fd, 4096)
        os.write(fd, b"eval x --at x=4\n")
        while b"4.0" not in seen or seen.count(b"gradcli> ") < 2:
            assert time.monotonic() < deadline, seen
            seen += os.read(fd, 4096)
        os.write(fd, b"exit\n")
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
        os.close(fd)


# ---- bounds checked before memory is taken -------------------------------------------------------------

PEAK_RSS = """
import resource, subprocess, sys
result = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(result.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(result.stderr, end="")
"""


def test_a_refused_grid_of_ten_long_axes_allocates_nothing(tmp_path):
    expression = "+".join(f"x{i}" for i in range(10))
    grid = ",".join(f"x{i}=0:1:100000000" for i in range(10))  # each axis allowed alone: 800 MB apiece
    result = subprocess.run([sys.executable, "-c", PEAK_RSS, *GRADCLI, "grad", expression, "--grid", grid,
                             "-m", "fd", "-f", "csv"], capture_output=True, text=True, timeout=120,
                            env=environment(tmp_path))
    head, message = result.stdout.split("\n", 1)
    code, peak_kib = map(int, head.split())
    assert code == 2 and "more than the 100,000,000 allowed" in message, result.stdout
    assert peak_kib < 300_000, peak_kib  # was out of memory (5.6 GB under a 6 GB limit), exit 1


def test_grid_checks_counts_before_building_any_axis(monkeypatch):
    from gradcli.errors import UsageError
    from gradcli.expression.sources import grid as grid_module

    built = []
    monkeypatch.setattr(grid_module, "_grid_axis", lambda *a: built.append(a) or None)
    with pytest.raises(UsageError, match="more than the 100,000,000 allowed"):
        grid_module.grid_points("x=0:1:20000,y=0:1:20000", variables=["x", "y"])
    assert built == []


def test_points_chunks_are_bounded_by_bytes_as_well_as_rows():
    from gradcli.expression.sources.csv_reader import CsvReader
    from gradcli.expression.sources.files import chunked_rows
    from gradcli.expression.sources.lines import Lines
    from gradcli.expression.sources.messages import Where
    from gradcli.expression.sources.shapes import Needs

    wide = "a" * 1000
    data = ("x,t\n" + "".join(f"{i},{wide}\n" for i in range(100))).encode()
    where, needs = Where("--points", "p.csv"), Needs(["x"], None)
    lines = Lines.from_binary(io.BytesIO(data), where, max_length=1 << 20)
    reader = CsvReader(lines, where, needs, require_header=True)
    sizes = [len(c) for c in chunked_rows(reader.rows(), needs, 4096, lines, max_bytes=10_000)]
    assert sum(sizes) == 100 and max(sizes) <= 10 and len(sizes) >= 10  # ~1 kB a row: 10 rows a chunk
    lines = Lines.from_binary(io.BytesIO(data), where, max_length=1 << 20)
    reader = CsvReader(lines, where, needs, require_header=True)
    assert [len(c) for c in chunked_rows(reader.rows(), needs, 4096, lines)] == [100]  # narrow enough: one chunk


# ---- --file: comments are not the expression -------------------------------------------------------------


def test_comments_in_a_file_do_not_count_toward_the_expression_limit(tmp_path, invoke):
    from gradcli.limits import COMMAND_LINE_EXPRESSION_MAX_CHARS as ARGUMENT, EXPRESSION_MAX_CHARS as MAX_LENGTH

    path = tmp_path / "e.txt"  # comments far beyond an argument's limit; the file within its own
    path.write_text(f"# {'c' * 2 * ARGUMENT}\nx**2 +  # {'n' * ARGUMENT}\n  sin(x)\n")
    result = invoke("eval", "--file", str(path), "--at", "x=0")
    assert result.exit_code == 0 and result.stdout.strip() == "0.0", result.stderr
    path.write_text(f"# {'c' * 2 * ARGUMENT}\nx**2 +  # note\n  sin(x) + )  # broken\n")
    result = invoke("eval", "--file", str(path), "--at", "x=0")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"gradcli: error: {path}:3:12: unexpected ')'",
                                          "    sin(x) + )  # broken", "             ^"]
    path.write_text("x" * (MAX_LENGTH + 1) + "  # the expression itself is too long\n")
    result = invoke("eval", "--file", str(path), "--at", "x=0")
    assert result.exit_code == 2 and "longer than" in result.stderr


def test_a_shell_reading_endless_zeros_stops_with_one_line():
    """`gradcli shell < /dev/full` (or /dev/zero) read past its one endless line forever; it stops once the
    line passes SHELL_MAX_SKIP_BYTES, with a usage error."""
    import io

    from gradcli.commands.shell_loop import run_shell
    from gradcli.errors import UsageError

    class Zeros(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buffer):
            buffer[:] = bytes(len(buffer))
            return len(buffer)

    with pytest.raises(UsageError, match="not a file of command lines"):
        run_shell(io.TextIOWrapper(io.BufferedReader(Zeros())), interactive=False)


def test_json_too_deep_or_too_long_is_said_in_gradcli_s_words(tmp_path, invoke):
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"x": ' + "[" * 5000 + "]" * 5000 + "}\n")
    long = tmp_path / "long.jsonl"
    long.write_text('{"x": ' + "1" * 5000 + "}\n")
    for path, words in [(deep, "deep.jsonl:1: invalid JSON: nested too deeply"),
                        (long, "long.jsonl:1: invalid JSON: an integer with more than 4300 digits")]:
        result = invoke("eval", "x", "--points", str(path))
        assert result.exit_code == 2 and words in result.stderr, result.stderr
        for python in ("recursion", "sys.set_int_max_str_digits", "unicode string"):
            assert python not in result.stderr
