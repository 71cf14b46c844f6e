"""SymPy's background worker: results, errors and deadlines, in a thread and in a forked process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from gradcli.entry import will_differentiate_symbolically
from gradcli.worker import SymbolicTimeout, start_bounded


def _slow():
    time.sleep(5)


def test_thread_result_error_and_deadline():
    assert start_bounded(pow, 5, 2, 10).result() == 1024
    with pytest.raises(ZeroDivisionError):
        start_bounded(divmod, 5, 1, 0).result()
    with pytest.raises(SymbolicTimeout):
        start_bounded(_slow, 0.1).result()


def test_forked_worker_in_a_fresh_interpreter():
    # Forking is refused once TensorFlow is loaded (as it may be in this test process), so check the
    # process paths in a fresh interpreter.
    code = textwrap.dedent("""
        import time
        from gradcli.worker import SymbolicTimeout, prestart_worker, start_bounded
        from gradcli.gradient import symbolic_gradients
        from gradcli.expr import parse
        from gradcli.points import parse_point

        prestart_worker()  # the pre-started worker takes the first job (pickled)
        e = parse("(x1+5)*x2**2")
        p = parse_point("x1=2,x2=3")
        pending = start_bounded(symbolic_gradients, 30, [e.tree], dict(p.exact), list(p.names), ["x1", "x2"],
                                parallel=True)
        assert pending.process is not None
        value, formulas, grads = pending.result()[0]
        assert (value, grads) == (63.0, {"x1": 9.0, "x2": 42.0}), grads
        assert formulas == {"x1": "x2**2", "x2": "2*x2*(x1 + 5)"}

        failing = start_bounded(divmod, 30, 1, 0, parallel=True)  # a fresh fork
        assert failing.process is not None
        try:
            failing.result()
            raise SystemExit("no error")
        except ZeroDivisionError:
            pass

        slow = start_bounded(time.sleep, 0.2, 30, parallel=True)
        try:
            slow.result()
            raise SystemExit("no timeout")
        except SymbolicTimeout:
            pass
        slow.process.join(5)
        assert not slow.process.is_alive()  # killed at the deadline, not left running
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
