"""Response models are prepared for instructor once per process, and the requests stay what
instructor itself sends for the plain model, byte for byte (a re-ask included)."""

from __future__ import annotations

from typing import Any

import instructor
from pydantic import BaseModel, Field

from pytest_diageval.agents.llm import instructor_model
from pytest_diageval.agents.scripted.model import ScriptedTransport, scripted_llm
from pytest_diageval.agents.structured_output import structured_request
from pytest_diageval.core.contract.text_bounds import answer_char_bound

QUERY = [
    {"role": "system", "content": "你是计划员。"},
    {"role": "user", "content": "只确认 order-service 是否存在 HighMemoryUsage 告警"},
]
GOOD = {"plan": "确认告警", "steps": ["查询告警"]}
SCRIPT: list[dict[str, Any]] = [
    {"stage": "planner", "raw_arguments": '{"plan": "确认告警", "steps": ['},
    {"stage": "planner", "content": GOOD},
]


class Plan(BaseModel):
    """A plan.

    Args:
        plan: what to look at (described by the docstring, as instructor reads it).
    """

    plan: str
    steps: list[str] = Field(default_factory=list, description="evidence tools in order")


def _through_facade() -> ScriptedTransport:
    llm, transport = scripted_llm(SCRIPT)
    with llm:
        assert llm.structured(Plan, QUERY, stage="planner", round=1).model_dump() == GOOD
    return transport


def prepared_parameters() -> dict[str, Any]:
    """The parameters schema the facade sends for Plan."""
    _, additions = structured_request(Plan)
    return dict(additions["tools"][0]["function"]["parameters"])


def _through_plain_instructor() -> ScriptedTransport:
    """What instructor's own client sends when handed the plain model."""
    llm, transport = scripted_llm(SCRIPT)
    with llm:
        client = instructor.from_openai(llm.client, mode=instructor.Mode.TOOLS)
        answer = client.chat.completions.create(
            response_model=Plan,
            messages=QUERY,
            max_retries=1,
            model=llm.config.model,
            temperature=0.0,
            # What the facade sends by default: the longest answer Plan's schema admits.
            max_tokens=answer_char_bound(prepared_parameters()),
            extra_headers={"X-Diageval-Stage": "planner", "X-Diageval-Round": "1"},
        )
    assert answer.model_dump() == GOOD
    return transport


def test_a_response_model_is_prepared_once_and_kept() -> None:
    prepared = instructor_model(Plan)

    assert instructor_model(Plan) is prepared
    assert issubclass(prepared, Plan)
    assert prepared.__name__ == "Plan"


def test_requests_are_byte_identical_to_instructors_own_for_the_plain_model() -> None:
    facade, plain = _through_facade(), _through_plain_instructor()
    again = _through_facade()

    assert len(facade.requests) == 2  # the answer and its re-ask
    assert [r.content for r in facade.requests] == [r.content for r in plain.requests]
    assert [r.content for r in again.requests] == [r.content for r in facade.requests]
    tool = facade.requests[0].body["tools"][0]["function"]
    assert tool["name"] == "Plan"
    assert tool["parameters"]["properties"]["plan"]["description"].startswith("what to look")
    assert tool["parameters"]["required"] == ["plan"]
