"""``--engine dask``: a request's chunks of points computed on a Dask cluster, their records written here, in
the input's order, by the format's own writer.

The points are read here, by gradcli's own readers (the same checks, messages, line numbers and pass-through
columns as the local engine), a chunk (``--batch-size`` points) at a time; each chunk is a task. A worker
process prepares the request once (parsed, SymPy's derivatives taken, the batch core with its traced
TensorFlow functions; TensorFlow's pools capped to the worker's threads) and computes every chunk it is
given with it, returning the chunk's records (or, for ``-f json``/``-f jsonl``, their lines) and what the
chunk told the run: its notes, largest errors, the points whose fd steps adapted, the exact column's
counts. Here they are merged chunk by chunk, in the input's order, into the run's own core, so that the
summary, the warnings and the notes are those the local engine prints. A few chunks per worker are in flight
at a time (:data:`IN_FLIGHT_PER_WORKER`): memory stays bounded by the chunk size, whatever the input's.

A worker that dies mid-chunk (killed, out of memory) returns nothing for it: the scheduler gives the chunk to
another worker (up to ``distributed.scheduler.allowed-failures`` times), and its records are written once,
in their place. The cluster: an embedded ``distributed.LocalCluster`` (``--workers`` processes, one thread
each; default: the core count), or an existing one at ``--scheduler`` (or ``DASK_SCHEDULER_ADDRESS``).

The standard library only at the top: Dask is imported when the engine starts.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from dataclasses import fields, replace

from gradcli.dask_worker import cached, prepare_worker, sympy_in_a_thread
from gradcli.errors import ComputeError, UsageError

INSTALL = 'pip install "gradcli[dask]"'
# Chunks submitted ahead per worker: enough to keep every worker busy while this process writes.
IN_FLIGHT_PER_WORKER = 3
SCHEDULER_VARIABLE = "DASK_SCHEDULER_ADDRESS"
# Tests: "DIR:INDEX" makes the first attempt of chunk INDEX end its worker process (os._exit), once.
TEST_EXIT_VARIABLE = "GRADCLI_TEST_DASK_EXIT"


def core_count() -> int:
    """The cores this process may run on (the default of --workers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _dask():
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--engine dask needs Dask's distributed scheduler, which is not installed: {INSTALL}"
                         ) from None
    return distributed


@contextlib.contextmanager
def cluster_for(request):
    """A ``distributed.Client``: on ``request.scheduler`` (or DASK_SCHEDULER_ADDRESS), else on a
    LocalCluster of ``request.workers`` processes started for the run and closed after it."""
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")  # a restarted worker is no user's news
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    distributed = _dask()
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    address = request.scheduler or os.environ.get(SCHEDULER_VARIABLE) or None
    if address is not None and request.workers is None:
        try:
            client = distributed.Client(address, timeout="20s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ComputeError(f"--scheduler {address}: no Dask scheduler answered ({exc})") from None
        with client:
            yield client
        return
    workers = request.workers or core_count()
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, worker_dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def sent_request(request):
    """The request as each task carries it: points given as columns left behind (they travel as chunks)."""
    points = request.points
    if points is not None and not isinstance(points, str):
        request = replace(request, points=type(points)({}))
    return request


def request_key(request) -> tuple:
    """A worker's cache key for ``request``: its class and every option's value."""
    return (type(request).__name__, tuple((f.name, repr(getattr(request, f.name))) for f in fields(request)))


class Distributed:
    """The run's own core (here: the header, the checks, the merged notes and counts) with its chunks
    computed by the cluster's workers: what :func:`gradcli.compute.batch.engine.run_batch` drives."""

    def __init__(self, client, request, core, *, lines: bool):
        self.client = client
        self.local = core
        self.request = sent_request(request)
        self.key = request_key(self.request)
        self.lines = lines
        self.origins: set[int] = set()
        workers = len(client.scheduler_info().get("workers", {})) or 1
        self.window = IN_FLIGHT_PER_WORKER * workers

    def __getattr__(self, name):
        return getattr(self.local, name)

    def check(self, pending) -> None:
        """Each chunk was checked by the local core before it was sent (:meth:`chunks`)."""

    def chunks(self, chunks):
        """``chunks`` (gradcli.compute.batch.points.PointChunks) as tasks, in order, a window of them in
        flight (with its ``total`` and ``seconds``, for a progress bar)."""
        return _Submitted(self, chunks)

    def compute(self, pending):
        """The chunk's records, once its task is done; what it told the run merged into the local core."""
        from gradcli.compute.batch.engine import RecordBatch

        try:
            size, issues, records, lines, told = pending.future.result()
        except Exception as exc:
            if type(exc).__name__ == "KilledWorker":
                raise ComputeError(f"the Dask workers computing points {pending.first}..{pending.last} died "
                                   "each time they were given them (out of memory?): use a smaller --batch-size "
                                   "or more memory per worker") from None
            raise
        finally:
            pending.future.release()
        merge(self.local, told, self.origins)
        return RecordBatch(size, issues, lambda: records, None if lines is None else (lambda: lines))


class _Pending:
    def __init__(self, future, chunk):
        self.future = future
        self.size = len(chunk)
        lines = [x for x in chunk.lines if x is not None]
        self.first, self.last = (lines[0], lines[-1]) if lines else (1, self.size)

    def __len__(self) -> int:
        return self.size


class _Submitted:
    def __init__(self, engine: Distributed, chunks):
        self.engine = engine
        self.source = chunks
        self.total = getattr(chunks, "total", None)
        self.seconds = getattr(chunks, "seconds", None)

    def __iter__(self):
        """The pending chunks in order. A chunk the reader or the local check refuses ends the run where the
        local engine would: after the records of every chunk before it."""
        engine, pending, failure = self.engine, deque(), None
        source, index = iter(self.source), 0
        while True:
            while failure is None and len(pending) < engine.window:
                try:
                    chunk = next(source)
                    engine.local.check(chunk)
                except StopIteration:
                    break
                except BaseException as exc:  # raised in its place, below
                    failure = exc
                    break
                future = engine.client.submit(compute_chunk, engine.key, engine.request, chunk, index,
                                              engine.lines, pure=False)
                pending.append(_Pending(future, chunk))
                index += 1
            if not pending:
                break
            yield pending.popleft()
        if failure is not None:
            raise failure


# ---------------------------------------------------------------------------------------------
# in a worker
# ---------------------------------------------------------------------------------------------
EXACT_SLOTS = {"_exact_note_at": "_exact_values", "_value_note_at": "_exact_f_values"}


class WorkerCore:
    """A request prepared in a worker process: its rules, its core started (SymPy's derivatives taken)."""

    def __init__(self, request):
        import threading

        from gradcli.expression.rules import rules_in_force
        from gradcli.expression.tree import active_rules

        prepare_worker(getattr(request, "method", ""))
        with rules_in_force(request.rule, time_limit=request.symbolic_timeout):
            self.rules = tuple(active_rules().values())
            core = request.make_core()
            with sympy_in_a_thread():
                core.start()
                core.header()
        self.core = core
        self.base_notes = list(core.notes)
        self.lock = threading.Lock()

    def compute(self, chunk, lines: bool):
        from gradcli.expression.tree import active_rules, set_active_rules

        with self.lock:
            saved = tuple(active_rules().values())
            set_active_rules(self.rules)
            try:
                told_before = fresh(self.core, self.base_notes)
                batch = self.core.compute(chunk)
                text = batch.lines() if lines else None
                records = None if lines else batch.records()
                return batch.size, batch.issues, records, text, told(self.core, told_before)
            finally:
                set_active_rules(saved)


def fresh(core, base_notes: list[str]) -> int:
    """The core as at the start of a run (its notes, errors, counts): a chunk tells only its own."""
    core.notes[:] = base_notes
    core.largest_error = {}
    if hasattr(core, "adapted"):
        core.adapted = {}
    if hasattr(core, "origins"):
        core.origins = {}
    for slot, name in EXACT_SLOTS.items():
        core.__dict__.pop(slot, None)
        exact = core.__dict__.get(name)
        if exact is not None:
            exact.exact = exact.left = exact.failed = 0
            exact.first_left = None
    return len(base_notes)


def told(core, start: int) -> dict:
    """What the chunk told the run: its notes (the exact column's and the tape's first wrong node's marked),
    its largest errors, its adapted fd steps, the exact column's counts."""
    notes = core.notes[start:]
    exact = {}
    for slot, name in EXACT_SLOTS.items():
        if slot in core.__dict__:
            e = core.__dict__[name]
            exact[core.__dict__[slot] - start] = (slot, name, e.exact, e.left, e.failed, e.first_left, e.seconds)
    origins = {}
    exprs = getattr(core, "exprs", None)
    for i, bad in getattr(core, "origins", {}).items():
        if bad is not None and exprs is not None:
            for k, note in enumerate(notes):
                if note.startswith(exprs[i].text) and note.endswith(f": {bad.pointer}"):
                    origins[k] = i
    return {"notes": notes, "exact": exact, "origins": origins, "largest_error": dict(core.largest_error),
            "adapted": dict(getattr(core, "adapted", {}))}


def merge(core, said: dict, origins: set[int]) -> None:
    """A chunk's :func:`told` merged into the run's core, as the local engine's core would have told it."""
    from gradcli.compute.batch.engine import note_error

    for method, err in said["largest_error"].items():
        note_error(core, method, err)
    for code, count in said["adapted"].items():
        core.adapted[code] = core.adapted.get(code, 0) + count
    for k, note in enumerate(said["notes"]):
        if k in said["exact"]:
            _merge_exact(core, *said["exact"][k])
        elif k in said["origins"]:
            if said["origins"][k] not in origins:  # once per expression: the first point, in input order
                origins.add(said["origins"][k])
                core.notes.append(note)
        elif note not in core.notes:
            core.notes.append(note)


def _merge_exact(core, slot: str, name: str, exact: int, left: int, failed: int, first_left, seconds) -> None:
    from gradcli.methods.symbolic_values import ExactValues

    counts = core.__dict__.setdefault(name, ExactValues(seconds=seconds))
    if counts.left == 0 and left:
        counts.first_left = first_left
    counts.exact += exact
    counts.left += left
    counts.failed += failed
    note = counts.note()
    if note is not None and name == "_exact_f_values":
        note = note.replace("symbolic:", "value:", 1)
    core._keep_note(slot, note)


def _test_exit(index: int) -> None:
    """The test hook of :data:`TEST_EXIT_VARIABLE`: this worker process ends on the chunk's first attempt."""
    hook = os.environ.get(TEST_EXIT_VARIABLE)
    if not hook:
        return
    folder, _, which = hook.rpartition(":")
    if str(index) != which:
        return
    marker = os.path.join(folder, f"chunk-{index}")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return  # the retry: computed
    os._exit(17)


def compute_chunk(key: tuple, request, chunk, index: int, lines: bool):
    """A task: chunk ``index``'s records with this worker's prepared ``request`` (see :class:`WorkerCore`)."""
    _test_exit(index)
    work = cached(("cli", key), lambda: WorkerCore(request))
    return work.compute(chunk, lines)
