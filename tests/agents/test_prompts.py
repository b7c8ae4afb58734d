"""The prompts teach by a concrete worked example, never by a template a small model copies.

Gemma 3 270M answered ``{"plan": "‹一句话计划>", …}`` and verified the fact ``‹事实>``: it
copied the prompts' placeholder slots verbatim. So every prompt file of the package is linted
here (no ``‹``/``›``, no ``<…>`` slot besides the data tags the code really sends, every ``{…}``
a JSON example that parses and holds no ``A|B|C`` choice or ``...`` value), and each prompt's
worked example is checked against the code: it parses as the model it teaches, and the
executor's example is true of the default world (its tool outputs are what the tools return,
its citations pass the gatekeeper, the verifier example's trace refs are the session's).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import jsonschema
import pytest

from pytest_diageval.agents.executor import _tool_reply
from pytest_diageval.agents.grader import GRADER_REASON_CHARS, GRADER_REASONS_MAX, GraderOutput
from pytest_diageval.agents.prompts import load_prompt
from pytest_diageval.agents.structured_output import structured_request
from pytest_diageval.core.contract.contracts import (
    PLAN_STEPS_MAX,
    ExecutorContract,
    Plan,
    VerifierOutput,
)
from pytest_diageval.core.contract.schema import contract_parameters
from pytest_diageval.core.contract.verifier_schema import constrain_verifier_parameters
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tool_arguments import constrained_tool_definitions
from pytest_diageval.core.evidence.tools import TOOL_NAMES, Toolbox
from pytest_diageval.core.evidence.trace_summary import summarize_invocations
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.judge.claim_support import claim_ceilings
from pytest_diageval.core.judge.gatekeeper import Gatekeeper

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
    assert PROMPTS == ["executor", "grader", "planner", "verifier"]


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


# --------------------------------------------------------------------------- the examples


def _example_after(text: str, marker: str) -> Any:
    start = text.index("{", text.index(marker))
    return json.JSONDecoder().raw_decode(text, start)[0]


def test_the_planner_example_is_a_plan_within_the_schema_caps() -> None:
    prompt = load_prompt("planner")
    assert f"steps 最多 {PLAN_STEPS_MAX} 条" in prompt  # the prompt states the schema's cap
    plan = Plan.model_validate(_example_after(prompt, "输出："))
    assert plan.steps == [
        "用 query_metrics 查询 order-service 的 HighMemoryUsage 告警",
        "用 query_logs 查询 order-service 的内存日志",
    ]


def test_the_grader_example_is_a_grader_output_within_its_caps() -> None:
    prompt = load_prompt("grader")
    # The prompt states the model's caps, and its example is a GraderOutput within them.
    assert f"1 到 {GRADER_REASONS_MAX} 条简短理由" in prompt
    assert f"不超过 {GRADER_REASON_CHARS} 个字符" in prompt
    output = GraderOutput.model_validate(_example_after(prompt, "输出："))
    assert output.score == 0.9
    assert len(output.reasons) == 3
    assert "<grader_input>" in prompt
    assert "<rubric_criteria>" in prompt


CALL = re.compile(r"第 (\d) 次调用 ([a-z_]+)，参数 ")
SHOWN_OUTPUT = re.compile(
    r'<tool_output source_invocation_id="(\d+)" tool_name="([a-z_]+)">(.*?)</tool_output>'
)


def _executor_example() -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]], Any]:
    text = load_prompt("executor")
    calls = [
        (match[2], json.JSONDecoder().raw_decode(text, match.end())[0])
        for match in CALL.finditer(text)
        if match[2] != "functions"
    ]
    shown = [json.loads(match[3]) for match in SHOWN_OUTPUT.finditer(text)]
    return calls, shown, _example_after(text, "functions.submit_evidence_contract")


@pytest.fixture
def example_session() -> Store:
    """The executor example's tool calls, run against the default world in session ``s``."""
    calls, shown, _ = _executor_example()
    store = Store()
    store.create_session("s", "q", "2026-07-08T11:17:00+08:00")
    recorder = ToolInvocationRecorder(store, Toolbox(default_world()), "s")
    replies = [_tool_reply(recorder.call(name, arguments, round=1)) for name, arguments in calls]
    for reply, excerpt in zip(replies, shown, strict=True):
        real = json.loads(SHOWN_OUTPUT.fullmatch(reply)[3])  # type: ignore[index]
        assert {key: real[key] for key in excerpt} == excerpt
    return store


def _keys_in_schema_order(value: Any, schema: dict[str, Any]) -> bool:
    """Keys in the order of the schema's properties: the order a llama.cpp grammar enforces."""
    if "anyOf" in schema:
        return any(_keys_in_schema_order(value, option) for option in schema["anyOf"])
    if isinstance(value, dict):
        properties = schema["properties"]
        return list(value) == list(properties) and all(
            _keys_in_schema_order(item, properties[key]) for key, item in value.items()
        )
    if isinstance(value, list):
        return all(_keys_in_schema_order(item, schema["items"]) for item in value)
    return True


def test_the_executor_example_calls_the_tools_with_required_arguments() -> None:
    calls, shown, _ = _executor_example()
    query = load_prompt("executor").split("用户问题：", 1)[1].split("\n", 1)[0]
    tools = {
        tool["function"]["name"]: tool["function"]["parameters"]
        for tool in constrained_tool_definitions(default_world(), query)
    }
    assert [name for name, _ in calls] == ["query_metrics", "query_logs"]
    for name, arguments in calls:
        assert "service" in tools[name]["required"]
        jsonschema.validate(arguments, tools[name])
    assert [(item["source_invocation_id"], item["evidence_status"]) for item in shown] == [
        (1, "supported"),
        (2, "no_evidence"),
    ]


def test_the_executor_example_contract_passes_the_gatekeeper_on_the_real_tools(
    example_session: Store,
) -> None:
    submitted = _executor_example()[2]
    schema = contract_parameters(example_session.list_invocations("s"))
    jsonschema.validate(submitted, schema)
    assert _keys_in_schema_order(submitted, schema)
    contract = ExecutorContract.model_validate(submitted)
    result = Gatekeeper(example_session).check(contract, "s")
    assert (result.status, result.severity, result.failed_rules) == ("pass", "none", [])
    assert [(row.claim_id, row.raw_path, row.status) for row in result.checked_bindings] == [
        ("claim-1", "$.alerts[0]", "pass"),
        ("claim-2", "$.logs", "pass"),
    ]
    ceilings = claim_ceilings(contract.claims, result, example_session.list_invocations("s"))
    assert {claim: c.ceiling for claim, c in ceilings.items()} == {
        "claim-1": "direct_evidence",
        "claim-2": "direct_evidence",
    }


def test_the_verifier_example_labels_the_executor_example_with_its_real_trace_refs(
    example_session: Store,
) -> None:
    verifier = VerifierOutput.model_validate(_example_after(load_prompt("verifier"), "输出："))
    contract = ExecutorContract.model_validate(_executor_example()[2])
    assert [fact.claim_id for fact in verifier.facts_checked] == [
        claim.claim_id for claim in contract.claims
    ]
    trace = summarize_invocations(example_session.list_invocations("s"))
    real_refs = {item.trace_ref: item.source_invocation_ids for item in trace}
    for fact in verifier.facts_checked:
        for ref in fact.evidence_refs:
            assert real_refs[ref.trace_ref] == ref.source_invocation_ids
    assert real_refs == {"trace-1": [1], "trace-2": [2]}
    # ... and the example answers the schema that session's verifier is sent (issue 25).
    answer = _example_after(load_prompt("verifier"), "输出：")
    claim_ids = [claim.claim_id for claim in contract.claims]
    schema = constrain_verifier_parameters(GENERIC_VERIFIER, claim_ids, [*real_refs])
    jsonschema.validate(answer, schema)


def test_the_verifier_prompt_names_the_claims_and_trace_refs_its_schema_offers() -> None:
    verifier = load_prompt("verifier")
    assert "evidence_refs 只能使用 tool_trace_summary 中已有的 trace_ref" in verifier
    assert "每条事实必须有 claim_id，且只能是 executor_structured_output.claims 中某条" in verifier
    assert "契约解析失败（没有 claims）时 claim_id 为 null" in verifier
