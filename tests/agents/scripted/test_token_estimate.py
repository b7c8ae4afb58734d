"""The scripted model's token estimate: its rule per kind of character, its determinism, and
its calibration against the prompts recorded from a real model (``cassettes/live-*.yaml``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.scripted.model import scripted_llm
from pytest_diageval.agents.scripted.token_estimate import (
    estimated_tokens,
    prompt_tokens,
    text_tokens,
)
from pytest_diageval.agents.usage import TokenUsage, UsageMeter
from pytest_diageval.harness.format.loader import load_scenario, load_scenario_world
from pytest_diageval.local.chat import LATE_FUNCTIONS

REPO = Path(__file__).resolve().parents[3]
LIVE_CASSETTES = sorted((REPO / "cassettes").glob("live-*.yaml"))
SCRIPTED = [
    "scenarios/matrix/02-highmemory-positive.yaml",  # planner, executor tool loop, verifier
    "scenarios/routing/low-confid-retry-then-disclaimer.yaml",  # two rounds
    "scenarios/verifier/verifier-output-invalid-json.yaml",  # a re-ask, both answers invalid
]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("告警", 2),  # a CJK character is a token
        ("内存使用率过高：", 8),  # full-width punctuation too
        ("memory", 1),  # a word is a token
        ("internationalization", 5),  # 1 + (20 - 6) / 4, rounded up
        ("order logs", 2),  # the space joins the next word
        ("91.0%", 4),  # three digits, two punctuation marks
        ('{"a":', 3),  # one word, four punctuation marks
        ("a\nb", 3),  # a newline is a token
        ("é", 1),  # any other character is one
        ("", 0),
    ],
)
def test_each_kind_of_character_counts_as_the_rule_says(text: str, tokens: int) -> None:
    assert text_tokens(text) == tokens


def test_a_request_counts_its_messages_calls_and_tools() -> None:
    # Counted in quarter tokens: a word, digit or CJK character 4, a letter beyond six 1, an
    # ASCII punctuation mark 2; a message 16 more, a tool call 16, a tool 40.
    body: dict[str, Any] = {
        "model": "not counted",
        "messages": [
            {"role": "system", "content": "告警"},  # 16 + 4 + 8 = 28
            {
                "role": "assistant",  # 16 + 4 + 3
                "content": None,
                # 16 + query_logs (4 + 4 + 2) + {"k": 1} (k 4, 1 4, five marks 10) = 44
                "tool_calls": [{"function": {"name": "query_logs", "arguments": '{"k": 1}'}}],
            },
        ],
        # 40 + query_logs 10 + {"type": "object"} (two words 8, seven marks 14) = 72
        "tools": [
            {
                "type": "function",
                "function": {"name": "query_logs", "parameters": {"type": "object"}},
            }
        ],
    }
    assert prompt_tokens("", body) == -(-(28 + 23 + 44 + 72) // 4) == 42
    assert estimated_tokens(body["messages"][1]) == -(-44 // 4) == 11


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_the_estimate_is_deterministic_and_never_shrinks_as_text_grows(a: str, b: str) -> None:
    assert text_tokens(a) == text_tokens(a)
    assert text_tokens(a + "\n" + b) >= max(text_tokens(a), text_tokens(b))


def _recorded() -> list[tuple[dict[str, Any], dict[str, Any], dict[str, int]]]:
    rows = []
    for path in LIVE_CASSETTES:
        for interaction in yaml.safe_load(path.read_text("utf-8"))["interactions"]:
            answer = json.loads(interaction["response"]["body"]["string"])
            body = json.loads(interaction["request"]["body"])
            rows.append((body, answer["choices"][0]["message"], answer["usage"]))
    return rows


def _as_the_local_server_shows(body: dict[str, Any]) -> dict[str, Any]:
    """The request as the recording's server read it: the evidence contract named without its
    parameters (``local.chat.LATE_FUNCTIONS``: the grammar holds them)."""
    tools = [
        {**tool, "function": {**tool["function"], "parameters": {}}}
        if tool["function"]["name"] in LATE_FUNCTIONS
        else tool
        for tool in body.get("tools") or []
    ]
    return {**body, "tools": tools} if tools else body


def test_the_estimate_is_right_on_average_and_within_a_third_of_every_recorded_request() -> None:
    # The real counts of Gemma 3 270M on the requests the suite's live scenarios sent; one
    # token per four characters of JSON was 1.31-2.13x short of them. Since the local server
    # prompts in Gemma's own template (the system prompt folded into the first user turn, the
    # tools described there), a single request's ratio ranges wider (prompts 0.88-1.29; answers
    # 0.63-1.59, the highest a runaway list of one repeated word), the mean stays near 1
    # (benchmarks/README.md, bench_token_estimate.py). Re-recorded after the ids became names
    # (288 requests): prompts 0.88-1.03, mean 0.97; answers 0.53-1.38, mean 1.03, the lowest a
    # contract of long CJK claim texts (450 tokens where four characters a token expects 852).
    # The lowest prompt since 2026-12-04 (0.83) is a verifier request carrying a contract cut at
    # max_tokens as raw text: JSON escaped inside JSON, whose backslashes cost few real tokens.
    # Since 2026-12-05 the server names the evidence contract without its parameters, so the
    # estimate is of the request as it read it.
    rows = _recorded()
    assert len(rows) > 100
    prompts = [
        usage["prompt_tokens"] / prompt_tokens("", _as_the_local_server_shows(body))
        for body, _, usage in rows
    ]
    answers = [usage["completion_tokens"] / estimated_tokens(message) for _, message, usage in rows]
    assert 0.95 <= sum(prompts) / len(prompts) <= 1.05
    assert 0.9 <= sum(answers) / len(answers) <= 1.15
    assert 0.8 <= min(prompts) <= max(prompts) <= 1.35
    assert 0.5 <= min(answers) <= max(answers) <= 1.65


@pytest.mark.parametrize("relative", SCRIPTED)
def test_every_real_request_of_a_scripted_run_is_counted_by_the_estimate(relative: str) -> None:
    path = REPO / relative
    scenario = load_scenario(path)
    assert scenario.llm is not None
    assert scenario.llm.script is not None
    usage = TokenUsage()
    llm, transport = scripted_llm(scenario.llm.script, wrap=lambda inner: UsageMeter(inner, usage))
    with llm:
        ChatService().run(scenario.query, load_scenario_world(scenario, path), llm)
    transport.assert_exhausted()

    requests = transport.requests
    assert len(requests) >= 3
    assert usage.total.prompt_tokens == sum(prompt_tokens("", r.body) for r in requests)
    assert usage.total.requests == len(requests)
