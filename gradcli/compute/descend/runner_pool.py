"""Compiled descent loops kept for the next run in the same process.

Each :class:`~gradcli.compute.descend.loop.Runner` traces a ``tf.function`` (compiled by XLA for long runs)
and builds a Keras optimizer. TensorFlow and Keras keep part of what each trace and optimizer make for the
life of the process, so a program that calls ``gradcli.descend`` in a loop grew by ~2 MB a call while
making new ones. A run takes an idle runner of the same kind from here, or makes one, and gives it back
when it is over; a runner's state is reset when it loads its starts (``Runner.load``), so a reused one
runs exactly as a new one would. A runner is used by one run at a time (it holds the loop's variables).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from gradcli.compute.descend.loop import Runner

# Idle runners kept, over every kind: enough for a notebook's few expressions and optimizers.
MAX_IDLE_RUNNERS = 16

_lock = threading.Lock()
_idle: OrderedDict[tuple, list[Runner]] = OrderedDict()  # kind -> idle runners, least recently used first


def runner_kind(tree, names, size: int, **options) -> tuple:
    """What a runner's trace depends on: the expression's tree (its rules with it), the variables, the
    rows, and every option the loop was built with."""
    return (tree, tuple(names), size, tuple(sorted(options.items())))


def take_runner(kind: tuple, make: Callable[[], Runner]) -> Runner:
    """An idle runner of ``kind``, or a new one from ``make()``."""
    with _lock:
        idle = _idle.get(kind)
        if idle:
            runner = idle.pop()
            if not idle:
                del _idle[kind]
            return runner
    return make()


def give_back(kind: tuple, runner: Runner) -> None:
    """``runner``'s run is over: keep it for the next run of its kind (the least recently used go first)."""
    with _lock:
        _idle.setdefault(kind, []).append(runner)
        _idle.move_to_end(kind)
        while sum(len(v) for v in _idle.values()) > MAX_IDLE_RUNNERS:
            oldest = next(iter(_idle))
            _idle[oldest].pop(0)
            if not _idle[oldest]:
                del _idle[oldest]


def idle_runners() -> int:
    """How many runners are kept idle now."""
    with _lock:
        return sum(len(v) for v in _idle.values())
