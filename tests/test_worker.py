"""SymPy's background job (gradcli.methods.worker.BoundedJob): results, errors, deadlines and cancelling, in a
thread and in a forked process (the pre-started worker or a fresh fork)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from gradcli.launcher import will_differentiate_symbolically
from gradcli.methods.worker import BoundedJob, SymbolicTimeout


def _slow():
    time.sleep(5)


def _busy():
    """Pure-Python work that never checks a cancel flag (as SymPy's simplify does not)."""
    total = 0
    while True:
        total += sum(range(1000))


def _spin(cancel):
    """A cancellable work function that never finishes on its own."""
    while True:
        cancel.check()
        time.sleep(0.01)


def test_thread_result_error_and_deadline():
    assert BoundedJob(pow, (2, 10), 5).result() == 1024
    with pytest.raises(ZeroDivisionError):  # the work function's own error, re-raised in the caller
        BoundedJob(divmod, (1, 0), 5).result()
    job = BoundedJob(_slow, (), 0.1)
    assert job.process is None and job.thread is not None
    with pytest.raises(SymbolicTimeout, match=r"^SymPy took longer than 0\.1 s$"):
        job.result()
    with pytest.raises(SymbolicTimeout):  # asked again: the same answer, no second wait
        job.result()


def test_the_time_limit_starts_when_sympy_is_ready():
    import gradcli.methods.worker as worker

    job = BoundedJob(pow, (2, 10), 5)
    assert job.result() == 1024
    assert job._ready_at is not None and job.deadline == job._ready_at + 5  # not counted from the job's start
    assert worker.IMPORT_ALLOWANCE_S >= 10  # SymPy's import under load fits


def test_thread_job_is_cancelled_through_its_flag():
    # at the deadline, while the caller is busy elsewhere: the timer sets the flag, the work stops itself
    job = BoundedJob(_spin, (), 0.2, cancellable=True)
    time.sleep(0.3)
    job.thread.join(5)
    assert not job.thread.is_alive()
    with pytest.raises(SymbolicTimeout, match=r"^SymPy took longer than 0\.2 s$"):
        job.result()
    # a caller that no longer needs the answer
    job = BoundedJob(_spin, (), 30, cancellable=True)
    job.cancel()
    job.thread.join(5)
    assert not job.thread.is_alive()
    with pytest.raises(SymbolicTimeout, match="cancelled"):
        job.result()


def test_a_thread_that_never_checks_its_flag_is_ended_at_the_deadline_and_when_cancelled():
    # In a long-lived process (a notebook) an abandoned SymPy thread would otherwise run on, holding the GIL
    job = BoundedJob(_busy, (), 0.2)
    time.sleep(0.3)  # the caller busy elsewhere: the deadline's timer ends the thread
    job.thread.join(5)
    assert not job.thread.is_alive()
    with pytest.raises(SymbolicTimeout, match=r"^SymPy took longer than 0\.2 s$"):
        job.result()
    job = BoundedJob(_busy, (), 30)
    time.sleep(0.1)
    job.cancel()
    job.thread.join(5)
    assert not job.thread.is_alive()
    with pytest.raises(SymbolicTimeout, match="cancelled"):
        job.result()


def test_forked_jobs_in_a_fresh_interpreter():
    # Forking is refused once TensorFlow is loaded (as it may be in this test process), so check the
    # process paths in a fresh interpreter.
    code = textwrap.dedent("""
        import multiprocessing, os, signal, time
        import gradcli.methods.worker as worker
        from gradcli.methods.worker import BoundedJob, SymbolicTimeout, prestart_worker
        from gradcli.methods.symbolic import differentiate
        from gradcli.expression import parse
        from gradcli.expression.points import parse_point

        def reaped(process):  # no zombie: the pid is no longer a child of ours to wait for
            try:
                os.waitpid(process.pid, os.WNOHANG)
            except ChildProcessError:
                return True
            return False

        # the pre-started worker takes the first parallel job (pickled, with its cancel flag)
        prestart_worker()
        started = worker.waiting_worker().process
        e = parse("(x1+5)*x2**2")
        job = BoundedJob(differentiate, ([e.tree], ["x1", "x2"], [(0, ("x1",)), (0, ("x2",))]), 30,
                         parallel=True, cancellable=True)
        assert job.process is started and worker.waiting_worker() is None
        formulas = job.result()[0].texts
        assert formulas == {("x1",): "x2**2", ("x2",): "2*x2*(x1 + 5)"}, formulas
        assert reaped(started)

        # an error in the pre-started worker, then in a fresh fork, comes back as itself
        prestart_worker()
        job = BoundedJob(divmod, (1, 0), 30, parallel=True)
        assert job.process is not None and worker.waiting_worker() is None
        try:
            job.result()
            raise SystemExit("no error from the pre-started worker")
        except ZeroDivisionError:
            pass
        job = BoundedJob(divmod, (1, 0), 30, parallel=True)
        assert job.process is not None
        try:
            job.result()
            raise SystemExit("no error from the fork")
        except ZeroDivisionError:
            pass

        # past its deadline (counted from SymPy's readiness: the import is not the job's time), a fork ends
        # while the caller sleeps (grad's, hessian's, derivative's and descend's jobs alike), and so does the
        # pre-started worker; result() reaps it
        for pre in (False, True):
            if pre:
                prestart_worker()
            job = BoundedJob(time.sleep, (30,), 0.3, parallel=True)
            for _ in range(300):
                if not job.process.is_alive():
                    break
                time.sleep(0.1)
            assert not job.process.is_alive()
            assert job.process.exitcode in (-signal.SIGKILL, -signal.SIGALRM), job.process.exitcode
            try:
                job.result()
                raise SystemExit("no timeout")
            except SymbolicTimeout as exc:
                assert str(exc) == "SymPy took longer than 0.3 s", exc
            assert reaped(job.process), "a zombie"

        # an answer that came in time is kept, even when it is read after the deadline
        job = BoundedJob(pow, (2, 10), 0.3, parallel=True)
        time.sleep(0.8)
        assert job.result() == 1024

        # cancel(): killed and reaped at once
        job = BoundedJob(time.sleep, (30,), 30, parallel=True)
        job.cancel()
        assert reaped(job.process) and job.process.exitcode == -signal.SIGKILL
        try:
            job.result()
            raise SystemExit("no error after cancel")
        except SymbolicTimeout:
            pass
        assert multiprocessing.active_children() == []
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("argv, expected", [
    (["grad", "x", "--at", "x=1"], True),
    (["grad", "x", "--at", "x=1", "--method", "symbolic,fd"], True),
    (["grad", "x", "--at", "x=1", "-m", "all"], True),
    (["grad", "x", "--at", "x=1", "--method", "tape,fd"], False),
    (["grad", "x", "--at", "x=1", "--method=fd"], False),
    (["grad", "--help"], False),
    (["grad", "x", "--at", "x=1", "--show-code"], False),
    (["hessian", "x", "--at", "x=1"], False),
    ([], False),
])
def test_worker_is_prestarted_only_when_sympy_will_be_needed(argv, expected):
    assert will_differentiate_symbolically(argv) is expected
