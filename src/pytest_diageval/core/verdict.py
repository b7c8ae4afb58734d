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
from pytest_diageval.core.fact_support import (
    SUPPORTING,
    Override,
    downgrade_facts,
    incident_evidence_facts,
    unchecked_claims,
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


class VerdictDecision(BaseModel):
    """What the model said next to what the code decided."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model_verdict: Verdict | None
    model_score: float | None
    derived_verdict: Verdict
    derived_score: float = Field(ge=0.0, le=1.0)
    facts: list[FactChecked]
    overrides: list[Override] = Field(default_factory=list)
    # Indexes into ``facts`` that cite incident evidence (see ``incident_evidence_facts``).
    # Only the templates read it: a fact outside every claim is a finding only if listed.
    incident_evidence_facts: list[int] = Field(default_factory=list)


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
    session_ids = frozenset(session_invocation_ids)
    negative_ids = frozenset(c.claim_id for c in claims if c.claim_type == "negative_observation")
    facts = downgrade_facts(
        verifier_output.facts_checked,
        trace_summary,
        session_ids,
        negative_ids,
        overrides,
    )
    facts += unchecked_claims(claims, facts, overrides)
    incident = incident_evidence_facts(facts, trace_summary, session_ids)
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
        incident_evidence_facts=incident,
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
        if fact.is_critical and fact.verification in SUPPORTING and tools == {"lookup_knowledge"}:
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
