"""xdist's ``loadgroup`` scheduler, also grouping scenario items whose ids carry no group.

xdist's workers mark a grouped item by appending ``@<group>`` to its node id. pytest 9.2
stores node ids in a structured form that this write no longer reaches (pytest-xdist issue
#1386, open at 3.8.0): the suffix never appears and ``loadgroup`` silently spreads a group
over the workers. A scenario item's id names its group anyway (``<file>::<scenario id>::
<key>``, and its ``xdist_group`` is the scenario id), so the scope is read from there; every
other id is scoped exactly as xdist's ``loadgroup`` scopes it. Imported only under xdist.
"""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling

from pytest_diageval.harness.settings import SCENARIO_SUFFIXES

__all__ = ["ScenarioGroupScheduling", "scenario_group"]


def scenario_group(nodeid: str) -> str | None:
    """The ``xdist_group`` of a scenario item's node id (its scenario id), else None."""
    parts = nodeid.split("::")
    if len(parts) == 3 and parts[0].endswith(SCENARIO_SUFFIXES):
        return parts[1]
    return None


class ScenarioGroupScheduling(LoadGroupScheduling):
    def _split_scope(self, nodeid: str) -> str:
        scope = str(super()._split_scope(nodeid))
        if scope != nodeid:  # xdist found its own ``@<group>`` suffix
            return scope
        return scenario_group(nodeid) or nodeid
