"""Which checked facts the session's evidence can actually carry (step 1 of the verdict).

The verifier labels each fact; this module holds a label to what its ``evidence_refs`` reach
in the tool trace summary, and records every change as an :class:`Override`. The rules are
listed in :mod:`pytest_diageval.core.verdict`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from pytest_diageval.core.contracts import (
    Claim,
    FactChecked,
    FactVerification,
    ToolTraceSummaryItem,
)

__all__ = ["SUPPORTING", "Override", "downgrade_facts", "unchecked_claims"]

SUPPORTING: frozenset[FactVerification] = frozenset({"direct_evidence", "indirect_support"})


class Override(BaseModel):
    """One place where the code's decision differs from a previous value."""

    model_config = ConfigDict(extra="forbid", strict=True)

    rule: str
    fact_index: int | None = None
    fact: str | None = None
    from_value: str | float | None
    to_value: str | float
    reason: str


def downgrade_facts(
    facts: Sequence[FactChecked],
    trace_summary: Sequence[ToolTraceSummaryItem],
    session_ids: frozenset[int],
    negative_claim_ids: frozenset[str],
    overrides: list[Override],
) -> list[FactChecked]:
    derived: list[FactChecked] = []
    for index, fact in enumerate(facts):
        negative = fact.claim_id is not None and fact.claim_id in negative_claim_ids
        change = (
            _reference_problem(fact, trace_summary, session_ids, negative)
            if fact.verification in SUPPORTING
            else None
        )
        if change is None:
            derived.append(fact.model_copy(deep=True))
            continue
        label, rule, reason = change
        overrides.append(
            Override(
                rule=rule,
                fact_index=index,
                fact=fact.fact,
                from_value=fact.verification,
                to_value=label,
                reason=reason,
            )
        )
        derived.append(fact.model_copy(update={"verification": label}, deep=True))
    return derived


def _reference_problem(
    fact: FactChecked,
    trace_summary: Sequence[ToolTraceSummaryItem],
    session_ids: frozenset[int],
    negative: bool,
) -> tuple[FactVerification, str, str] | None:
    """``(new label, rule, reason)`` when the refs cannot carry the label; None when they can."""
    refs = fact.evidence_refs
    if not refs:
        return "no_evidence", "fact.evidence_refs_empty", "fact cites no evidence_refs"
    known_trace_refs = {item.trace_ref for item in trace_summary}
    named_ids = {i for ref in refs for i in ref.source_invocation_ids if i in session_ids}
    named_traces = {ref.trace_ref for ref in refs if ref.trace_ref in known_trace_refs}
    if not named_ids and not named_traces:
        cited = ", ".join(sorted({ref.trace_ref for ref in refs}))
        return (
            "no_evidence",
            "fact.evidence_ref_unknown",
            f"evidence_refs ({cited}) name neither an existing trace_ref"
            " nor an invocation of this session",
        )
    entries = [
        item
        for item in trace_summary
        if item.trace_ref in named_traces or named_ids.intersection(item.source_invocation_ids)
    ]
    fresh = [item for item in entries if _is_fresh_support(item, negative)]
    if not fresh:
        return (
            "no_evidence",
            "fact.evidence_not_fresh",
            "evidence_refs point only at entries without fresh support"
            " (evidence_level none: failed, no-hit or deduped calls)",
        )
    only_indirect = not any(item.evidence_level == "direct" for item in fresh)
    if fact.verification == "direct_evidence" and not negative and only_indirect:
        return (
            "indirect_support",
            "fact.evidence_level_cap",
            "evidence_refs point only at indirect entries (runbook guidance is not an"
            " incident fact), so the fact is at most indirectly supported",
        )
    return None


def unchecked_claims(
    claims: Sequence[Claim], facts: Sequence[FactChecked], overrides: list[Override]
) -> list[FactChecked]:
    """A critical ``no_evidence`` fact for every claim the verifier did not check."""
    checked_ids = {fact.claim_id for fact in facts if fact.claim_id is not None}
    checked_texts = {fact.fact.strip() for fact in facts}
    added: list[FactChecked] = []
    for claim in claims:
        if claim.claim_id in checked_ids or claim.claim_text.strip() in checked_texts:
            continue
        reason = f"the verifier did not check claim {claim.claim_id}; every claim must be checked"
        overrides.append(
            Override(
                rule="verifier.claim_unchecked",
                fact_index=len(facts) + len(added),
                fact=claim.claim_text,
                from_value=None,
                to_value="no_evidence",
                reason=reason,
            )
        )
        added.append(
            FactChecked(
                fact=claim.claim_text,
                claim_id=claim.claim_id,
                is_critical=True,
                verification="no_evidence",
                detail=reason,
            )
        )
    return added


def _is_fresh_support(item: ToolTraceSummaryItem, negative: bool) -> bool:
    only_deduped = item.deduped_invocation_count >= item.invocation_count > 0
    if only_deduped:
        return False
    if negative:
        # "未检索到 …" is supported by a search that completed and found nothing, and by
        # nothing else: an entry with hits on that topic speaks against it.
        return item.evidence_level == "none" and item.success and item.no_hit_invocation_count > 0
    return item.evidence_level != "none"
