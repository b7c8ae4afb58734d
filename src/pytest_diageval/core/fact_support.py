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

__all__ = [
    "CLAIM_UNCHECKED_RULE",
    "INCIDENT_EVIDENCE_TOOLS",
    "SUPPORTING",
    "Override",
    "downgrade_facts",
    "incident_evidence_facts",
    "unchecked_claims",
]

SUPPORTING: frozenset[FactVerification] = frozenset({"direct_evidence", "indirect_support"})
INCIDENT_EVIDENCE_TOOLS = frozenset({"query_metrics", "query_logs"})
"""Tools whose output is a fact of this incident (``lookup_knowledge`` is guidance)."""
CLAIM_UNCHECKED_RULE = "verifier.claim_unchecked"
"""Override rule of a fact the code added for a claim the verifier left out."""


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
    if not named_ids and not known_trace_refs.intersection(ref.trace_ref for ref in refs):
        cited = ", ".join(sorted({ref.trace_ref for ref in refs}))
        return (
            "no_evidence",
            "fact.evidence_ref_unknown",
            f"evidence_refs ({cited}) name neither an existing trace_ref"
            " nor an invocation of this session",
        )
    entries = _cited_entries(fact, trace_summary, session_ids)
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


def incident_evidence_facts(
    facts: Sequence[FactChecked],
    trace_summary: Sequence[ToolTraceSummaryItem],
    session_ids: frozenset[int],
) -> list[int]:
    """Indexes of the facts whose refs reach fresh incident evidence.

    That is a ``query_metrics`` / ``query_logs`` entry with fresh support (a hit, so its level
    is ``direct``; not a no-hit, failed or only deduped call). A fact that reaches only runbook
    entries may score as indirect support, but the templates never list it as a confirmed
    finding (004: runbook content is not a confirmed claim); this is the same standard they
    apply to a claim's bindings.
    """
    return [
        index
        for index, fact in enumerate(facts)
        if any(
            item.tool_name in INCIDENT_EVIDENCE_TOOLS and _is_fresh_support(item, negative=False)
            for item in _cited_entries(fact, trace_summary, session_ids)
        )
    ]


def unchecked_claims(
    claims: Sequence[Claim], facts: Sequence[FactChecked], overrides: list[Override]
) -> list[FactChecked]:
    """A critical ``no_evidence`` fact for every claim the verifier did not check.

    The added fact keeps the claim's text for the audit trail and the retry context (the next
    round must know which claim to support). It is executor text nobody verified, so the
    templates never print it: they find these facts by :data:`CLAIM_UNCHECKED_RULE`.
    """
    checked_ids = {fact.claim_id for fact in facts if fact.claim_id is not None}
    checked_texts = {fact.fact.strip() for fact in facts}
    added: list[FactChecked] = []
    for claim in claims:
        if claim.claim_id in checked_ids or claim.claim_text.strip() in checked_texts:
            continue
        reason = f"the verifier did not check claim {claim.claim_id}; every claim must be checked"
        overrides.append(
            Override(
                rule=CLAIM_UNCHECKED_RULE,
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


def _cited_entries(
    fact: FactChecked,
    trace_summary: Sequence[ToolTraceSummaryItem],
    session_ids: frozenset[int],
) -> list[ToolTraceSummaryItem]:
    """Summary entries a fact's refs reach: by ``trace_ref``, or by an invocation id of this
    session (an id of another session reaches nothing)."""
    traces = {ref.trace_ref for ref in fact.evidence_refs}
    ids = {i for ref in fact.evidence_refs for i in ref.source_invocation_ids if i in session_ids}
    return [
        item
        for item in trace_summary
        if item.trace_ref in traces or ids.intersection(item.source_invocation_ids)
    ]


def _is_fresh_support(item: ToolTraceSummaryItem, negative: bool) -> bool:
    only_deduped = item.deduped_invocation_count >= item.invocation_count > 0
    if only_deduped:
        return False
    if negative:
        # "未检索到 …" is supported by a search that completed and found nothing, and by
        # nothing else: an entry with hits on that topic speaks against it.
        return item.evidence_level == "none" and item.success and item.no_hit_invocation_count > 0
    return item.evidence_level != "none"
