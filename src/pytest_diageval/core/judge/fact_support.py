"""Which checked facts the session's evidence can actually carry (step 1 of the verdict).

The verifier labels each fact; this module holds a label to what its ``evidence_refs`` reach
in the tool trace summary, and records every change as an :class:`Override`. The rules are
listed in :mod:`pytest_diageval.core.judge.verdict`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from pytest_diageval.core.contract.contracts import (
    Claim,
    FactChecked,
    FactVerification,
    ToolTraceSummaryItem,
)
from pytest_diageval.core.contract.rules import lowered_to
from pytest_diageval.core.judge.claim_support import (
    INCIDENT_EVIDENCE_TOOLS,
    ClaimCeiling,
    label_rank,
)

__all__ = [
    "CLAIM_CEILING_RULE",
    "CLAIM_UNCHECKED_RULE",
    "CLAIM_UNKNOWN_RULE",
    "CRITICALITY_RULE",
    "INCIDENT_EVIDENCE_TOOLS",
    "REF_NOT_BOUND_RULE",
    "SUPPORTING",
    "TRACE_REF_UNKNOWN_RULE",
    "Override",
    "anchor_to_claims",
    "claim_of",
    "downgrade_facts",
    "force_critical",
    "incident_evidence_facts",
    "reject_unknown_claims",
    "unchecked_claims",
]

SUPPORTING: frozenset[FactVerification] = frozenset({"direct_evidence", "indirect_support"})
CLAIM_UNCHECKED_RULE = "verifier.claim_unchecked"
"""Override rule of a fact the code added for a claim the verifier left out."""
CRITICALITY_RULE = "fact.criticality"
"""Override rule of a fact the verifier called non-critical: criticality belongs to the code."""
CLAIM_CEILING_RULE = "fact.claim_ceiling"
"""Override rule of a fact labelled above what its claim's own checked bindings carry."""
REF_NOT_BOUND_RULE = "fact.ref_not_bound"
"""Override rule of a fact about a claim that cites evidence the claim never bound."""
CLAIM_UNKNOWN_RULE = "fact.claim_unknown"
"""Override rule of a fact naming a ``claim_id`` the contract does not have."""
TRACE_REF_UNKNOWN_RULE = "fact.trace_ref_unknown"
"""Override rule of a fact citing a ``trace_ref`` the session's trace summary does not have."""
_SHOWN_ID_CHARS = 80  # a model-written id, quoted in an audit reason


class Override(BaseModel):
    """One place where the code's decision differs from a previous value."""

    model_config = ConfigDict(extra="forbid", strict=True)

    rule: str
    fact_index: int | None = None
    fact: str | None = None
    from_value: str | float | None
    to_value: str | float
    reason: str


def reject_unknown_claims(
    facts: Sequence[FactChecked], claims: Sequence[Claim], overrides: list[Override]
) -> list[FactChecked]:
    """A fact naming a claim the contract does not have supports nothing and is critical.

    The verifier's schema offers only the contract's claim ids (none without claims), so such a
    fact comes from a model that ignored it: the code cannot hold its label to any claim's
    evidence, so a supporting label becomes ``no_evidence``, and it is critical like every fact
    about a claim (the verifier cannot make it vanish from the matrix). A fact without any
    ``claim_id`` is matched by text (:func:`claim_of`) as before."""
    known = {claim.claim_id for claim in claims}
    listed = ", ".join(sorted(known)) or "none: the contract has no claims"
    kept: list[FactChecked] = []
    for index, fact in enumerate(facts):
        if fact.claim_id is None or fact.claim_id in known:
            kept.append(fact)
            continue
        label: FactVerification = (
            lowered_to(CLAIM_UNKNOWN_RULE) if fact.verification in SUPPORTING else fact.verification
        )
        changed = label != fact.verification
        if changed or not fact.is_critical:
            shown = repr(fact.claim_id[:_SHOWN_ID_CHARS])
            overrides.append(
                Override(
                    rule=CLAIM_UNKNOWN_RULE,
                    fact_index=index,
                    fact=fact.fact,
                    from_value=fact.verification if changed else "non-critical",
                    to_value=label if changed else "critical",
                    reason=f"the fact names claim {shown}, which the contract does not have"
                    f" (its claims: {listed}); it supports nothing and is critical",
                )
            )
        kept.append(fact.model_copy(update={"verification": label, "is_critical": True}))
    return kept


def force_critical(
    facts: Sequence[FactChecked], claims: Sequence[Claim], overrides: list[Override]
) -> list[FactChecked]:
    """Every fact about a claim is critical: criticality belongs to the code, and the verifier
    cannot demote a claim out of the verdict matrix. A fact outside every claim keeps the
    verifier's flag: it can lower the verdict, never carry a PASS (see ``verdict``), and the
    answer never lists it as confirmed unless it restates the executor's answer."""
    kept: list[FactChecked] = []
    for index, fact in enumerate(facts):
        if not fact.is_critical and claim_of(fact, claims) is not None:
            overrides.append(
                Override(
                    rule=CRITICALITY_RULE,
                    fact_index=index,
                    fact=fact.fact,
                    from_value="non-critical",
                    to_value="critical",
                    reason="criticality belongs to the code: every claim is critical",
                )
            )
            fact = fact.model_copy(update={"is_critical": True})
        kept.append(fact)
    return kept


def claim_of(fact: FactChecked, claims: Sequence[Claim]) -> Claim | None:
    """The contract claim a fact is about: by ``claim_id``, else by identical text."""
    for claim in claims:
        if fact.claim_id is not None and fact.claim_id == claim.claim_id:
            return claim
    if fact.claim_id is None:
        text = fact.fact.strip()
        return next((claim for claim in claims if claim.claim_text.strip() == text), None)
    return None


def anchor_to_claims(
    facts: Sequence[FactChecked],
    claims: Sequence[Claim],
    ceilings: dict[str, ClaimCeiling],
    trace_summary: Sequence[ToolTraceSummaryItem],
    overrides: list[Override],
) -> list[FactChecked]:
    """Hold each fact about a claim to that claim's ceiling and bound evidence.

    A fact whose refs name evidence its claim never bound is ``no_evidence``
    (:data:`REF_NOT_BOUND_RULE`); a label above the claim's ceiling is lowered to it
    (:data:`CLAIM_CEILING_RULE`). Labels are only ever lowered.
    """
    anchored: list[FactChecked] = []
    for index, fact in enumerate(facts):
        claim = claim_of(fact, claims)
        ceiling = None if claim is None else ceilings.get(claim.claim_id)
        if ceiling is not None and fact.verification in SUPPORTING:
            fact = _anchor_one(index, fact, ceiling, trace_summary, overrides)
        anchored.append(fact)
    return anchored


def _anchor_one(
    index: int,
    fact: FactChecked,
    ceiling: ClaimCeiling,
    trace_summary: Sequence[ToolTraceSummaryItem],
    overrides: list[Override],
) -> FactChecked:
    changes: list[tuple[FactVerification, str, str]] = []
    label = fact.verification
    if label_rank(label) > label_rank(ceiling.ceiling):
        label = ceiling.ceiling
        why = f"capped at the claim's ceiling ({ceiling.rule or 'bindings'}): {ceiling.reason}"
        changes.append((label, CLAIM_CEILING_RULE, why))
    unbound = _unbound_refs(fact, set(ceiling.bound_invocation_ids), trace_summary)
    if label in SUPPORTING and unbound:
        label = lowered_to(REF_NOT_BOUND_RULE)
        why = (
            f"the fact about claim {ceiling.claim_id} cites {unbound}, which the claim never"
            f" bound (it bound {ceiling.bound_invocation_ids})"
        )
        changes.append((label, REF_NOT_BOUND_RULE, why))
    previous = fact.verification
    for new_label, rule, reason in changes:
        overrides.append(
            Override(
                rule=rule,
                fact_index=index,
                fact=fact.fact,
                from_value=previous,
                to_value=new_label,
                reason=reason,
            )
        )
        previous = new_label
    return fact if not changes else fact.model_copy(update={"verification": label})


def _unbound_refs(
    fact: FactChecked, bound: set[int], trace_summary: Sequence[ToolTraceSummaryItem]
) -> str:
    """The refs of ``fact`` that name no invocation its claim bound, described; '' if none.

    A ref names the invocations it lists, or when it lists none, those of its trace entry. A
    merged entry may list a no-hit call beside the hit the claim bound: naming one bound
    invocation is enough, naming none is citing evidence the claim never bound."""
    by_ref = {item.trace_ref: item for item in trace_summary}
    problems: list[str] = []
    for ref in fact.evidence_refs:
        item = by_ref.get(ref.trace_ref)
        named = ref.source_invocation_ids or ([] if item is None else item.source_invocation_ids)
        if named and not bound.intersection(named):
            problems.append(f"{ref.trace_ref} (invocations {sorted(set(named))})")
    return "; ".join(problems)


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
        return _lowered("fact.evidence_refs_empty", "fact cites no evidence_refs")
    known_trace_refs = {item.trace_ref for item in trace_summary}
    named_ids = {i for ref in refs for i in ref.source_invocation_ids if i in session_ids}
    if not named_ids and not known_trace_refs.intersection(ref.trace_ref for ref in refs):
        cited = ", ".join(sorted({ref.trace_ref for ref in refs}))
        return _lowered(
            "fact.evidence_ref_unknown",
            f"evidence_refs ({cited}) name neither an existing trace_ref"
            " nor an invocation of this session",
        )
    unknown = sorted({ref.trace_ref for ref in refs} - known_trace_refs)
    if unknown:
        # The schema offers only the session's trace refs: a ref outside them is made up, and
        # a fact that cites made-up evidence carries no label, whatever else it cites.
        shown = ", ".join(repr(ref[:_SHOWN_ID_CHARS]) for ref in unknown)
        return _lowered(
            TRACE_REF_UNKNOWN_RULE,
            f"evidence_refs cite {shown}, which this session's trace summary does not have"
            f" (it has {', '.join(item.trace_ref for item in trace_summary) or 'none'})",
        )
    entries = _cited_entries(fact, trace_summary, session_ids)
    fresh = [item for item in entries if _is_fresh_support(item, negative)]
    if not fresh:
        return _lowered(
            "fact.evidence_not_fresh",
            "evidence_refs point only at entries without fresh support"
            " (evidence_level none: failed, no-hit or deduped calls)",
        )
    only_indirect = not any(item.evidence_level == "direct" for item in fresh)
    if fact.verification == "direct_evidence" and not negative and only_indirect:
        return _lowered(
            "fact.evidence_level_cap",
            "evidence_refs point only at indirect entries (runbook guidance is not an"
            " incident fact), so the fact is at most indirectly supported",
        )
    return None


def _lowered(rule: str, reason: str) -> tuple[FactVerification, str, str]:
    """``(label, rule, reason)``: the label ``rule`` lowers a fact to (the rules table's)."""
    return lowered_to(rule), rule, reason


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
    # A fact checks the one claim claim_of finds (by id, else the first claim of its text).
    checked = {id(claim) for fact in facts if (claim := claim_of(fact, claims)) is not None}
    added: list[FactChecked] = []
    for claim in claims:
        if id(claim) in checked:
            continue
        reason = f"the verifier did not check claim {claim.claim_id}; every claim must be checked"
        label = lowered_to(CLAIM_UNCHECKED_RULE)
        overrides.append(
            Override(
                rule=CLAIM_UNCHECKED_RULE,
                fact_index=len(facts) + len(added),
                fact=claim.claim_text,
                from_value=None,
                to_value=label,
                reason=reason,
            )
        )
        added.append(
            FactChecked(
                fact=claim.claim_text,
                claim_id=claim.claim_id,
                is_critical=True,
                verification=label,
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
