"""Routing decision: every branch of ChatService's rules, and the retry context."""

from __future__ import annotations

import pytest

from pytest_diageval.core.answer.routing import build_retry_context, decide_route
from pytest_diageval.core.contract.contracts import FactChecked, GatekeeperResult, RetryContext
from pytest_diageval.core.judge.verdict import VerdictDecision, fallback_decision

GATE_PASS = GatekeeperResult(status="pass", severity="none")
GATE_REJECT = GatekeeperResult(
    status="fail", severity="reject", failed_rules=["evidence.excerpt_mismatch"]
)


def _decision(
    verdict: str, score: float, facts: list[FactChecked] | None = None
) -> VerdictDecision:
    return VerdictDecision(
        model_verdict=verdict,  # type: ignore[arg-type]
        model_score=score,
        derived_verdict=verdict,  # type: ignore[arg-type]
        derived_score=score,
        facts=facts or [],
    )


@pytest.mark.parametrize(
    ("verdict", "score", "round", "action"),
    [
        ("PASS", 1.0, 1, "direct"),
        ("PASS", 0.8, 2, "direct"),
        ("LOW_CONFID", 0.6, 1, "disclaimer"),
        ("LOW_CONFID", 0.5, 1, "disclaimer"),  # the threshold itself is a disclaimer
        ("LOW_CONFID", 0.4667, 1, "retry"),
        ("LOW_CONFID", 0.0, 1, "retry"),
        ("LOW_CONFID", 0.2, 2, "disclaimer"),  # after the second verifier: no third round
        ("LOW_CONFID", 0.6, 2, "disclaimer"),
        ("REJECT", 0.0, 1, "degraded"),  # never a retry
        ("REJECT", 0.0, 2, "degraded"),
    ],
)
def test_route_table(verdict: str, score: float, round: int, action: str) -> None:
    route = decide_route(_decision(verdict, score), round)
    assert (route.action, route.round) == (action, round)


def test_reasons_name_the_rule_that_decided() -> None:
    assert decide_route(_decision("LOW_CONFID", 0.2), 1).reason == (
        "LOW_CONFID with score 0.2 < 0.5 in round 1 of 2: one more round to gather evidence"
    )
    assert decide_route(_decision("REJECT", 0.0), 1).reason.startswith("REJECT")


def test_verifier_fallback_is_a_disclaimer_without_an_extra_round() -> None:
    decision = fallback_decision("verifier returned no output", GATE_PASS)
    route = decide_route(decision, 1, verifier_fallback=True)
    assert route.action == "disclaimer"
    assert "no extra round" in route.reason
    # The same decision without the fallback flag would have been retried (score 0.0).
    assert decide_route(decision, 1).action == "retry"


def test_verifier_fallback_never_softens_a_gatekeeper_reject() -> None:
    decision = fallback_decision("verifier returned no output", GATE_REJECT)
    assert decide_route(decision, 1, verifier_fallback=True).action == "degraded"


def test_a_single_round_budget_never_retries() -> None:
    assert decide_route(_decision("LOW_CONFID", 0.0), 1, max_rounds=1).action == "disclaimer"


@pytest.mark.parametrize(("round", "max_rounds"), [(0, 2), (3, 2), (1, 0)])
def test_rounds_out_of_range_are_refused(round: int, max_rounds: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        decide_route(_decision("PASS", 1.0), round, max_rounds=max_rounds)


def test_retry_context_lists_critical_no_evidence_facts_once_in_order() -> None:
    facts = [
        FactChecked(
            fact="order-service 存在内存泄漏",
            is_critical=True,
            verification="no_evidence",
            detail="-",
        ),
        FactChecked(
            fact="HighMemoryUsage 告警 91%",
            is_critical=True,
            verification="direct_evidence",
            detail="-",
        ),
        FactChecked(
            fact="Full GC 15 次", is_critical=False, verification="no_evidence", detail="-"
        ),
        FactChecked(
            fact="堆 dump 显示大对象", is_critical=True, verification="no_evidence", detail="-"
        ),
        FactChecked(
            fact="order-service 存在内存泄漏",
            is_critical=True,
            verification="no_evidence",
            detail="-",
        ),
    ]
    gate = GatekeeperResult(
        status="fail",
        severity="low_confid",
        failed_rules=["evidence.raw_path_missing", "evidence.raw_path_missing"],
    )
    context = build_retry_context(_decision("LOW_CONFID", 0.3333, facts), gate)
    assert context == RetryContext(
        round=2,
        previous_verdict="LOW_CONFID",
        previous_groundedness_score=0.3333,
        evidence_gaps=["order-service 存在内存泄漏", "堆 dump 显示大对象"],
        gatekeeper_failed_rules=["evidence.raw_path_missing"],
    )
