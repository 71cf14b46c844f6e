"""TensorFlow itself: imported only here, quietly, and only when a tape is needed (it takes seconds to load);
and the TensorFlow backend of the expression evaluator (every op a float tensor).

:func:`load_tensorflow` silences its start-up log lines (they go to file descriptor 2 from C++,
before ``TF_CPP_MIN_LOG_LEVEL`` is even read by some of them), so they never reach the user.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings

from gradcli.expression.evaluate import Backend
from gradcli.expression.functions import tf_functions

_tf = None
_loading = threading.Lock()  # a second caller (gradcli shell imports it in a thread) waits for the first


@contextlib.contextmanager
def stderr_silenced():
    """Point file descriptor 2 at /dev/null (C++ logging ignores sys.stderr)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def load_tensorflow():
    """Import TensorFlow once, quietly, and return the module."""
    if _tf is not None:
        return _tf
    with _loading:
        return _tf if _tf is not None else _import_tensorflow()


# TensorFlow's logging and oneDNN settings, read while it is imported and its runtime starts (the levels are
# kept from then on); set only where the user has not, and taken out of os.environ again afterwards, so that
# a program calling gradcli's API finds its environment as it was.
QUIET_TENSORFLOW = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0", "ABSL_MIN_LOG_LEVEL": "3"}


def _import_tensorflow():
    ours = [name for name in QUIET_TENSORFLOW if name not in os.environ]
    os.environ.update({name: QUIET_TENSORFLOW[name] for name in ours})
    try:
        return _import_quietly()
    finally:
        for name in ours:
            os.environ.pop(name, None)


def _import_quietly():
    global _tf
    with stderr_silenced():
        tf = import_tensorflow_unstarted()
        # The first op initialises the runtime, which may log too: do it while silenced.
        tf.constant(0.0) + 1.0
    _tf = tf
    return tf


def import_tensorflow_unstarted():
    """Import TensorFlow quietly (its Python and absl loggers at ERROR; C++ logging as the environment's
    TF_CPP_MIN_LOG_LEVEL says) without running an op: its runtime (thread pools, eager context) not started,
    so that a process may still fork (the daemon) or set its thread pools (a Dask worker)."""
    with stderr_silenced(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")
        try:
            import absl.logging

            absl.logging.set_verbosity(absl.logging.ERROR)
        except ImportError:  # pragma: no cover - absl comes with TensorFlow
            pass
    return tf


def runtime_started() -> bool:
    """Whether this process has loaded TensorFlow and run its first op (:func:`load_tensorflow`)."""
    return _tf is not None


_TF_BACKENDS: dict[str, Backend] = {}


def _custom_gradient_call(tf, params: tuple, body, derivatives: list, args: list):
    """A custom rule's call on the tape: the body's value, and the rule's own derivatives as its gradient
    (``tf.custom_gradient``); see :attr:`gradcli.expression.evaluate.Backend.rule_call`."""
    def unbroadcast(g, x):
        # a scalar argument of a batch's [P] call: its gradient is the sum over the points
        return tf.reduce_sum(g) if x.shape.rank == 0 and g.shape.rank else g

    @tf.custom_gradient
    def call(*xs):
        inner = dict(zip(params, xs))

        def gradient(upstream):
            return [unbroadcast(upstream * d(inner), x) for d, x in zip(derivatives, xs)]
        return body(inner), gradient

    # tensors, not tf.Variables, go in: the rule's derivative is then the only way through the call
    return lambda env: call(*(tf.convert_to_tensor(a(env)) for a in args))


def tf_backend(dtype: str) -> Backend:
    """TensorFlow ops in ``dtype``; constants are float tensors (an int32 constant has no gradient)."""
    if dtype in _TF_BACKENDS:
        return _TF_BACKENDS[dtype]
    tf = load_tensorflow()
    tf_dtype = tf.as_dtype(dtype)

    def const(v: float):
        return tf.constant(v, dtype=tf_dtype)

    def int_pow(x, n: int):
        # x*x*...*x: exact derivatives of every order (tf.pow's gradient n*x**(n-1) is NaN at x = 0
        # once the exponent reaches -1, e.g. the third derivative of x**2).
        if n == 0:
            return tf.ones_like(x)
        out = x
        for _ in range(n - 1):
            out = out * x
        return out

    backend = Backend(
        name=f"tensorflow-{dtype}",
        const=const,
        pow=tf.pow,
        div=tf.math.divide,
        int_pow=int_pow,
        functions=tf_functions(tf, const),
        rule_call=lambda params, body, derivatives, args: _custom_gradient_call(tf, params, body, derivatives,
                                                                                args),
    )
    _TF_BACKENDS[dtype] = backend
    return backend

