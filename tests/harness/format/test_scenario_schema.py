"""The JSON Schema and the loader agree on real files: every scenario under ``scenarios/``
passes both, and files the loader refuses are refused by the schema too (editors flag them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_diageval.harness.format.loader import ScenarioError, load_scenario
from pytest_diageval.harness.format.registry import config_checks
from support.shipped import shipped_scenario_paths

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
SCHEMA: dict[str, Any] = json.loads((SCENARIOS / "scenario.schema.json").read_text("utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
FILES = shipped_scenario_paths()

BASE = """\
id: base
title: t
tags: [narrow]
query: q
world: default
llm: {cassette: c.yaml}
expect:
  verdict: PASS
  no_evidence: [{tool: query_logs, success: true}]
"""


def schema_errors(text: str) -> list[str]:
    return [error.message for error in VALIDATOR.iter_errors(yaml.safe_load(text))]


def schema_error_fields(text: str) -> set[str]:
    """Where the schema refuses ``text``, as the loader writes field paths (``a.b[0]``)."""
    fields = set()
    for error in VALIDATOR.iter_errors(yaml.safe_load(text)):
        parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path]
        fields.add("".join(parts).removeprefix("."))
    return fields


def test_the_committed_schema_is_a_valid_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_scenario_folder_is_covered() -> None:
    folders = {path.relative_to(SCENARIOS).parts[0] for path in FILES}
    assert {"evidence", "matrix", "regression", "routing", "verifier"} <= folders
    assert not {"worlds", "cassettes"} & {part for p in FILES for part in p.parts}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_every_scenario_file_passes_schema_and_loader(
    path: Path, pytestconfig: pytest.Config
) -> None:
    text = path.read_text(encoding="utf-8")
    assert schema_errors(text) == []
    # The project's checks: routing/pass-direct-answer-length.yaml uses the root conftest's key.
    assert load_scenario(path, config_checks(pytestconfig)).expect.present_keys()


ACCEPTED = {
    "failed_rules: [] alone": ("verdict: PASS", "gatekeeper: {failed_rules: []}"),
    "the helper tool": ("verdict: PASS", "tool_calls: {include: [get_current_time]}"),
    "a list of verdicts": ("verdict: PASS", "verdict: [PASS, LOW_CONFID]"),
    "a deliberately invalid answer": (
        "{cassette: c.yaml}",
        "{script: [{stage: planner, invalid: true, content: {steps: 3}}]}",
    ),
    "a plain-text hypothesis and a null id": (
        "{cassette: c.yaml}",
        "{script: [{stage: executor, content: {answer_version: '2', diagnosis_summary: '',"
        " claims: [], recommended_actions: [], missing_info: [], user_facing_answer: '',"
        " hypotheses: [h, {hypothesis_id: null, hypothesis_text: t}]}}]}",
    ),
}
# (old text, new text, field the loader names, field the schema names: the same but for an
# unknown key, which JSON Schema reports at the mapping that holds it)
REFUSED = {
    "misspelt excluded tool": (
        "verdict: PASS",
        "tool_calls: {exclude: [lookup_knowlege]}",
        "expect.tool_calls.exclude[0]",
        "expect.tool_calls.exclude[0]",
    ),
    "misspelt included tool": (
        "verdict: PASS",
        "tool_calls: {include: [Query_Logs]}",
        "expect.tool_calls.include[0]",
        "expect.tool_calls.include[0]",
    ),
    "helper tool as evidence": (
        "tool: query_logs",
        "tool: get_current_time",
        "expect.no_evidence[0].tool",
        "expect.no_evidence[0].tool",
    ),
    "misspelt key": ("expect:", "expcet:", "expcet", ""),
    "wrong verdict": ("verdict: PASS", "verdict: PAS", "expect.verdict", "expect.verdict"),
    "empty expect": (BASE[BASE.index("  verdict") :], "  {}\n", "expect", "expect"),
    "value left empty": ("verdict: PASS", "verdict:", "expect.verdict", "expect.verdict"),
    "empty gatekeeper": (
        "verdict: PASS",
        "gatekeeper: {}",
        "expect.gatekeeper",
        "expect.gatekeeper",
    ),
    "a quoted boolean": (
        "success: true",
        "success: 'true'",
        "expect.no_evidence[0].success",
        "expect.no_evidence[0].success",
    ),
    "rounds out of range": ("verdict: PASS", "rounds: 3", "expect.rounds", "expect.rounds"),
    "a tag that is no identifier": ("[narrow]", "[not narrow]", "tags[0]", "tags[0]"),
    "a wrong verifier label": (
        "{cassette: c.yaml}",
        "{script: [{stage: verifier, content: {verdict: PASS, groundedness_score: 1.0,"
        " critical_fact_count: 0, rationale: r,"
        " facts_checked: [{fact: f, is_critical: true, verification: supported, detail: d}]}}]}",
        "llm.script[0].content.facts_checked[0].verification",
        "llm.script[0].content.facts_checked[0].verification",
    ),
    "a misspelt plan key": (
        "{cassette: c.yaml}",
        "{script: [{stage: planner, content: {plan: p, stpes: []}}]}",
        "llm.script[0].content.stpes",
        "llm.script[0].content",
    ),
    "a plan without plan": (
        "{cassette: c.yaml}",
        "{script: [{stage: planner, content: {steps: []}}]}",
        "llm.script[0].content.plan",
        "llm.script[0].content",
    ),
    "cassette and script": (
        "{cassette: c.yaml}",
        "{cassette: c.yaml, script: [{stage: planner, content: {plan: p}}]}",
        "llm",
        "llm",
    ),
}


@pytest.mark.parametrize(("old", "new"), ACCEPTED.values(), ids=list(ACCEPTED))
def test_edge_cases_both_accept(tmp_path: Path, old: str, new: str) -> None:
    text = BASE.replace(old, new)
    assert text != BASE
    path = tmp_path / "case.yaml"
    path.write_text(text, encoding="utf-8")
    assert schema_errors(text) == []
    assert load_scenario(path).scenario_id == "base"


@pytest.mark.parametrize(
    ("old", "new", "field", "schema_field"), REFUSED.values(), ids=list(REFUSED)
)
def test_files_the_loader_refuses_the_schema_refuses(
    tmp_path: Path, old: str, new: str, field: str, schema_field: str
) -> None:
    text = BASE.replace(old, new)
    assert text != BASE
    path = tmp_path / "case.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert [problem.field_path for problem in caught.value.problems] == [field]
    assert schema_field in schema_error_fields(text)


def test_an_inline_world_is_checked_by_the_worlds_own_schema() -> None:
    """The inline world mapping is World's schema (its keys, aliases included), not any
    mapping: an editor flags a misspelt world key and an alias that is not a list."""
    base = {
        "id": "inline-world",
        "title": "t",
        "query": "q",
        "llm": {"script": [{"stage": "planner", "content": {"plan": "p", "steps": []}}]},
        "expect": {"verdict": "PASS"},
    }
    world = {"now": "2026-07-08T11:20:00+08:00", "aliases": {"order-service": ["订单服务"]}}
    assert list(VALIDATOR.iter_errors({**base, "world": world})) == []
    for wrong in ({**world, "alerst": []}, {**world, "aliases": {"order-service": "订单服务"}}):
        assert list(VALIDATOR.iter_errors({**base, "world": wrong})) != []
