"""Rule evaluation from the tool trace, the verifier audit record, and both channels of
``self_evaluation`` surviving each other's writes in a real store."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval.core.answer.audit import (
    TRACEABILITY_VERSION,
    build_verifier_evaluation,
    persist_verifier_evaluation,
)
from pytest_diageval.core.answer.routing import decide_route
from pytest_diageval.core.contract.contracts import (
    EvidenceRef,
    GatekeeperResult,
    ParseStatus,
    RetrievalDetails,
    RuleMessage,
    ToolTraceSummaryItem,
    VerifierOutput,
)
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.judge.rule_evaluation import (
    EvaluationService,
    EvidenceCounts,
    FiredRule,
    evaluate_rows,
)
from pytest_diageval.core.judge.verdict import derive_verdict, fallback_decision

NOW = "2026-07-08T11:17:00+08:00"
MEMORY_ALERT = (
    "HighMemoryUsage firing, service=order-service, current=91%, duration=15m;"
    " JVM heap usage 3.8GB/4GB"
)
MEMORY_LOG = "[11:17][WARN][order-service] 内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB"
RUNBOOK = "内存告警排查手册：检查 GC 日志、堆 dump 与对象分配统计"


def _row(store: Store, tool: str, outcome: str, text: str = "", session: str = "s1") -> int:
    """Insert one evidence row the way the recorder persists that outcome."""
    path = {"query_metrics": "$.alerts[0]", "query_logs": "$.logs[0]"}.get(
        tool, "$.evidence_blocks[0]"
    )
    details: RetrievalDetails | None
    if outcome == "supported":
        details = RetrievalDetails(
            evidence_status="supported", evidence_refs=[EvidenceRef(raw_path=path, text=text)]
        )
    elif outcome == "deduped":
        details = RetrievalDetails(
            evidence_status="deduped", evidence_refs=[], dedup_reason="same query in session"
        )
    elif outcome in ("no_evidence", "failed"):
        details = RetrievalDetails(evidence_status=outcome, evidence_refs=[])
    else:  # a legacy row from before evidence refs
        details = None
    return store.insert_invocation(
        session_id=session,
        round=1,
        tool_name=tool,
        input_params={"service": "order-service"},
        duration_ms=4,
        success=outcome != "failed",
        error_message="timeout: query_metrics exceeded 5000ms" if outcome == "failed" else None,
        output_preview=None,
        output_truncated=False,
        retrieval_details=details,
    )


@pytest.fixture
def store() -> Store:
    store = Store()
    store.create_session("s1", "order-service 是否存在 HighMemoryUsage 告警？", NOW)
    return store


# --------------------------------------------------------------------------- rule evaluation


def test_mixed_trace_counts_every_outcome_and_fires_the_matching_rules(store: Store) -> None:
    _row(store, "query_metrics", "supported", MEMORY_ALERT)
    _row(store, "query_logs", "supported", MEMORY_LOG)
    _row(store, "lookup_knowledge", "supported", RUNBOOK)
    _row(store, "lookup_knowledge", "deduped")
    _row(store, "query_logs", "no_evidence")
    _row(store, "query_metrics", "failed")
    evaluation = EvaluationService(store).evaluate("s1")
    assert evaluation.tool_call_count == 6
    assert evaluation.evidence_counts == EvidenceCounts(
        direct=2, indirect=1, none=3, failed=1, no_hit=1, deduped=1
    )
    assert evaluation.fired_rules == [
        FiredRule(rule="trace.direct_evidence", effect=0.6, detail="2 direct rows"),
        FiredRule(
            rule="trace.corroborated",
            effect=0.2,
            detail="direct rows from query_logs, query_metrics",
        ),
        FiredRule(rule="trace.indirect_evidence", effect=0.2, detail="1 indirect rows"),
        FiredRule(rule="trace.failed_calls", effect=-0.1, detail="1 failed rows"),
    ]
    assert evaluation.evidence_score == 0.9


def test_an_empty_trace_scores_zero(store: Store) -> None:
    evaluation = EvaluationService(store).evaluate("s1")
    assert (evaluation.tool_call_count, evaluation.evidence_score) == (0, 0.0)
    assert [r.rule for r in evaluation.fired_rules] == ["trace.no_tool_calls"]


def test_mostly_empty_calls_are_penalised(store: Store) -> None:
    _row(store, "query_logs", "supported", MEMORY_LOG)
    _row(store, "query_logs", "no_evidence")
    _row(store, "query_logs", "no_evidence")
    _row(store, "lookup_knowledge", "deduped")
    evaluation = EvaluationService(store).evaluate("s1")
    assert [r.rule for r in evaluation.fired_rules] == [
        "trace.direct_evidence",
        "trace.mostly_no_hit",
    ]
    assert evaluation.evidence_score == 0.5


def test_failed_call_penalty_is_capped_and_the_score_never_goes_below_zero(store: Store) -> None:
    _row(store, "query_logs", "supported", MEMORY_LOG)
    for _ in range(4):
        _row(store, "query_metrics", "failed")
    assert EvaluationService(store).evaluate("s1").evidence_score == 0.3
    only_failures = [row for row in store.list_invocations("s1") if not row.success]
    assert evaluate_rows(only_failures).evidence_score == 0.0


def test_legacy_rows_and_supported_rows_without_refs_are_no_evidence(store: Store) -> None:
    _row(store, "query_metrics", "legacy")
    no_refs: tuple[list[EvidenceRef] | None, ...] = (None, [])  # never extracted / none usable
    for refs in no_refs:
        store.insert_invocation(
            session_id="s1",
            round=1,
            tool_name="query_logs",
            input_params={"service": "order-service"},
            duration_ms=4,
            success=True,
            error_message=None,
            output_preview=None,
            output_truncated=False,
            retrieval_details=RetrievalDetails(evidence_status="supported", evidence_refs=refs),
        )
    evaluation = EvaluationService(store).evaluate("s1")
    assert evaluation.evidence_counts == EvidenceCounts(none=3, no_hit=1)
    assert evaluation.evidence_score == 0.0


def test_rows_of_other_sessions_are_not_counted(store: Store) -> None:
    store.create_session("s2", "other", NOW)
    _row(store, "query_metrics", "supported", MEMORY_ALERT, session="s2")
    assert EvaluationService(store).evaluate("s1").tool_call_count == 0


# --------------------------------------------------------------------------- audit record

SUMMARY = [
    ToolTraceSummaryItem(
        trace_ref="trace-1",
        tool_name="query_metrics",
        source_invocation_ids=[1],
        success=True,
        input_summary="service=order-service",
        output_summary=f"metric_evidence: {MEMORY_ALERT}",
        evidence_level="direct",
        invocation_count=1,
        no_hit_invocation_count=0,
        failed_invocation_count=0,
    )
]
PARSED = ParseStatus(status="valid", detail="parsed executor evidence contract")
GATE_PASS = GatekeeperResult(status="pass", severity="none")
GATE_LOW = GatekeeperResult(
    status="fail",
    severity="low_confid",
    failed_rules=["evidence.raw_path_missing"],
    warnings=[RuleMessage(rule="evidence.raw_path_missing", message="binding has no raw_path")],
)


def _verifier_output(fact_refs: list[dict[str, Any]]) -> VerifierOutput:
    return VerifierOutput.model_validate(
        {
            "verdict": "PASS",
            "groundedness_score": 1.0,
            "critical_fact_count": 1,
            "facts_checked": [
                {
                    "fact": "order-service 存在 HighMemoryUsage 告警，内存使用率 91%",
                    "is_critical": True,
                    "verification": "direct_evidence",
                    "detail": "告警直接支持",
                    "evidence_refs": fact_refs,
                }
            ],
            "rationale": "alert cited from query_metrics",
        }
    )


def _record(round: int, gate: GatekeeperResult, refs: list[dict[str, Any]]) -> dict[str, Any]:
    output = _verifier_output(refs)
    decision = derive_verdict(output, gate, SUMMARY, {1})
    return build_verifier_evaluation(
        round=round,
        verifier_output=output,
        decision=decision,
        gatekeeper=gate,
        trace_summary=SUMMARY,
        parse_status=PARSED,
        route=decide_route(decision, round),
        fallback_reason=None,
    )


def test_audit_record_holds_snapshot_gatekeeper_parse_status_and_overrides() -> None:
    record = _record(1, GATE_LOW, [])
    assert record["traceability_version"] == TRACEABILITY_VERSION == "2"
    assert record["tool_trace_summary"] == [SUMMARY[0].model_dump(mode="json")]
    assert record["gatekeeper_result"]["failed_rules"] == ["evidence.raw_path_missing"]
    assert record["executor_output_parse_status"] == {
        "status": "valid",
        "detail": "parsed executor evidence contract",
    }
    assert (record["model_verdict"], record["model_score"]) == ("PASS", 1.0)
    assert (record["derived_verdict"], record["derived_score"]) == ("LOW_CONFID", 0.0)
    assert [o["rule"] for o in record["overrides"]] == [
        "fact.evidence_refs_empty",
        "verdict.matrix",
        "verdict.score",
    ]
    assert record["facts_checked"][0]["verification"] == "no_evidence"
    assert record["verifier_output"]["facts_checked"][0]["verification"] == "direct_evidence"
    assert record["route"]["action"] == "retry"


def test_audit_record_of_a_fallback_needs_its_reason() -> None:
    decision = fallback_decision("verifier output unparseable after re-ask", GATE_PASS)
    route = decide_route(decision, 1, verifier_fallback=True)
    arguments: dict[str, Any] = {
        "round": 1,
        "verifier_output": None,
        "decision": decision,
        "gatekeeper": GATE_PASS,
        "trace_summary": SUMMARY,
        "parse_status": PARSED,
        "route": route,
    }
    record = build_verifier_evaluation(
        **arguments, fallback_reason="verifier output unparseable after re-ask"
    )
    assert (record["verifier_fallback"], record["verifier_output"]) == (True, None)
    assert record["route"]["action"] == "disclaimer"
    with pytest.raises(ValueError, match="fallback_reason"):
        build_verifier_evaluation(**arguments, fallback_reason=None)


def test_rounds_are_kept_and_the_latest_gatekeeper_result_is_at_the_channel_top(
    store: Store,
) -> None:
    round_1 = _record(1, GATE_LOW, [])
    round_2 = _record(2, GATE_PASS, [{"trace_ref": "trace-1", "source_invocation_ids": [1]}])
    persist_verifier_evaluation(store, "s1", round_1)
    persist_verifier_evaluation(store, "s1", round_2)
    channel = store.get_session("s1")["self_evaluation"]["verifier_evaluation"]
    assert channel["gatekeeper_result"] == GATE_PASS.model_dump(mode="json")
    assert (channel["round"], channel["derived_verdict"]) == (2, "PASS")
    assert [r["round"] for r in channel["rounds"]] == [1, 2]
    assert channel["rounds"][0] == round_1
    # Persisting round 1 again replaces it and leaves round 2 the latest.
    persist_verifier_evaluation(store, "s1", round_1)
    channel = store.get_session("s1")["self_evaluation"]["verifier_evaluation"]
    assert (channel["round"], [r["round"] for r in channel["rounds"]]) == (2, [1, 2])


def test_persist_refuses_a_record_that_is_not_one_round(store: Store) -> None:
    with pytest.raises(ValueError, match="build_verifier_evaluation"):
        persist_verifier_evaluation(store, "s1", {"rounds": []})


# --------------------------------------------------------------------------- both channels


def test_both_evaluation_channels_survive_each_others_writes(store: Store) -> None:
    _row(store, "query_metrics", "supported", MEMORY_ALERT)
    service = EvaluationService(store)
    rule_evaluation = service.persist("s1")
    persist_verifier_evaluation(store, "s1", _record(1, GATE_LOW, []))
    container = store.get_session("s1")["self_evaluation"]
    assert container["rule_evaluation"] == rule_evaluation.model_dump(mode="json")
    assert container["verifier_evaluation"]["round"] == 1

    _row(store, "query_logs", "supported", MEMORY_LOG)
    service.persist("s1")
    container = store.get_session("s1")["self_evaluation"]
    assert container["rule_evaluation"]["tool_call_count"] == 2
    assert container["rule_evaluation"]["evidence_score"] == 0.8
    assert container["verifier_evaluation"]["gatekeeper_result"]["severity"] == "low_confid"
    assert [r["round"] for r in container["verifier_evaluation"]["rounds"]] == [1]


def test_a_round_and_its_rule_evaluation_are_written_in_one_go_as_one_by_one(
    store: Store,
) -> None:
    _row(store, "query_metrics", "supported", MEMORY_ALERT)
    one_by_one = Store()
    one_by_one.create_session("s1", "q", NOW)
    _row(one_by_one, "query_metrics", "supported", MEMORY_ALERT)
    for round, gate in ((1, GATE_LOW), (2, GATE_PASS)):
        record = _record(round, gate, [])
        rules = evaluate_rows(store.list_invocations("s1")).model_dump(mode="json")
        persist_verifier_evaluation(store, "s1", record, rule_evaluation=rules)
        persist_verifier_evaluation(one_by_one, "s1", record)
        EvaluationService(one_by_one).persist("s1")
        assert (
            store.get_session("s1")["self_evaluation"]
            == one_by_one.get_session("s1")["self_evaluation"]
        )
    container = store.get_session("s1")["self_evaluation"]
    assert container["rule_evaluation"]["tool_call_count"] == 1
    assert [r["round"] for r in container["verifier_evaluation"]["rounds"]] == [1, 2]
