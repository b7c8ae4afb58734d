"""ChatService with the question's scope (issue 25 parts 1-2): the scope is read once from the
query and the world, persisted and returned; a claim outside it is set aside before the verdict
and the composer, audited, and never reaches the answer."""

from __future__ import annotations

from typing import Any

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.scripted.model import ScriptedTransport, scripted_llm
from pytest_diageval.core.answer.answer_templates import DISCLAIMER, NO_CLAIM_IN_SCOPE_GAP
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.world import default_world

QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
MEMORY = "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。"
CPU = "payment-service 存在 HighCPUUsage 告警，CPU 使用率 92%。"
MEMORY_BINDING = {
    "tool_name": "query_metrics",
    "source_invocation_id": 1,
    "raw_path": "$.alerts[0]",
    "evidence_excerpt": "HighMemoryUsage firing, service=order-service, current=91%, duration=15m",
}
CPU_BINDING = {
    "tool_name": "query_metrics",
    "source_invocation_id": 2,
    "raw_path": "$.alerts[0]",
    "evidence_excerpt": "HighCPUUsage firing, service=payment-service, current=92%, threshold=80%",
}
PLAN = {"stage": "planner", "content": {"plan": "查询告警", "steps": ["query_metrics"]}}
GATHER = {
    "stage": "executor",
    "tool_calls": [
        {"name": "query_metrics", "arguments": {"service": "order-service"}},
        # no filter: every alert, payment-service's first (a call naming payment-service is
        # refused under QUERY's narrow scope, tests/agents/test_decoding_scope.py)
        {"name": "query_metrics", "arguments": {}},
    ],
}


def claim(claim_id: str, text: str, binding: dict[str, Any], kind: str = "observation") -> Any:
    return {
        "claim_id": claim_id,
        "claim_type": kind,
        "claim_text": text,
        "evidence_bindings": [binding],
    }


def executor(claims: list[dict[str, Any]], answer: str) -> dict[str, Any]:
    content = {
        "answer_version": "2",
        "diagnosis_summary": "告警",
        "claims": claims,
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
        "user_facing_answer": answer,
    }
    return {"stage": "executor", "content": content}


def fact(claim_id: str, text: str, trace: str) -> dict[str, Any]:
    return {
        "fact": text,
        "claim_id": claim_id,
        "is_critical": True,
        "verification": "direct_evidence",
        "detail": "告警直接支持",
        "evidence_refs": [{"trace_ref": trace}],
    }


def verifier(*facts: dict[str, Any]) -> dict[str, Any]:
    content = {
        "verdict": "PASS",
        "groundedness_score": 1.0,
        "critical_fact_count": len(facts),
        "facts_checked": list(facts),
        "rationale": "证据充分",
    }
    return {"stage": "verifier", "content": content}


def run(entries: list[dict[str, Any]], query: str = QUERY) -> tuple[Any, ScriptedTransport, Store]:
    store = Store()
    llm, transport = scripted_llm(entries)
    with llm:
        result = ChatService(store=store).run(query, default_world(), llm)
    transport.assert_exhausted()
    return result, transport, store


BOTH = executor(
    [claim("claim-1", MEMORY, MEMORY_BINDING), claim("claim-2", CPU, CPU_BINDING)], MEMORY + CPU
)
BOTH_VERIFIED = verifier(fact("claim-1", MEMORY, "trace-1"), fact("claim-2", CPU, "trace-2"))


def test_the_scope_is_read_from_the_query_once_persisted_and_returned() -> None:
    result, _, store = run([PLAN, GATHER, BOTH, BOTH_VERIFIED])
    assert result.scope is not None
    assert (result.scope.services, result.scope.alerts) == (["order-service"], ["HighMemoryUsage"])
    assert result.scope.narrow
    assert result.scope.narrow_markers == [
        "只确认",
        "是否存在 highmemoryusage 告警",
    ]
    stored = store.get_session("diag-1")["self_evaluation"]["scope_contract"]
    assert stored == {"scope": result.scope.model_dump(mode="json"), "source": "query"}


def test_a_claim_about_another_service_is_set_aside_and_the_verdict_rests_on_the_rest() -> None:
    result, _, store = run([PLAN, GATHER, BOTH, BOTH_VERIFIED])
    assert (result.final_verdict, result.final_score, result.answer_kind) == ("PASS", 1.0, "direct")
    last = result.last_round
    assert [(c.claim_id, c.rules) for c in last.set_aside] == [("claim-2", ["scope.out_of_scope"])]
    assert "payment-service" in last.set_aside[0].reason
    assert "payment-service" not in result.final_answer
    assert "92%" not in result.final_answer
    assert "91%" in result.final_answer
    assert result.composer_output.claims_used == ["claim-1"]
    assert result.composer_output.claims_dropped == []  # set aside, not a dropped finding
    assert [o.rule for o in last.decision.overrides] == ["scope.set_aside"]
    assert [f.claim_id for f in last.decision.facts] == ["claim-1"]
    record = store.get_session("diag-1")["self_evaluation"]["verifier_evaluation"]
    assert record["scope_set_aside"] == [
        last.set_aside[0].model_dump(mode="json"),
    ]
    assert record["scope_set_aside"][0]["claim_id"] == "claim-2"


def test_no_claim_in_scope_is_low_confid_zero_retried_then_the_disclaimer_says_so() -> None:
    only_cpu = executor([claim("claim-2", CPU, CPU_BINDING)], CPU)
    # The fact cites trace-1, which its claim never bound: without the scope the code would
    # lower it to no_evidence, and that gap is what the next round is told.
    cpu_verified = verifier(fact("claim-2", CPU, "trace-1"))
    one_round = [PLAN, GATHER, only_cpu, cpu_verified]
    result, _transport, _ = run([*one_round, PLAN, only_cpu, cpu_verified])
    assert [r.derived_verdict for r in (r.decision for r in result.rounds)] == ["LOW_CONFID"] * 2
    assert (result.final_score, result.answer_kind) == (0.0, "disclaimer")
    assert [o.rule for o in result.last_round.decision.overrides][-1] == "scope.no_claim_in_scope"
    assert result.final_answer.startswith(DISCLAIMER)
    assert NO_CLAIM_IN_SCOPE_GAP in result.final_answer
    assert "payment-service" not in result.final_answer
    assert "HighCPUUsage" not in result.final_answer
    # the next round is told the gaps it was always told (the requests do not know the scope)
    retry = result.rounds[1].retry_context
    assert retry is not None
    assert (retry.previous_verdict, retry.previous_groundedness_score) == ("LOW_CONFID", 0.0)
    assert retry.evidence_gaps == [CPU]


def test_an_item_about_an_excluded_topic_is_never_rendered() -> None:
    # The second sentence is backed by claim-1's verified log line, but names GC, which the
    # question excluded: the answer is composed from the verified claim instead.
    log = "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB, GC次数: 128"
    log_binding = {**MEMORY_BINDING, "tool_name": "query_logs", "source_invocation_id": 2}
    log_binding.update(raw_path="$.logs[4]", evidence_excerpt=log)
    gather = {
        "stage": "executor",
        "tool_calls": [
            {"name": "query_metrics", "arguments": {"service": "order-service"}},
            {"name": "query_logs", "arguments": {"service": "order-service", "keywords": ["内存"]}},
        ],
    }
    one = {**claim("claim-1", MEMORY, MEMORY_BINDING)}
    one["evidence_bindings"] = [MEMORY_BINDING, log_binding]
    answer = MEMORY + "JVM堆内存 3.8GB/4GB，GC次数 128。"
    entries = [PLAN, gather, executor([one], answer), verifier(fact("claim-1", MEMORY, "trace-1"))]
    result, _, _ = run(entries, query=QUERY + "，不要分析 GC")
    assert result.scope is not None
    assert result.scope.excluded == ["GC"]
    assert result.final_verdict == "PASS"
    assert result.composer_output.source == "composed"
    # The cited log names GC, which the question leaves out: withheld, and counted.
    assert result.composer_output.withheld == 1
    assert "GC" not in result.final_answer


def test_a_forged_citation_in_a_set_aside_claim_still_rejects() -> None:
    forged = {**CPU_BINDING, "raw_path": "$.alerts[9]"}
    entries = [
        PLAN,
        GATHER,
        executor([claim("claim-1", MEMORY, MEMORY_BINDING), claim("claim-2", CPU, forged)], MEMORY),
        BOTH_VERIFIED,
    ]
    result, _, _ = run(entries)
    assert (result.final_verdict, result.final_score) == ("REJECT", 0.0)
    assert [c.claim_id for c in result.last_round.set_aside] == ["claim-2"]


def test_a_question_that_names_no_service_sets_nothing_aside() -> None:
    result, _, _ = run([PLAN, GATHER, BOTH, BOTH_VERIFIED], query="现在有哪些告警？")
    assert result.scope is not None
    assert result.scope.services == []
    assert result.last_round.set_aside == []
    assert result.composer_output.claims_used == ["claim-1", "claim-2"]


# --------------------------------------------------------------------------- part 3: decoding


def _offered(transport: ScriptedTransport, index: int) -> dict[str, Any]:
    """The parameters of each function offered by request ``index``, by name."""
    return {
        tool["function"]["name"]: tool["function"]["parameters"]
        for tool in transport.requests[index].body["tools"]
    }


def test_a_narrow_question_narrows_what_the_executor_requests_let_a_model_write() -> None:
    refused = {
        "stage": "executor",
        "tool_calls": [
            {"name": "query_metrics", "arguments": {"service": "order-service"}},
            {"name": "query_metrics", "arguments": {"service": "payment-service"}},
        ],
    }
    only_memory = executor([claim("claim-1", MEMORY, MEMORY_BINDING)], MEMORY)
    result, transport, store = run(
        [PLAN, refused, only_memory, verifier(fact("claim-1", MEMORY, "trace-1"))]
    )
    first = _offered(transport, 1)
    assert first["query_logs"]["properties"]["service"]["enum"] == ["order-service"]
    assert first["query_metrics"]["properties"]["alert_name"]["enum"] == ["HighMemoryUsage"]
    claims = _offered(transport, 2)["submit_evidence_contract"]["properties"]["claims"]
    assert claims["items"]["properties"]["claim_type"]["enum"] == [
        "observation",
        "negative_observation",
    ]
    # the refused call never ran: one row, and its refusal is in the executor step's audit
    assert [row.id for row in result.invocations] == [1]
    calls = store.list_agent_steps("diag-1")[1]["output"]["tool_calls"]
    assert [(c["invocation_id"], (c["error"] or "")[:23]) for c in calls] == [
        (1, ""),
        (None, "scope.out_of_scope_call"),
    ]
    assert (result.final_verdict, result.answer_kind) == ("PASS", "direct")


def test_a_broad_question_keeps_the_full_enums_and_every_claim_type() -> None:
    query = "order-service 的 HighMemoryUsage 告警是什么原因？"
    only_memory = executor([claim("claim-1", MEMORY, MEMORY_BINDING)], MEMORY)
    _, transport, _ = run(
        [PLAN, GATHER, only_memory, verifier(fact("claim-1", MEMORY, "trace-1"))], query
    )
    offered = _offered(transport, 1)
    assert offered["query_logs"]["properties"]["service"]["enum"] == [
        "inventory-service",
        "order-service",
        "payment-service",
        "user-service",
    ]
    claims = _offered(transport, 2)["submit_evidence_contract"]["properties"]["claims"]
    assert len(claims["items"]["properties"]["claim_type"]["enum"]) == 4
