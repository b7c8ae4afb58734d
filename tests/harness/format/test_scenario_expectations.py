"""Expectations that must neither be refused when meaningful nor pass vacuously:
``failed_rules: []`` is an exact set, and tool names in ``tool_calls`` must be real tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_diageval.core.evidence.tool_arguments import TOOL_DEFINITIONS, TOOL_NAMES
from pytest_diageval.harness.format.loader import ScenarioError, load_scenario
from pytest_diageval.harness.format.scenario import ToolCallsExpectation

HEAD = "title: t\nquery: q\nworld: default\nexpect:\n"
ALLOWED_TOOLS = "query_metrics, query_logs, lookup_knowledge, get_current_time"


def write(tmp_path: Path, expect_lines: str) -> Path:
    path = tmp_path / "case.yaml"
    path.write_text(HEAD + expect_lines, encoding="utf-8")
    return path


def error_of(path: Path) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    return caught.value


def test_an_empty_exact_failed_rules_set_is_an_expectation(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, "  gatekeeper: {failed_rules: []}\n"))
    gatekeeper = scenario.expect.gatekeeper
    assert gatekeeper is not None
    assert (gatekeeper.severity, gatekeeper.failed_rules) == (None, [])
    assert scenario.expect.present_keys() == ["gatekeeper"]


@pytest.mark.parametrize(
    "gatekeeper", ["{failed_rules_include: []}", "{warnings_include: []}", "{}"]
)
def test_empty_subset_lists_alone_still_check_nothing(tmp_path: Path, gatekeeper: str) -> None:
    path = write(tmp_path, f"  gatekeeper: {gatekeeper}\n")
    assert str(error_of(path)) == (
        f"{path}:5:3: expect.gatekeeper: give at least one of severity, failed_rules,"
        " failed_rules_include, warnings_include"
    )


def test_empty_include_and_exclude_alone_are_refused(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, "  tool_calls: {include: [], exclude: []}\n"))
    assert (error.line, error.field_path) == (5, "expect.tool_calls")
    assert error.message == "give at least one of include, exclude, max, min"


@pytest.mark.parametrize(
    ("line", "column", "field"),
    [
        ("  tool_calls: {exclude: [lookup_knowlege]}\n", 26, "exclude[0]"),
        ("  tool_calls: {include: [query_logs, lookup_knowlege], max: 2}\n", 38, "include[1]"),
    ],
)
def test_a_misspelt_tool_name_is_a_collection_error(
    tmp_path: Path, line: str, column: int, field: str
) -> None:
    path = write(tmp_path, line)
    error = error_of(path)
    assert len(error.problems) == 1
    assert str(error) == (
        f"{path}:5:{column}: expect.tool_calls.{field}:"
        f" 'lookup_knowlege' is not one of {ALLOWED_TOOLS}"
    )


def test_the_allowed_tool_names_are_the_toolbox_tools() -> None:
    assert ", ".join(TOOL_NAMES) == ALLOWED_TOOLS
    assert [d["function"]["name"] for d in TOOL_DEFINITIONS] == list(TOOL_NAMES)


def test_every_known_tool_is_accepted_including_the_helper(tmp_path: Path) -> None:
    names = ", ".join(TOOL_NAMES)
    scenario = load_scenario(write(tmp_path, f"  tool_calls: {{include: [{names}]}}\n"))
    assert scenario.expect.tool_calls is not None
    assert scenario.expect.tool_calls.include == list(TOOL_NAMES)


def test_the_model_refuses_unknown_tools_outside_the_loader_too() -> None:
    with pytest.raises(ValidationError, match="'grep_logs' is not one of query_metrics"):
        ToolCallsExpectation(exclude=["grep_logs"])
