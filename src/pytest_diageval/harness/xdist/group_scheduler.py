"""xdist's ``loadgroup`` scheduler, also grouping scenario items whose ids carry no group.

xdist's workers mark a grouped item by appending ``@<group>`` to its node id. pytest 9.2
stores node ids in a structured form that this write no longer reaches (pytest-xdist issue
#1386, open at 3.8.0): the suffix never appears and ``loadgroup`` silently spreads a group
over the workers. A scenario item's id names its group anyway (``<file>::<scenario id>::
<key>``, and its ``xdist_group`` is the scenario id), so the scope is read from there; every
other id is scoped exactly as xdist's ``loadgroup`` scopes it. Imported only under xdist.

The bookkeeping is also kept linear in the suite's size. xdist's ``loadscope`` (which
``loadgroup`` is) recounts every scope a worker was ever given on each finished item and looks
each item of a new unit up in the worker's whole collection (``list.index``): both quadratic,
5 s of the controller's CPU at 2,000 scenarios (16,000 items) and growing fourfold with each
doubling. Here a finished scope leaves the worker's workload (nothing needs it: a crashed
worker's unfinished scopes are what is queued again) and the lookup is a dict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdist.scheduler import LoadGroupScheduling

from pytest_diageval.harness.settings import SCENARIO_SUFFIXES

if TYPE_CHECKING:
    import pytest
    from xdist.remote import Producer
    from xdist.workermanage import WorkerController

__all__ = ["ScenarioGroupScheduling", "scenario_group"]


def scenario_group(nodeid: str) -> str | None:
    """The ``xdist_group`` of a scenario item's node id (its scenario id), else None."""
    parts = nodeid.split("::")
    if len(parts) == 3 and parts[0].endswith(SCENARIO_SUFFIXES):
        return parts[1]
    return None


class ScenarioGroupScheduling(LoadGroupScheduling):
    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        self._by_id: dict[WorkerController, dict[str, int]] = {}

    def _split_scope(self, nodeid: str) -> str:
        scope = str(super()._split_scope(nodeid))
        if scope != nodeid:  # xdist found its own ``@<group>`` suffix
            return scope
        return scenario_group(nodeid) or nodeid

    def mark_test_complete(
        self, node: WorkerController, item_index: int, duration: float = 0
    ) -> None:
        nodeid = self.registered_collections[node][item_index]
        workload = self.assigned_work[node]
        scope = self._split_scope(nodeid)
        workload[scope][nodeid] = True
        if all(workload[scope].values()):
            del workload[scope]
        self._reschedule(node)

    def _assign_work_unit(self, node: WorkerController) -> None:
        """xdist's own, with the items' positions read from a dict."""
        assert self.workqueue
        scope, work_unit = self.workqueue.popitem(last=False)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        positions = self._positions(node)
        node.send_runtest_some(
            [positions[nodeid] for nodeid, completed in work_unit.items() if not completed]
        )

    def _positions(self, node: WorkerController) -> dict[str, int]:
        """Each node id's first position in the worker's collection (what ``list.index``
        answers), built once per worker."""
        if node not in self._by_id:
            positions: dict[str, int] = {}
            for position, nodeid in enumerate(self.registered_collections[node]):
                positions.setdefault(nodeid, position)
            self._by_id[node] = positions
        return self._by_id[node]
