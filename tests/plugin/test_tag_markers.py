"""Scenario tags are markers listed by ``pytest --markers`` with their scenario count."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir


def test_markers_lists_every_tag_with_its_scenario_count(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    # Not scenarios of this run: a folder pytest does not recurse into, a hidden one, a
    # cassette folder and a YAML file that is no scenario.
    hidden = scenarios.low_confidence()
    hidden["tags"] = ["hidden_only"]
    scenarios.write("build/copy.yaml", hidden)
    scenarios.write(".cache/copy.yaml", hidden)
    scenarios.write("scenarios/cassettes/copy.yaml", hidden)
    scenarios.write_text("scenarios/settings.yaml", "tags: [not_a_scenario]\n")

    result = pytester.runpytest("--markers")

    assert result.ret == 0
    tags = sorted(line for line in result.outlines if "scenario tag" in line)
    assert tags == [
        "@pytest.mark.forgery: scenario tag (1 scenario)",
        "@pytest.mark.memory: scenario tag (2 scenarios)",
        "@pytest.mark.narrow: scenario tag (1 scenario)",
        "@pytest.mark.negative: scenario tag (1 scenario)",
        "@pytest.mark.positive: scenario tag (1 scenario)",
    ]


def test_markers_counts_only_the_given_paths(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    result = pytester.runpytest("--markers", "scenarios/forged.yaml")

    assert [line for line in result.outlines if "scenario tag" in line] == [
        "@pytest.mark.forgery: scenario tag (1 scenario)"
    ]


def test_a_collected_tag_is_registered_once_for_strict_markers(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    pytester.makeconftest(
        """
        def pytest_collection_finish(session):
            lines = session.config.getini("markers")
            print("MEMORY MARKERS", sum(line.startswith("memory:") for line in lines))
        """
    )

    result = pytester.runpytest("--strict-markers", "-m", "memory", "-s")

    result.assert_outcomes(passed=13)  # two scenarios tagged memory, one collected line
    assert "MEMORY MARKERS 1" in result.outlines
