"""Scenario tags are markers listed by ``pytest --markers`` with their scenario count."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_diageval.harness.format.markers import scenario_tag_counts
from support.shipped import shipped_scenario_paths

if TYPE_CHECKING:
    from conftest import ScenarioDir

REPO = Path(__file__).resolve().parents[2]


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


def _project_markers() -> list[str]:
    """The markers this project registers for its own tests (``pyproject.toml``)."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    markers = pyproject["tool"]["pytest"]["ini_options"]["markers"]
    assert isinstance(markers, list)
    return [str(line) for line in markers]


def test_the_projects_own_markers_share_no_name_with_a_shipped_scenario_tag() -> None:
    # A project marker named like a tag selects both: `-m "not live"` once dropped the
    # offline replays of scenarios/live/ along with the tests that need a model server.
    names = {line.split(":", 1)[0].strip() for line in _project_markers()}
    tags = set(scenario_tag_counts(shipped_scenario_paths()))

    assert "model_server" in names
    assert "live" in tags
    assert names & tags == set()


def test_a_scenario_tagged_live_is_selected_apart_from_the_model_server_marker(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    # The inner run registers the project's own markers, as the repository's pyproject does.
    markers = "\n".join(f"    {line}" for line in _project_markers())
    pytester.makeini(f"[pytest]\naddopts = --strict-markers\nmarkers =\n{markers}\n")
    live = scenarios.example()
    live["id"], live["tags"] = "replayed-live", ["live", "memory"]
    scenarios.write("scenarios/live.yaml", live)
    scenarios.write("scenarios/memory.yaml", scenarios.example())
    per_scenario = len(live["expect"])

    def selected(expression: str) -> set[str]:
        result = pytester.runpytest("--collect-only", "-q", "-m", expression)
        assert result.ret == 0, result.outlines
        return {line.split("::")[1] for line in result.outlines if "::" in line}

    assert selected("not model_server") == {"replayed-live", "high-memory-positive"}
    assert selected("live") == {"replayed-live"}
    assert selected("not live") == {"high-memory-positive"}
    result = pytester.runpytest("-m", "live and not model_server")
    result.assert_outcomes(passed=per_scenario)
