"""ChatService end to end over the scripted model: the real openai client, instructor, the
real tools on the default world, the real store, gatekeeper, verdict and templates."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.llm import CUT_OFF_REASON, LLM, LLMConfig
from pytest_diageval.agents.scripted.model import ScriptedTransport, scripted_llm
from pytest_diageval.core.answer.answer_templates import DEGRADED_HEADER, DISCLAIMER
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.world import World, default_world, load_world

QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
ALERT_EXCERPT = "HighMemoryUsage firing, service=order-service, current=91%, duration=15m"
LOG_EXCERPT = "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB, GC次数: 128"
CLAIM = "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。"

PLAN = {"stage": "planner", "content": {"plan": "查询告警与日志", "steps": ["query_metrics"]}}
GATHER = [
    {
        "stage": "executor",
        "tool_calls": [
            {"name": "query_metrics", "arguments": {"service": "order-service"}},
            {"name": "query_logs", "arguments": {"service": "order-service", "keywords": ["内存"]}},
        ],
    }
]


def binding(invocation: int, raw_path: str, excerpt: str, tool: str) -> dict[str, Any]:
    return {
        "tool_name": tool,
        "source_invocation_id": invocation,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }


def contract(*bindings: dict[str, Any], text: str = CLAIM) -> dict[str, Any]:
    return {
        "answer_version": "2",
        "diagnosis_summary": "HighMemoryUsage 告警存在",
        "claims": [
            {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim_text": text,
                "support_level": "direct",
                "evidence_bindings": list(bindings),
            }
        ],
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [
            {"info_id": "missing-1", "description": "缺少堆 dump，无法确认内存泄漏。"}
        ],
        "user_facing_answer": f"{text}",
    }


GOOD_CONTRACT = contract(
    binding(1, "$.alerts[0]", ALERT_EXCERPT, "query_metrics"),
    binding(2, "$.logs[4]", LOG_EXCERPT, "query_logs"),
)


def verifier(label: str, refs: list[dict[str, Any]], verdict: str = "PASS") -> dict[str, Any]:
    return {
        "stage": "verifier",
        "content": {
            "verdict": verdict,
            "groundedness_score": 1.0,
            "critical_fact_count": 1,
            "facts_checked": [
                {
                    "fact": CLAIM,
                    "claim_id": "claim-1",
                    "is_critical": True,
                    "verification": label,
                    "detail": "告警与日志直接支持",
                    "evidence_refs": refs,
                }
            ],
            "rationale": "证据充分",
        },
    }


DIRECT = verifier(
    "direct_evidence",
    [
        {"trace_ref": "trace-1", "source_invocation_ids": [1]},
        {"trace_ref": "trace-2", "source_invocation_ids": [2]},
    ],
)


def run(
    entries: list[dict[str, Any]], world: World | None = None, store: Store | None = None
) -> tuple[Any, ScriptedTransport, Store]:
    store = store or Store()
    llm, transport = scripted_llm(entries)
    with llm:
        result = ChatService(store=store).run(QUERY, world or default_world(), llm)
    transport.assert_exhausted()
    return result, transport, store


def test_pass_run_end_to_end_cites_alert_and_log() -> None:
    entries = [PLAN, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, DIRECT]
    result, _, store = run(entries)
    assert (result.status, result.final_verdict, result.final_score) == ("completed", "PASS", 1.0)
    assert result.answer_kind == "direct"
    # The answer is the two cited items, rendered by code; the executor's claim is not in it.
    assert CLAIM not in result.final_answer
    assert result.final_answer.splitlines()[1:3] == [
        "order-service：",
        "- 告警 HighMemoryUsage：触发中，级别 critical，当前 91%，阈值 85%，持续 15m，"
        "采样 86.2, 87.4, 88.6, 89.8, 91.0（来源：query_metrics #1 $.alerts[0]）",
    ]
    last = result.last_round
    assert last.gatekeeper.status == "pass"
    assert [(b.raw_path, b.status) for b in last.gatekeeper.checked_bindings] == [
        ("$.alerts[0]", "pass"),
        ("$.logs[4]", "pass"),
    ]
    session = store.get_session("diag-1")
    assert (session["status"], session["final_verdict"]) == ("completed", "PASS")
    assert (session["step_count"], session["tool_call_count"]) == (3, 2)
    evaluation = session["self_evaluation"]["verifier_evaluation"]
    assert evaluation["gatekeeper_result"]["status"] == "pass"
    assert evaluation["traceability_version"] == "2"
    assert [item["trace_ref"] for item in evaluation["tool_trace_summary"]] == [
        "trace-1",
        "trace-2",
    ]
    assert session["self_evaluation"]["rule_evaluation"]["tool_call_count"] == 2


def test_fabricated_raw_path_rejects_with_degraded_answer_and_no_retry() -> None:
    forged = contract(binding(1, "$.alerts[99]", ALERT_EXCERPT, "query_metrics"))
    entries = [PLAN, *GATHER, {"stage": "executor", "content": forged}, DIRECT]
    result, _, store = run(entries)  # exhaustion check: no second round was asked for
    assert (result.final_verdict, result.final_score, len(result.rounds)) == ("REJECT", 0.0, 1)
    assert result.answer_kind == "degraded"
    assert result.final_answer.startswith(DEGRADED_HEADER)
    assert CLAIM not in result.final_answer
    assert result.last_round.gatekeeper.failed_rules == ["evidence.raw_path"]
    stored = store.get_session("diag-1")["self_evaluation"]["verifier_evaluation"]
    assert stored["gatekeeper_result"]["severity"] == "reject"


def test_low_confid_under_half_runs_exactly_one_more_round_with_retry_context() -> None:
    no_evidence = verifier("no_evidence", [], verdict="LOW_CONFID")
    first = [PLAN, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, no_evidence]
    second = [PLAN, {"stage": "executor", "content": GOOD_CONTRACT}, no_evidence]
    result, transport, _ = run(first + second)
    assert [r.round for r in result.rounds] == [1, 2]
    assert (result.final_verdict, result.answer_kind) == ("LOW_CONFID", "disclaimer")
    assert result.final_answer.startswith(DISCLAIMER)
    retry = result.rounds[1].retry_context
    assert retry is not None
    assert retry.previous_verdict == "LOW_CONFID"
    assert retry.evidence_gaps == [CLAIM]
    round_two_planner = [r for r in transport.requests if r.headers.get("x-diageval-round") == "2"]
    assert "retry_context" in json.dumps(round_two_planner[0].body, ensure_ascii=False)


def test_malformed_executor_output_is_a_failed_parse_and_the_session_completes() -> None:
    labelled = verifier("no_evidence", [], verdict="LOW_CONFID")
    entries = [PLAN, *GATHER, {"stage": "executor", "raw": "内存很高，可能泄漏 {"}, labelled]
    entries += [PLAN, {"stage": "executor", "raw": "仍然不是 JSON"}, labelled]
    result, _, _ = run(entries)
    first = result.rounds[0]
    assert first.parse_status.status == "failed"
    assert "json" in first.parse_status.detail.lower()
    assert first.executor_contract is None
    assert first.executor_final_answer == "内存很高，可能泄漏 {"
    assert first.gatekeeper.failed_rules == ["executor.parse_failed"]
    assert result.status == "completed"
    assert result.final_verdict == "LOW_CONFID"


@pytest.mark.parametrize("bad_answer", ["不是 JSON 的核查结论", ""], ids=["malformed", "missing"])
def test_unusable_verifier_output_falls_back_to_low_confid_and_is_persisted(
    bad_answer: str,
) -> None:
    bad = {"stage": "verifier", "raw": bad_answer}
    entries = [PLAN, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, bad, bad]
    result, transport, store = run(entries)
    assert [r.stage for r in transport.requests].count("verifier") == 2  # one re-ask
    assert (result.final_verdict, result.answer_kind, len(result.rounds)) == (
        "LOW_CONFID",
        "disclaimer",
        1,
    )
    assert result.last_round.verifier_output is None
    assert result.last_round.verifier_failure
    evaluation = store.get_session("diag-1")["self_evaluation"]["verifier_evaluation"]
    assert evaluation["derived_verdict"] == "LOW_CONFID"
    assert evaluation["fallback_reason"]


def test_an_executor_tool_that_times_out_is_a_failed_row_and_the_flow_continues() -> None:
    world = load_world(
        {**default_world().model_dump(mode="json"), "failures": {"query_logs": "timeout"}}
    )
    gap_contract = contract(binding(1, "$.alerts[0]", ALERT_EXCERPT, "query_metrics"))
    alert_only = verifier(
        "direct_evidence", [{"trace_ref": "trace-1", "source_invocation_ids": [1]}]
    )
    entries = [PLAN, *GATHER, {"stage": "executor", "content": gap_contract}, alert_only]
    result, transport, _ = run(entries, world=world)
    logs_row = result.invocations[1]
    assert (logs_row.tool_name, logs_row.success) == ("query_logs", False)
    assert "timeout" in (logs_row.error_message or "")
    assert result.status == "completed"
    summary = {item.tool_name: item for item in result.last_round.tool_trace_summary}
    assert (summary["query_logs"].success, summary["query_logs"].evidence_level) == (False, "none")
    executor_reply = transport.requests[2].body["messages"][-1]["content"]
    assert '"success":false' in executor_reply


def test_an_unknown_tool_gets_a_clear_error_back_and_is_recorded() -> None:
    call_unknown = {
        "stage": "executor",
        "tool_calls": [{"name": "restart_service", "arguments": {"service": "order-service"}}],
    }
    entries = [PLAN, call_unknown, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, DIRECT]
    result, transport, store = run(entries)
    first_call = result.rounds[0].tool_calls[0]
    assert (first_call.name, first_call.invocation_id) == ("restart_service", None)
    assert "restart_service" in (first_call.error or "")
    assert "query_logs" in (first_call.error or "")  # the allowed tools are named
    reply = transport.requests[2].body["messages"][-1]
    assert reply["role"] == "tool"
    assert "restart_service" in reply["content"]
    executor_step = store.list_agent_steps("diag-1")[1]
    assert executor_step["output"]["tool_calls"][0]["error"] == first_call.error
    assert result.final_verdict == "PASS"  # the real ids 1 and 2 still belong to the evidence


def test_two_runs_send_byte_identical_requests() -> None:
    entries = [PLAN, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, DIRECT]
    _, first, _ = run(entries)
    _, second, _ = run(entries)
    assert len(first.requests) == 4
    assert [r.content for r in first.requests] == [r.content for r in second.requests]
    for request in first.requests:
        assert request.headers["x-diageval-stage"] == request.stage
        assert request.headers["x-diageval-round"] == "1"


def test_verifier_input_holds_no_intermediate_reasoning() -> None:
    entries = [PLAN, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, DIRECT]
    result, transport, _ = run(entries)
    verifier_body = json.dumps(transport.requests[-1].body, ensure_ascii=False)
    plan_text = "查询告警与日志"
    assert plan_text in json.dumps(transport.requests[1].body, ensure_ascii=False)
    assert plan_text not in verifier_body
    assert '"tool_calls"' not in verifier_body
    user = transport.requests[-1].body["messages"][-1]["content"]
    payload = json.loads(user.removeprefix("<verifier_input>").removesuffix("</verifier_input>"))
    assert set(payload) == {
        "original_query",
        "executor_final_answer",
        "executor_structured_output",
        "executor_output_parse_status",
        "gatekeeper_result",
        "tool_trace_summary",
        "retry_context",
    }
    assert [set(entry) for entry in payload["tool_trace_summary"]] == [
        {
            "trace_ref",
            "tool_name",
            "source_invocation_ids",
            "evidence_level",
            "output_summary",
            "invocation_count",
            "no_hit_invocation_count",
        }
    ] * 2
    assert payload["executor_final_answer"] is None  # the contract parsed
    assert result.final_verdict == "PASS"


def test_an_llm_that_answers_nothing_usable_ends_the_session_as_an_error() -> None:
    def server_error(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(503, json={"error": {"message": "overloaded"}})

    config = LLMConfig(
        base_url="http://down.invalid/v1", model="m", api_key="k" * 12, max_retries=0
    )
    store = Store()
    with LLM(config, transport=httpx2.MockTransport(server_error)) as llm:
        result = ChatService(store=store).run(QUERY, default_world(), llm)
    assert (result.status, result.final_verdict) == ("error", None)
    assert "503" in (result.error or "") or "overloaded" in (result.error or "")
    session = store.get_session("diag-1")
    assert (session["status"], session["final_verdict"]) == ("error", None)
    assert session["error_message"] == result.error


def test_a_planner_failure_is_recorded_and_the_executor_works_from_the_query_alone() -> None:
    bad_plan = {"stage": "planner", "raw": "我不会做计划"}
    entries = [bad_plan, bad_plan, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, DIRECT]
    result, transport, store = run(entries)
    first = result.rounds[0]
    assert first.plan is None
    assert "planner output invalid" in (first.planner_error or "")
    assert result.final_verdict == "PASS"
    executor_user = transport.requests[2].body["messages"][1]["content"]
    assert "<planner_plan>" not in executor_user
    assert "<user_query>" in executor_user
    planner_step = store.list_agent_steps("diag-1")[0]
    assert planner_step["output"]["error"] == first.planner_error
    (reask,) = planner_step["output"]["reasks"]  # the first invalid answer was re-asked
    assert reask == "attempt 1: No tool calls or function call found in response (mode: TOOLS)"


def test_the_verifier_is_offered_only_the_sessions_claim_ids_and_trace_refs() -> None:
    entries = [PLAN, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, DIRECT]
    _, transport, _ = run(entries)
    (request,) = [r for r in transport.requests if r.stage == "verifier"]
    function = request.body["tools"][0]["function"]
    assert (function["name"], request.body["tool_choice"]["function"]["name"]) == (
        "VerifierOutput",
        "VerifierOutput",
    )
    defs = function["parameters"]["$defs"]
    assert defs["FactChecked"]["properties"]["claim_id"] == {"type": "string", "enum": ["claim-1"]}
    assert "claim_id" in defs["FactChecked"]["required"]
    assert defs["FactEvidenceRef"]["properties"]["trace_ref"] == {
        "type": "string",
        "enum": ["trace-1", "trace-2"],
    }


CUT_VERIFIER = {
    "stage": "verifier",
    "raw_arguments": '{"verdict": "PASS", "groundedness_score": 1.0, "facts_checked": [{"fa',
    "finish_reason": "length",
}


def test_a_verifier_answer_cut_at_max_tokens_is_re_asked_once_and_the_audit_says_so() -> None:
    entries = [PLAN, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, CUT_VERIFIER, DIRECT]
    result, transport, store = run(entries)
    assert [r.stage for r in transport.requests].count("verifier") == 2
    assert (result.final_verdict, result.final_score) == ("PASS", 1.0)
    verifier_step = store.list_agent_steps("diag-1")[2]
    assert verifier_step["agent"] == "verifier"
    assert verifier_step["output"]["reasks"] == [f"attempt 1: {CUT_OFF_REASON}"]


def test_a_verifier_answer_cut_twice_falls_back_and_the_failure_says_it_was_cut() -> None:
    cut = [CUT_VERIFIER, CUT_VERIFIER]
    entries = [PLAN, *GATHER, {"stage": "executor", "content": GOOD_CONTRACT}, *cut]
    result, _, store = run(entries)
    assert (result.final_verdict, result.final_score) == ("LOW_CONFID", 0.0)
    assert CUT_OFF_REASON in (result.last_round.verifier_failure or "")
    evaluation = store.get_session("diag-1")["self_evaluation"]["verifier_evaluation"]
    assert CUT_OFF_REASON in evaluation["fallback_reason"]
