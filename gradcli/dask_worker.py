"""What a Dask worker process does before it computes anything of gradcli's, shared by the DataFrame
functions (gradcli.dask) and the CLI's engine (gradcli.dask_engine): TensorFlow's thread pools capped to the
worker's share of the machine, SymPy's bounded job in a thread where the worker may not fork, and a
per-process cache of prepared computations (the oldest dropped first).

The standard library only at the top (imported by the client too, which may have no Dask).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Hashable

# Requests kept prepared per process (a long-lived client or worker sees many): the oldest goes first.
PREPARED_KEPT = 32

_CACHE: dict[Hashable, object] = {}
_BUILDING = threading.Lock()


def cached(key: Hashable, build: Callable[[], object]) -> object:
    """This process's object for ``key``, built by ``build`` on first use (one build at a time)."""
    found = _CACHE.get(key)
    if found is not None:
        return found
    with _BUILDING:
        if key not in _CACHE:
            while len(_CACHE) >= PREPARED_KEPT:
                del _CACHE[next(iter(_CACHE))]
            _CACHE[key] = build()
        return _CACHE[key]


def worker_threads() -> int | None:
    """The threads of the ``distributed`` worker this runs in (None: not in one)."""
    if "distributed" not in sys.modules:
        return None
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return None
    state = getattr(worker, "state", worker)
    return int(getattr(state, "nthreads", None) or getattr(worker, "nthreads", 1) or 1)


def cap_tensorflow_threads(threads: int) -> bool:
    """Cap TensorFlow's intra- and inter-op thread pools to ``threads`` before it runs anything in this
    process; False where TensorFlow has already started (its pools are fixed then)."""
    from gradcli.methods import tf_runtime

    if tf_runtime.runtime_started():
        return False
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    tf = tf_runtime.import_tensorflow_unstarted()
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # the runtime was initialised by someone else already
        return False
    tf_runtime.load_tensorflow()
    return True


def prepare_worker(methods: str | list | None) -> None:
    """In a ``distributed`` worker about to run the tape: TensorFlow's pools capped to its threads."""
    threads = worker_threads()
    if threads is not None and "tape" in (methods or ""):
        cap_tensorflow_threads(threads)


@contextlib.contextmanager
def sympy_in_a_thread():
    """A Dask worker is a daemonic process (multiprocessing refuses it children) running threads of its own
    (a fork would copy their locks held): there SymPy's bounded job runs in a thread, which its deadline
    interrupts (gradcli.methods.worker.BoundedJob), instead of a forked process."""
    from gradcli.methods.worker import jobs_in_threads

    if not multiprocessing.current_process().daemon:
        yield
        return
    with jobs_in_threads():  # this context's jobs only: the worker's other threads keep their own
        yield
