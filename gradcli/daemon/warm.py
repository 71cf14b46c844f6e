"""What the daemon does once before it serves, so that every child it forks inherits it: the modules every
command needs imported, every command made, a few requests run (their output discarded), SymPy's fork
server started (by exec, before TensorFlow), and TensorFlow imported without running an op.
"""

from __future__ import annotations

import os
import sys

WARM_MODULES = [
    "gradcli.cli", "gradcli.commands.common", "gradcli.compute.batch.grad", "gradcli.compute.batch.points",
    "gradcli.expression.sources", "gradcli.render.detail", "gradcli.compute.batch.hessian",
    "gradcli.compute.batch.derivative", "gradcli.compute.check", "gradcli.compute.steps", "gradcli.methods.fd",
    "gradcli.methods.tape", "gradcli.methods.symbolic", "gradcli.methods.complex_step", "gradcli.render",
    "gradcli.commands.shell_loop", "gradcli.commands.shell_sympy_warm", "gradcli.expression.rules",
    "gradcli.render.common", "gradcli.render.layout", "gradcli.render.grad", "gradcli.render.hessian",
    "gradcli.render.derivative", "gradcli.render.descend", "gradcli.render.batch", "gradcli.render.sinks",
    "gradcli.render.steps",
    # else imported anew by every call (its SymPy worker, rich's markup, Typer's decorators): ~25 ms each
    "multiprocessing.popen_forkserver", "rich._emoji_codes", "typer._click.decorators",
    # imported on first use by one command or another: each is compiled anew by every call where no .pyc
    # is written (PYTHONDONTWRITEBYTECODE)
    "gradcli.compute.work", "gradcli.compute.value", "gradcli.compute.batch.value", "gradcli.render.value",
    "rich.columns", "gradcli.compute.check_points",
    "gradcli.compute.check_values", "gradcli.compute.steps_eval", "gradcli.render.latex",
    "gradcli.render.steps_latex", "gradcli.compute.descend.loop", "gradcli.compute.descend.end_basins",
    "gradcli.compute.descend.summary", "gradcli.compute.descend.stationary", "gradcli.compute.descend.advice",
    "typer._click._textwrap"]
# Run by SymPy's fork server after its own preloads: the jobs of a warm call, once (see that module).
FORK_SERVER_WARM_UP = "gradcli.daemon.sympy_warm"


def thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:  # pragma: no cover - not Linux
        return 1


def warm_up() -> int:
    """Import what every command needs; return the thread count forks are allowed at."""
    from gradcli.commands import shell_sympy

    if FORK_SERVER_WARM_UP not in shell_sympy.PRELOAD:  # the shell's list, read as its server starts
        shell_sympy.PRELOAD = [*shell_sympy.PRELOAD, FORK_SERVER_WARM_UP]
    shell_sympy.start_fork_server()  # by exec: before TensorFlow, and safe whatever is loaded later
    import importlib

    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # a module renamed by a later version: only warmth is lost
            pass
    from gradcli import launcher
    from gradcli.cli import app

    group = launcher.click_command(app)
    for name in group.list_commands(None):  # every command made now, not in each call's child
        group.get_command(None, name)
    run_warm_requests()
    # TensorFlow imported as gradcli.methods.tf_runtime.load_tensorflow does, less its first op (which
    # starts the runtime's threads: each child runs it for itself).
    from gradcli.methods import tf_runtime

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ.setdefault("ABSL_MIN_LOG_LEVEL", "3")
    tf_runtime.import_tensorflow_unstarted()
    return thread_count()


# Requests run once in the daemon before it serves, output discarded, so that what a command pays on first
# use is paid here once and inherited by every fork: Typer's parse and conversions, the rich table's
# measuring and drawing (its cell widths), NumPy's fd and complex-step paths, the JSON writer, check's and
# steps' own paths. No tape: TensorFlow is blocked while they run (its ops would start the threads that make
# forking unsafe); the tape's first use is paid by the spare (child.warm_tensorflow). Their SymPy jobs run
# in threads of the daemon, joined before it serves. Expressions other than the common examples': what is
# warmed is the code, not a cache of anyone's result.
WARM_REQUESTS = [
    ["grad", "x**3*cos(y) + exp(x)/y", "--at", "x=1.5,y=2", "-m", "symbolic,fd,complex"],
    ["grad", "x**3 - y", "--at", "x=2,y=1", "-m", "fd", "-f", "json"],
    ["hessian", "x**3*y + sin(x*y)", "--at", "x=1,y=2", "-m", "symbolic,fd"],
    ["derivative", "sin(x)*exp(x)", "--at", "x=0.5", "--order", "3", "-m", "symbolic,fd"],
    ["eval", "x**3 + sin(y)", "--at", "x=1,y=2"],
    ["check", "x**3", "--expect", "x=3*x**2", "--at", "x=1.5"],
]


def run_warm_requests() -> None:
    """:data:`WARM_REQUESTS`, each through the console script's own path, with stdout and stderr on
    /dev/null, warnings as they were afterwards (a warning shown once per place shows again in a call), and
    every thread they started ended. A request that fails leaves only less warmth."""
    import threading
    import warnings

    from gradcli import launcher

    if "tensorflow" in sys.modules:  # imported already: it cannot be kept from running an op
        return
    saved = sys.stdout, sys.stderr
    sys.modules["tensorflow"] = None  # an import of it fails: no op can run here
    try:
        with open(os.devnull, "w", encoding="utf-8") as devnull, warnings.catch_warnings():
            sys.stdout = sys.stderr = devnull
            for argv in WARM_REQUESTS:
                try:
                    launcher.run_command(list(argv))
                except BaseException:  # noqa: BLE001 - a request that fails costs warmth only
                    pass
    finally:
        sys.stdout, sys.stderr = saved
        del sys.modules["tensorflow"]
    for thread in threading.enumerate():  # the SymPy jobs' threads and timers (done: each was collected)
        if thread is not threading.main_thread():
            thread.join(timeout=30)
