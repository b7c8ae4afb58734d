"""Free-text bounds: the table, the longest answer a schema admits, the texts at their bound."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval.core.contract.contract_schema import contract_parameters
from pytest_diageval.core.contract.limits import CONTRACT_TEXT_CHARS, PLAN_TEXT_CHARS
from pytest_diageval.core.contract.text_bounds import (
    DEFAULT_TEXT_CHARS,
    MESSAGE_CHARS,
    TEXT_BLOCK,
    TEXT_BOUNDS,
    answer_char_bound,
    functions_char_bound,
    is_free_text,
    text_bound,
    texts_at_bound,
)
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.world import default_world


def test_every_bound_is_whole_blocks_and_below_what_the_parser_accepts() -> None:
    for name, bound in {**TEXT_BOUNDS, "default": DEFAULT_TEXT_CHARS}.items():
        assert bound % TEXT_BLOCK == 0, name
        assert TEXT_BLOCK <= bound <= CONTRACT_TEXT_CHARS, name
    assert TEXT_BOUNDS["plan"] <= PLAN_TEXT_CHARS
    assert TEXT_BOUNDS["steps"] <= PLAN_TEXT_CHARS
    assert TEXT_BOUNDS["reasons"] <= 200  # the grader's own maxLength
    assert MESSAGE_CHARS % TEXT_BLOCK == 0


@pytest.mark.parametrize(
    ("schema", "free"),
    [
        ({"type": "string"}, True),
        ({"type": "string", "maxLength": 50}, True),
        ({"type": "string", "enum": ["a"]}, False),
        ({"type": "string", "const": "a"}, False),
        ({"type": "string", "pattern": "^a$"}, False),
        ({"type": "string", "format": "date-time"}, False),
        ({"type": ["string", "null"]}, False),
        ({"type": "integer"}, False),
    ],
)
def test_free_text_is_a_string_the_model_writes_freely(schema: dict[str, Any], free: bool) -> None:
    assert is_free_text(schema) is free


def test_a_bound_is_the_tables_lowered_to_whole_blocks_by_a_max_length() -> None:
    assert text_bound("claim_text", {"type": "string"}) == TEXT_BOUNDS["claim_text"]
    assert text_bound("unknown_field", {"type": "string"}) == DEFAULT_TEXT_CHARS
    assert text_bound("reasons", {"type": "string", "maxLength": 200}) == 192
    assert text_bound("claim_text", {"type": "string", "maxLength": 40}) == 32
    assert text_bound("claim_text", {"type": "string", "maxLength": 5}) == TEXT_BLOCK
    assert text_bound("claim_text", {"type": "string", "maxLength": 4000}) == 128


def test_the_longest_answer_counts_keys_values_lists_and_unions() -> None:
    schema = {
        "type": "object",
        "properties": {
            "claim_text": {"type": "string"},  # "claim_text": + 128 + quotes
            "kind": {"type": "string", "enum": ["a", "bbb"]},
            "ids": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "ok": {"type": "boolean"},
            "ref": {"$ref": "#/$defs/Ref"},
        },
        "$defs": {"Ref": {"type": "object", "properties": {"fact": {"type": "string"}}}},
    }
    expected = (
        2
        + (12 + 4 + 130)
        + (6 + 4 + 5)
        + (5 + 4 + 2 + 2 * (24 + 2))
        + (6 + 4 + DEFAULT_TEXT_CHARS + 2)
        + (4 + 4 + 5)
        + (5 + 4 + 2 + (6 + 4 + 130))
    )
    assert answer_char_bound(schema) == expected


def test_a_contract_bound_grows_with_what_it_may_cite() -> None:
    store = Store()
    store.create_session("s", "q", "2026-07-08T11:17:00+08:00")
    recorder = ToolInvocationRecorder(store, Toolbox(default_world()), "s")
    recorder.call("query_metrics", {"service": "order-service"}, round=1)
    nothing_cited = answer_char_bound(contract_parameters([]))
    one_alert = answer_char_bound(contract_parameters(store.list_invocations("s")))
    # Each claim (3) and the action (1) may now bind up to 3 citations of that alert, where
    # none were offered: each binding is its keys with ": " and ", ", its constants and its
    # excerpt at its bound, and a list separator.
    binding = (
        2
        + (len('"tool_name"') + 4 + len('"query_metrics"'))
        + (len('"source_invocation_id"') + 4 + len("1"))
        + (len('"raw_path"') + 4 + len('"$.alerts[0]"'))
        + (len('"evidence_excerpt"') + 4 + TEXT_BOUNDS["evidence_excerpt"] + 2)
    )
    assert one_alert - nothing_cited == 4 * 3 * (binding + 2)
    tools = [{"type": "function", "function": {"parameters": contract_parameters([])}}]
    assert functions_char_bound(tools, message=False) == nothing_cited
    assert functions_char_bound(tools, message=True) == nothing_cited  # longer than a message
    assert functions_char_bound([], message=True) == MESSAGE_CHARS


def test_texts_at_their_bound_are_named_by_path() -> None:
    schema = contract_parameters([])
    claim = {
        "claim_id": "claim-1",
        "claim_type": "observation",
        "claim_text": "内" * TEXT_BOUNDS["claim_text"],
        "support_level": "direct",
        "evidence_bindings": [],
    }
    answer = {
        "diagnosis_summary": "短",
        "claims": [dict(claim, claim_text="短"), claim],
        "user_facing_answer": "x" * TEXT_BOUNDS["user_facing_answer"],
        "hypotheses": [],
    }
    assert texts_at_bound(answer, schema) == [
        "claims[1].claim_text (128 characters)",
        "user_facing_answer (256 characters)",
    ]
    answer["user_facing_answer"] = "x" * (TEXT_BOUNDS["user_facing_answer"] - 1)
    assert texts_at_bound(answer, schema) == ["claims[1].claim_text (128 characters)"]


def test_a_union_arm_is_chosen_by_the_values_type() -> None:
    schema = {
        "type": "object",
        "properties": {"missing_info": {"anyOf": [{"type": "null"}, {"type": "string"}]}},
    }
    assert texts_at_bound({"missing_info": None}, schema) == []
    assert texts_at_bound({"missing_info": "m" * 96}, schema) == ["missing_info (96 characters)"]
