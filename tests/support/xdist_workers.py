"""Stand-in xdist workers, to drive a scheduler as xdist's controller does, without processes.

A worker is sent item positions (``send_runtest_some``) and may be shut down; :func:`finish_all`
finishes the items in the order each worker was sent them, alternating workers.
"""

from __future__ import annotations

from typing import Any, TypeVar
from unittest import mock

from xdist.remote import Producer
from xdist.scheduler import LoadScopeScheduling

__all__ = ["Worker", "finish_all", "new_scheduler"]

S = TypeVar("S", bound=LoadScopeScheduling)


class Worker:
    """What a scheduler sees of a worker."""

    def __init__(self, name: str) -> None:
        self.gateway = mock.Mock(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def new_scheduler(kind: type[S], collection: list[str], workers: list[Worker]) -> S:
    """A scheduler of ``kind`` with ``workers`` (``--tx 2*popen``) that all collected
    ``collection``, its first units handed out."""
    config: Any = mock.Mock()
    config.getvalue.side_effect = lambda name: ["2*popen"] if name == "tx" else False
    scheduler = kind(config, Producer("stand-in", enabled=False))
    for worker in workers:
        scheduler.add_node(worker)  # type: ignore[arg-type]
    for worker in workers:
        scheduler.add_node_collection(worker, collection)  # type: ignore[arg-type]
    scheduler.schedule()
    return scheduler


def finish_all(scheduler: LoadScopeScheduling, workers: list[Worker]) -> dict[str, list[str]]:
    """Finish every item sent; returns the node ids each worker ran, in order."""
    collection = scheduler.collection
    assert collection is not None
    done = dict.fromkeys(map(id, workers), 0)
    ran: dict[str, list[str]] = {worker.gateway.id: [] for worker in workers}
    while any(done[id(worker)] < len(worker.sent) for worker in workers):
        for worker in workers:
            if done[id(worker)] < len(worker.sent):
                index = worker.sent[done[id(worker)]]
                done[id(worker)] += 1
                ran[worker.gateway.id].append(collection[index])
                scheduler.mark_test_complete(worker, index)  # type: ignore[arg-type]
    return ran
