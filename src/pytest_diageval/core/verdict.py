"""Verdict derivation: the verifier model labels facts, this code decides the verdict.

The model's ``verdict`` and ``groundedness_score`` are kept for the audit but never used as
the decision. The decision is recomputed from ``facts_checked`` in four steps:

1. **Reference downgrades.** A fact labelled ``direct_evidence`` or ``indirect_support`` is
   downgraded to ``no_evidence`` when its ``evidence_refs`` are empty
   (``fact.evidence_refs_empty``), when no ref names an existing ``trace_ref`` or an
   invocation of this session (``fact.evidence_ref_unknown``), or when every summary entry
   its refs point at carries no fresh support (``fact.evidence_not_fresh``): evidence level
   ``none`` — failed, no-hit and deduped ``lookup_knowledge`` entries — or only deduped
   calls. A ``negative_observation`` claim ("未检索到 …") is the exception that proves the
   rule: only a completed search that found nothing supports it. A ``direct_evidence`` label
   whose refs reach only ``indirect`` entries (runbooks) is capped at ``indirect_support``
   (``fact.evidence_level_cap``). A structured claim the verifier did not check at all
   becomes a critical ``no_evidence`` fact (``verifier.claim_unchecked``).
2. **Matrix** over the critical facts (after downgrades): any ``contradicted`` → REJECT 0.0;
   no critical fact → LOW_CONFID 0.0; any ``no_evidence`` → LOW_CONFID; all indirect →
   LOW_CONFID; otherwise (all direct/indirect, at least one direct) → PASS.
3. **Score** = mean of direct 1.0, indirect 0.6, no_evidence 0.0 over the critical facts,
   clamped to [0, 1]. It is computed with :class:`fractions.Fraction` (exact, independent of
   summation order) and rounded half-to-even to 4 decimals, so ``(1 + 0.6 + 0) / 3`` is
   exactly ``0.5333`` on every platform.
4. **Gatekeeper cap**: severity ``reject`` → REJECT with score 0.0; ``low_confid`` → at most
   LOW_CONFID, score unchanged.

Every difference from what the model said, and every change a later step makes to an
earlier one, is an :class:`Override`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from fractions import Fraction

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.contracts import (
    Claim,
    FactChecked,
    FactVerification,
    GatekeeperResult,
    ToolTraceSummaryItem,
    Verdict,
    VerifierOutput,
)

__all__ = [
    "SCORE_DECIMALS",
    "VERIFICATION_WEIGHTS",
    "Override",
    "VerdictDecision",
    "derive_verdict",
    "fallback_decision",
    "round_score",
]

VERIFICATION_WEIGHTS: dict[FactVerification, Fraction] = {
    "direct_evidence": Fraction(1),
    "indirect_support": Fraction(3, 5),
    "no_evidence": Fraction(0),
    "contradicted": Fraction(0),
}
"""Weight of each label in the score (``contradicted`` zeroes the whole score anyway)."""
SCORE_DECIMALS = 4

_SUPPORTING: frozenset[FactVerification] = frozenset({"direct_evidence", "indirect_support"})


class Override(BaseModel):
    """One place where the code's decision differs from a previous value."""

    model_config = ConfigDict(extra="forbid", strict=True)

    rule: str
    fact_index: int | None = None
    fact: str | None = None
    from_value: str | float | None
    to_value: str | float
    reason: str


class VerdictDecision(BaseModel):
    """What the model said next to what the code decided."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model_verdict: Verdict | None
    model_score: float | None
    derived_verdict: Verdict
    derived_score: float = Field(ge=0.0, le=1.0)
    facts: list[FactChecked]
    overrides: list[Override] = Field(default_factory=list)


def round_score(value: Fraction | float) -> float:
    """Clamp to [0, 1] and round half-to-even to :data:`SCORE_DECIMALS` decimals."""
    exact = Fraction(value)
    clamped = min(Fraction(1), max(Fraction(0), exact))
    return float(round(clamped, SCORE_DECIMALS))


# --------------------------------------------------------------------------- public API


def derive_verdict(
    verifier_output: VerifierOutput,
    gatekeeper: GatekeeperResult,
    trace_summary: Sequence[ToolTraceSummaryItem],
    session_invocation_ids: Collection[int],
    claims: Sequence[Claim] = (),
) -> VerdictDecision:
    """Decide the verdict from the verifier's fact labels, the trace and the gatekeeper.

    ``claims`` are the executor's structured claims (empty when its output did not parse).
    Every claim must be checked: one the verifier left out becomes a critical ``no_evidence``
    fact. A ``negative_observation`` ("未检索到 …") is supported by a completed search that
    found nothing, and only by that.
    """
    overrides: list[Override] = []
    negative_ids = frozenset(c.claim_id for c in claims if c.claim_type == "negative_observation")
    facts = _downgrade_facts(
        verifier_output.facts_checked,
        trace_summary,
        frozenset(session_invocation_ids),
        negative_ids,
        overrides,
    )
    facts += _unchecked_claims(claims, facts, overrides)
    verdict, score, reason = _matrix([fact for fact in facts if fact.is_critical])
    _record_model_disagreement(verifier_output, verdict, score, reason, overrides)
    verdict = _runbook_cap(verdict, facts, trace_summary, overrides)
    verdict, score = _apply_gatekeeper_cap(verdict, score, gatekeeper, overrides)
    return VerdictDecision(
        model_verdict=verifier_output.verdict,
        model_score=verifier_output.groundedness_score,
        derived_verdict=verdict,
        derived_score=score,
        facts=facts,
        overrides=overrides,
    )


def fallback_decision(reason: str, gatekeeper: GatekeeperResult | None) -> VerdictDecision:
    """The decision when the verifier gave no usable output (even after its re-ask).

    LOW_CONFID with score 0.0, as the seeds require for verifier failures. A gatekeeper
    reject is never softened by a missing verifier: forged citations stay REJECT 0.0.
    """
    if not reason.strip():
        raise ValueError("fallback_decision: reason must name why the verifier output is unusable")
    overrides = [
        Override(
            rule="verifier.fallback",
            from_value=None,
            to_value="LOW_CONFID",
            reason=reason,
        )
    ]
    verdict: Verdict = "LOW_CONFID"
    if gatekeeper is not None:
        verdict, _ = _apply_gatekeeper_cap(verdict, 0.0, gatekeeper, overrides)
    return VerdictDecision(
        model_verdict=None,
        model_score=None,
        derived_verdict=verdict,
        derived_score=0.0,
        facts=[],
        overrides=overrides,
    )


# --------------------------------------------------------------------------- step 1: refs


def _downgrade_facts(
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
            if fact.verification in _SUPPORTING
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


def _runbook_cap(
    verdict: Verdict,
    facts: Sequence[FactChecked],
    trace_summary: Sequence[ToolTraceSummaryItem],
    overrides: list[Override],
) -> Verdict:
    """A critical fact that rests on runbooks alone is guidance, not an incident fact: it may
    count as indirect support in the score, but it can never carry a PASS (000: "guidance
    SHALL NOT be emitted as a current incident fact")."""
    if verdict != "PASS":
        return verdict
    by_ref = {item.trace_ref: item for item in trace_summary}
    for index, fact in enumerate(facts):
        tools = {
            by_ref[ref.trace_ref].tool_name for ref in fact.evidence_refs if ref.trace_ref in by_ref
        }
        if fact.is_critical and fact.verification in _SUPPORTING and tools == {"lookup_knowledge"}:
            overrides.append(
                Override(
                    rule="verdict.runbook_only",
                    fact_index=index,
                    fact=fact.fact,
                    from_value="PASS",
                    to_value="LOW_CONFID",
                    reason="a critical fact rests on runbook guidance alone",
                )
            )
            return "LOW_CONFID"
    return verdict


def _unchecked_claims(
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


# --------------------------------------------------------------------------- step 2+3


def _matrix(critical: Sequence[FactChecked]) -> tuple[Verdict, float, str]:
    """``(verdict, score, reason)`` from the critical facts after downgrades."""
    if not critical:
        return "LOW_CONFID", 0.0, "no critical fact was checked"
    labels = [fact.verification for fact in critical]
    if "contradicted" in labels:
        return "REJECT", 0.0, "a critical fact is contradicted by the evidence"
    score = round_score(sum(VERIFICATION_WEIGHTS[label] for label in labels) / len(labels))
    if "no_evidence" in labels:
        return "LOW_CONFID", score, "a critical fact has no evidence"
    if "direct_evidence" not in labels:
        return "LOW_CONFID", score, "critical facts are only indirectly supported"
    return "PASS", score, "every critical fact is supported and at least one directly"


def _record_model_disagreement(
    verifier_output: VerifierOutput,
    verdict: Verdict,
    score: float,
    reason: str,
    overrides: list[Override],
) -> None:
    if verifier_output.verdict != verdict:
        overrides.append(
            Override(
                rule="verdict.matrix",
                from_value=verifier_output.verdict,
                to_value=verdict,
                reason=reason,
            )
        )
    if round_score(verifier_output.groundedness_score) != score:
        overrides.append(
            Override(
                rule="verdict.score",
                from_value=verifier_output.groundedness_score,
                to_value=score,
                reason="score is the mean of critical fact weights"
                " (direct 1.0, indirect 0.6, no_evidence 0.0; contradicted → 0.0)",
            )
        )


# --------------------------------------------------------------------------- step 4


def _apply_gatekeeper_cap(
    verdict: Verdict, score: float, gatekeeper: GatekeeperResult, overrides: list[Override]
) -> tuple[Verdict, float]:
    rules = ", ".join(gatekeeper.failed_rules) or "none listed"
    if gatekeeper.severity == "reject":
        if verdict != "REJECT":
            overrides.append(
                Override(
                    rule="gatekeeper.reject",
                    from_value=verdict,
                    to_value="REJECT",
                    reason=f"gatekeeper graded the citations reject (failed rules: {rules})",
                )
            )
        if score != 0.0:
            overrides.append(
                Override(
                    rule="gatekeeper.reject",
                    from_value=score,
                    to_value=0.0,
                    reason="a gatekeeper reject sets the score to 0.0",
                )
            )
        return "REJECT", 0.0
    if gatekeeper.severity == "low_confid" and verdict == "PASS":
        overrides.append(
            Override(
                rule="gatekeeper.low_confid",
                from_value="PASS",
                to_value="LOW_CONFID",
                reason=f"gatekeeper graded the citations low_confid (failed rules: {rules})",
            )
        )
        return "LOW_CONFID", score
    return verdict, score
