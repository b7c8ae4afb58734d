"""What a collected scenario keeps until it runs: its names and its scenario, packed.

A suite of thousands of scenarios is collected before the first one runs, so whatever a
scenario node holds, the process holds thousands of times over. The parsed scenario (its
script of model answers above all) is tens of kilobytes of small objects; pickled and
compressed it is about one. The node keeps the outline below and unpacks the scenario when it
runs (about 0.1 ms, against 2 ms to parse and validate the file again), then lets it go with
the run. The pickle never leaves the process: it is this process's own validated object.
"""

from __future__ import annotations

import dataclasses
import pickle
import zlib
from dataclasses import dataclass

from pytest_diageval.harness.format.scenario import Scenario

__all__ = ["ScenarioOutline"]


@dataclass(frozen=True, slots=True)
class ScenarioOutline:
    """A scenario's id, title, tags and expectation keys, and the scenario itself, packed.

    The packed scenario is the file as collected: the run checks exactly the scenario whose
    items were collected, even if the file is edited (or removed) in between, as pytest runs
    a Python test module as it was imported.
    """

    scenario_id: str
    title: str
    tags: tuple[str, ...]
    expect_keys: tuple[str, ...]
    packed: bytes | None
    """None once the scenario has run (see :meth:`without_scenario`)."""

    @classmethod
    def of(cls, scenario: Scenario) -> ScenarioOutline:
        return cls(
            scenario_id=scenario.scenario_id,
            title=scenario.title,
            tags=tuple(scenario.tags),
            expect_keys=tuple(scenario.expect.present_keys()),
            packed=zlib.compress(pickle.dumps(scenario, protocol=pickle.HIGHEST_PROTOCOL)),
        )

    def scenario(self) -> Scenario | None:
        """The scenario as validated at collection (a new object on every call); None after
        :meth:`without_scenario`."""
        if self.packed is None:
            return None
        scenario = pickle.loads(zlib.decompress(self.packed))
        assert isinstance(scenario, Scenario)
        return scenario

    def without_scenario(self) -> ScenarioOutline:
        """The names alone: what a node keeps once its scenario has run (pytest keeps every
        node to the end of the session; the packed scenario was about 1.4 KB of it)."""
        return dataclasses.replace(self, packed=None)
