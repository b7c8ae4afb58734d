"""The shim's chat handler against a stand-in llama: what it asks the model, what it answers.

Needs ``llama_cpp`` (the ``local`` extra) for its grammar class, not the model: the stand-in
records every ``create_completion`` call and answers from a script, so the tests check the
prompts, grammars, token caps and the deadline the handler uses; the model-free logic itself
is tested in ``test_llama_chat.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("llama_cpp", reason="the 'local' extra is not installed")

from pytest_diageval.core.contract.text_bounds import MESSAGE_CHARS
from pytest_diageval.local import shim as llama_shim
from pytest_diageval.local.chat import (
    LAX_STRING_CHAR,
    STRICT_STRING_CHAR,
    message_grammar,
    name_choice_grammar,
    render_prompt,
)

QUERY_LOGS = {
    "type": "function",
    "function": {
        "name": "query_logs",
        "parameters": {
            "type": "object",
            "properties": {
                "service": {"type": "string", "enum": ["order-service"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 3},
            },
            "required": ["service", "limit"],
        },
    },
}
SUBMIT = {"type": "function", "function": {"name": "submit", "parameters": {"type": "object"}}}
MESSAGES = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]


class StandInLlama:
    """Answers each completion with the next scripted text and records the call."""

    verbose = False

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[dict[str, Any]] = []

    def create_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        # llama reports "stop" too when a stopping criterion (the deadline) ended the text.
        return {
            "id": f"cmpl-{len(self.calls)}",
            "created": 1700000000,
            "model": kwargs.get("model") or "/models/gemma.gguf",
            "choices": [{"text": self.texts.pop(0), "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100 + len(self.calls), "completion_tokens": 5},
        }


def grammar_text(call: dict[str, Any]) -> str | None:
    grammar = call["grammar"]
    return None if grammar is None else str(grammar._grammar)


def test_required_picks_a_function_by_grammar_then_generates_bounded_arguments() -> None:
    llama = StandInLlama("functions.query_logs:", '{"service": "order-service", "limit": 2}')
    response = llama_shim.handler(
        llama,
        MESSAGES,
        tools=[QUERY_LOGS, SUBMIT],
        tool_choice="required",
        max_tokens=200,
        temperature=0.0,
        model="gemma3-270m",
    )
    pick, arguments = llama.calls
    prompt = render_prompt(MESSAGES, [QUERY_LOGS, SUBMIT])
    assert pick["prompt"] == prompt
    assert grammar_text(pick) == name_choice_grammar(["query_logs", "submit"], allow_message=False)
    assert pick["max_tokens"] == llama_shim.NAME_CHOICE_TOKENS
    assert arguments["prompt"] == prompt + "functions.query_logs:\n"
    assert arguments["max_tokens"] == 200
    assert arguments["temperature"] == 0.0
    assert arguments["stop"] == ["<end_of_turn>"]
    rules = grammar_text(arguments)
    assert rules is not None
    assert '"1" | "2" | "3"' in rules  # the bounded limit as an enum
    assert response["model"] == "gemma3-270m"
    assert response["choices"][0]["finish_reason"] == "tool_calls"
    assert response["choices"][0]["message"]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {
                "name": "query_logs",
                "arguments": '{"service": "order-service", "limit": 2}',
            },
        }
    ]
    assert response["usage"] == {"prompt_tokens": 102, "completion_tokens": 10, "total_tokens": 112}


def test_auto_may_pick_a_message_which_is_bounded_by_the_message_grammar() -> None:
    llama = StandInLlama("message:", "nothing to call")
    response = llama_shim.handler(llama, MESSAGES, tools=[SUBMIT], max_tokens=None)
    pick, message = llama.calls
    assert grammar_text(pick) == name_choice_grammar(["submit"], allow_message=True)
    assert message["prompt"].endswith("<start_of_turn>model\nmessage:\n")
    assert grammar_text(message) == message_grammar(MESSAGE_CHARS)
    assert message["max_tokens"] == llama_shim.MAX_TOKENS == 2048
    assert response["choices"][0]["message"] == {"role": "assistant", "content": "nothing to call"}


def test_a_named_function_is_generated_at_once_and_max_tokens_is_capped() -> None:
    llama = StandInLlama("{}")
    choice = {"type": "function", "function": {"name": "submit"}}
    response = llama_shim.handler(
        llama, MESSAGES, tools=[QUERY_LOGS, SUBMIT], tool_choice=choice, max_tokens=5000
    )
    (call,) = llama.calls
    assert call["prompt"].endswith("functions.submit:\n")
    assert call["max_tokens"] == 2048
    assert response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "submit"


def test_no_tools_is_a_plain_completion() -> None:
    llama = StandInLlama("hello")
    response = llama_shim.handler(llama, MESSAGES, tools=[SUBMIT], tool_choice="none")
    (call,) = llama.calls
    assert call["prompt"] == render_prompt(MESSAGES, None)
    assert grammar_text(call) == message_grammar(MESSAGE_CHARS)
    assert response["choices"][0]["message"]["content"] == "hello"


def test_past_the_deadline_generation_stops_and_the_answer_says_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(llama_shim, "GENERATION_TIMEOUT", 0.0)
    llama = StandInLlama("functions.subm", '{"a": ')
    response = llama_shim.handler(
        llama, MESSAGES, tools=[QUERY_LOGS, SUBMIT], tool_choice="required"
    )
    assert all(call["stopping_criteria"](None, None) for call in llama.calls)
    choice = response["choices"][0]
    assert choice["finish_reason"] == "length"
    assert choice["message"]["tool_calls"][0]["function"] == {
        "name": "query_logs",
        "arguments": '{"a": ',
    }


def test_within_the_deadline_the_stopping_criterion_lets_generation_go_on() -> None:
    llama = StandInLlama("hi")
    llama_shim.handler(llama, MESSAGES)
    assert llama.calls[0]["stopping_criteria"](None, None) is False


def test_streaming_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="does not stream"):
        llama_shim.handler(StandInLlama(), MESSAGES, stream=True)


def test_the_server_accepts_openais_json_schema_response_format() -> None:
    from llama_cpp.server.types import CreateChatCompletionRequest

    response_format = {"type": "json_schema", "json_schema": {"name": "a", "schema": {}}}
    request = CreateChatCompletionRequest(messages=MESSAGES, response_format=response_format)
    assert request.response_format == response_format


def test_a_json_schema_response_format_constrains_the_plain_completion() -> None:
    llama = StandInLlama('{"ok": true}')
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    response_format = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
    llama_shim.handler(llama, MESSAGES, response_format=response_format)
    rules = grammar_text(llama.calls[0])
    assert rules is not None
    assert 'ok-kv ::= "\\"ok\\"" space ":" space boolean' in rules


# The verifier's tool (cassettes/live-hikaricp-negative.yaml), cut to what the grammar needs.
VERIFIER = {
    "type": "function",
    "function": {
        "name": "VerifierOutput",
        "parameters": {
            "type": "object",
            "properties": {
                "verdict": {"type": "string", "enum": ["PASS", "LOW_CONFID", "REJECT"]},
                "groundedness_score": {"type": "number", "minimum": 0.0, "maximum": 1.0},
                "detail": {"type": "string", "maxLength": 200},
                "rationale": {"type": "string"},
            },
            "required": ["verdict", "groundedness_score", "detail", "rationale"],
        },
    },
}
VERIFIER_CHOICE = {"type": "function", "function": {"name": "VerifierOutput"}}


def verifier_arguments_grammar() -> str:
    llama = StandInLlama('{"verdict": "PASS"}')
    llama_shim.handler(llama, MESSAGES, tools=[VERIFIER], tool_choice=VERIFIER_CHOICE)
    rules = grammar_text(llama.calls[0])
    assert rules is not None
    return rules


def test_argument_strings_take_json_string_characters_only() -> None:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    # The converter's own strings take any character but `"` and `\`, a raw newline too: a
    # recorded verifier answer held one and its arguments were not JSON.
    parameters = json.dumps(VERIFIER["function"]["parameters"])
    assert LAX_STRING_CHAR in json_schema_to_gbnf(parameters)
    rules = verifier_arguments_grammar()
    assert LAX_STRING_CHAR not in rules
    assert f"text-char ::= {STRICT_STRING_CHAR}" in rules.splitlines()
    # Every string of the verifier's is free text: each its bound, all of one character rule.
    assert "detail ::= text-96" in rules.splitlines()
    assert "rationale ::= text-128" in rules.splitlines()
    assert " char" not in rules.replace("text-char", "")


def test_a_score_within_0_and_1_takes_only_the_tenths() -> None:
    rules = verifier_arguments_grammar().splitlines()
    tenths = " | ".join(f'"{step / 10}"' for step in range(11))
    assert f"groundedness-score ::= {tenths}" in rules
