"""pytest-xdist scheduling that keeps the items of one scenario on one worker.

A scenario's pipeline runs once per process; spreading its expectation items over two
workers would run it twice. Scenario items are grouped by ``<file>::<scenario id>``; every
other test is its own unit, exactly as xdist's default ``load`` distribution treats it.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

__all__ = ["ScenarioScheduling"]

SCENARIO_SUFFIXES = (".yaml", ".yml")


class ScenarioScheduling(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        if nodeid.split("::", 1)[0].endswith(SCENARIO_SUFFIXES):
            return nodeid.rsplit("::", 1)[0]
        return nodeid
