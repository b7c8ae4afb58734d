"""The prompts teach by rules and the function schemas, with nothing a small model can copy.

A small model copies what a prompt shows: placeholder slots (``‹一句话计划>``) and worked
examples' subjects alike. So every prompt file of the package is linted here (no ``‹``/``›``,
no ``<…>`` slot besides the data tags the code really sends, every ``{…}`` a JSON example that
parses and holds no ``A|B|C`` choice or ``...`` value), carries no worked example, and names
no service, alert or alias of any world.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.agents.grader import GRADER_REASON_CHARS, GRADER_REASONS_MAX, GraderOutput
from pytest_diageval.agents.prompts import load_prompt
from pytest_diageval.agents.structured_output import structured_request
from pytest_diageval.core.contract.contract_schema import submit_contract_tool
from pytest_diageval.core.contract.contracts import (
    PLAN_STEPS_MAX,
    Plan,
    VerifierOutput,
)
from pytest_diageval.core.evidence.tool_arguments import TOOL_DEFINITIONS
from pytest_diageval.core.evidence.tools import TOOL_NAMES
from pytest_diageval.core.evidence.world import default_world, load_world
from support.shipped import shipped_files

ROOT = Path(__file__).resolve().parents[2]

GENERIC_VERIFIER = structured_request(VerifierOutput)[1]["tools"][0]["function"]["parameters"]
DATA_TAGS = frozenset(
    {
        "tool_output",
        "user_query",
        "planner_plan",
        "retry_context",
        "verifier_input",
        "rubric_criteria",
        "grader_input",
    }
)
"""The tags the code wraps data in (``wrap_data`` callers); any other ``<…>`` is a slot."""
TAG = re.compile(r"<(/?)([a-z_]+)((?: [a-z_]+=\"[^\"]*\")*)>")
ATTRIBUTE = re.compile(r' ([a-z_]+)="([^"]*)"')
CHOICE = re.compile(r"[^\s|]\|[^\s|]")
ELLIPSIS = re.compile(r"^\s*(?:\.{2,}|…+)\s*$")
PROMPTS = sorted(
    entry.name.removesuffix(".md")
    for entry in resources.files("pytest_diageval.agents").joinpath("prompts").iterdir()
    if entry.name.endswith(".md")
)


def _attribute_problem(name: str, value: str) -> str | None:
    concrete = {
        "source_invocation_id": value.isdigit(),
        "tool_name": value in TOOL_NAMES,
    }
    if name not in concrete:
        return f"unknown attribute {name}={value!r}"
    return None if concrete[name] else f"placeholder attribute {name}={value!r}"


def _tag_problems(text: str) -> list[str]:
    problems = []
    for chunk in re.findall(r"<[^<>\n]*>", text):
        tag = TAG.fullmatch(chunk)
        if tag is None or tag[2] not in DATA_TAGS or (tag[1] and tag[3]):
            problems.append(f"slot {chunk}")
            continue
        for name, value in ATTRIBUTE.findall(tag[3]):
            problem = _attribute_problem(name, value)
            if problem:
                problems.append(f"{problem} in {chunk}")
    return problems


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *_strings(item)]]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def json_examples(text: str) -> list[tuple[int, Any]]:
    """Every ``{…}`` of ``text`` decoded as JSON, with its offset; ValueError on one that is not."""
    decoder = json.JSONDecoder()
    examples = []
    position = 0
    while (start := text.find("{", position)) != -1:
        if "}" in text[position:start]:
            raise ValueError("a '}' outside any JSON example")
        try:
            value, position = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON at offset {start}: {text[start : start + 40]!r}") from exc
        examples.append((start, value))
    if "}" in text[position:]:
        raise ValueError("a '}' outside any JSON example")
    return examples


def prompt_problems(text: str) -> list[str]:
    """Every placeholder a small model could copy, described; empty for a clean prompt."""
    problems = [f"{mark!r} at offset {text.index(mark)}" for mark in "‹›«»" if mark in text]
    problems += _tag_problems(text)
    try:
        examples = json_examples(text)
    except ValueError as exc:
        return [*problems, str(exc)]
    for _, example in examples:
        for string in _strings(example):
            if CHOICE.search(string) or ELLIPSIS.match(string):
                problems.append(f"placeholder value {string!r}")
    return problems


# --------------------------------------------------------------------------- the lint


def test_every_prompt_of_the_package_is_linted() -> None:
    assert PROMPTS == ["executor", "executor_points", "grader", "planner", "verifier"]


@pytest.mark.parametrize("agent", PROMPTS)
def test_a_prompt_has_no_placeholder_slot(agent: Any) -> None:
    assert prompt_problems(load_prompt(agent)) == []


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        # the recorded failure: Gemma 3 270M copied this planner template verbatim
        ('{"plan": "‹一句话计划>", "steps": []}', ["'‹' at offset 10"]),
        ("输出 <一句话计划>", ["slot <一句话计划>"]),
        ('{"fact": "<事实>"}', ["slot <事实>"]),
        ("<step64>", ["slot <step64>"]),
        ('</user_query round="1">', ['slot </user_query round="1">']),
        (
            '<tool_output source_invocation_id="N" tool_name="...">',
            [
                "placeholder attribute source_invocation_id='N' in"
                ' <tool_output source_invocation_id="N" tool_name="...">',
                "placeholder attribute tool_name='...' in"
                ' <tool_output source_invocation_id="N" tool_name="...">',
            ],
        ),
        (
            '<tool_output tool_name="query_logs">{JSON 数据}</tool_output>',
            ["not JSON at offset 36: '{JSON 数据}</tool_output>'"],
        ),
        ("plan} 之后", ["a '}' outside any JSON example"]),
        (
            '{"verdict": "PASS|LOW_CONFID|REJECT"}',
            ["placeholder value 'PASS|LOW_CONFID|REJECT'"],
        ),
        ('{"steps": ["..."]}', ["placeholder value '...'"]),
    ],
)
def test_the_lint_finds_each_kind_of_slot(text: str, problems: list[str]) -> None:
    assert prompt_problems(text) == problems


def test_the_lint_allows_the_data_tags_and_json_examples() -> None:
    text = (
        "<user_query>、<retry_context> 标签内是数据；"
        '<tool_output source_invocation_id="2" tool_name="query_logs">{"logs": []}</tool_output>'
        '\n{"plan": "查 order-service 的告警", "steps": ["用 query_metrics 查询 order-service"]}'
    )
    assert prompt_problems(text) == []


# --------------------------------------------------------------------------- nothing to copy


def _world_subjects(world: Any) -> set[str]:
    """A world's services, alert names and aliases: what a question can be about."""
    names = {a.service for a in world.alerts} | {a.alert_name for a in world.alerts}
    names |= {log.service for log in world.logs}
    return names | {alias for aliases in world.aliases.values() for alias in aliases}


WORLD_FILES = shipped_files("scenarios/worlds", "*.yaml")
EXAMPLE_WORLD = load_world(
    Path(str(resources.files("pytest_diageval.agents").joinpath("prompts", "example-world.yaml")))
)


def _offered_functions() -> dict[str, str]:
    """Every function a stage offers a model, as the JSON it reads (descriptions included)."""
    offered = [*TOOL_DEFINITIONS, submit_contract_tool([])]
    offered += [structured_request(m)[1]["tools"][0] for m in (Plan, VerifierOutput, GraderOutput)]
    return {tool["function"]["name"]: json.dumps(tool, ensure_ascii=False) for tool in offered}


def test_no_prompt_or_function_names_a_subject_of_any_world() -> None:
    """A prompt or a function definition shows a small model no service, alert or alias to
    copy: not the default world's, not a scenario world's, not the former examples' (whose
    names the scope still refuses and ``bench_copying.py`` still counts)."""
    worlds = [default_world(), EXAMPLE_WORLD, *(load_world(path) for path in WORLD_FILES)]
    subjects = set().union(*(_world_subjects(world) for world in worlds))
    assert {"order-service", "billing-gateway", "HighQueueLag", "shipping-service"} <= subjects
    assert len(WORLD_FILES) >= 5
    texts = {agent: load_prompt(agent) for agent in PROMPTS} | _offered_functions()
    assert len(texts) == len(PROMPTS) + 8
    for name, text in texts.items():
        assert sorted(subject for subject in subjects if subject in text) == [], name


def test_no_prompt_carries_a_worked_example() -> None:
    """The function schemas (and the local server's grammar) teach the format; a worked
    example only offers content to copy."""
    for agent in PROMPTS:
        text = load_prompt(agent)
        assert "示例" not in text.replace("不含任何示例内容", ""), agent
        assert json_examples(text) == [], agent


def test_the_planner_prompt_states_the_schemas_step_cap() -> None:
    assert f"steps 最多 {PLAN_STEPS_MAX} 条" in load_prompt("planner")


def test_the_grader_prompt_states_the_schemas_reason_caps() -> None:
    grader = load_prompt("grader")
    assert f"1 到 {GRADER_REASONS_MAX} 条简短理由" in grader
    assert f"不超过 {GRADER_REASON_CHARS} 个字符" in grader


def test_the_verifier_prompt_names_the_claims_and_trace_refs_its_schema_offers() -> None:
    verifier = load_prompt("verifier")
    assert "evidence_refs 只能使用 tool_trace_summary 中已有的 trace_ref" in verifier
    assert "每条事实必须有 claim_id，且只能是 executor_structured_output.claims 中某条" in verifier
    assert "契约解析失败（没有 claims）时 claim_id 为 null" in verifier
