"""Shared test helpers: a CliRunner that keeps stderr apart, a JSON-invoking shortcut, and the end of every
SymPy thread a test leaves behind."""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading

import pytest
from hypothesis import settings
from typer.testing import CliRunner

from gradcli.methods.worker import AbandonedJob, in_an_import

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# The suite (and CI) draws the same examples every run, so a red run is a change, not luck; every case a
# search ever found is pinned with @example where it was found. GRADCLI_HYPOTHESIS=explore searches afresh.
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("GRADCLI_HYPOTHESIS", "repeatable"))


@pytest.fixture(scope="session")
def runner() -> CliRunner:
    # Typer >= 0.12's CliRunner keeps stdout and stderr apart (result.stdout / result.stderr).
    return CliRunner()


@pytest.fixture(scope="session")
def invoke(runner):
    from gradcli.cli import app

    def run(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=False)

    return run


@pytest.fixture(scope="session")
def invoke_json(invoke):
    def run(*args: str, code: int = 0):
        result = invoke(*args, "--format", "json")
        assert result.exit_code == code, (result.stdout, result.stderr)
        return json.loads(result.stdout)

    return run


def stop_abandoned_sympy_threads(wait_s: float = 0.5) -> None:
    """End every ``gradcli-sympy`` thread still running (waiting at most ``wait_s`` for them in all).

    In process, with TensorFlow loaded, a SymPy job runs in a daemon thread (gradcli.methods.worker.BoundedJob),
    which the job ends at its deadline or when cancelled. A test can end before either (a job started and
    left, a long deadline): such a thread would simplify on through later tests, taking the GIL each time the
    main thread released it for a NumPy or TensorFlow call (check's 10th derivative of
    sin(cos(tan(exp(x*sin(x))))) took 113 s of CPU against the tests' own 60 s by test_daemon, and later tests
    ran several times slower). Its answer can no longer reach anyone once its test has ended, so the job's own
    exception is raised in it, at its next bytecode (one inside a C call, such as a sleep, ends when the call
    returns: it is not waited for)."""
    frames = sys._current_frames()
    # one in the middle of an import is left for the next test's end: an exception there would leave the
    # module half-initialised, and the next import of it would run it again (new classes, new caches)
    abandoned = [t for t in threading.enumerate()
                 if t.name == "gradcli-sympy" and t.is_alive() and not in_an_import(frames.get(t.ident))]
    for thread in abandoned:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(AbandonedJob))
    for thread in abandoned:
        thread.join(wait_s / len(abandoned))


@pytest.fixture(autouse=True)
def no_sympy_thread_outlives_its_test():
    yield
    stop_abandoned_sympy_threads()


@pytest.hookimpl(trylast=True)  # after pytest's own unraisable-exception hook is installed: it wraps that one
def pytest_configure(config):
    """An AbandonedJob that lands in a callback run by the stopped thread (a gc callback of Hypothesis's:
    "Exception ignored in ...") says nothing about the test then running: it is not reported. The thread
    is stopped at the next test's end."""
    reporting = sys.unraisablehook

    def unless_a_stopped_job(unraisable):
        if unraisable.exc_type is not AbandonedJob:
            reporting(unraisable)

    sys.unraisablehook = unless_a_stopped_job
