"""The prompts teach by concrete worked examples, never by a template a small model copies.

Gemma 3 270M answered ``{"plan": "‹一句话计划>", …}`` and verified the fact ``‹事实>``: it
copied the prompts' placeholder slots verbatim. So every prompt file of the package is linted
here (no ``‹``/``›``, no ``<…>`` slot besides the data tags the code really sends, every ``{…}``
a JSON example that parses and holds no ``A|B|C`` choice or ``...`` value), and each prompt's
worked example is checked against the code: it parses as the model it teaches, and the
executor's example is true of the default world (its tool outputs are what the tools return,
its citations pass the gatekeeper, the verifier example's trace refs are the session's).
The examples live in a world of their own (``agents/prompts/example-world.yaml``) whose subjects no
scenario question names, so that copying them is never an answer (issue 25 part 4).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import jsonschema
import pytest
import yaml

from pytest_diageval.agents.grader import GRADER_REASON_CHARS, GRADER_REASONS_MAX, GraderOutput
from pytest_diageval.agents.prompts import load_prompt
from pytest_diageval.agents.structured_output import structured_request
from pytest_diageval.agents.tool_calls import tool_reply
from pytest_diageval.core.contract.contract_schema import contract_parameters
from pytest_diageval.core.contract.contracts import (
    PLAN_STEPS_MAX,
    ExecutorContract,
    Plan,
    VerifierOutput,
)
from pytest_diageval.core.contract.scope_contract import DecodingScope
from pytest_diageval.core.contract.verifier_schema import constrain_verifier_parameters
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tool_arguments import constrained_tool_definitions
from pytest_diageval.core.evidence.tools import TOOL_NAMES, Toolbox
from pytest_diageval.core.evidence.trace_summary import summarize_invocations
from pytest_diageval.core.evidence.world import default_world, load_world
from pytest_diageval.core.judge.claim_support import claim_ceilings
from pytest_diageval.core.judge.gatekeeper import Gatekeeper
from pytest_diageval.core.scope.session import ScopeNames, session_scope, split_claims
from support.shipped import shipped_scenario_paths

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


def _examples(agent: Any) -> list[str]:
    """The prompt's worked examples, one text each (``### 示例 N`` sections)."""
    return load_prompt(agent).split("### 示例 ")[1:]


EXAMPLE_WORLD = load_world(
    Path(str(resources.files("pytest_diageval.agents").joinpath("prompts", "example-world.yaml")))
)


def test_the_examples_subjects_are_of_their_own_world_and_no_question_names_them() -> None:
    """Issue 25: a live model copied the old example (the suite's own subjects) in 16 of 16
    rounds. The examples' services and alerts are the example world's, absent from the
    default world and from every scenario's question."""
    subjects = {a.service for a in EXAMPLE_WORLD.alerts} | {
        log.service for log in EXAMPLE_WORLD.logs
    }
    subjects |= {a.alert_name for a in EXAMPLE_WORLD.alerts}
    assert subjects == {"billing-gateway", "search-indexer", "HighQueueLag"}
    default = default_world()
    default_subjects = {a.service for a in default.alerts} | {a.alert_name for a in default.alerts}
    assert not subjects & (default_subjects | {log.service for log in default.logs})
    questions = [
        str(yaml.safe_load(path.read_text("utf-8")).get("query", ""))
        for path in shipped_scenario_paths()
        if "query:" in path.read_text("utf-8")
    ]
    assert len(questions) > 100
    assert [q for q in questions if any(name in q for name in subjects)] == []
    for agent in PROMPTS:
        text = load_prompt(agent)
        assert [name for name in sorted(default_subjects) if name in text] == [], agent
        assert "billing-gateway" in text, agent


def test_the_planner_examples_are_plans_within_the_schema_caps() -> None:
    assert f"steps 最多 {PLAN_STEPS_MAX} 条" in load_prompt("planner")  # the schema's cap
    plans = [Plan.model_validate(_example_after(text, "输出：")) for text in _examples("planner")]
    assert [plan.steps for plan in plans] == [
        ["用 query_metrics 查询 billing-gateway 的 HighQueueLag 告警"],
        ["用 query_logs 按关键词“证书过期”和“certificate expired”检索 search-indexer 的日志"],
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


class Example(NamedTuple):
    query: str
    calls: list[tuple[str, dict[str, Any]]]
    shown: list[Any]
    submitted: Any


def _executor_examples() -> list[Example]:
    examples = []
    for text in _examples("executor"):
        calls = [
            (m[2], json.JSONDecoder().raw_decode(text, m.end())[0]) for m in CALL.finditer(text)
        ]
        shown = [json.loads(match[3]) for match in SHOWN_OUTPUT.finditer(text)]
        query = text.split("用户问题：", 1)[1].split("\n", 1)[0]
        submitted = _example_after(text, "次调用 submit_evidence_contract，参数：")
        examples.append(Example(query, calls, shown, submitted))
    return examples


def _example_session(example: Example) -> Store:
    """An example's tool calls, run against the example world in session ``s``."""
    store = Store()
    store.create_session("s", example.query, EXAMPLE_WORLD.now.isoformat())
    recorder = ToolInvocationRecorder(store, Toolbox(EXAMPLE_WORLD), "s")
    replies = [tool_reply(recorder.call(name, args, round=1)) for name, args in example.calls]
    for reply, excerpt in zip(replies, example.shown, strict=True):
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


def test_the_executor_examples_are_of_two_kinds_and_call_tools_within_the_schema() -> None:
    examples = _executor_examples()
    assert [[name for name, _ in example.calls] for example in examples] == [
        ["query_metrics"],
        ["query_logs"],
    ]
    assert [[item["evidence_status"] for item in ex.shown] for ex in examples] == [
        ["supported"],
        ["no_evidence"],
    ]
    for example in examples:
        scope, _ = session_scope(example.query, _names(example.query))
        tools = {
            tool["function"]["name"]: tool["function"]["parameters"]
            for tool in constrained_tool_definitions(
                EXAMPLE_WORLD, example.query, DecodingScope.of(scope)
            )
        }
        for name, arguments in example.calls:
            assert "service" in tools[name]["required"]
            jsonschema.validate(arguments, tools[name])


def _names(query: str) -> ScopeNames:
    services = [a.service for a in EXAMPLE_WORLD.alerts] + [g.service for g in EXAMPLE_WORLD.logs]
    return ScopeNames.of(services, [a.alert_name for a in EXAMPLE_WORLD.alerts])


@pytest.mark.parametrize("index", [0, 1])
def test_an_executor_example_contract_passes_the_gatekeeper_and_its_scope(index: int) -> None:
    example = _executor_examples()[index]
    store = _example_session(example)
    scope, _ = session_scope(example.query, _names(example.query))
    decoding = DecodingScope.of(scope)
    schema = contract_parameters(store.list_invocations("s"), decoding.claim_types)
    jsonschema.validate(example.submitted, schema)
    assert _keys_in_schema_order(example.submitted, schema)
    contract = ExecutorContract.model_validate(example.submitted)
    result = Gatekeeper(store).check(contract, "s")
    assert (result.status, result.severity, result.failed_rules) == ("pass", "none", [])
    assert [(row.claim_id, row.raw_path, row.status) for row in result.checked_bindings] == [
        ("claim-1", ["$.alerts[0]", "$.logs"][index], "pass")
    ]
    ceilings = claim_ceilings(contract.claims, result, store.list_invocations("s"))
    assert {claim: c.ceiling for claim, c in ceilings.items()} == {"claim-1": "direct_evidence"}
    split = split_claims(contract, scope, _names(example.query))
    assert split.set_aside == []  # the example obeys its own question's scope


@pytest.mark.parametrize("index", [0, 1])
def test_a_verifier_example_labels_its_executor_example_with_real_trace_refs(index: int) -> None:
    text = _examples("verifier")[index]
    verifier = VerifierOutput.model_validate(_example_after(text, "输出："))
    example = _executor_examples()[index]
    assert example.query in text
    contract = ExecutorContract.model_validate(example.submitted)
    assert [fact.claim_id for fact in verifier.facts_checked] == [
        claim.claim_id for claim in contract.claims
    ]
    trace = summarize_invocations(_example_session(example).list_invocations("s"))
    real_refs = {item.trace_ref: item.source_invocation_ids for item in trace}
    for fact in verifier.facts_checked:
        for ref in fact.evidence_refs:
            assert real_refs[ref.trace_ref] == ref.source_invocation_ids
    assert real_refs == {"trace-1": [1]}
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
