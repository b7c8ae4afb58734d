"""Verdict derivation: the matrix row by row, reference downgrades, gatekeeper caps, fallback."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    Claim,
    EvidenceBinding,
    GatekeeperResult,
    RetrievalDetails,
    RuleMessage,
    ToolInvocation,
    VerifierOutput,
)
from pytest_diageval.core.judge.verdict import (
    Override,
    VerdictDecision,
    derive_verdict,
    fallback_decision,
    round_score,
)
from support.summaries import summary_item as _item

# A session of the default world: metrics (1) and logs (2) hit order-service memory evidence,
# a runbook lookup (3) hit and its repeat (4) was deduped into the same entry, a second
# lookup (5) was deduped on its own, and a HikariCP log query (6) found nothing.
SESSION_IDS = {1, 2, 3, 4, 5, 6}
FOREIGN_ID = 99  # an invocation of another session


SUMMARY = [
    _item("trace-1", "query_metrics", [1], "direct"),
    _item("trace-2", "query_logs", [2], "direct"),
    _item("trace-3", "lookup_knowledge", [3, 4], "indirect", deduped=1),
    _item("trace-4", "lookup_knowledge", [5], "none", deduped=1),
    _item("trace-5", "query_logs", [6], "none", no_hit=1),
]

MEMORY = "order-service 存在 HighMemoryUsage 告警，内存使用率 91%"
HEAP_LOG = "order-service 日志记录 JVM 堆内存 3.8GB/4GB"
RUNBOOK = "内存告警排查手册建议检查堆 dump"
LEAK = "order-service 存在内存泄漏"
HIKARI = "order-service HikariCP 连接池耗尽"

GATE_PASS = GatekeeperResult(status="pass", severity="none")
GATE_REJECT = GatekeeperResult(
    status="fail",
    severity="reject",
    failed_rules=["evidence.raw_path"],
    errors=[RuleMessage(rule="evidence.raw_path", message="raw_path $.alerts[9] not found")],
)
GATE_LOW = GatekeeperResult(
    status="fail",
    severity="low_confid",
    failed_rules=["evidence.raw_path_missing"],
    warnings=[RuleMessage(rule="evidence.raw_path_missing", message="no raw_path")],
)
GATE_PARSE_FAILED = GatekeeperResult(
    status="fail",
    severity="low_confid",
    failed_rules=["executor.parse_failed"],
    errors=[RuleMessage(rule="executor.parse_failed", message="not a JSON object")],
)


def _fact(
    text: str, verification: str, refs: list[tuple[str, list[int]]], critical: bool = True
) -> dict[str, Any]:
    return {
        "fact": text,
        "is_critical": critical,
        "verification": verification,
        "detail": "",
        "evidence_refs": [{"trace_ref": t, "source_invocation_ids": ids} for t, ids in refs],
    }


def _output(verdict: str, score: float, *facts: dict[str, Any]) -> VerifierOutput:
    return VerifierOutput.model_validate(
        {
            "verdict": verdict,
            "groundedness_score": score,
            "critical_fact_count": sum(1 for f in facts if f["is_critical"]),
            "facts_checked": list(facts),
            "rationale": "checked against the trace",
        }
    )


def _derive(output: VerifierOutput, gate: GatekeeperResult = GATE_PASS) -> VerdictDecision:
    return derive_verdict(output, gate, SUMMARY, SESSION_IDS)


def _rules(decision: VerdictDecision) -> list[str]:
    return [o.rule for o in decision.overrides]


# --------------------------------------------------------------------------- matrix


def test_all_critical_direct_is_pass_with_score_one_and_no_override() -> None:
    output = _output(
        "PASS",
        1.0,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(HEAP_LOG, "direct_evidence", [("trace-2", [2])]),
    )
    decision = _derive(output)
    assert (decision.derived_verdict, decision.derived_score) == ("PASS", 1.0)
    assert (decision.model_verdict, decision.model_score) == ("PASS", 1.0)
    assert decision.overrides == []


def test_direct_plus_indirect_is_pass_with_the_mean_score() -> None:
    output = _output(
        "PASS",
        0.8,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(HEAP_LOG, "indirect_support", [("trace-2", [2])]),
    )
    decision = _derive(output)
    assert (decision.derived_verdict, decision.derived_score) == ("PASS", 0.8)
    assert decision.overrides == []


def test_only_indirect_critical_facts_is_low_confid_even_if_the_model_says_pass() -> None:
    output = _output("PASS", 0.9, _fact(RUNBOOK, "indirect_support", [("trace-3", [3])]))
    decision = _derive(output)
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.6)
    assert decision.overrides == [
        Override(
            rule="verdict.matrix",
            from_value="PASS",
            to_value="LOW_CONFID",
            reason="critical facts are only indirectly supported",
        ),
        Override(
            rule="verdict.score",
            from_value=0.9,
            to_value=0.6,
            reason="score is the mean of critical fact weights"
            " (direct 1.0, indirect 0.6, no_evidence 0.0; contradicted → 0.0)",
        ),
    ]


def test_a_critical_no_evidence_fact_is_low_confid_with_a_four_decimal_score() -> None:
    output = _output(
        "LOW_CONFID",
        0.5333,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(RUNBOOK, "indirect_support", [("trace-3", [3])]),
        _fact(LEAK, "no_evidence", []),
    )
    decision = _derive(output)
    # (1.0 + 0.6 + 0.0) / 3 = 0.5333… rounded to 4 decimals; the model agreed, no override.
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.5333)
    assert decision.overrides == []


def test_a_model_saying_pass_over_a_contradicted_fact_is_overridden_to_reject_zero() -> None:
    output = _output(
        "PASS",
        0.9,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(HIKARI, "contradicted", [("trace-5", [6])]),
    )
    decision = _derive(output)
    assert (decision.derived_verdict, decision.derived_score) == ("REJECT", 0.0)
    assert (decision.model_verdict, decision.model_score) == ("PASS", 0.9)
    assert [(o.rule, o.from_value, o.to_value) for o in decision.overrides] == [
        ("verdict.matrix", "PASS", "REJECT"),
        ("verdict.score", 0.9, 0.0),
    ]
    assert decision.overrides[0].reason == "a critical fact is contradicted by the evidence"


def test_no_critical_fact_is_low_confid_with_score_zero() -> None:
    output = _output(
        "PASS", 1.0, _fact(MEMORY, "direct_evidence", [("trace-1", [1])], critical=False)
    )
    decision = _derive(output)
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.0)
    assert _rules(decision) == ["verdict.matrix", "verdict.score"]


def test_non_critical_facts_do_not_change_the_score() -> None:
    output = _output(
        "PASS",
        1.0,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(LEAK, "no_evidence", [], critical=False),
        _fact(HIKARI, "contradicted", [("trace-5", [6])], critical=False),
    )
    decision = _derive(output)
    assert (decision.derived_verdict, decision.derived_score) == ("PASS", 1.0)


def test_score_is_exact_mean_rounded_and_clamped() -> None:
    output = _output(
        "PASS",
        0.7333,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(RUNBOOK, "indirect_support", [("trace-3", [3])]),
        _fact("知识库建议关注 GC 日志", "indirect_support", [("trace-3", [3])]),
    )
    assert _derive(output).derived_score == 0.7333  # 2.2 / 3
    assert round_score(Fraction(3, 2)) == 1.0
    assert round_score(-0.2) == 0.0
    assert round_score(Fraction(2, 3)) == 0.6667


# --------------------------------------------------------------------------- downgrades


def test_supported_fact_without_refs_is_downgraded_and_pass_becomes_low_confid() -> None:
    output = _output(
        "PASS",
        1.0,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(HEAP_LOG, "direct_evidence", []),
    )
    decision = _derive(output)
    assert [f.verification for f in decision.facts] == ["direct_evidence", "no_evidence"]
    assert decision.overrides[0] == Override(
        rule="fact.evidence_refs_empty",
        fact_index=1,
        fact=HEAP_LOG,
        from_value="direct_evidence",
        to_value="no_evidence",
        reason="fact cites no evidence_refs",
    )
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.5)
    # The verifier's own output is left as it was: the audit keeps what the model said.
    assert output.facts_checked[1].verification == "direct_evidence"


def test_refs_naming_no_trace_ref_and_no_session_invocation_are_downgraded() -> None:
    output = _output("PASS", 1.0, _fact(MEMORY, "direct_evidence", [("trace-9", [FOREIGN_ID])]))
    decision = _derive(output)
    assert decision.facts[0].verification == "no_evidence"
    assert decision.overrides[0].rule == "fact.evidence_ref_unknown"
    assert "trace-9" in decision.overrides[0].reason
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.0)


def test_a_ref_without_a_trace_ref_of_the_summary_is_made_up_whatever_ids_it_lists() -> None:
    # The verifier's schema offers only the summary's trace refs (issue 25): naming an
    # invocation of this session no longer excuses a made-up trace_ref.
    output = _output("PASS", 1.0, _fact(HEAP_LOG, "direct_evidence", [("trace-9", [2])]))
    decision = _derive(output)
    assert decision.facts[0].verification == "no_evidence"
    assert [(o.rule, o.from_value, o.to_value) for o in decision.overrides[:1]] == [
        ("fact.trace_ref_unknown", "direct_evidence", "no_evidence")
    ]
    assert decision.overrides[0].reason == (
        "evidence_refs cite 'trace-9', which this session's trace summary does not have"
        " (it has trace-1, trace-2, trace-3, trace-4, trace-5)"
    )
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.0)


def test_one_made_up_trace_ref_beside_a_real_one_rejects_the_fact() -> None:
    refs = [("trace-2", [2]), ("trace-7", [])]
    output = _output("PASS", 1.0, _fact(HEAP_LOG, "direct_evidence", refs))
    decision = _derive(output)
    assert decision.facts[0].verification == "no_evidence"
    assert _rules(decision)[0] == "fact.trace_ref_unknown"
    assert "'trace-7'" in decision.overrides[0].reason


def test_a_made_up_trace_ref_on_a_gap_or_a_contradiction_changes_nothing() -> None:
    output = _output(
        "REJECT",
        0.0,
        _fact(HIKARI, "contradicted", [("trace-9", [])]),
        _fact(LEAK, "no_evidence", [("trace-8", [])]),
    )
    decision = _derive(output)
    assert [f.verification for f in decision.facts] == ["contradicted", "no_evidence"]
    assert "fact.trace_ref_unknown" not in _rules(decision)


def test_a_ref_to_a_deduped_lookup_entry_is_never_fresh_support() -> None:
    output = _output(
        "PASS",
        1.0,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(RUNBOOK, "indirect_support", [("trace-4", [5])]),
    )
    decision = _derive(output)
    assert [f.verification for f in decision.facts] == ["direct_evidence", "no_evidence"]
    assert [(o.rule, o.fact_index, o.from_value) for o in decision.overrides[:1]] == [
        ("fact.evidence_not_fresh", 1, "indirect_support")
    ]
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.5)


def test_a_ref_to_a_no_hit_entry_is_downgraded_and_any_fresh_ref_keeps_the_fact() -> None:
    only_no_hit = _output("PASS", 1.0, _fact(HIKARI, "direct_evidence", [("trace-5", [6])]))
    assert _derive(only_no_hit).overrides[0].rule == "fact.evidence_not_fresh"
    mixed = _output(
        "PASS", 1.0, _fact(MEMORY, "direct_evidence", [("trace-5", [6]), ("trace-1", [1])])
    )
    assert _derive(mixed).facts[0].verification == "direct_evidence"


def test_an_entry_of_only_deduped_calls_is_not_fresh_even_if_labelled_supported() -> None:
    stale = _item("trace-6", "lookup_knowledge", [7], "indirect", deduped=1)
    output = _output("LOW_CONFID", 0.6, _fact(RUNBOOK, "indirect_support", [("trace-6", [7])]))
    decision = derive_verdict(output, GATE_PASS, [*SUMMARY, stale], {*SESSION_IDS, 7})
    assert decision.overrides[0].rule == "fact.evidence_not_fresh"


def test_a_session_invocation_missing_from_the_summary_is_not_fresh_support() -> None:
    # Invocation 7 is this session's but in no summary entry: it adds no fresh support.
    output = _output("PASS", 1.0, _fact(MEMORY, "direct_evidence", [("trace-5", [7])]))
    decision = derive_verdict(output, GATE_PASS, SUMMARY, {*SESSION_IDS, 7})
    assert decision.overrides[0].rule == "fact.evidence_not_fresh"


def test_contradicted_and_no_evidence_labels_are_never_touched_by_ref_checks() -> None:
    output = _output(
        "REJECT", 0.0, _fact(HIKARI, "contradicted", []), _fact(LEAK, "no_evidence", [])
    )
    decision = _derive(output)
    assert [f.verification for f in decision.facts] == ["contradicted", "no_evidence"]
    assert decision.overrides == []


# --------------------------------------------------------------------------- gatekeeper


def _pass_output() -> VerifierOutput:
    return _output("PASS", 1.0, _fact(MEMORY, "direct_evidence", [("trace-1", [1])]))


def test_gatekeeper_reject_caps_pass_to_reject_with_score_zero() -> None:
    decision = _derive(_pass_output(), GATE_REJECT)
    assert (decision.derived_verdict, decision.derived_score) == ("REJECT", 0.0)
    assert [(o.rule, o.from_value, o.to_value) for o in decision.overrides] == [
        ("gatekeeper.reject", "PASS", "REJECT"),
        ("gatekeeper.reject", 1.0, 0.0),
    ]
    assert "evidence.raw_path" in decision.overrides[0].reason
    # The verifier's facts still feed the audit and the templates.
    assert decision.facts[0].verification == "direct_evidence"


def test_gatekeeper_low_confid_caps_pass_and_keeps_the_score() -> None:
    decision = _derive(_pass_output(), GATE_LOW)
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 1.0)
    assert [(o.rule, o.from_value, o.to_value) for o in decision.overrides] == [
        ("gatekeeper.low_confid", "PASS", "LOW_CONFID")
    ]


def test_gatekeeper_low_confid_does_not_raise_a_reject_or_touch_low_confid() -> None:
    contradicted = _output("REJECT", 0.0, _fact(HIKARI, "contradicted", [("trace-5", [6])]))
    assert _derive(contradicted, GATE_LOW).derived_verdict == "REJECT"
    low = _output("LOW_CONFID", 0.6, _fact(RUNBOOK, "indirect_support", [("trace-3", [3])]))
    decision = _derive(low, GATE_LOW)
    assert (decision.derived_verdict, decision.derived_score, decision.overrides) == (
        "LOW_CONFID",
        0.6,
        [],
    )


def test_an_executor_parse_failure_grade_caps_pass_to_low_confid() -> None:
    decision = _derive(_pass_output(), GATE_PARSE_FAILED)
    assert decision.derived_verdict == "LOW_CONFID"
    assert "executor.parse_failed" in decision.overrides[0].reason


# --------------------------------------------------------------------------- fallback


def test_fallback_is_low_confid_with_no_model_values_and_a_recorded_override() -> None:
    decision = fallback_decision("verifier output is not valid JSON after one re-ask", GATE_PASS)
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.0)
    assert (decision.model_verdict, decision.model_score, decision.facts) == (None, None, [])
    assert decision.overrides == [
        Override(
            rule="verifier.fallback",
            from_value=None,
            to_value="LOW_CONFID",
            reason="verifier output is not valid JSON after one re-ask",
        )
    ]
    assert fallback_decision("no verifier output", None).derived_verdict == "LOW_CONFID"
    assert fallback_decision("no verifier output", GATE_LOW).derived_verdict == "LOW_CONFID"


def test_fallback_never_softens_a_gatekeeper_reject() -> None:
    decision = fallback_decision("no verifier output", GATE_REJECT)
    assert (decision.derived_verdict, decision.derived_score) == ("REJECT", 0.0)
    assert _rules(decision) == ["verifier.fallback", "gatekeeper.reject"]


def test_fallback_needs_a_reason() -> None:
    with pytest.raises(ValueError, match="reason"):
        fallback_decision("  ", GATE_PASS)


def test_a_decision_survives_a_json_round_trip() -> None:
    output = _output(
        "PASS",
        0.9,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(HEAP_LOG, "direct_evidence", []),
    )
    decision = _derive(output, GATE_LOW)
    assert VerdictDecision.model_validate_json(decision.model_dump_json()) == decision


# --------------------------------------------------------------------------- negative claims

NO_HIKARI = "未检索到 order-service 的 HikariCP 连接池耗尽日志"


def _negative(verification: str = "direct_evidence", claim_id: str = "claim-1") -> dict[str, Any]:
    return {**_fact(NO_HIKARI, verification, [("trace-5", [6])]), "claim_id": claim_id}


# Where each claim id binds in these tests: (tool, invocation, raw path). claim-1 binds the
# HikariCP no-hit (6) by its collection path, claim-2 the memory alert (1).
BOUND_AT = {
    "claim-1": ("query_logs", 6, "$.logs"),
    "claim-2": ("query_metrics", 1, "$.alerts[0]"),
    "claim-3": ("query_logs", 2, "$.logs[0]"),
}
NO_HIT_SEARCH = ToolInvocation(
    id=6,
    session_id="diag-1",
    round=1,
    tool_name="query_logs",
    input_params={"service": "order-service", "keywords": ["HikariCP"]},
    duration_ms=1,
    success=True,
    retrieval_details=RetrievalDetails(evidence_status="no_evidence", evidence_refs=[], total=0),
)


def _claims(*claims: tuple[str, str, str]) -> list[Claim]:
    """Claims that each bind where :data:`BOUND_AT` says."""
    built = []
    for claim_id, claim_type, text in claims:
        tool, invocation, path = BOUND_AT[claim_id]
        binding = EvidenceBinding(tool_name=tool, source_invocation_id=invocation, raw_path=path)
        built.append(
            Claim(
                claim_id=claim_id,
                claim_type=claim_type,
                claim_text=text,
                evidence_bindings=[binding],
            )
        )
    return built


def _gate_for(claims: list[Claim]) -> GatekeeperResult:
    """The gatekeeper passing every binding of ``claims``."""
    rows = [
        CheckedBinding(
            claim_id=claim.claim_id,
            tool_name=b.tool_name,
            source_invocation_id=b.source_invocation_id,
            raw_path=b.raw_path,
            status="pass",
        )
        for claim in claims
        for b in claim.evidence_bindings
    ]
    return GatekeeperResult(status="pass", severity="none", checked_bindings=rows)


def _derive_claims(output: VerifierOutput, claims: list[Claim]) -> VerdictDecision:
    return derive_verdict(
        output, _gate_for(claims), SUMMARY, SESSION_IDS, claims, invocations=[NO_HIT_SEARCH]
    )


NEGATIVE_CLAIM = _claims(("claim-1", "negative_observation", NO_HIKARI))
POSITIVE_CLAIM = _claims(("claim-1", "observation", NO_HIKARI))


def test_a_no_hit_search_supports_only_a_negative_observation_claim() -> None:
    output = _output("PASS", 1.0, _negative())
    negative = _derive_claims(output, NEGATIVE_CLAIM)
    assert (negative.derived_verdict, negative.derived_score) == ("PASS", 1.0)
    assert negative.overrides == []
    positive = _derive_claims(output, POSITIVE_CLAIM)
    assert (positive.derived_verdict, positive.derived_score) == ("LOW_CONFID", 0.0)
    assert positive.overrides[0].rule == "fact.evidence_not_fresh"
    assert positive.claim_ceilings[0].rule == "claim.no_hit_not_support"


def test_a_no_hit_supports_a_negative_claim_only_about_what_it_searched() -> None:
    """The no-hit searched order-service for HikariCP: it says nothing about inventory-service,
    nor about a topic it did not search."""
    for text in (
        "未检索到 inventory-service 的 HikariCP 连接池耗尽日志",
        "未检索到 order-service 的慢 SQL 日志",
        "未检索到 order-service 与 inventory-service 的 HikariCP 日志",
    ):
        claims = _claims(("claim-1", "negative_observation", text))
        fact = {**_fact(text, "direct_evidence", [("trace-5", [6])]), "claim_id": "claim-1"}
        decision = _derive_claims(_output("PASS", 1.0, fact), claims)
        assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.0), text
        assert decision.claim_ceilings[0].rule == "claim.negative_subject", text


def test_a_deduped_or_foreign_entry_never_supports_a_negative_claim() -> None:
    deduped = {**_fact(NO_HIKARI, "direct_evidence", [("trace-4", [5])]), "claim_id": "claim-1"}
    decision = _derive_claims(_output("PASS", 1.0, deduped), NEGATIVE_CLAIM)
    assert decision.derived_verdict == "LOW_CONFID"
    other_claim = _derive_claims(
        _output("PASS", 1.0, _negative(claim_id="claim-2")),
        _claims(("claim-2", "observation", NO_HIKARI)),
    )
    assert other_claim.derived_verdict == "LOW_CONFID"


def test_a_negative_claim_citing_an_entry_with_hits_is_not_supported() -> None:
    cites_hits = {**_fact(NO_HIKARI, "direct_evidence", [("trace-2", [2])]), "claim_id": "claim-1"}
    decision = _derive_claims(_output("PASS", 1.0, cites_hits), NEGATIVE_CLAIM)
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.0)
    assert decision.overrides[0].rule == "fact.evidence_not_fresh"


def test_direct_label_over_runbook_entries_only_is_capped_at_indirect() -> None:
    runbook_fact = _fact(RUNBOOK, "direct_evidence", [("trace-3", [3])])
    decision = derive_verdict(_output("PASS", 1.0, runbook_fact), GATE_PASS, SUMMARY, SESSION_IDS)
    assert decision.facts[0].verification == "indirect_support"
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.6)
    assert decision.overrides[0].rule == "fact.evidence_level_cap"


def test_a_fact_naming_a_claim_the_contract_lacks_supports_nothing_and_is_critical() -> None:
    # Recorded live: facts pointed at no claim. Every real claim is checked here, directly;
    # the fact about "claim-9" (none such) would otherwise ride along as a supported fact.
    checked = {**_negative(), "claim_id": "claim-1"}
    ghost = {**_fact(MEMORY, "direct_evidence", [("trace-1", [1])], critical=False)}
    ghost["claim_id"] = "claim-9"
    decision = _derive_claims(_output("PASS", 1.0, checked, ghost), NEGATIVE_CLAIM)
    assert [(f.verification, f.is_critical) for f in decision.facts] == [
        ("direct_evidence", True),
        ("no_evidence", True),
    ]
    unknown = [o for o in decision.overrides if o.rule == "fact.claim_unknown"]
    assert [(o.fact_index, o.from_value, o.to_value) for o in unknown] == [
        (1, "direct_evidence", "no_evidence")
    ]
    assert unknown[0].reason == (
        "the fact names claim 'claim-9', which the contract does not have (its claims:"
        " claim-1); it supports nothing and is critical"
    )
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.5)


def test_a_gap_naming_an_unknown_claim_only_becomes_critical() -> None:
    ghost = {**_fact(MEMORY, "no_evidence", [], critical=False), "claim_id": "c1"}
    decision = _derive_claims(_output("LOW_CONFID", 0.5, _negative(), ghost), NEGATIVE_CLAIM)
    unknown = [o for o in decision.overrides if o.rule == "fact.claim_unknown"]
    assert [(o.from_value, o.to_value) for o in unknown] == [("non-critical", "critical")]
    assert decision.facts[1].verification == "no_evidence"


def test_a_fact_without_a_claim_id_is_still_matched_by_its_text() -> None:
    fact = _fact(MEMORY, "direct_evidence", [("trace-1", [1])])
    decision = _derive_claims(
        _output("PASS", 1.0, fact), _claims(("claim-2", "observation", MEMORY))
    )
    assert "fact.claim_unknown" not in _rules(decision)
    assert (decision.derived_verdict, decision.derived_score) == ("PASS", 1.0)


def test_a_claim_the_verifier_never_checked_becomes_a_critical_gap() -> None:
    memory = _fact(MEMORY, "direct_evidence", [("trace-1", [1])])
    claims = _claims(("claim-2", "observation", MEMORY), ("claim-3", "root_cause", LEAK))
    decision = _derive_claims(_output("PASS", 1.0, memory), claims)
    assert [(f.fact, f.verification) for f in decision.facts] == [
        (MEMORY, "direct_evidence"),
        (LEAK, "no_evidence"),
    ]
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.5)
    assert "verifier.claim_unchecked" in [o.rule for o in decision.overrides]


def test_the_decision_lists_the_facts_that_cite_incident_evidence() -> None:
    output = _output(
        "PASS",
        1.0,
        _fact(MEMORY, "direct_evidence", [("trace-1", [1])]),
        _fact(RUNBOOK, "indirect_support", [("trace-3", [3])]),
        _fact(HEAP_LOG, "direct_evidence", [("trace-9", [2])]),  # reaches trace-2 by its id
    )
    claims = _claims(("claim-1", "root_cause", LEAK))
    decision = derive_verdict(output, GATE_PASS, SUMMARY, SESSION_IDS, claims)
    assert [f.fact for f in decision.facts] == [MEMORY, RUNBOOK, HEAP_LOG, LEAK]
    assert decision.incident_evidence_facts == [0, 2]
    assert fallback_decision("no verifier output", None).incident_evidence_facts == []


def test_a_runbook_only_critical_fact_can_never_carry_a_pass() -> None:
    log_fact = _fact(MEMORY, "direct_evidence", [("trace-2", [2])])
    runbook_fact = _fact(RUNBOOK, "direct_evidence", [("trace-3", [3])])
    decision = derive_verdict(
        _output("PASS", 1.0, log_fact, runbook_fact), GATE_PASS, SUMMARY, SESSION_IDS
    )
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.8)
    assert [o.rule for o in decision.overrides] == [
        "fact.evidence_level_cap",
        "verdict.score",
        "verdict.runbook_only",
    ]
