"""Compiled descent loops are reused between runs of one process (a program calling gradcli.descend in a
loop kept every trace and optimizer it made: ~2 MB a call), and a reused loop runs as a new one would."""

from __future__ import annotations

import threading

import gradcli
from gradcli.compute.descend import loop, runner_pool


def _counting_runners(monkeypatch) -> list:
    made = []
    original = loop.Runner.__init__

    def counted(self, *args, **kwargs):
        made.append(kwargs.get("optimizer"))
        original(self, *args, **kwargs)

    monkeypatch.setattr(loop.Runner, "__init__", counted)
    return made


def _ends(result) -> list:
    return [(run["optimizer"], run["final"], run["value"], run["steps"], run["status"])
            for run in result.to_dict()["runs"]]


def test_a_second_identical_run_makes_no_new_loop_and_gives_the_same_numbers(monkeypatch):
    call = dict(start="x=0,y=1", optimizer="sgd,adam", steps=40, lr=0.05)
    first = _ends(gradcli.descend("(x-3)**2 + y**4", **call))
    made = _counting_runners(monkeypatch)
    second = _ends(gradcli.descend("(x-3)**2 + y**4", **call))
    assert made == []
    assert second == first


def test_other_options_make_their_own_loop(monkeypatch):
    gradcli.descend("(x-1)**2", start="x=0", optimizer="adam", steps=30, lr=0.1)
    made = _counting_runners(monkeypatch)
    gradcli.descend("(x-1)**2", start="x=0", optimizer="adam", steps=30, lr=0.2)
    assert made == ["adam"]


def test_the_pool_keeps_a_bounded_number_of_idle_loops():
    for i in range(runner_pool.MAX_IDLE_RUNNERS + 4):
        gradcli.descend(f"(x-{i})**2", start="x=0", optimizer="manual", steps=3)
    assert runner_pool.idle_runners() <= runner_pool.MAX_IDLE_RUNNERS


def test_threads_never_share_a_loop_at_once():
    results: dict[int, list] = {}

    def descend(i: int) -> None:
        results[i] = _ends(gradcli.descend("(x-2)**2 + y**2", start=f"x={i},y=1", optimizer="adam", steps=60,
                                           lr=0.1))

    threads = [threading.Thread(target=descend, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert results[i] == _ends(gradcli.descend("(x-2)**2 + y**2", start=f"x={i},y=1", optimizer="adam",
                                                   steps=60, lr=0.1))
