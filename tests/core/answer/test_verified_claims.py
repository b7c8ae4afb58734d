"""verified_claims: which claims an answer may state, which it drops and why, and which
verifier facts outside the claims may be listed; decisions derived from real gatekeeper
results on the session of ``support.soundness_cases``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval.core.answer.answer_templates import is_presentable
from pytest_diageval.core.answer.composer import compose_answer
from pytest_diageval.core.answer.routing import decide_route
from pytest_diageval.core.answer.verified_claims import select_claims
from pytest_diageval.core.contract.contracts import ExecutorContract, VerifierOutput
from pytest_diageval.core.evidence.trace_summary import ToolTraceSummaryService
from pytest_diageval.core.judge.gatekeeper import Gatekeeper
from pytest_diageval.core.judge.verdict import VerdictDecision, derive_verdict, fallback_decision
from support.citations import ALERT, FORGED, LOG, MEMORY, RUNBOOK, claim_data, make_contract
from support.soundness_cases import SESSION, TEMPLATE


def _decide(contract: ExecutorContract, facts: list[dict[str, Any]]) -> tuple[VerdictDecision, Any]:
    gatekeeper = Gatekeeper(TEMPLATE.store).check(contract, SESSION)
    invocations = TEMPLATE.store.list_invocations(SESSION)
    output = VerifierOutput.model_validate(
        {
            "verdict": "PASS",
            "groundedness_score": 1.0,
            "critical_fact_count": len(facts),
            "facts_checked": facts,
            "rationale": "table",
        }
    )
    decision = derive_verdict(
        output,
        gatekeeper,
        ToolTraceSummaryService(TEMPLATE.store).build(SESSION),
        [row.id for row in invocations],
        claims=contract.claims,
        invocations=invocations,
    )
    return decision, gatekeeper


def _fact(
    label: str, trace: str, ids: list[int], claim_id: str | None = "claim-1", text: str = MEMORY
) -> dict[str, Any]:
    return {
        "fact": text,
        "claim_id": claim_id,
        "is_critical": True,
        "verification": label,
        "detail": "table",
        "evidence_refs": [{"trace_ref": trace, "source_invocation_ids": ids}],
    }


DIRECT = _fact("direct_evidence", "trace-1", [1])
# Raw output whose words are all grounded (the alert's number): only the presentability
# screen stops it. (A raw field name such as claim_text is an entity no item shows.)
RAW = "```\n91%\n```"
SELECTIONS = [
    ("direct claim", claim_data(MEMORY, [ALERT, LOG]), [DIRECT], "used direct_evidence"),
    (
        "indirect label",
        claim_data(MEMORY, [ALERT]),
        [_fact("indirect_support", "trace-1", [1])],
        "used indirect_support",
    ),
    (
        "a failed binding",
        claim_data(MEMORY, [ALERT, FORGED]),
        [DIRECT],
        "dropped a binding of it failed the gatekeeper (evidence.excerpt_mismatch)",
    ),
    (
        "no bindings",
        claim_data(MEMORY, [], support_level="none"),
        [DIRECT],
        "dropped claim claim-1 binds no evidence",
    ),
    (
        "runbook",
        claim_data(MEMORY, [ALERT, RUNBOOK]),
        [DIRECT],
        "dropped it rests on runbook guidance",
    ),
    # the code adds a critical no_evidence fact for a claim the verifier skipped
    ("unchecked", claim_data(MEMORY, [ALERT]), [], "dropped its final label is no_evidence"),
    (
        "no_evidence label",
        claim_data(MEMORY, [ALERT]),
        [_fact("no_evidence", "trace-1", [1])],
        "dropped its final label is no_evidence",
    ),
    (
        "raw text",
        claim_data(RAW, [ALERT]),
        [_fact("direct_evidence", "trace-1", [1], text=RAW)],
        "dropped its text is not presentable",
    ),
]


@pytest.mark.parametrize(
    ("case", "claim", "facts", "expected"), SELECTIONS, ids=[row[0] for row in SELECTIONS]
)
def test_select_claims_table(
    case: str, claim: dict[str, Any], facts: list[dict[str, Any]], expected: str
) -> None:
    contract = make_contract(claim)
    decision, gatekeeper = _decide(contract, facts)
    selection = select_claims(decision, contract, gatekeeper, presentable=is_presentable)
    if expected.startswith("used "):
        assert [(u.claim.claim_id, u.label) for u in selection.used] == [
            ("claim-1", expected.removeprefix("used "))
        ], case
        assert selection.dropped == []
    else:
        assert selection.used == []
        assert [d.claim_id for d in selection.dropped] == ["claim-1"]
        assert selection.dropped[0].reason.startswith(expected.removeprefix("dropped ")), case


def test_after_a_verifier_fallback_no_claim_is_used() -> None:
    contract = make_contract(claim_data(MEMORY, [ALERT, LOG]))
    gatekeeper = Gatekeeper(TEMPLATE.store).check(contract, SESSION)
    decision = fallback_decision("the verifier answered twice with invalid JSON", gatekeeper)
    selection = select_claims(decision, contract, gatekeeper, presentable=is_presentable)
    assert selection.used == []
    assert [(d.claim_id, d.reason) for d in selection.dropped] == [
        ("claim-1", "its bindings carry no evidence")
    ]


INVENTED = "order-service 已确认发生内存泄漏，需要立即扩容。"
RESTATED = "order-service 当前存在 HighMemoryUsage 告警"  # a clause of MEMORY, not its text


@pytest.mark.parametrize(
    ("case", "fact"),
    [
        ("not a sentence of the answer", _fact("direct_evidence", "trace-1", [1], None, INVENTED)),
        ("restates the answer", _fact("direct_evidence", "trace-1", [1], None, RESTATED)),
        ("cites only the runbook", _fact("direct_evidence", "trace-3", [3], None, RESTATED)),
    ],
)
def test_a_fact_outside_every_claim_is_never_a_finding(case: str, fact: dict[str, Any]) -> None:
    """Its text and refs are the verifier's word: the answer never lists it, whatever it cites
    or restates (the claim itself is unchecked here, so nothing is a finding)."""
    contract = make_contract(claim_data(MEMORY, [ALERT]))
    decision, gatekeeper = _decide(contract, [fact])
    route = decide_route(decision, 2, max_rounds=2)
    answer = compose_answer(
        route,
        decision=decision,
        contract=contract,
        executor_final_answer=MEMORY,
        gatekeeper=gatekeeper,
    ).answer
    assert fact["fact"] not in answer, case
    assert "暂无经核验确认的发现" in answer, case
