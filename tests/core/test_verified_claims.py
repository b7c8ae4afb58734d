"""verified_claims: which claims an answer may state, which it drops and why, and which
verifier facts outside the claims may be listed; decisions derived from real gatekeeper
results on the session of ``support.soundness_cases``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval.core.contracts import ExecutorContract, VerifierOutput
from pytest_diageval.core.gatekeeper import Gatekeeper
from pytest_diageval.core.templates import is_presentable
from pytest_diageval.core.trace_summary import ToolTraceSummaryService
from pytest_diageval.core.verdict import VerdictDecision, derive_verdict, fallback_decision
from pytest_diageval.core.verified_claims import answer_facts, select_claims
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
RAW = '{"claim_text": "x"}'
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


def test_a_used_claim_carries_the_verified_text_of_its_passed_bindings() -> None:
    contract = make_contract(claim_data(MEMORY, [ALERT, LOG]))
    decision, gatekeeper = _decide(contract, [DIRECT])
    used = select_claims(decision, contract, gatekeeper, presentable=is_presentable).used
    assert len(used) == 1
    assert any("91.0%" in text for text in used[0].evidence_texts)
    assert any("HighMemoryUsage" in text for text in used[0].evidence_texts)


INVENTED = "order-service 已确认发生内存泄漏，需要立即扩容。"


@pytest.mark.parametrize(
    ("case", "fact"),
    [
        ("not a sentence of the answer", _fact("direct_evidence", "trace-1", [1], None, INVENTED)),
        ("cites only the runbook", _fact("direct_evidence", "trace-3", [3], None, MEMORY)),
        ("labelled no_evidence", _fact("no_evidence", "trace-1", [1], None, MEMORY)),
        ("about a claim", _fact("direct_evidence", "trace-1", [1], "claim-1", MEMORY)),
    ],
)
def test_answer_facts_table(case: str, fact: dict[str, Any]) -> None:
    """A fact is listed outside the claims only when it restates the executor's answer and
    cites incident evidence; none of these may be."""
    contract = make_contract(claim_data(MEMORY, [ALERT]))
    decision, _ = _decide(contract, [DIRECT, fact])
    assert answer_facts(decision, contract, MEMORY) == [], case
