"""The LLM facade: call counts, headers, determinism and failures, over real clients."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from openai.types.chat import ChatCompletionMessage
from pydantic import BaseModel, ValidationError

from pytest_diageval.agents.llm import (
    CUT_OFF_REASON,
    LLM,
    LLMConfig,
    LLMUnavailable,
    StructuredOutputError,
    assistant_message,
    stage_headers,
    tool_result_message,
)
from pytest_diageval.agents.scripted.model import (
    SCRIPTED_BASE_URL,
    ScriptedTransport,
    ScriptError,
    scripted_llm,
)

QUERY = [
    {"role": "system", "content": "你是证据收集器。"},
    {"role": "user", "content": "只确认 order-service 是否存在 HighMemoryUsage 告警"},
]
GOOD_PLAN = {"plan": "确认告警", "steps": ["查询告警", "查询日志"]}
QUERY_ALERTS_TOOL = {
    "type": "function",
    "function": {"name": "query_metrics", "parameters": {"type": "object", "properties": {}}},
}


class Plan(BaseModel):
    plan: str
    steps: list[str]


def _config(**overrides: object) -> LLMConfig:
    values: dict[str, object] = {
        "base_url": SCRIPTED_BASE_URL,
        "model": "qwen-test",
        "api_key": "test-key",
        "max_retries": 0,
    }
    values.update(overrides)
    return LLMConfig.model_validate(values)


# ------------------------------------------------------------------ small pieces


def test_stage_headers() -> None:
    assert stage_headers("verifier", 2) == {"X-Diageval-Stage": "verifier", "X-Diageval-Round": "2"}


def test_stage_headers_reject_unknown_stage() -> None:
    with pytest.raises(
        ValueError, match="stage must be one of planner, executor, verifier, grader; got 'judge'"
    ):
        stage_headers("judge", 1)


def test_config_requires_an_api_key_so_the_environment_never_fills_it_in() -> None:
    with pytest.raises(ValidationError, match="api_key"):
        LLMConfig(base_url=SCRIPTED_BASE_URL, model="m", api_key="")


def test_config_hides_the_key_in_repr() -> None:
    assert "secret-key" not in repr(_config(api_key="secret-key"))


def test_tool_result_message_uses_stable_json() -> None:
    message = tool_result_message(
        "call_2", {"source_invocation_id": 3, "evidence_refs": ["堆内存"]}
    )
    assert message == {
        "role": "tool",
        "tool_call_id": "call_2",
        "content": '{"evidence_refs":["堆内存"],"source_invocation_id":3}',
    }


def test_assistant_message_keeps_only_what_the_next_request_needs() -> None:
    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "query_logs", "arguments": '{"service": "x"}'},
                }
            ],
        }
    )
    assert assistant_message(message) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "query_logs", "arguments": '{"service": "x"}'},
            }
        ],
    }


# ------------------------------------------------------------------ structured output


def test_good_structured_answer_costs_one_call() -> None:
    llm, transport = scripted_llm([{"stage": "planner", "content": GOOD_PLAN}])
    plan = llm.structured(Plan, QUERY, stage="planner", round=1)
    assert plan.model_dump() == GOOD_PLAN
    assert len(transport.requests) == 1
    transport.assert_exhausted()


def test_malformed_then_good_costs_two_calls_and_succeeds() -> None:
    llm, transport = scripted_llm(
        [{"stage": "planner", "raw": "计划：先查告警"}, {"stage": "planner", "content": GOOD_PLAN}]
    )
    plan = llm.structured(Plan, QUERY, stage="planner", round=1)
    assert plan.model_dump() == GOOD_PLAN
    assert len(transport.requests) == 2
    reask = transport.requests[1].body["messages"]
    assert reask[: len(QUERY)] == QUERY
    assert reask[len(QUERY)] == {"role": "assistant", "content": "计划：先查告警"}
    assert reask[len(QUERY) + 1]["role"] == "user"
    assert reask[len(QUERY) + 1]["content"].startswith("Validation Error found:")


def test_malformed_function_arguments_are_re_asked_once_with_the_exact_text() -> None:
    broken = '{"plan": "确认告警", "steps": ["查告警",'
    llm, transport = scripted_llm(
        [
            {"stage": "planner", "raw_arguments": broken},
            {"stage": "planner", "content": GOOD_PLAN},
        ]
    )
    plan = llm.structured(Plan, QUERY, stage="planner", round=1)
    assert plan.model_dump() == GOOD_PLAN
    assert len(transport.requests) == 2
    reask = transport.requests[1].body["messages"]
    assert reask[: len(QUERY)] == QUERY
    call = reask[len(QUERY)]["tool_calls"][0]
    assert (call["id"], call["function"]) == (
        "call_forced_1",
        {"name": "Plan", "arguments": broken},
    )
    answer = reask[len(QUERY) + 1]
    assert (answer["role"], answer["tool_call_id"]) == ("tool", "call_forced_1")
    assert "Validation Error found:" in answer["content"]
    transport.assert_exhausted()


def test_two_malformed_answers_fail_after_exactly_two_calls() -> None:
    llm, transport = scripted_llm(
        [
            {"stage": "verifier", "raw": "PASS"},
            {"stage": "verifier", "content": {"plan": "缺 steps"}},
        ]
    )
    with pytest.raises(StructuredOutputError) as excinfo:
        llm.structured(Plan, QUERY, stage="verifier", round=2)
    error = excinfo.value
    assert (error.attempts, error.stage, error.round) == (2, "verifier", 2)
    assert error.response_model == "Plan"
    assert error.last_raw == '{"plan":"缺 steps"}'
    assert "steps" in error.detail
    assert str(error).startswith(
        "Plan output of verifier (round 2) still invalid after 2 attempt(s):"
    )
    assert len(transport.requests) == 2
    transport.assert_exhausted()


def test_structured_retries_are_configurable() -> None:
    llm, transport = scripted_llm(
        [{"stage": "planner", "raw": "x"}], config=_config(structured_max_retries=0)
    )
    with pytest.raises(StructuredOutputError) as excinfo:
        llm.structured(Plan, QUERY, stage="planner", round=1)
    assert (excinfo.value.attempts, excinfo.value.last_raw) == (1, "x")
    assert len(transport.requests) == 1


def test_script_error_surfaces_as_itself_not_as_an_unavailable_model() -> None:
    # SDK retries on: a ScriptError must still be neither retried nor wrapped.
    llm, transport = scripted_llm([{"stage": "planner", "raw": "x"}], config=_config(max_retries=2))
    with pytest.raises(ScriptError, match="expects stage 'planner'"):
        llm.structured(Plan, QUERY, stage="verifier", round=1)
    assert len(transport.requests) == 1


# ------------------------------------------------------------------ headers and determinism


def _one_run() -> ScriptedTransport:
    """Planner → executor tool loop → verifier with one re-ask, as the agents will do it."""
    llm, transport = scripted_llm(
        [
            {"stage": "planner", "content": GOOD_PLAN},
            {
                "stage": "executor",
                "tool_calls": [
                    {"name": "query_metrics", "arguments": {"service": "order-service"}}
                ],
            },
            {"stage": "executor", "content": {"claims": [], "user_facing_answer": "存在"}},
            {"stage": "verifier", "raw": "不是 JSON"},
            {"stage": "verifier", "content": GOOD_PLAN},
        ]
    )
    llm.structured(Plan, QUERY, stage="planner", round=1)
    messages: list[dict[str, object]] = [dict(message) for message in QUERY]
    first = llm.chat(messages, stage="executor", round=1, tools=[QUERY_ALERTS_TOOL])
    reply = first.choices[0].message
    messages.append(assistant_message(reply))
    for call in reply.tool_calls or []:
        messages.append(
            tool_result_message(call.id, {"source_invocation_id": 1, "告警": "HighMemoryUsage"})
        )
    llm.chat(messages, stage="executor", round=1, tools=[QUERY_ALERTS_TOOL])
    llm.structured(Plan, QUERY, stage="verifier", round=1)
    transport.assert_exhausted()
    return transport


def test_every_request_carries_stage_and_round_headers() -> None:
    transport = _one_run()
    assert [(r.stage, r.headers["x-diageval-round"]) for r in transport.requests] == [
        ("planner", "1"),
        ("executor", "1"),
        ("executor", "1"),
        ("verifier", "1"),
        ("verifier", "1"),
    ]


def test_two_identical_runs_send_byte_identical_requests() -> None:
    first, second = _one_run(), _one_run()
    assert [r.content for r in first.requests] == [r.content for r in second.requests]
    assert [r.headers for r in first.requests] == [r.headers for r in second.requests]
    # The tool result really reached the model, serialised with stable_json.
    executor_second = json.loads(first.requests[2].content)["messages"]
    assert executor_second[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"source_invocation_id":1,"告警":"HighMemoryUsage"}',
    }
    assert "告警" in first.requests[2].content.decode("utf-8")  # ensure_ascii=False on the wire


# ------------------------------------------------------------------ unavailable model


def _failing_llm(handler: httpx2.MockTransport, **overrides: object) -> LLM:
    return LLM(_config(**overrides), transport=handler)


def _server_error(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(500, json={"error": {"message": "model overloaded"}})


def _timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("read timed out", request=request)


def _completion(request: httpx2.Request, choices: list[dict[str, Any]]) -> httpx2.Response:
    """A 200 chat completion for ``request`` with exactly these choices."""
    model = json.loads(request.content)["model"]
    envelope = {"id": "x", "object": "chat.completion", "created": 0, "model": model}
    return httpx2.Response(200, json={**envelope, "choices": choices})


def _empty_choices(request: httpx2.Request) -> httpx2.Response:
    return _completion(request, [])


@pytest.mark.parametrize(
    ("handler", "detail"),
    [
        (_server_error, "HTTP 500"),
        (_timeout, "timed out after 60.0s"),
        (_empty_choices, "the response has no choices"),
    ],
)
def test_chat_raises_llm_unavailable(handler: object, detail: str) -> None:
    llm = _failing_llm(httpx2.MockTransport(handler))  # type: ignore[arg-type]
    with pytest.raises(LLMUnavailable, match=detail) as excinfo:
        llm.chat(QUERY, stage="executor", round=1)
    assert (excinfo.value.stage, excinfo.value.round) == ("executor", 1)
    assert str(excinfo.value).startswith("LLM unavailable (executor, round 1): ")


@pytest.mark.parametrize(
    ("handler", "detail"),
    [
        (_server_error, "HTTP 500"),
        (_timeout, "timed out after 60.0s"),
        (_empty_choices, "the response has no choices"),
    ],
)
def test_structured_raises_llm_unavailable_after_one_call(handler: object, detail: str) -> None:
    seen: list[httpx2.Request] = []

    def counting(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return handler(request)  # type: ignore[operator,no-any-return]

    llm = _failing_llm(httpx2.MockTransport(counting))
    with pytest.raises(LLMUnavailable, match=detail):
        llm.structured(Plan, QUERY, stage="planner", round=1)
    assert len(seen) == 1


def test_sdk_retries_server_errors_and_says_so_in_a_header() -> None:
    seen: list[httpx2.Request] = []

    def overloaded(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        # retry-after-ms keeps the SDK's back-off sleep at one millisecond.
        return httpx2.Response(503, headers={"retry-after-ms": "1"}, json={"error": {}})

    llm = _failing_llm(httpx2.MockTransport(overloaded), max_retries=1)
    with pytest.raises(LLMUnavailable, match=r"HTTP 503: .*\(SDK retries: 1\)"):
        llm.chat(QUERY, stage="executor", round=1)
    assert [r.headers["x-stainless-retry-count"] for r in seen] == ["0", "1"]
    assert seen[0].content == seen[1].content


def _cut_at_max_tokens(request: httpx2.Request) -> httpx2.Response:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "Plan", "arguments": '{"plan": "确认告'},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return _completion(request, [{"index": 0, "finish_reason": "length", "message": message}])


def test_an_answer_cut_at_max_tokens_is_re_asked_like_any_invalid_answer() -> None:
    # Recorded: 5 of 16 verifier calls were cut at max_tokens and never re-asked.
    seen: list[httpx2.Request] = []

    def counting(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return _cut_at_max_tokens(request)

    llm = _failing_llm(httpx2.MockTransport(counting), structured_max_retries=3)
    reasks: list[str] = []
    with pytest.raises(StructuredOutputError) as excinfo:
        llm.structured(Plan, QUERY, stage="planner", round=1, reasks=reasks)
    assert (excinfo.value.attempts, excinfo.value.last_raw) == (4, '{"plan": "确认告')
    assert excinfo.value.detail == CUT_OFF_REASON
    assert "cut off at max_tokens (finish_reason length)" in str(excinfo.value)
    assert len(seen) == 4
    assert reasks == [f"attempt {n}: {CUT_OFF_REASON}" for n in (1, 2, 3)]
    # The re-ask is instructor's: the cut call, then the reason as that call's tool answer.
    reask = json.loads(seen[1].content)["messages"]
    assert reask[len(QUERY)]["tool_calls"][0]["function"]["arguments"] == '{"plan": "确认告'
    assert reask[len(QUERY) + 1]["role"] == "tool"
    assert CUT_OFF_REASON in reask[len(QUERY) + 1]["content"]


def test_a_cut_answer_then_a_good_one_costs_two_calls_and_the_reask_is_kept() -> None:
    llm, transport = scripted_llm(
        [
            {"stage": "verifier", "raw_arguments": '{"plan": "确认告', "finish_reason": "length"},
            {"stage": "verifier", "content": GOOD_PLAN},
        ]
    )
    reasks: list[str] = []
    plan = llm.structured(Plan, QUERY, stage="verifier", round=1, reasks=reasks)
    assert plan.model_dump() == GOOD_PLAN
    assert reasks == [f"attempt 1: {CUT_OFF_REASON}"]
    assert len(transport.requests) == 2
    transport.assert_exhausted()


def test_a_refusal_is_still_never_re_asked() -> None:
    seen: list[httpx2.Request] = []

    def refusing(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        message = {"role": "assistant", "content": None, "refusal": "不能回答"}
        return _completion(request, [{"index": 0, "finish_reason": "stop", "message": message}])

    llm = _failing_llm(httpx2.MockTransport(refusing), structured_max_retries=3)
    with pytest.raises(StructuredOutputError, match="不能回答"):
        llm.structured(Plan, QUERY, stage="planner", round=1)
    assert len(seen) == 1


def test_parameters_replace_only_the_forced_functions_schema() -> None:
    narrowed = {"type": "object", "properties": {"plan": {"type": "string", "enum": ["a"]}}}
    llm, transport = scripted_llm(
        [{"stage": "planner", "content": GOOD_PLAN}, {"stage": "planner", "content": GOOD_PLAN}]
    )
    llm.structured(Plan, QUERY, stage="planner", round=1)
    llm.structured(Plan, QUERY, stage="planner", round=1, parameters=narrowed)
    generic, constrained = (request.body for request in transport.requests)
    assert constrained["tools"][0]["function"]["parameters"] == narrowed
    assert generic["tools"][0]["function"]["parameters"] != narrowed
    generic["tools"][0]["function"]["parameters"] = narrowed
    # max_tokens follows the schema sent: the narrowed one admits `{"plan": "a"}` at most.
    assert (generic.pop("max_tokens"), constrained.pop("max_tokens")) == (255, 15)
    assert constrained == generic  # name, description, tool_choice and the rest unchanged
