"""A recording replays in the run after it (issue 41): ``--diageval-record=all`` and
``new_episodes`` with another model keep exactly the interactions of the run that recorded,
not the older ones it no longer asks for (which a replay would leave unplayed). Real in-process
recordings against the local fake server of tests/support."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import yaml

from support.fake_openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from conftest import ScenarioDir

SCENARIO = "scenarios/memory.yaml"
CASSETTE = "scenarios/cassettes/memory.yaml"


def _record(pytester: pytest.Pytester, script: list[dict], mode: str, model: str) -> None:
    with FakeOpenAIServer(script) as server:
        pytester.runpytest(
            *(f"--diageval-record={mode}", "--diageval-base-url", server.base_url),
            *("--diageval-model", model),
        ).assert_outcomes(passed=11)


@pytest.mark.parametrize("mode", ["all", "new_episodes", "rewrite"])
@pytest.mark.parametrize("model", ["m", "another-model"])
def test_a_recording_over_a_committed_cassette_replays_in_the_next_run(
    pytester: pytest.Pytester, scenarios: ScenarioDir, mode: str, model: str
) -> None:
    data = scenarios.full()
    script = scenarios.script(data)
    data["llm"] = {"cassette": "cassettes/memory.yaml"}
    scenarios.write(SCENARIO, data)
    _record(pytester, script, "once", "m")

    _record(pytester, script, mode, model)

    cassette = yaml.safe_load((pytester.path / CASSETTE).read_text("utf-8"))
    assert len(cassette["interactions"]) == 4  # planner, executor twice, verifier
    assert cassette["diageval"]["model"] == model
    replay = pytester.runpytest()
    replay.assert_outcomes(passed=11)
