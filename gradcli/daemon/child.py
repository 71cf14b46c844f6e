"""A daemon's child: one call, run in a process forked from the warm daemon (see :mod:`gradcli.daemon.server`),
either when the call comes (:func:`serve_call`) or ahead of it, as the daemon's spare (:func:`wait_as_spare`).

The child takes the caller's descriptors on 0, 1 and 2, its directory and its environment, and runs the
command as the console script would. It dies with the daemon (PR_SET_PDEATHSIG): a daemon killed outright
closes the caller's connection, the caller says so and exits, and a child left running would go on writing
to the caller's terminal or pipe after that.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from dataclasses import asdict, dataclass

from gradcli.daemon import protocol, world


PR_SET_PDEATHSIG = 1


def _load_prctl():
    """libc's prctl, looked up in the daemon (ctypes is loaded there already, by TensorFlow): the child
    only calls it. None where there is none (not Linux): children then outlive a killed daemon."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError, ImportError):  # pragma: no cover - not Linux
        return None


_prctl = _load_prctl()


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL when the daemon dies; the daemon may have died between the fork and this call already."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


@dataclass
class Call:
    """What a call runs with: the caller's argv, directory (by name, for messages), environment and world
    (:mod:`gradcli.daemon.world`, checked by the daemon)."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    world: dict

    def message(self) -> dict:
        return asdict(self)


def serve_call(parent_pid: int, raw_fds: list[int], close: list, call: Call, fds: list[int],
               report=None) -> None:
    """In the forked child: ``fds`` (the caller's 0, 1, 2 and its directory) put in place, the daemon's own descriptors
    (``raw_fds``, and ``close``: its sockets and selector) closed, and the command
    run. Never returns: the exit code is the process's.

    ``report`` (the caller's connection, a socket, or None) is told the exit code as soon as the command
    and its exit handlers are done and every descriptor of the caller's files is closed here: the caller
    exits then, not after this process's teardown (unmapping a TensorFlow-sized address space: 10-20 ms).
    The daemon still sends the code once it has reaped the process (for a child that dies before)."""
    code = 1
    callers_files: set[tuple[int, int]] = set()
    try:
        die_with_parent(parent_pid)
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        for fd, target in zip(fds, (0, 1, 2)):
            os.dup2(fd, target)
        os.fchdir(fds[3])
        for fd in [*fds, *raw_fds]:
            if fd > 2:
                os.close(fd)
        for thing in close:
            thing.close()
        callers_files = _identities((0, 1, 2))
        world.enter(call.world)
        code = run_as_cold(call.argv, call.env)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # an error of the daemon's own: said as a cold run says an internal error
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        code = code & 0xFF if isinstance(code, int) else 1  # as the exit status carries it
        if report is not None:
            _report_exit(report, code, callers_files)
        os._exit(code)


def _identities(fds) -> set[tuple[int, int]]:
    identities = set()
    for fd in fds:
        try:
            info = os.fstat(fd)
        except OSError:
            continue
        identities.add((info.st_dev, info.st_ino))
    return identities


def _report_exit(report, code: int, callers_files: set[tuple[int, int]]) -> None:
    """Every descriptor of this process on one of the caller's files (0-2 and their duplicates: the guarded
    streams', the interrupt handler's) pointed at /dev/null, so that nothing of the caller's (a pipe's
    reader waiting for its end, a terminal) stays open here; then the exit code, on ``report``. Nothing is
    said when a descriptor cannot be checked (no /proc): the daemon reports once the process is reaped."""
    try:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        descriptors = [int(name) for name in os.listdir("/proc/self/fd")]
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in descriptors:
            if fd in (devnull, report.fileno()):
                continue
            try:
                info = os.fstat(fd)
            except OSError:  # the listing's own descriptor, closed since
                continue
            if (info.st_dev, info.st_ino) in callers_files:
                os.dup2(devnull, fd)
        report.settimeout(1.0)
        protocol.send(report, {"exit": code})
    except (OSError, ValueError, protocol.ProtocolError):
        pass


def wait_as_spare(parent_pid: int, raw_fds: list[int], close: list, control) -> None:
    """In a child forked ahead of its call (the daemon keeps one such spare): the daemon's descriptors closed,
    TensorFlow's runtime started (the thread pools and eager context a call would otherwise start on its
    first op), then the call the daemon hands over on ``control`` (argv, directory, environment, the
    caller's 0, 1 and 2, and the caller's connection to report the exit code on) run as :func:`serve_call`
    runs it. ``control`` closing first (the daemon stopped or
    died) ends the spare. Never returns."""
    try:
        die_with_parent(parent_pid)
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        for fd in raw_fds:
            if fd > 2:
                os.close(fd)
        for thing in close:
            thing.close()
        start_tensorflow()
        warm_tensorflow(control)
        fds: list[int] = []
        call = Call(**protocol.receive(control, fds, max_fds=5))
        control.close()
        import socket

        report = socket.socket(fileno=fds.pop()) if len(fds) == 5 else None
    except BaseException:  # the daemon went away, or its message was not a call: nothing to run
        os._exit(0)
    serve_call(parent_pid, [], [], call, fds, report)


def start_tensorflow() -> None:
    """TensorFlow's runtime, started by one small tape: what a call's first op costs, paid before the call."""
    from gradcli.methods.tf_runtime import load_tensorflow

    tf = load_tensorflow()
    x = tf.Variable(1.0, dtype=tf.float64)
    with tf.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)


WARM_AFTER_S = 0.25


def warm_tensorflow(control) -> None:
    """The tape's first use, paid in the spare before its call: each op TensorFlow runs the first time in a
    process costs it a few milliseconds (its kernel is looked up and made, its gradient function found):
    20-30 ms of a warm call's tape. Small steps, the common functions and each tape, in float64 and float32,
    begun only once no call has come for :data:`WARM_AFTER_S`: calls that follow one another at once (a
    script's loop) would each wait for a step (10-50 ms) to gain less. A call that comes meanwhile
    (``control`` readable) stops the warming, so it waits one step at most.
    Nothing of it reaches a call's output: TensorFlow keeps kernels, not results (no random op, no Keras,
    no cached tf.function: the Hessians' rows mode)."""
    import select
    import warnings

    if select.select([control], [], [], WARM_AFTER_S)[0]:
        return
    # A warning shown once per place, if warming raised it, would be missing from the call: none is kept.
    with warnings.catch_warnings():
        for step in _tensorflow_steps():
            if select.select([control], [], [], 0)[0]:
                return
            try:
                step()
            except Exception:  # noqa: BLE001 - warmth lost, nothing else
                pass


def _tensorflow_steps():
    import numpy as np

    from gradcli.expression.parser import parse
    from gradcli.methods import tape

    def at(**values):
        return {name: np.array([value]) for name, value in values.items()}

    yield lambda: tape.tape_gradients([parse("x**3").tree], at(x=1.5), ["x"])
    mixed = parse("x**3*cos(y) + exp(x)/y - log(x) + sqrt(y)").tree
    yield lambda: tape.tape_gradients([mixed], at(x=1.5, y=2.0), ["x", "y"])
    yield lambda: tape.tape_gradients([parse("sin(x)*tanh(y) - tan(x)/y + abs(x - y) + x**0.5").tree],
                                      at(x=0.7, y=1.3), ["x", "y"])
    yield lambda: tape.tape_gradients([parse("x**3").tree], at(x=1.5), ["x"], dtype="float32")
    yield lambda: tape.tape_hessians(parse("x**3*y + sin(x*y)").tree, at(x=1.0, y=2.0), ["x", "y"], mode="rows")
    yield lambda: tape.tape_derivatives(parse("sin(x)*exp(x)").tree, at(x=0.5), "x", 3)


# Commands whose run hands SymPy a job (grad, hessian and derivative at a point: the exact values, whatever
# the methods): their worker is asked of the fork server before anything else (~15 ms to start).
SYMPY_COMMANDS = ("grad", "hessian", "derivative", "descend", "check", "steps", "trace", "jvp", "hvp", "propagate", "implicit")


def takes_a_sympy_job(argv: list[str]) -> bool:
    """A cheap look, as the launcher's: a worker started for a call that needs none is only killed at its end."""
    return bool(argv) and argv[0] in SYMPY_COMMANDS and not any(a in ("-h", "--help", "--show-code") for a in argv)


def run_as_cold(argv: list[str], env: dict[str, str]) -> int:
    """In a forked child, in the caller's directory and world: take the caller's environment and do what
    the console script's main does; return the exit code after Python's exit handlers, as a cold run's."""
    for name in [n for n in os.environ if n in protocol.ENV_NAMES or n.startswith(protocol.ENV_PREFIXES)]:
        del os.environ[name]
    os.environ.update(env)
    import tempfile

    tempfile.tempdir = None
    sys.argv = ["gradcli", *argv]
    # multiprocessing's fork server was started by the daemon, whose child this is not: waitpid on it
    # would fail here. The daemon keeps it alive; this process only connects to it.
    from multiprocessing import forkserver

    forkserver._forkserver.ensure_running = lambda: None
    from gradcli import interrupts, launcher, streams
    from gradcli.commands import shell_sympy

    if argv[:1] and argv[0] in launcher.commands() and argv[0] != "shell":  # (every SYMPY_COMMANDS one among them)
        shell_sympy.prepare_worker()  # a killable SymPy process, as the cold run's pre-TensorFlow fork
        if takes_a_sympy_job(argv):  # started first: it forks and starts while the command parses
            from gradcli.methods.worker import prestart_worker

            prestart_worker()
    streams.guard_standard_streams()
    interrupts.install()
    if argv[:1] == ["shell"] and sys.stdin.isatty():
        interrupts.cancel_with_keyboard_interrupt()
    try:
        code = launcher.run_command(argv)
        streams.flush_output()
    except streams.OutputWriteError as exc:
        code = streams.exit_code_for(exc)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    atexit._run_exitfuncs()  # as at a cold run's exit (the daemon registers none of its own)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code
