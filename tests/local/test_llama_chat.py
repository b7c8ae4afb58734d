"""The local server's chat logic without llama.cpp: prompt, tool choice, grammars, response."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_diageval.local.chat import (
    DEFAULT_GENERATION_TIMEOUT,
    LAX_STRING_CHAR,
    MAX_ENUM_RANGE,
    STRICT_STRING_CHAR,
    Envelope,
    ToolPlan,
    bounded_grammar,
    bounded_text_rules,
    grammar_schema,
    message_grammar,
    message_response,
    name_choice_grammar,
    parse_choice,
    plan_tool_choice,
    render_prompt,
    strict_string_grammar,
    text_of,
    timeout_from_env,
    tool_call_response,
)
from support.chat_messages import tool_conversation

QUERY_LOGS_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "enum": ["order-service", "payment-service"]},
        "limit": {"type": "integer", "minimum": 1, "maximum": 200, "description": "行数"},
    },
    "required": ["service"],
}
QUERY_LOGS = {
    "type": "function",
    "function": {"name": "query_logs", "description": "logs", "parameters": QUERY_LOGS_PARAMETERS},
}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "submit", "arguments": "{}"},
}
SUBMIT = {
    "type": "function",
    "function": {"name": "submit", "parameters": {"type": "object", "properties": {}}},
}

# ------------------------------------------------------------------ prompt


FORMAT_TEXT = (
    "\nRespond with either one message or one function call."
    "\n\nTo respond with a message, begin with 'message:':\n\nmessage:\n<message>"
    "\n\nTo call a function, begin with 'functions.<function_name>:' and give its arguments"
    ' as JSON:\n\nfunctions.<function_name>:\n{ "arg1": "value1", "arg2": "value2" }'
)


def test_prompt_opens_the_first_user_turn_with_system_text_and_described_tools() -> None:
    messages = tool_conversation(
        "查 <user_query> & 证据", "order-service 告警?\n", "ERROR <OOM> in order-service"
    )
    parameters = json.dumps(QUERY_LOGS_PARAMETERS, ensure_ascii=False)
    assert render_prompt(messages, [QUERY_LOGS, SUBMIT]) == (
        "<start_of_turn>user\n查 <user_query> & 证据"
        "\n\nYou have access to the following functions:\n"
        f"\nfunctions.query_logs:\nlogs\nParameters: {parameters}\n"
        '\nfunctions.submit:\nParameters: {"type": "object", "properties": {}}\n'
        f"{FORMAT_TEXT}"
        "\n\norder-service 告警?<end_of_turn>\n"  # Gemma's template trims each message
        '<start_of_turn>model\nfunctions.query_logs:\n{"service": "order-service"}<end_of_turn>\n'
        "<start_of_turn>user\nERROR <OOM> in order-service<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    assert '"行数"' in parameters  # not \\u-escaped: the model reads the Chinese description


def _contract(cited: list[int]) -> dict[str, Any]:
    """The evidence contract's function, its schema listing the calls it may cite."""
    parameters = {"type": "object", "properties": {"id": {"type": "integer", "enum": cited}}}
    return {
        "type": "function",
        "function": {"name": "submit_evidence_contract", "parameters": parameters},
    }


def test_the_contract_is_described_last_so_a_turn_extends_the_previous_turns_prompt() -> None:
    first = tool_conversation("S", "q", "ERROR in order-service")[:2]
    later = tool_conversation("S", "q", "ERROR in order-service")
    before = render_prompt(first, [QUERY_LOGS, _contract([])])
    after = render_prompt(later, [QUERY_LOGS, _contract([1])])
    contract = "functions.submit_evidence_contract:"
    assert before.endswith(
        f"q\n\nYou also have access to this function:\n\n{contract}"
        "<end_of_turn>\n<start_of_turn>model\n"
    )
    assert '"enum": []' not in before  # the grammar holds the schema; the prompt need not
    assert after.count(contract) == 1
    assert after.index(contract) > after.index("ERROR in order-service")
    # Everything before the contract's description is a prefix of the next turn's prompt:
    # llama.cpp reads only the new turns and the contract again.
    assert after.startswith(before[: before.index("\n\nYou also have access")])
    assert "functions.query_logs:" in before[: before.index("q\n\nYou also")]


def test_a_prompt_offering_only_the_contract_lists_it_last() -> None:
    prompt = render_prompt([{"role": "user", "content": "q"}], [_contract([1])])
    assert prompt.index("You have access to the following functions:") < prompt.index("q\n")
    assert prompt.index("q\n") < prompt.index("functions.submit_evidence_contract:")


def test_prompt_without_tools_follows_gemmas_template() -> None:
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": " answer "},
        {"role": "user", "content": "again"},
    ]
    # The rendering of Gemma 3's tokenizer_config.json chat template for these messages.
    assert render_prompt(messages, None) == (
        "<start_of_turn>user\nS\n\nab<end_of_turn>\n"
        "<start_of_turn>model\nanswer<end_of_turn>\n"
        "<start_of_turn>user\nagain<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_turns_alternate_tool_results_and_later_system_text_join_the_user_turn() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "first"},
        {"role": "tool", "tool_call_id": "call_2", "content": "second"},
        {"role": "system", "content": "hurry"},
        {"role": "user", "content": "next"},
    ]
    prompt = render_prompt(messages, None)
    assert prompt.endswith(
        "<start_of_turn>user\nfirst\n\nsecond\n\nhurry\n\nnext<end_of_turn>\n<start_of_turn>model\n"
    )
    assert "system" not in prompt.replace("hurry", "")  # Gemma has no system role


def test_prompt_with_tools_and_no_system_message_still_describes_them_first() -> None:
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "hello"}]
    prompt = render_prompt(messages, [SUBMIT])
    assert prompt.startswith(
        "<start_of_turn>user\nYou have access to the following functions:\n\nfunctions.submit:\n"
    )
    assert f"{FORMAT_TEXT}\n\nq<end_of_turn>\n" in prompt
    assert "<start_of_turn>model\nmessage:\nhello<end_of_turn>\n" in prompt


def test_a_conversation_opening_with_the_model_gets_a_user_turn_for_the_system_text() -> None:
    messages = [{"role": "system", "content": "S"}, {"role": "assistant", "content": "hi"}]
    assert render_prompt(messages, None) == (
        "<start_of_turn>user\nS<end_of_turn>\n<start_of_turn>model\nhi<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_text_of_content_forms() -> None:
    assert text_of(None) == ""
    assert text_of("x") == "x"
    assert text_of([{"type": "text", "text": "a"}, "junk", {"type": "image_url"}]) == "a"


# ------------------------------------------------------------------ tool choice


@pytest.mark.parametrize(
    ("tools", "tool_choice", "plan"),
    [
        (None, None, ToolPlan("text")),
        ([], "auto", ToolPlan("text")),
        ([QUERY_LOGS, SUBMIT], "none", ToolPlan("text")),
        ([QUERY_LOGS, SUBMIT], None, ToolPlan("choose", ("query_logs", "submit"), True)),
        ([QUERY_LOGS, SUBMIT], "auto", ToolPlan("choose", ("query_logs", "submit"), True)),
        ([QUERY_LOGS, SUBMIT], "required", ToolPlan("choose", ("query_logs", "submit"))),
        (
            [QUERY_LOGS, SUBMIT],
            {"type": "function", "function": {"name": "submit"}},
            ToolPlan("call", ("submit",)),
        ),
    ],
)
def test_plan_follows_openai_tool_choice(tools: Any, tool_choice: Any, plan: ToolPlan) -> None:
    assert plan_tool_choice(tools, tool_choice) == plan


def test_plan_rejects_an_unknown_function_and_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match=r"names 'nope', which is not among the tools"):
        plan_tool_choice([SUBMIT], {"type": "function", "function": {"name": "nope"}})
    with pytest.raises(ValueError, match=r"'always' is not one of 'none', 'auto', 'required'"):
        plan_tool_choice([SUBMIT], "always")


def test_name_choice_grammar_offers_exactly_the_functions_and_message_when_allowed() -> None:
    assert name_choice_grammar(["query_logs", "submit"], allow_message=False) == (
        'root ::= "functions.query_logs:" | "functions.submit:"\n'
    )
    assert name_choice_grammar(["query_logs", "submit"], allow_message=True) == (
        'root ::= "functions.query_logs:" | "functions.submit:" | "message:"\n'
    )


def test_parse_choice_reads_the_pick_back() -> None:
    auto = ToolPlan("choose", ("query_logs", "query_logs_v2"), allow_message=True)
    required = ToolPlan("choose", ("query_logs", "query_logs_v2"))
    assert parse_choice("functions.query_logs_v2:", auto) == "query_logs_v2"
    assert parse_choice("functions.query_logs", auto) == "query_logs"  # stopped before ':'
    assert parse_choice("message:", auto) is None
    # Cut off by the deadline mid-name: a message where allowed, else the first function.
    assert parse_choice("functions.que", auto) is None
    assert parse_choice("functions.que", required) == "query_logs"


# ------------------------------------------------------------------ grammar schema


def test_a_small_integer_range_becomes_an_enum_for_the_grammar_only() -> None:
    converted = grammar_schema(QUERY_LOGS_PARAMETERS)
    assert converted["properties"]["limit"] == {
        "type": "integer",
        "description": "行数",
        "enum": list(range(1, 201)),
    }
    assert converted["properties"]["service"] == QUERY_LOGS_PARAMETERS["properties"]["service"]
    assert QUERY_LOGS_PARAMETERS["properties"]["limit"]["maximum"] == 200  # input untouched


def test_ranges_wider_than_the_enum_bound_and_other_numbers_stay_as_they_are() -> None:
    wide = {"type": "integer", "minimum": 0, "maximum": MAX_ENUM_RANGE}  # 257 values
    exact = {"type": "integer", "minimum": 1, "maximum": MAX_ENUM_RANGE}  # 256 values
    unbounded = {"type": "integer", "minimum": 1}
    number = {"type": "number", "minimum": 0, "maximum": 10}
    assert grammar_schema(wide) == wide
    assert grammar_schema(exact)["enum"] == list(range(1, MAX_ENUM_RANGE + 1))
    assert grammar_schema(unbounded) == unbounded
    assert grammar_schema(number) == number
    exclusive = {"type": "integer", "minimum": 0, "maximum": 5, "exclusiveMaximum": 5}
    assert grammar_schema(exclusive) == {"type": "integer", "enum": [0, 1, 2, 3, 4]}


TENTHS = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


def test_a_number_bounded_within_0_and_1_becomes_an_enum_of_tenths_for_the_grammar_only() -> None:
    # The verifier's score: llama's converter ignores the bounds, and a model answered 2.0.
    score = {"title": "Groundedness Score", "type": "number", "minimum": 0.0, "maximum": 1.0}
    converted = grammar_schema(score)
    assert converted == {"title": "Groundedness Score", "type": "number", "enum": TENTHS}
    assert [json.dumps(value) for value in converted["enum"]] == [
        "0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"
    ]  # fmt: skip
    assert score["maximum"] == 1.0  # input untouched
    narrow = {"type": "number", "minimum": 0.25, "maximum": 1, "exclusiveMaximum": 1}
    assert grammar_schema(narrow)["enum"] == [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "number", "minimum": 0},  # one bound only
        {"type": "number", "maximum": 1},
        {"type": "number", "minimum": -1, "maximum": 1},  # beyond [0, 1]
        {"type": "number", "minimum": 0, "maximum": 2},
        {"type": "number", "minimum": 0.31, "maximum": 0.39},  # no tenth in between
        {"type": "number", "minimum": 0, "maximum": 1, "enum": [0, 1]},
        {"type": "number", "minimum": False, "maximum": True},
    ],
)
def test_other_numbers_stay_as_they_are(schema: dict[str, Any]) -> None:
    assert grammar_schema(schema) == schema


def test_strict_string_grammar_keeps_raw_control_characters_out_of_strings() -> None:
    # What llama-cpp-python 0.3.36's converter writes for {"rationale": {"type": "string"}}.
    lax = (
        f"char ::= {LAX_STRING_CHAR}\n"
        'root ::= "{" space rationale-kv "}" space\n'
        'string ::= "\\"" char* "\\"" space\n'
    )
    strict = strict_string_grammar(lax)
    assert strict == lax.replace(f"char ::= {LAX_STRING_CHAR}", f"char ::= {STRICT_STRING_CHAR}")
    # JSON's own string characters, as llama.cpp's JSON grammar (its json.gbnf) writes them.
    assert STRICT_STRING_CHAR.startswith(r'[^"\\\x7F\x00-\x1F] | ')
    assert strict_string_grammar(strict) == strict
    assert strict_string_grammar('root ::= "yes"\n') == 'root ::= "yes"\n'


def test_a_string_rule_of_another_converter_is_an_error_not_kept_silently() -> None:
    """Another llama-cpp-python release may write its ``char`` rule differently; keeping it
    would let raw newlines back into strings without a word."""
    other = 'char ::= [^"\\\\] | "\\\\" ["\\\\/bfnrt]\nroot ::= "yes"\n'
    with pytest.raises(ValueError, match=r"unknown string rule .*llama-cpp-python 0\.3\.36"):
        strict_string_grammar(other)


def test_the_transform_reaches_nested_items_anyof_and_defs() -> None:
    step = {"type": "integer", "minimum": 1, "maximum": 3}
    schema = {
        "type": "object",
        "properties": {
            "bindings": {
                "type": "array",
                "items": {"anyOf": [{"type": "object", "properties": {"n": step}}, {"const": 1}]},
            }
        },
        "$defs": {"Step": step},
    }
    converted = grammar_schema(schema)
    alternative = converted["properties"]["bindings"]["items"]["anyOf"][0]
    assert alternative["properties"]["n"] == {"type": "integer", "enum": [1, 2, 3]}
    assert converted["properties"]["bindings"]["items"]["anyOf"][1] == {"const": 1}
    assert converted["$defs"]["Step"] == {"type": "integer", "enum": [1, 2, 3]}


# ------------------------------------------------------------------ response


def test_tool_call_response_holds_exactly_one_call_with_usage() -> None:
    response = tool_call_response(
        "query_logs",
        '{"service": "order-service", "limit": 20}',
        cut_off=False,
        envelope=Envelope(
            "cmpl-7",
            created=1700000000,
            model="gemma3-270m",
            prompt_tokens=812,
            completion_tokens=14,
        ),
    )
    assert response == {
        "id": "chatcmpl-7",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gemma3-270m",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {
                                "name": "query_logs",
                                "arguments": '{"service": "order-service", "limit": 20}',
                            },
                        }
                    ],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 812, "completion_tokens": 14, "total_tokens": 826},
    }


def test_cut_off_answers_report_length() -> None:
    envelope = Envelope("cmpl-1", created=1, model="m", prompt_tokens=3, completion_tokens=1024)
    call = tool_call_response("submit", '{"a": ', cut_off=True, envelope=envelope)
    assert call["choices"][0]["finish_reason"] == "length"
    message = message_response("partial", cut_off=True, envelope=envelope)
    assert message["choices"][0]["finish_reason"] == "length"
    assert message["choices"][0]["message"] == {"role": "assistant", "content": "partial"}
    assert message["usage"] == {"prompt_tokens": 3, "completion_tokens": 1024, "total_tokens": 1027}
    done = message_response("whole", cut_off=False, envelope=envelope)
    assert done["choices"][0]["finish_reason"] == "stop"


# ------------------------------------------------------------------ timeout


def test_generation_timeout_from_the_environment() -> None:
    assert timeout_from_env({}) == DEFAULT_GENERATION_TIMEOUT == 180.0
    assert timeout_from_env({"DIAGEVAL_GENERATION_TIMEOUT": "7.5"}) == 7.5
    for bad in ("0", "-3", "soon", "nan", "inf"):
        with pytest.raises(ValueError, match=r"DIAGEVAL_GENERATION_TIMEOUT=.*positive number"):
            timeout_from_env({"DIAGEVAL_GENERATION_TIMEOUT": bad})


# ------------------------------------------------------------------ free text within its bound


def test_each_free_text_becomes_its_bounds_marker_by_property_name() -> None:
    schema = {
        "type": "object",
        "properties": {
            "claim_text": {"type": "string"},
            "steps": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "missing_info": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "reasons": {"type": "string", "maxLength": 200},
            "kind": {"type": "string", "enum": ["a"]},
        },
    }
    properties = grammar_schema(schema)["properties"]
    assert properties["claim_text"] == {"type": "string", "const": "@diageval-text-128@"}
    assert properties["steps"]["items"] == {"type": "string", "const": "@diageval-text-96@"}
    assert properties["missing_info"]["anyOf"][0]["const"] == "@diageval-text-96@"
    assert properties["reasons"]["const"] == "@diageval-text-192@"  # lowered by its maxLength
    assert properties["kind"] == {"type": "string", "enum": ["a"]}
    assert schema["properties"]["claim_text"] == {"type": "string"}  # the input is untouched


def test_a_bound_is_carried_by_blocks_and_a_tail_not_a_rule_per_character() -> None:
    rule = bounded_text_rules(64)
    assert rule.startswith('text-64 ::= "\\"" (text-block (text-block (text-block)?)?)? ')
    assert rule.count("text-char") == 16  # the tail: at most one block more
    assert rule.endswith('"\\"" text-space\n')
    assert bounded_text_rules(512).count("text-block") == 31
    with pytest.raises(ValueError, match="multiple of 16"):
        bounded_text_rules(100)


def test_the_converters_markers_become_the_bounded_rules_once_each() -> None:
    # What llama-cpp-python 0.3.36's converter writes for two fields of one bound and one other.
    converted = (
        'a ::= "\\"@diageval-text-96@\\""\n'
        'b ::= "\\"@diageval-text-96@\\""\n'
        'c ::= "\\"@diageval-text-128@\\""\n'
        'root ::= "{" space a "," space b "," space c "}" space\n'
    )
    bounded = bounded_grammar(converted).splitlines()
    assert bounded[:3] == ["a ::= text-96", "b ::= text-96", "c ::= text-128"]
    assert [line.split(" ::= ")[0] for line in bounded[4:]] == [
        "text-96",
        "text-128",
        "text-block",
        "text-char",
        "text-space",
    ]
    assert f"text-char ::= {STRICT_STRING_CHAR}" in bounded
    assert bounded_grammar('root ::= "yes"\n') == 'root ::= "yes"\n'


def test_a_marker_in_another_converters_form_is_an_error_not_an_unbounded_string() -> None:
    with pytest.raises(ValueError, match=r"free-text marker in an unknown form.*0\.3\.36"):
        bounded_grammar("a ::= '@diageval-text-96@'\n")


def test_a_message_is_bounded_to_any_characters_but_nul() -> None:
    grammar = message_grammar(32)
    assert grammar.startswith("root ::= (message-block)? (message-char ")
    assert "message-char ::= [^\\x00]" in grammar.splitlines()
