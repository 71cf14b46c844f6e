"""Standard output and standard error under faults: closed, full, or read by no one.

The console script calls :func:`guard_standard_streams` first. From then on:

- file descriptors 0-2 are always open (a closed one is held by /dev/null), so that no file gradcli or
  TensorFlow opens can become "standard output" by accident;
- ``sys.stdout`` writes through :class:`_Output`: a failed write (broken pipe, full disk, closed
  stdout, I/O error) raises :class:`OutputWriteError`, which the launcher turns into its exit code
  (:func:`exit_code_for`); later writes are dropped, so that Python's flush at exit cannot fail again;
- ``sys.stderr`` writes through :class:`_Diagnostics`: a write that fails is dropped. Diagnostics are
  never redirected to stdout (``print(file=None)``, which a closed stderr gave, writes on stdout).
- a stdin closed at start is a ``sys.stdin`` whose reads fail with "standard input is closed" (Python
  leaves ``None`` there), so that ``--points -``, ``--file -`` and ``gradcli shell`` refuse it as an
  unusable input (exit 2); a path naming it (``/dev/stdin``, which opens the /dev/null holding fd 0) is
  refused alike (:func:`stdin_refusal`).

A stdin or stdout that is a directory is refused by Python itself before gradcli runs ("Fatal Python
error: init_sys_streams", exit 1).

Standard library only (imported before Typer).
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import sys

BROKEN_PIPE_EXIT = 141  # the reader left (`gradcli ... | head -1`): 128 + SIGPIPE, as shells report it
WRITE_FAILURE_EXIT = 1  # stdout closed, full or failing: the result could not be delivered


class OutputWriteError(Exception):
    """Standard output could not be written. Not an OSError, so that Click's own broken-pipe
    handling (exit 1) and the commands' error mapping let it through to the launcher."""

    def __init__(self, error: OSError):
        super().__init__(error.strerror or str(error))
        self.error = error


class _StandardDescriptor(io.RawIOBase):
    """File descriptor 1 or 2 written directly; one that was closed at start is held by /dev/null and is
    not a terminal. Subclasses say what a failed write does."""

    def __init__(self, fd: int, *, closed_at_start: bool):
        super().__init__()
        self._fd = fd
        self._closed_at_start = closed_at_start

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return not self._closed_at_start and os.isatty(self._fd)


class _Output(_StandardDescriptor):
    """File descriptor 1, raising :class:`OutputWriteError` on the first failure and dropping the rest."""

    def __init__(self, fd: int, *, closed_at_start: bool):
        super().__init__(fd, closed_at_start=closed_at_start)
        self.failed = False

    def write(self, data) -> int:
        if self.failed:
            return len(data)
        try:
            if self._closed_at_start:
                raise OSError(errno.EBADF, "standard output is closed")
            return os.write(self._fd, data)
        except OSError as exc:
            self.failed = True
            raise OutputWriteError(exc) from None


class _Diagnostics(_StandardDescriptor):
    """File descriptor 2; a write that fails is dropped (there is nowhere left to say so)."""

    def write(self, data) -> int:
        if not self._closed_at_start:
            try:
                os.write(self._fd, data)
            except OSError:
                pass
        return len(data)


class _ClosedInput(io.RawIOBase):
    """File descriptor 0 when it was closed at start: every read fails (an empty stdin would be a silent
    success: no points, no expression, no command lines)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        raise OSError(errno.EBADF, "standard input is closed")

    def fileno(self) -> int:
        return 0

    def isatty(self) -> bool:
        return False


_closed_at_start: frozenset[int] = frozenset()
_stdin_is_the_shells = False


class CsvHeaders:
    """In ``gradcli shell``, the header of the last CSV a line wrote: a line whose CSV has the same columns
    continues it without repeating the header, so a session of such lines is one CSV (a header per session
    for the same command shape). Outside the shell every CSV has its header."""

    def __init__(self) -> None:
        self.session = False
        self.last: list[str] | None = None

    def needed(self, columns: list[str]) -> bool:
        """Whether a CSV with these columns writes its header (and, in a session, remember them)."""
        if not self.session:
            return True
        repeated = columns == self.last
        self.last = list(columns)
        return not repeated

    def start_session(self, active: bool = True) -> None:
        self.session, self.last = active, None


csv_headers = CsvHeaders()


def reserve_stdin(reserved: bool = True) -> None:
    """While ``gradcli shell`` reads its command lines from stdin, a file that is that stream is refused
    (``--points /dev/stdin`` would read the rest of the session as points)."""
    global _stdin_is_the_shells
    _stdin_is_the_shells = reserved


_STANDARD_FD_PATH = re.compile(r"/(?:dev/fd|proc/(?:self|thread-self|[0-9]+)/fd)/([0-9]+)")


def _names_fd_0(path: str) -> bool:
    """Whether ``path`` reaches file descriptor 0 through links (/dev/stdin, /dev/fd/0, /proc/self/fd/0)."""
    path = os.path.abspath(path)
    for _ in range(40):  # a loop of links ends somewhere
        match = _STANDARD_FD_PATH.fullmatch(path)
        if match:
            pid = path.split("/")[2]
            return match.group(1) == "0" and (not pid.isdigit() or int(pid) == os.getpid())
        try:
            target = os.readlink(path)
        except OSError:  # not a link
            return False
        path = os.path.normpath(os.path.join(os.path.dirname(path), target))
    return False


def stdin_refusal(path: str, fd: int) -> str | None:
    """Why the file ``path``, open as ``fd``, must not be read as an input: it is a stdin closed at start,
    or the stream of the shell's command lines (a pipe or terminal: a regular file opened again starts
    at its beginning and takes nothing from the shell). None when it may be read."""
    if 0 in _closed_at_start:
        return "is standard input, which is closed" if _names_fd_0(path) else None
    if not _stdin_is_the_shells:
        return None
    try:
        mine, stdin = os.fstat(fd), os.fstat(0)
    except OSError:
        return None
    if (mine.st_dev, mine.st_ino) == (stdin.st_dev, stdin.st_ino) and not stat.S_ISREG(mine.st_mode):
        return "is standard input, the shell's own command lines here; give a file"
    return None


def _hold_closed_descriptors() -> set[int]:
    """Open /dev/null on each of 0, 1, 2 that is closed; return the ones that were."""
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
            held = os.open(os.devnull, os.O_RDWR)
            if held != fd:
                os.dup2(held, fd)
                os.close(held)
    return closed


def guard_standard_streams() -> None:
    """Replace ``sys.stdout`` and ``sys.stderr`` as the module docstring says (keeping their encodings)."""
    global _closed_at_start
    closed = _hold_closed_descriptors()
    _closed_at_start = frozenset(closed)
    fallback = sys.getfilesystemencoding()
    if 0 in closed or sys.stdin is None:
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_ClosedInput()), encoding=fallback)
    old_out, old_err = sys.stdout, sys.stderr
    out_raw = _Output(1, closed_at_start=1 in closed)
    err_raw = _Diagnostics(2, closed_at_start=2 in closed)
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(out_raw), encoding=getattr(old_out, "encoding", None) or fallback,
        errors=getattr(old_out, "errors", None) or "strict", line_buffering=out_raw.isatty())
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(err_raw), encoding=getattr(old_err, "encoding", None) or fallback,
        errors="backslashreplace", line_buffering=True)
    for old in (old_out, old_err):
        if old is not None:
            try:
                old.flush()
            except (OSError, ValueError):
                pass


def move_diagnostics_off_descriptor_2() -> bool:
    """From now on the guarded ``sys.stderr`` writes to a duplicate of descriptor 2 (the same file), so
    that pointing 2 itself at /dev/null silences C++ logs only: ``gradcli shell`` imports TensorFlow in
    the background, whose import does that for seconds while the session's lines still speak. False (and
    nothing changes) when ``sys.stderr`` is not this module's on descriptor 2 (tests capture it)."""
    raw = getattr(getattr(sys.stderr, "buffer", None), "raw", None)
    if not isinstance(raw, _Diagnostics):
        return False
    if raw.fileno() != 2:  # moved already
        return True
    sys.stderr.flush()
    duplicate = os.dup(2)
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(_Diagnostics(duplicate, closed_at_start=2 in _closed_at_start)),
        encoding=sys.stderr.encoding, errors="backslashreplace", line_buffering=True)
    return True


def flush_output() -> None:
    """Push what is buffered for stdout now (a failure raises :class:`OutputWriteError`)."""
    sys.stdout.flush()


def exit_code_for(exc: OutputWriteError) -> int:
    """Say why on stderr (not for a broken pipe: the reader chose to leave) and give the exit code."""
    if isinstance(exc.error, BrokenPipeError):
        return BROKEN_PIPE_EXIT
    try:
        print(f"gradcli: error: cannot write the output: {exc}", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr is gone as well: the exit code still says it
        pass
    return WRITE_FAILURE_EXIT
