"""The scripted model's prompt tokens, read off the request's length, equal the estimate of
the request's messages and tools serialised again (what they were computed as before)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.scripted.model import scripted_llm
from pytest_diageval.agents.scripted.token_estimate import estimated_tokens, prompt_tokens
from pytest_diageval.agents.usage import TokenUsage, UsageMeter
from pytest_diageval.harness.format.loader import load_scenario, load_scenario_world

REPO = Path(__file__).resolve().parents[3]
SCRIPTED = [
    "scenarios/matrix/02-highmemory-positive.yaml",  # planner, executor tool loop, verifier
    "scenarios/routing/low-confid-retry-then-disclaimer.yaml",  # two rounds
    "scenarios/verifier/verifier-output-invalid-json.yaml",  # a re-ask, both answers invalid
]


def _reserialised(body: dict[str, Any]) -> int:
    """The estimate as the scripted model computed it before: messages and tools re-dumped."""
    return estimated_tokens({key: body.get(key) for key in ("messages", "tools")})


def _sdk_text(body: dict[str, Any]) -> str:
    """The request as the openai SDK writes it (``openai._utils._json.openapi_dumps``)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    body=st.dictionaries(
        st.sampled_from(["messages", "tools", "model", "tool_choice", "max_tokens", "年"])
        | st.text(max_size=8),
        json_values,
        max_size=7,
    )
)
def test_the_length_rule_equals_the_reserialised_estimate(body: dict[str, Any]) -> None:
    text = _sdk_text(body)
    assert prompt_tokens(text, json.loads(text)) == _reserialised(body)


def test_the_rule_counts_characters_not_bytes_and_absent_members_as_null() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": '告警\n"x"'}]}
    text = _sdk_text(body)
    expected = '{"messages":[{"content":"告警\\n\\"x\\"","role":"user"}],"tools":null}'
    assert prompt_tokens(text, body) == -(-len(expected) // 4) == 17
    assert prompt_tokens("{}", {}) == estimated_tokens({"messages": None, "tools": None})


@pytest.mark.parametrize("relative", SCRIPTED)
def test_every_real_request_is_estimated_as_before(relative: str) -> None:
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
    for request in requests:
        text = request.content.decode("utf-8")
        assert text == _sdk_text(request.body)  # what the length rule relies on
        assert prompt_tokens(text, request.body) == _reserialised(request.body)
    assert usage.total.prompt_tokens == sum(_reserialised(r.body) for r in requests)
    assert usage.total.requests == len(requests)
