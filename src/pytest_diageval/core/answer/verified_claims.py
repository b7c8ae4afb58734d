"""Which executor claims an answer may state as findings, and which it must leave out.

A claim is *used* only when everything the code knows agrees: its ceiling (its own bindings,
:mod:`~pytest_diageval.core.judge.claim_support`) is not below indirect and not runbook
guidance, no binding of it failed the gatekeeper, the verifier checked it and every final label
of its facts is direct or indirect, and its text is presentable. Every other claim is *dropped*
with the reason. A fact the verifier adds outside the claims is never a finding: its text and
refs are the model's word, which no code checked (and without a parsed contract nothing is a
finding at all).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from pytest_diageval.core.answer.answer_templates import hides_text, strip_control
from pytest_diageval.core.contract.contracts import (
    Claim,
    ExecutorContract,
    FactVerification,
    GatekeeperResult,
)
from pytest_diageval.core.judge.fact_support import SUPPORTING, claim_of
from pytest_diageval.core.judge.verdict import VerdictDecision

__all__ = ["ClaimSelection", "DroppedClaim", "UsedClaim", "select_claims"]


class DroppedClaim(BaseModel):
    """A claim the answer leaves out, and why (persisted in ``composer_output``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim_id: str
    reason: str


@dataclass(frozen=True)
class UsedClaim:
    claim: Claim
    label: FactVerification  # direct_evidence or indirect_support: the weakest final label
    text: str  # the claim text, control characters stripped (the audit's, never published)


@dataclass
class ClaimSelection:
    used: list[UsedClaim] = field(default_factory=list)
    dropped: list[DroppedClaim] = field(default_factory=list)


def select_claims(
    decision: VerdictDecision,
    contract: ExecutorContract | None,
    gatekeeper: GatekeeperResult,
    *,
    presentable: Callable[[str], bool],
) -> ClaimSelection:
    """Split the contract's claims into used and dropped (contract order, ids unique).

    ``presentable`` is the templates' screen for model text."""
    selection = ClaimSelection()
    claims = [] if contract is None else contract.claims
    seen: set[str] = set()
    for claim in claims:
        if claim.claim_id in seen:
            continue
        seen.add(claim.claim_id)
        used, reason = _judge(claim, claims, decision, gatekeeper, presentable)
        if used is not None:
            selection.used.append(used)
        else:
            selection.dropped.append(DroppedClaim(claim_id=claim.claim_id, reason=reason))
    return selection


def _judge(
    claim: Claim,
    claims: Sequence[Claim],
    decision: VerdictDecision,
    gatekeeper: GatekeeperResult,
    presentable: Callable[[str], bool],
) -> tuple[UsedClaim | None, str]:
    ceiling = next((c for c in decision.claim_ceilings if c.claim_id == claim.claim_id), None)
    labels = [f.verification for f in decision.facts if claim_of(f, claims) is claim]
    rows = [b for b in gatekeeper.checked_bindings if b.claim_id == claim.claim_id]
    failed = sorted({b.rule or "failed" for b in rows if b.status == "fail"})
    text = " ".join(strip_control(claim.claim_text).split())
    if failed:
        return None, f"a binding of it failed the gatekeeper ({', '.join(failed)})"
    if ceiling is None or ceiling.ceiling not in SUPPORTING:
        return None, "its bindings carry no evidence" if ceiling is None else ceiling.reason
    if ceiling.runbook:
        return None, "it rests on runbook guidance, which is never a confirmed finding"
    if not labels:
        return None, "the verifier did not check it"
    weak = [label for label in labels if label not in SUPPORTING]
    if weak:
        return None, f"its final label is {weak[0]}"
    if not presentable(text):
        return None, "its text is not presentable (raw output, a template slot or empty)"
    if hides_text(text):
        return None, "its text hides words from a reader (strikethrough or a combining mark)"
    label: FactVerification = (
        "direct_evidence" if all(x == "direct_evidence" for x in labels) else "indirect_support"
    )
    return UsedClaim(claim, label, text), ""
