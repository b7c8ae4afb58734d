"""Verdict derivation: the verifier model labels facts, this code decides the verdict.

The model's ``verdict`` and ``groundedness_score`` are kept for the audit but never used as
the decision. The decision is recomputed from ``facts_checked`` in five steps:

0. **Claims first.** Every executor claim gets a ceiling from its own bindings as the gatekeeper
   checked them (:mod:`.claim_support`), before any verifier label is read. A fact naming a
   ``claim_id`` the contract does not have supports nothing and is critical
   (``fact.claim_unknown``). Every fact about a claim is critical (``fact.criticality``: the
   verifier cannot demote a claim out of the matrix). A fact
   about a claim is lowered to the claim's ceiling (``fact.claim_ceiling``), and to
   ``no_evidence`` when its refs name evidence the claim never bound (``fact.ref_not_bound``).
1. **Reference downgrades.** A fact labelled ``direct_evidence`` or ``indirect_support`` is
   downgraded to ``no_evidence`` when its ``evidence_refs`` are empty
   (``fact.evidence_refs_empty``), when no ref names an existing ``trace_ref`` or an
   invocation of this session (``fact.evidence_ref_unknown``), when any ref names a
   ``trace_ref`` the summary does not have (``fact.trace_ref_unknown``), or when every summary entry
   its refs point at carries no fresh support (``fact.evidence_not_fresh``): evidence level
   ``none`` — failed, no-hit and deduped ``lookup_knowledge`` entries — or only deduped
   calls. A ``negative_observation`` claim ("未检索到 …") is the exception that proves the
   rule: only a completed search that found nothing supports it. A ``direct_evidence`` label
   whose refs reach only ``indirect`` entries (runbooks) is capped at ``indirect_support``
   (``fact.evidence_level_cap``). A structured claim the verifier did not check at all
   becomes a critical ``no_evidence`` fact (``verifier.claim_unchecked``).
2. **Matrix** over the critical facts (after downgrades): any ``contradicted`` → REJECT 0.0;
   no critical fact → LOW_CONFID 0.0; any ``no_evidence`` → LOW_CONFID; all indirect →
   LOW_CONFID; otherwise (all direct/indirect, at least one direct) → PASS. When the contract
   has claims, the direct fact must be one about a claim: a fact the verifier adds outside the
   claims can lower the verdict, never carry it. A claim that rests on runbook guidance
   (``claim.runbook_binding``) never carries a PASS (``verdict.runbook_only``).
3. **Score** = mean of direct 1.0, indirect 0.6, no_evidence 0.0 over the critical facts,
   clamped to [0, 1]. It is computed with :class:`fractions.Fraction` (exact, independent of
   summation order) and rounded half-to-even to 4 decimals, so ``(1 + 0.6 + 0) / 3`` is
   exactly ``0.5333`` on every platform.
4. **Gatekeeper cap**: severity ``reject`` → REJECT with score 0.0; ``low_confid`` → at most
   LOW_CONFID, score unchanged.
5. **Scope** (:mod:`pytest_diageval.core.scope.session`). ``claims`` are the
   in-scope claims only; the claims the question's scope set aside (``claims_set_aside``) are
   not judged at all, and every verifier fact about one is dropped before step 0 (an
   ``scope.set_aside`` override each): the verdict rests on the in-scope claims (004: 窄范围
   "只能围绕用户明确要求的目标对象和主题输出 claim"). A set-aside claim's bindings still count in
   the gatekeeper's grade (step 4): a forged citation is a reject whatever it was about (004:
   "伪造 / 张冠李戴类 REJECT"). When claims were set aside and none is left, nothing answers
   the question: LOW_CONFID with score 0.0 (``scope.no_claim_in_scope``; 004: "如果证据不足，
   只输出 missing_info，不要补充合理化解释" — the no-evidence path, never a PASS).

Every difference from what the model said, and every change a later step makes to an
earlier one, is an :class:`Override`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from fractions import Fraction

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.contract.contracts import (
    Claim,
    FactChecked,
    FactVerification,
    GatekeeperResult,
    ToolInvocation,
    ToolTraceSummaryItem,
    Verdict,
    VerifierOutput,
)
from pytest_diageval.core.contract.evidence_tools import GUIDANCE_TOOLS
from pytest_diageval.core.contract.rules import sets
from pytest_diageval.core.judge.claim_support import ClaimCeiling, claim_ceilings
from pytest_diageval.core.judge.fact_support import (
    SUPPORTING,
    Override,
    anchor_to_claims,
    claim_of,
    downgrade_facts,
    force_critical,
    incident_evidence_facts,
    reject_unknown_claims,
    unchecked_claims,
)
from pytest_diageval.core.scope.session import about_set_aside

__all__ = [
    "NO_CLAIM_IN_SCOPE",
    "SCORE_DECIMALS",
    "SET_ASIDE",
    "VERIFICATION_WEIGHTS",
    "Override",
    "VerdictDecision",
    "derive_verdict",
    "fallback_decision",
    "round_score",
    "score_rule",
]

VERIFICATION_WEIGHTS: dict[FactVerification, Fraction] = {
    "direct_evidence": Fraction(1),
    "indirect_support": Fraction(3, 5),
    "no_evidence": Fraction(0),
    "contradicted": Fraction(0),
}
"""Weight of each label in the score (``contradicted`` zeroes the whole score anyway)."""
SCORE_DECIMALS = 4
SET_ASIDE = "scope.set_aside"
NO_CLAIM_IN_SCOPE = "scope.no_claim_in_scope"
_FALLBACK = "verifier.fallback"
_GATEKEEPER_REJECT = "gatekeeper.reject"
_GATEKEEPER_LOW_CONFID = "gatekeeper.low_confid"
_RUNBOOK_ONLY = "verdict.runbook_only"
_WEIGHT_NAMES = {"direct_evidence": "direct", "indirect_support": "indirect"}


def score_rule() -> str:
    """The score's rule in words, its numbers read from :data:`VERIFICATION_WEIGHTS` (the
    ``verdict.score`` override's reason and the HTML report say it, so neither can drift)."""
    weights = ", ".join(
        f"{_WEIGHT_NAMES.get(label, label)} {float(weight)}"
        for label, weight in VERIFICATION_WEIGHTS.items()
        if label != "contradicted"
    )
    return f"score is the mean of critical fact weights ({weights}; contradicted → 0.0)"


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
    # One per executor claim, in contract order: what its own checked bindings can carry.
    claim_ceilings: list[ClaimCeiling] = Field(default_factory=list)


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
    *,
    invocations: Sequence[ToolInvocation] = (),
    aliases: Mapping[str, str] | None = None,
    claims_set_aside: Sequence[Claim] = (),
) -> VerdictDecision:
    """Decide the verdict from the verifier's fact labels, the trace and the gatekeeper.

    ``claims`` are the executor's structured claims (empty when its output did not parse);
    ``invocations`` are the session's rows (a negative observation's subject is checked
    against what its no-hit searches asked for). Every claim must be checked: one the
    verifier left out becomes a critical ``no_evidence`` fact. ``claims_set_aside`` are the
    claims outside the question's scope (step 5): their facts are dropped.
    """
    overrides: list[Override] = []
    session_ids = frozenset(session_invocation_ids)
    ceilings = claim_ceilings(claims, gatekeeper, invocations, aliases)
    negative_ids = frozenset(c.claim_id for c in claims if c.claim_type == "negative_observation")
    facts = _drop_set_aside(verifier_output.facts_checked, claims_set_aside, overrides)
    facts = reject_unknown_claims(facts, claims, overrides)
    facts = force_critical(facts, claims, overrides)
    facts = downgrade_facts(facts, trace_summary, session_ids, negative_ids, overrides)
    facts = anchor_to_claims(facts, claims, ceilings, trace_summary, overrides)
    facts += unchecked_claims(claims, facts, overrides)
    incident = incident_evidence_facts(facts, trace_summary, session_ids)
    about_claims = [claim_of(fact, claims) is not None for fact in facts] if claims else None
    verdict, score, reason = _matrix(facts, about_claims)
    _record_model_disagreement(verifier_output, verdict, score, reason, overrides)
    verdict = _runbook_cap(verdict, facts, trace_summary, ceilings.values(), overrides)
    if claims_set_aside and not claims:
        verdict, score = _no_claim_in_scope(verdict, score, claims_set_aside, overrides)
    verdict, score = _apply_gatekeeper_cap(verdict, score, gatekeeper, overrides)
    return VerdictDecision(
        model_verdict=verifier_output.verdict,
        model_score=verifier_output.groundedness_score,
        derived_verdict=verdict,
        derived_score=score,
        facts=facts,
        overrides=overrides,
        incident_evidence_facts=incident,
        claim_ceilings=list(ceilings.values()),
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
            rule=_FALLBACK,
            from_value=None,
            to_value=sets(_FALLBACK),
            reason=reason,
        )
    ]
    verdict = sets(_FALLBACK)
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


def _matrix(
    facts: Sequence[FactChecked], about_claims: Sequence[bool] | None
) -> tuple[Verdict, float, str]:
    """``(verdict, score, reason)`` from the critical facts after downgrades.

    ``about_claims`` (when the contract has claims) flags the facts about a claim: only those
    can be the direct fact a PASS needs."""
    critical = [fact for fact in facts if fact.is_critical]
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
    if about_claims is not None and not any(
        fact.is_critical and fact.verification == "direct_evidence" and about
        for fact, about in zip(facts, about_claims, strict=True)
    ):
        return "LOW_CONFID", score, "no claim of the contract is directly supported"
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
                reason=score_rule(),
            )
        )


def _runbook_cap(
    verdict: Verdict,
    facts: Sequence[FactChecked],
    trace_summary: Sequence[ToolTraceSummaryItem],
    ceilings: Iterable[ClaimCeiling],
    overrides: list[Override],
) -> Verdict:
    """A claim that rests on runbook guidance, or a critical fact whose refs reach runbooks
    alone, is guidance, not an incident fact: it may count as indirect support in the score,
    but it can never carry a PASS (000: "guidance SHALL NOT be emitted as a current incident
    fact"; 004: "runbook 内容只能进入 missing_info 或证据收集动作，不能变成 confirmed claim")."""
    if verdict != "PASS":
        return verdict
    for ceiling in ceilings:
        if ceiling.runbook:
            overrides.append(
                Override(
                    rule=_RUNBOOK_ONLY,
                    from_value="PASS",
                    to_value=sets(_RUNBOOK_ONLY),
                    reason=f"claim {ceiling.claim_id} rests on runbook guidance: {ceiling.reason}",
                )
            )
            return sets(_RUNBOOK_ONLY)
    by_ref = {item.trace_ref: item for item in trace_summary}
    for index, fact in enumerate(facts):
        tools = {
            by_ref[ref.trace_ref].tool_name for ref in fact.evidence_refs if ref.trace_ref in by_ref
        }
        if (
            fact.is_critical
            and fact.verification in SUPPORTING
            and tools
            and tools <= GUIDANCE_TOOLS
        ):
            overrides.append(
                Override(
                    rule=_RUNBOOK_ONLY,
                    fact_index=index,
                    fact=fact.fact,
                    from_value="PASS",
                    to_value=sets(_RUNBOOK_ONLY),
                    reason="a critical fact rests on runbook guidance alone",
                )
            )
            return sets(_RUNBOOK_ONLY)
    return verdict


# --------------------------------------------------------------------------- step 4 and 5


def _drop_set_aside(
    facts: Sequence[FactChecked], claims_set_aside: Sequence[Claim], overrides: list[Override]
) -> list[FactChecked]:
    """The facts not about a set-aside claim; no ``fact_index`` on the overrides: every later
    index counts in the facts kept, and a dropped fact is in none of them."""
    kept: list[FactChecked] = []
    for fact in facts:
        if not about_set_aside(fact, claims_set_aside):
            kept.append(fact)
            continue
        overrides.append(
            Override(
                rule=SET_ASIDE,
                fact=fact.fact,
                from_value=fact.verification,
                to_value="set aside",
                reason=f"claim {fact.claim_id or '(by its text)'} is outside the question's scope",
            )
        )
    return kept


def _no_claim_in_scope(
    verdict: Verdict, score: float, claims_set_aside: Sequence[Claim], overrides: list[Override]
) -> tuple[Verdict, float]:
    """Always recorded (even over a LOW_CONFID 0.0): the templates name it as the gap."""
    ids = ", ".join(claim.claim_id for claim in claims_set_aside)
    reason = f"every claim ({ids}) is outside the question's scope (score {score} -> 0.0)"
    capped = sets(NO_CLAIM_IN_SCOPE)
    overrides.append(
        Override(rule=NO_CLAIM_IN_SCOPE, from_value=verdict, to_value=capped, reason=reason)
    )
    return capped, 0.0


def _apply_gatekeeper_cap(
    verdict: Verdict, score: float, gatekeeper: GatekeeperResult, overrides: list[Override]
) -> tuple[Verdict, float]:
    rules = ", ".join(gatekeeper.failed_rules) or "none listed"
    if gatekeeper.severity == "reject":
        if verdict != "REJECT":
            overrides.append(
                Override(
                    rule=_GATEKEEPER_REJECT,
                    from_value=verdict,
                    to_value=sets(_GATEKEEPER_REJECT),
                    reason=f"gatekeeper graded the citations reject (failed rules: {rules})",
                )
            )
        if score != 0.0:
            overrides.append(
                Override(
                    rule=_GATEKEEPER_REJECT,
                    from_value=score,
                    to_value=0.0,
                    reason="a gatekeeper reject sets the score to 0.0",
                )
            )
        return sets(_GATEKEEPER_REJECT), 0.0
    if gatekeeper.severity == "low_confid" and verdict == "PASS":
        overrides.append(
            Override(
                rule=_GATEKEEPER_LOW_CONFID,
                from_value="PASS",
                to_value=sets(_GATEKEEPER_LOW_CONFID),
                reason=f"gatekeeper graded the citations low_confid (failed rules: {rules})",
            )
        )
        return sets(_GATEKEEPER_LOW_CONFID), score
    return verdict, score
