"""The verifier's view: 004 §4's structure, §5's seven trace fields, and a size bound that
holds for a session at the executor's call budget."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_diageval.core.contract.contracts import (
    CONTRACT_LIST_CAPS,
    ExecutorContract,
    ParseStatus,
    RetryContext,
    VerifierInput,
)
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store, stable_json
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.trace_summary import ToolTraceSummaryService
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.judge.gatekeeper import Gatekeeper, parse_failure_result
from pytest_diageval.core.judge.verifier_view import (
    BUDGET_TRACE_ENTRIES,
    BUDGET_VIEW_CHARS,
    CUT_MARK,
    TEXT_CAPS,
    TRACE_FIELDS,
    VIEW_KEYS,
    verifier_view,
    verifier_view_bound,
)
from support.contracts import contract

SESSION = "s1"
QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
ALERT_EXCERPT = "HighMemoryUsage firing, service=order-service, current=91%, duration=15m"
PARSED = ParseStatus(status="valid", detail="parsed executor evidence contract")
BINDING_KEYS = {"tool_name", "source_invocation_id", "raw_path", "evidence_excerpt"}


def _session(calls: list[tuple[str, dict[str, Any]]]) -> Store:
    store = Store()
    store.create_session(SESSION, QUERY, "2026-07-08T11:17:00+08:00")
    recorder = ToolInvocationRecorder(store, Toolbox(default_world()), SESSION)
    for number, (name, arguments) in enumerate(calls):
        recorder.call(name, arguments, round=1 + number // 8)
    return store


def _input(
    store: Store,
    document: dict[str, Any] | None,
    *,
    query: str = QUERY,
    raw: str = "",
    retry: RetryContext | None = None,
) -> VerifierInput:
    parsed = None if document is None else ExecutorContract.model_validate(document)
    if parsed is None:
        status = ParseStatus(status="failed", detail="executor contract invalid: <root>: x")
        gate = parse_failure_result(status.detail)
    else:
        status, gate = PARSED, Gatekeeper(store).check(parsed, SESSION)
    return VerifierInput(
        original_query=query,
        executor_final_answer=raw if parsed is None else json.dumps(document),
        executor_structured_output=parsed,
        executor_output_parse_status=status,
        gatekeeper_result=gate,
        tool_trace_summary=ToolTraceSummaryService(store).build(SESSION),
        retry_context=retry,
    )


def _memory_contract() -> dict[str, Any]:
    binding = {
        "tool_name": "query_metrics",
        "source_invocation_id": 1,
        "raw_path": "$.alerts[0]",
        "evidence_excerpt": ALERT_EXCERPT,
        "source_type": "tool_invocation",
        "source_invocation_ids": [1],
    }
    claim = {
        "claim_id": "claim-1",
        "claim_type": "observation",
        "claim_text": "order-service 存在 HighMemoryUsage 告警，内存使用率 91%。",
        "support_level": "direct",
        "evidence_bindings": [binding],
    }
    action = {"action_id": "action-1", "action_text": "查看 GC 日志", "reason": "确认趋势"}
    return contract(
        [claim],
        recommended_actions=[action],
        hypotheses=[{"hypothesis_text": "可能内存泄漏", "basis_claim_ids": ["claim-1"]}],
        missing_info=["缺少堆 dump"],
        user_facing_answer="order-service 存在 HighMemoryUsage 告警。",
    )


def test_the_view_has_exactly_the_structure_of_004() -> None:
    store = _session([("query_metrics", {"service": "order-service"}), ("query_logs", {})])
    view = verifier_view(_input(store, _memory_contract()))
    assert tuple(view) == VIEW_KEYS
    structured = view["executor_structured_output"]
    assert set(structured) == {
        "answer_version",
        "diagnosis_summary",
        "claims",
        "hypotheses",
        "recommended_actions",
        "missing_info",
        "user_facing_answer",
    }
    (claim,) = structured["claims"]
    assert set(claim) == {"claim_id", "claim_type", "claim_text", "evidence_bindings"}
    assert [set(b) for b in claim["evidence_bindings"]] == [BINDING_KEYS]
    assert set(structured["recommended_actions"][0]) == {
        "action_id",
        "action_text",
        "reason",
        "evidence_bindings",
    }
    gate = view["gatekeeper_result"]
    assert set(gate) == {
        "status",
        "severity",
        "checked_bindings",
        "failed_rules",
        "warnings",
        "errors",
    }
    (row,) = gate["checked_bindings"]
    assert row == {
        "claim_id": "claim-1",
        "action_id": None,
        "tool_name": "query_metrics",
        "source_invocation_id": 1,
        "raw_path": "$.alerts[0]",
        "status": "pass",
        "matched_text": "HighMemoryUsage firing, service=order-service, current=91%,"
        " threshold=85%, duration=15m",
        "rule": None,
    }
    # the gatekeeper-verified excerpt sits in its claim, its verdict in the row beside it
    assert claim["evidence_bindings"][0]["evidence_excerpt"] == ALERT_EXCERPT
    assert [list(entry) for entry in view["tool_trace_summary"]] == [list(TRACE_FIELDS)] * 2
    assert view["executor_output_parse_status"] == PARSED.model_dump()
    assert (view["retry_context"], view["executor_final_answer"]) == (None, None)


def test_the_other_summary_fields_stay_in_the_audit() -> None:
    store = _session([("lookup_knowledge", {"query": "HighMemoryUsage"}), ("query_logs", {})])
    verifier_input = _input(store, _memory_contract())
    audit = verifier_input.tool_trace_summary[0].model_dump()
    assert audit["input_summary"]
    assert audit["source_documents"]
    payload = stable_json(verifier_view(verifier_input))
    for field in (
        "input_summary",
        "failed_invocation_count",
        "query_samples",
        "retrieval_layers",
        "relevance_levels",
        "source_documents",
        "support_level",
        "source_type",
        'source_invocation_ids":[1]}',
    ):
        assert f'"{field}' not in payload


def test_a_failed_parse_sends_the_raw_answer_for_the_fallback() -> None:
    store = _session([("query_metrics", {})])
    view = verifier_view(_input(store, None, raw="order-service 内存 91%"))
    assert view["executor_structured_output"] is None
    assert view["executor_final_answer"] == "order-service 内存 91%"
    assert view["gatekeeper_result"]["failed_rules"] == ["executor.parse_failed"]


def test_ids_beyond_int64_are_null_and_long_text_is_cut_with_the_mark() -> None:
    store = _session([("query_metrics", {})])
    document = _memory_contract()
    document["claims"][0]["evidence_bindings"][0]["source_invocation_id"] = 2**70
    document["claims"][0]["evidence_bindings"][0]["raw_path"] = "$.alerts[" + "9" * 500 + "]"
    view = verifier_view(_input(store, document, query="查" * 5000))
    binding = view["executor_structured_output"]["claims"][0]["evidence_bindings"][0]
    assert binding["source_invocation_id"] is None
    assert binding["raw_path"].endswith(CUT_MARK)
    assert len(binding["raw_path"]) == TEXT_CAPS["id"]
    assert view["original_query"] == "查" * (TEXT_CAPS["query"] - len(CUT_MARK)) + CUT_MARK
    row = view["gatekeeper_result"]["checked_bindings"][0]
    assert (row["rule"], row["source_invocation_id"]) == ("evidence.invocation_ref", None)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d.update(claims=d["claims"] * 11), "claims"),
        (lambda d: d["claims"][0].update(claim_text="字" * 501), "claims.0.claim_text"),
        (
            lambda d: d["claims"][0].update(
                evidence_bindings=d["claims"][0]["evidence_bindings"] * 41
            ),
            "at most 40",
        ),
        (lambda d: d.update(user_facing_answer="答" * 2001), "user_facing_answer"),
    ],
)
def test_a_contract_over_its_caps_does_not_parse(change: Any, where: str) -> None:
    document = _memory_contract()
    change(document)
    with pytest.raises(ValidationError, match=where):
        ExecutorContract.model_validate(document)


# --------------------------------------------------------------------------- the bound


def _widest_contract(char: str) -> dict[str, Any]:
    """Every list and every string of the contract at its parse-time cap."""
    text, ident = char * 500, char * 64
    binding = {
        "tool_name": "query_metrics",
        "source_invocation_id": 2**63 - 1,
        "raw_path": "$.alerts[" + "1" * 400 + "]",
        "evidence_excerpt": text,
    }
    # Claim ids must be unique: the widest ids differ in their last character only.
    claims = [
        {
            "claim_id": ident[:-1] + str(number),
            "claim_type": "negative_observation",
            "claim_text": text,
        }
        for number in range(CONTRACT_LIST_CAPS["claims"])
    ]
    claims[0]["evidence_bindings"] = [binding] * CONTRACT_LIST_CAPS["evidence_bindings"]
    hypothesis = {
        "hypothesis_id": ident,
        "hypothesis_text": text,
        "basis_claim_ids": [ident] * 10,
        "missing_info": text,
    }
    action = {"action_id": ident, "action_text": text, "reason": text}
    return contract(
        claims,
        answer_version=ident,
        diagnosis_summary=text,
        hypotheses=[hypothesis] * 5,
        recommended_actions=[action] * 5,
        missing_info=[{"info_id": ident, "description": text}] * 10,
        user_facing_answer=char * 2000,
    )


@pytest.mark.parametrize("char", ['"', "\x01", "字", "a"])
def test_a_session_at_the_call_budget_stays_within_the_documented_bound(char: str) -> None:
    # 16 evidence calls (8 a round, 2 rounds) on 16 topics: 16 summary entries, the most a
    # session at the budget can have, each with the longest output the tools give.
    calls: list[tuple[str, dict[str, Any]]] = [
        ("query_logs", {"keywords": [f"k{i}"], "limit": 200}) for i in range(13)
    ]
    calls += [
        ("query_logs", {"limit": 200}),
        ("query_metrics", {}),
        ("lookup_knowledge", {"query": "内存"}),
    ]
    store = _session(calls)
    retry = RetryContext(
        previous_verdict="LOW_CONFID",
        previous_groundedness_score=1 / 3,
        evidence_gaps=[char * 5000] * 50,
        gatekeeper_failed_rules=["evidence.raw_path"],
    )
    verifier_input = _input(store, _widest_contract(char), query=char * 20000, retry=retry)
    assert len(verifier_input.tool_trace_summary) == BUDGET_TRACE_ENTRIES
    size = len(stable_json(verifier_view(verifier_input)))
    assert size <= verifier_view_bound(BUDGET_TRACE_ENTRIES) == BUDGET_VIEW_CHARS
    assert BUDGET_VIEW_CHARS == 289_657  # the number docs/reliability.md documents
    failed = _input(store, None, query=char * 20000, raw=char * 100000, retry=retry)
    assert len(stable_json(verifier_view(failed))) <= BUDGET_VIEW_CHARS


def test_the_bound_grows_by_one_bounded_entry_per_summary_entry() -> None:
    step = verifier_view_bound(2) - verifier_view_bound(1)  # bound(1) has no separator
    assert step == verifier_view_bound(BUDGET_TRACE_ENTRIES) - verifier_view_bound(15)
    assert step < 2 * TEXT_CAPS["output_summary"]


_TEXT = st.text(max_size=600)


@settings(max_examples=60, deadline=None)
@given(
    query=st.text(max_size=6000),
    claim_text=st.text(max_size=500),
    excerpt=st.text(max_size=500),
    raw_path=_TEXT,
    invocation_id=st.integers(min_value=-(2**80), max_value=2**80),
    gaps=st.lists(_TEXT, max_size=15),
    answer=st.text(max_size=2000),
)
def test_no_input_exceeds_the_bound_and_the_keys_never_change(
    query: str,
    claim_text: str,
    excerpt: str,
    raw_path: str,
    invocation_id: int,
    gaps: list[str],
    answer: str,
) -> None:
    store = _session([("query_metrics", {}), ("query_logs", {})])
    document = _memory_contract()
    document["claims"][0]["claim_text"] = claim_text
    document["claims"][0]["evidence_bindings"][0].update(
        source_invocation_id=invocation_id, raw_path=raw_path, evidence_excerpt=excerpt
    )
    document["user_facing_answer"] = answer
    retry = RetryContext(
        previous_verdict="LOW_CONFID", previous_groundedness_score=0.25, evidence_gaps=gaps
    )
    verifier_input = _input(store, document, query=query, retry=retry)
    view = verifier_view(verifier_input)
    assert tuple(view) == VIEW_KEYS
    assert [tuple(entry) for entry in view["tool_trace_summary"]] == [TRACE_FIELDS] * 2
    assert len(stable_json(view)) <= verifier_view_bound(2)
    claim = view["executor_structured_output"]["claims"][0]
    if len(json.dumps(claim_text, ensure_ascii=False)) - 2 <= TEXT_CAPS["text"]:
        assert claim["claim_text"] == claim_text  # ordinary text is never cut
