"""Fact support: which facts cite incident evidence, and the facts added for unchecked claims."""

from __future__ import annotations

import pytest

from pytest_diageval.core.contract.contracts import Claim, FactChecked
from pytest_diageval.core.judge.fact_support import (
    CLAIM_UNCHECKED_RULE,
    Override,
    incident_evidence_facts,
    unchecked_claims,
)
from support.summaries import summary_item as _item

SESSION_IDS = frozenset({1, 2, 3, 4, 5})
ROOT_CAUSE = "根因已确认: order-service HikariCP 连接池耗尽 active=50/50, 立即重启"


SUMMARY = [
    _item("trace-1", "query_metrics", [1], "direct"),
    _item("trace-2", "query_logs", [2], "direct"),
    _item("trace-3", "lookup_knowledge", [3], "indirect"),
    _item("trace-4", "query_logs", [4], "none", no_hit=1),
    _item("trace-5", "query_metrics", [5], "direct", deduped=1),  # a deduped repeat only
]


def _fact(*refs: tuple[str, list[int]]) -> FactChecked:
    return FactChecked.model_validate(
        {
            "fact": "order-service 内存使用率 91%",
            "is_critical": True,
            "verification": "direct_evidence",
            "detail": "告警直接支持",
            "evidence_refs": [{"trace_ref": t, "source_invocation_ids": ids} for t, ids in refs],
        }
    )


@pytest.mark.parametrize(
    ("refs", "cites_incident"),
    [
        ([("trace-1", [1])], True),  # metrics
        ([("trace-2", [])], True),  # logs, by trace_ref alone
        ([("trace-x", [2])], True),  # logs, by an invocation id of this session
        ([("trace-3", [3])], False),  # runbook only: guidance, not an incident fact
        ([("trace-3", [3]), ("trace-2", [2])], True),  # runbook plus logs
        ([("trace-4", [4])], False),  # a log search that found nothing
        ([("trace-5", [5])], False),  # only a deduped call
        ([("trace-x", [99])], False),  # an invocation of another session
        ([], False),
    ],
)
def test_incident_evidence_facts_table(
    refs: list[tuple[str, list[int]]], cites_incident: bool
) -> None:
    facts = [_fact(("trace-1", [1])), _fact(*refs)]
    expected = [0, 1] if cites_incident else [0]
    assert incident_evidence_facts(facts, SUMMARY, SESSION_IDS) == expected


def test_an_invocation_id_outside_the_session_reaches_no_entry() -> None:
    by_id = _fact(("trace-x", [2]))
    assert incident_evidence_facts([by_id], SUMMARY, SESSION_IDS) == [0]
    assert incident_evidence_facts([by_id], SUMMARY, frozenset({1})) == []


def test_an_unchecked_claim_keeps_its_text_for_the_audit_under_a_named_rule() -> None:
    claims = [Claim(claim_id="claim-2", claim_type="root_cause", claim_text=ROOT_CAUSE)]
    overrides: list[Override] = []
    added = unchecked_claims(claims, [_fact(("trace-1", [1]))], overrides)
    assert [(f.fact, f.claim_id, f.is_critical, f.verification) for f in added] == [
        (ROOT_CAUSE, "claim-2", True, "no_evidence")
    ]
    assert [(o.rule, o.fact_index, o.fact) for o in overrides] == [
        (CLAIM_UNCHECKED_RULE, 1, ROOT_CAUSE)
    ]
    assert CLAIM_UNCHECKED_RULE == "verifier.claim_unchecked"
