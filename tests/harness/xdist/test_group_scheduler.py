"""The scenario scheduler driven as xdist's controller drives it, with two stand-in workers.

It must hand out every item once, keep a scenario's items on one worker, and keep its
bookkeeping linear: a finished scope leaves the worker's workload (xdist's own ``loadscope``
recounts every scope a worker ever had on each finished item).
"""

from __future__ import annotations

import pytest

pytest.importorskip("xdist")

from pytest_diageval.harness.xdist.group_scheduler import ScenarioGroupScheduling
from support.xdist_workers import Worker, finish_all, new_scheduler

KEYS = ("verdict", "answer", "severity")


def _collection(scenarios: int) -> list[str]:
    return [
        f"scenarios/s{number}.yaml::s{number}::{key}" for number in range(scenarios) for key in KEYS
    ] + ["tests/test_other.py::test_plain"]


def test_every_item_runs_once_and_a_scenario_stays_on_one_worker() -> None:
    workers = [Worker("gw0"), Worker("gw1")]
    collection = _collection(40)
    scheduler = new_scheduler(ScenarioGroupScheduling, collection, workers)

    ran = finish_all(scheduler, workers)

    assert sorted(ran["gw0"] + ran["gw1"]) == sorted(collection)
    assert ran["gw0"]
    assert ran["gw1"]
    for number in range(40):
        owners = {name for name, ids in ran.items() if f"s{number}.yaml" in " ".join(ids)}
        assert len(owners) == 1, f"scenario s{number} ran on {owners}"
    assert scheduler.tests_finished
    # Finished scopes left the workloads: what makes each step independent of the suite size.
    assert {name.gateway.id: work for name, work in scheduler.assigned_work.items()} == {
        "gw0": {},
        "gw1": {},
    }


def test_a_crashed_worker_gives_back_only_its_unfinished_scenario() -> None:
    workers = [Worker("gw0"), Worker("gw1")]
    collection = _collection(6)
    scheduler = new_scheduler(ScenarioGroupScheduling, collection, workers)
    first = workers[0]
    for done in range(len(KEYS) + 1):  # its first scenario whole, then one item of the next
        scheduler.mark_test_complete(first, first.sent[done])  # type: ignore[arg-type]
    finished = [collection[index] for index in first.sent[: len(KEYS)]]
    assert {nodeid.split("::")[1] for nodeid in finished} == {"s0"}

    crashed = scheduler.remove_node(first)  # type: ignore[arg-type]

    assert crashed == collection[first.sent[len(KEYS) + 1]]
    requeued = {nodeid for unit in scheduler.workqueue.values() for nodeid in unit}
    assert not requeued & set(finished)  # the finished scenario is not queued again
    assert crashed in requeued
