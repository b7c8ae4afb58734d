"""The scripted model under the real openai client and instructor."""

from __future__ import annotations

import json

import instructor
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall
from pydantic import BaseModel

from pytest_diageval.agents.llm import STAGE_MAX_TOKENS, LLMConfig, make_openai_client
from pytest_diageval.agents.scripted.model import (
    SCRIPTED_BASE_URL,
    ScriptedTransport,
    ScriptError,
    ScriptFormatError,
    parse_script,
    scripted_llm,
)

USER = [{"role": "user", "content": "order-service 内存告警是否存在？"}]
QUERY_LOGS_TOOL = {
    "type": "function",
    "function": {"name": "query_logs", "parameters": {"type": "object", "properties": {}}},
}


class Plan(BaseModel):
    plan: str
    steps: list[str]


# ------------------------------------------------------------------ script format


def test_entry_with_two_answers_is_rejected_with_entry_number() -> None:
    with pytest.raises(ScriptFormatError) as excinfo:
        parse_script(
            [
                {"stage": "planner", "raw": "x"},
                {"stage": "executor", "raw": "x", "content": {"a": 1}},
            ],
            source="scenarios/memory.yaml",
        )
    assert str(excinfo.value) == (
        "scenarios/memory.yaml: entry 2 (1-based): an entry needs exactly one of content, "
        "tool_calls, raw, raw_arguments (found: content, raw)"
    )


def test_entry_without_answer_is_rejected() -> None:
    with pytest.raises(ScriptFormatError, match=r"entry 1 \(1-based\).*\(found: none\)"):
        parse_script([{"stage": "verifier"}])


def test_unknown_stage_names_field_and_allowed_values() -> None:
    with pytest.raises(ScriptFormatError) as excinfo:
        parse_script([{"stage": "judge", "raw": "x"}])
    message = str(excinfo.value)
    assert message.startswith("script: entry 1 (1-based): stage: ")
    assert "'planner', 'executor', 'verifier' or 'grader'" in message


def test_tool_call_field_path_is_named() -> None:
    with pytest.raises(ScriptFormatError) as excinfo:
        parse_script([{"stage": "executor", "tool_calls": [{"name": "query_logs", "args": {}}]}])
    assert "tool_calls.0.args: Extra inputs are not permitted" in str(excinfo.value)


def test_content_must_be_a_mapping() -> None:
    with pytest.raises(ScriptFormatError, match=r"content: Input should be a valid dictionary"):
        parse_script([{"stage": "planner", "content": ["not", "a", "mapping"]}])


# ------------------------------------------------------------------ answers


def test_content_without_forced_function_is_stable_json_message_content() -> None:
    llm, transport = scripted_llm([{"stage": "executor", "content": {"b": "内存", "a": 1}}])
    completion = llm.chat(USER, stage="executor", round=1, tools=[QUERY_LOGS_TOOL])
    assert completion.id == "chatcmpl-scripted-1"
    assert completion.created == 0
    assert completion.model == "scripted-model"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content == '{"a":1,"b":"内存"}'
    assert completion.choices[0].message.tool_calls is None
    transport.assert_exhausted()


def test_content_becomes_forced_function_arguments_for_instructor() -> None:
    llm, transport = scripted_llm(
        [{"stage": "planner", "content": {"plan": "确认告警", "steps": ["查告警", "查日志"]}}]
    )
    plan = llm.structured(Plan, USER, stage="planner", round=1)
    # model_dump: instructor attaches the raw completion as a private attribute.
    assert plan.model_dump() == {"plan": "确认告警", "steps": ["查告警", "查日志"]}
    body = transport.requests[0].body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Plan"}}
    assert [tool["function"]["name"] for tool in body["tools"]] == ["Plan"]
    raw = plan._raw_response  # type: ignore[attr-defined]
    call = raw.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name) == ("call_forced_1", "Plan")
    assert call.function.arguments == '{"plan":"确认告警","steps":["查告警","查日志"]}'


def test_content_serves_instructor_json_mode_as_message_content() -> None:
    transport = ScriptedTransport([{"stage": "verifier", "content": {"plan": "p", "steps": []}}])
    config = LLMConfig(base_url=SCRIPTED_BASE_URL, model="m", api_key="k", max_retries=0)
    client = instructor.from_openai(
        make_openai_client(config, transport), mode=instructor.Mode.JSON
    )
    plan = client.chat.completions.create(
        model="m",
        response_model=Plan,
        messages=[{"role": "user", "content": "plan"}],
        max_retries=0,
        extra_headers={"X-Diageval-Stage": "verifier", "X-Diageval-Round": "1"},
    )
    assert plan.model_dump() == {"plan": "p", "steps": []}
    assert transport.requests[0].body["response_format"] == {"type": "json_object"}


def test_tool_calls_are_numbered_over_the_whole_script() -> None:
    script = [
        {
            "stage": "executor",
            "tool_calls": [
                {"name": "query_metrics", "arguments": {"service": "order-service"}},
                {"name": "query_logs", "arguments": {"service": "order-service", "level": "错误"}},
            ],
        },
        {"stage": "executor", "tool_calls": [{"name": "get_current_time"}]},
    ]
    llm, transport = scripted_llm(script)
    first = llm.chat(USER, stage="executor", round=1, tools=[QUERY_LOGS_TOOL])
    second = llm.chat(USER, stage="executor", round=1, tools=[QUERY_LOGS_TOOL])
    calls = [*_function_calls(first), *_function_calls(second)]
    assert calls == [
        ("call_1", "query_metrics", '{"service":"order-service"}'),
        ("call_2", "query_logs", '{"level":"错误","service":"order-service"}'),
        ("call_3", "get_current_time", "{}"),
    ]
    assert first.choices[0].finish_reason == "tool_calls"
    transport.assert_exhausted()


def _function_calls(completion: ChatCompletion) -> list[tuple[str, str, str]]:
    return [
        (call.id, call.function.name, call.function.arguments)
        for call in completion.choices[0].message.tool_calls or []
        if isinstance(call, ChatCompletionMessageFunctionToolCall)
    ]


def test_raw_is_returned_verbatim() -> None:
    text = '{"claims": [ 未闭合'
    llm, _ = scripted_llm([{"stage": "executor", "raw": text}])
    completion = llm.chat(USER, stage="executor", round=2)
    assert completion.choices[0].message.content == text


# ------------------------------------------------------------------ script errors


def test_stage_mismatch_names_expected_actual_and_entry() -> None:
    llm, transport = scripted_llm(
        [{"stage": "planner", "raw": "p"}, {"stage": "executor", "raw": "e"}]
    )
    llm.chat(USER, stage="planner", round=1)
    with pytest.raises(ScriptError) as excinfo:
        llm.chat(USER, stage="verifier", round=1)
    assert str(excinfo.value) == (
        "scripted model: entry 2 (1-based) expects stage 'executor', "
        "but the request came from stage 'verifier'"
    )
    assert transport.served == 1


def test_request_after_the_last_entry() -> None:
    llm, _ = scripted_llm([{"stage": "planner", "raw": "p"}])
    llm.chat(USER, stage="planner", round=1)
    with pytest.raises(ScriptError) as excinfo:
        llm.chat(USER, stage="executor", round=1)
    assert str(excinfo.value) == (
        "scripted model: request 2 from stage 'executor' came after the last script entry "
        "(the script has 1 entries; entry 2 (1-based) does not exist)"
    )


def test_unused_entries_are_an_error_at_the_end() -> None:
    llm, transport = scripted_llm(
        [
            {"stage": "planner", "raw": "p"},
            {"stage": "executor", "raw": "e"},
            {"stage": "verifier", "raw": "v"},
        ]
    )
    llm.chat(USER, stage="planner", round=1)
    with pytest.raises(ScriptError) as excinfo:
        transport.assert_exhausted()
    assert str(excinfo.value) == (
        "scripted model: 2 script entries left unused (1-based): entry 2 (stage 'executor'), "
        "entry 3 (stage 'verifier'); expected a request from stage 'executor' next, "
        "but the run made no further request"
    )


def test_assert_exhausted_reraises_an_error_the_caller_swallowed() -> None:
    llm, transport = scripted_llm([{"stage": "planner", "raw": "p"}])
    with pytest.raises(ScriptError):
        llm.chat(USER, stage="verifier", round=1)
    with pytest.raises(ScriptError, match="expects stage 'planner'"):
        transport.assert_exhausted()


def test_only_chat_completions_are_scripted() -> None:
    llm, transport = scripted_llm([{"stage": "planner", "raw": "p"}])
    with pytest.raises(
        ScriptError, match=r"only answers POST …/chat/completions; got GET /v1/models"
    ):
        llm.client.models.list()
    assert transport.served == 0


# ------------------------------------------------------------------ recording


def test_every_request_is_recorded_as_it_arrived() -> None:
    llm, transport = scripted_llm(
        [{"stage": "executor", "raw": "e"}, {"stage": "verifier", "raw": "v"}]
    )
    llm.chat(USER, stage="executor", round=1)
    llm.chat(USER, stage="verifier", round=2)
    first, second = transport.requests
    # A run keeps the text; the parsed body exists only once someone asks for it.
    assert "body" not in vars(first)
    assert (first.method, first.path) == ("POST", "/v1/chat/completions")
    assert (first.stage, first.headers["x-diageval-round"]) == ("executor", "1")
    assert (second.stage, second.headers["x-diageval-round"]) == ("verifier", "2")
    assert first.body == {
        "messages": USER,
        "model": "scripted-model",
        "max_tokens": STAGE_MAX_TOKENS["executor"],
        "temperature": 0.0,
    }
    assert json.loads(first.content) == first.body


def test_raw_arguments_call_the_forced_function_with_exactly_that_text() -> None:
    text = '{"plan": "确认告警", "steps": ["查告警",'  # cut off mid-list
    llm, transport = scripted_llm([{"stage": "planner", "raw_arguments": text}])
    completion = llm.chat(
        USER,
        stage="planner",
        round=1,
        tools=[QUERY_LOGS_TOOL],
        tool_choice={"type": "function", "function": {"name": "query_logs"}},
    )
    assert _function_calls(completion) == [("call_forced_1", "query_logs", text)]
    assert completion.choices[0].message.content is None
    transport.assert_exhausted()


def test_a_tool_calls_text_arguments_are_sent_exactly_as_written() -> None:
    """A recorded model's malformed call (cut at max_tokens mid-list) scaffolds to a string."""
    text = '{ "service": "order-service", "keywords": ["HMM", "HMM",'
    llm, transport = scripted_llm(
        [{"stage": "executor", "tool_calls": [{"name": "query_logs", "arguments": text}]}]
    )
    completion = llm.chat(USER, stage="executor", round=1, tools=[QUERY_LOGS_TOOL])
    assert _function_calls(completion) == [("call_1", "query_logs", text)]
    transport.assert_exhausted()


def test_content_and_raw_arguments_call_submit_evidence_contract_when_it_is_offered() -> None:
    submit = {**QUERY_LOGS_TOOL, "function": {**QUERY_LOGS_TOOL["function"]}}
    submit["function"]["name"] = "submit_evidence_contract"
    llm, _ = scripted_llm(
        [
            {"stage": "executor", "content": {"a": 1}, "invalid": True},
            {"stage": "executor", "raw_arguments": "{"},
            {"stage": "executor", "content": {"a": 1}, "invalid": True},
        ]
    )
    offered = [QUERY_LOGS_TOOL, submit]
    first = llm.chat(USER, stage="executor", round=1, tools=offered, tool_choice="required")
    second = llm.chat(USER, stage="executor", round=1, tools=offered, tool_choice="required")
    third = llm.chat(USER, stage="executor", round=1, tools=[QUERY_LOGS_TOOL])
    assert _function_calls(first) == [("call_forced_1", "submit_evidence_contract", '{"a":1}')]
    assert _function_calls(second) == [("call_forced_2", "submit_evidence_contract", "{")]
    assert third.choices[0].message.content == '{"a":1}'  # not offered: message content


def test_finish_reason_length_reports_a_cut_answer_as_the_server_does() -> None:
    text = '{"plan": "确认告'
    llm, transport = scripted_llm(
        [
            {"stage": "planner", "raw_arguments": text, "finish_reason": "length"},
            {"stage": "planner", "raw": "计划：先查", "finish_reason": "length"},
            {"stage": "planner", "raw_arguments": text},
        ]
    )
    forced = {"type": "function", "function": {"name": "query_logs"}}
    answers = [
        llm.chat(USER, stage="planner", round=1, tools=[QUERY_LOGS_TOOL], tool_choice=forced)
        for _ in range(3)
    ]
    assert [a.choices[0].finish_reason for a in answers] == ["length", "length", "stop"]
    assert _function_calls(answers[0]) == [("call_forced_1", "query_logs", text)]
    assert answers[1].choices[0].message.content == "计划：先查"
    transport.assert_exhausted()


@pytest.mark.parametrize(
    "entry",
    [
        {"stage": "planner", "content": {"plan": "p", "steps": []}, "finish_reason": "length"},
        {"stage": "executor", "tool_calls": [{"name": "query_logs"}], "finish_reason": "length"},
    ],
)
def test_finish_reason_length_needs_the_partial_text_of_raw_or_raw_arguments(
    entry: dict[str, object],
) -> None:
    with pytest.raises(ScriptFormatError, match=r"entry 1 .*finish_reason: length marks a cut"):
        parse_script([entry])


def test_finish_reason_takes_only_length() -> None:
    with pytest.raises(ScriptFormatError, match="finish_reason"):
        parse_script([{"stage": "planner", "raw": "x", "finish_reason": "stop"}])


def test_raw_arguments_without_a_forced_function_name_the_entry_and_stage() -> None:
    llm, transport = scripted_llm([{"stage": "executor", "raw_arguments": "{"}])
    with pytest.raises(ScriptError) as excinfo:
        llm.chat(USER, stage="executor", round=1, tools=[QUERY_LOGS_TOOL])
    assert str(excinfo.value) == (
        "scripted model: entry 1 (1-based) has raw_arguments, but the request from stage "
        "'executor' forces no function to call (nor offers submit_evidence_contract)"
    )
    with pytest.raises(ScriptError, match="forces no function"):
        transport.assert_exhausted()
