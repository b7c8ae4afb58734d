"""What a collected scenario keeps until it runs: its names and the file's bytes.

A suite of thousands of scenarios is collected before the first one runs, so whatever a
scenario node holds, the process holds thousands of times over. The parsed scenario (its
script of model answers above all) is tens of kilobytes; the file it came from is a few. The
node keeps the outline below and parses the bytes again when the scenario runs (the same bytes
give the same scenario: parsing is deterministic), then lets the parse go with the run.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_diageval.harness.scenario import Scenario

__all__ = ["ScenarioOutline"]


@dataclass(frozen=True, slots=True)
class ScenarioOutline:
    """A scenario's id, title, tags and expectation keys, and the bytes it was parsed from.

    The bytes are the file as collected: the run checks exactly the scenario whose items
    were collected, even if the file is edited (or removed) in between, as pytest runs a
    Python test module as it was imported.
    """

    scenario_id: str
    title: str
    tags: tuple[str, ...]
    expect_keys: tuple[str, ...]
    source: bytes

    @classmethod
    def of(cls, scenario: Scenario, source: bytes) -> ScenarioOutline:
        return cls(
            scenario_id=scenario.scenario_id,
            title=scenario.title,
            tags=tuple(scenario.tags),
            expect_keys=tuple(scenario.expect.present_keys()),
            source=source,
        )
