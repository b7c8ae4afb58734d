"""Routing decision: what the pipeline does with a derived verdict (ChatService's rules).

=====================  ===================================  ==============
derived verdict        condition                            action
=====================  ===================================  ==============
REJECT                 any round, with or without verifier  ``degraded``
PASS                   any round                            ``direct``
LOW_CONFID             verifier fallback                    ``disclaimer``
LOW_CONFID             score >= 0.5                         ``disclaimer``
LOW_CONFID             score < 0.5, not the last round      ``retry``
LOW_CONFID             score < 0.5, last round              ``disclaimer``
=====================  ===================================  ==============

REJECT is checked first, so a verifier fallback never softens a gatekeeper reject, and a
REJECT never earns another round. A verifier fallback never earns one either: the verifier
already failed (and was re-asked), and another round would only repeat the failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from pytest_diageval.core.contract.contracts import FactChecked, GatekeeperResult, RetryContext
from pytest_diageval.core.judge.verdict import VerdictDecision

__all__ = [
    "DISCLAIMER_SCORE_THRESHOLD",
    "RouteAction",
    "RouteDecision",
    "build_retry_context",
    "decide_route",
]

RouteAction = Literal["direct", "disclaimer", "degraded", "retry"]
DISCLAIMER_SCORE_THRESHOLD = 0.5
"""LOW_CONFID at or above this score is answered with the disclaimer, below it retried."""


class RouteDecision(BaseModel):
    """The action for one verified round and why."""

    model_config = ConfigDict(extra="forbid", strict=True)

    action: RouteAction
    reason: str
    round: int


def decide_route(
    decision: VerdictDecision,
    round: int,
    *,
    verifier_fallback: bool = False,
    max_rounds: int = 2,
) -> RouteDecision:
    """Route one round's decision; ``round`` counts from 1 up to ``max_rounds``."""
    if max_rounds < 1:
        raise ValueError(f"decide_route: max_rounds must be >= 1, got {max_rounds}")
    if not 1 <= round <= max_rounds:
        raise ValueError(f"decide_route: round must be in 1..{max_rounds}, got {round}")
    action, reason = _action(decision, round, verifier_fallback, max_rounds)
    return RouteDecision(action=action, reason=reason, round=round)


def _action(
    decision: VerdictDecision, round: int, verifier_fallback: bool, max_rounds: int
) -> tuple[RouteAction, str]:
    verdict, score = decision.derived_verdict, decision.derived_score
    if verdict == "REJECT":
        return "degraded", "REJECT is answered with the degraded template and never retried"
    if verdict == "PASS":
        return "direct", "PASS publishes the evidence the verified claims cite"
    if verifier_fallback:
        return "disclaimer", "verifier output unusable: LOW_CONFID fallback, no extra round"
    if score >= DISCLAIMER_SCORE_THRESHOLD:
        return "disclaimer", f"LOW_CONFID with score {score} >= {DISCLAIMER_SCORE_THRESHOLD}"
    if round < max_rounds:
        return "retry", (
            f"LOW_CONFID with score {score} < {DISCLAIMER_SCORE_THRESHOLD}"
            f" in round {round} of {max_rounds}: one more round to gather evidence"
        )
    return "disclaimer", f"LOW_CONFID after the last round ({round} of {max_rounds})"


def build_retry_context(
    decision: VerdictDecision,
    gatekeeper: GatekeeperResult,
    *,
    gap_facts: Sequence[FactChecked] | None = None,
) -> RetryContext:
    """What the next round is told: the verdict, its score and the gaps to fill.

    Evidence gaps are the critical facts the verifier left (or the code downgraded to)
    ``no_evidence``, in the verifier's order without duplicates: of ``gap_facts`` when given
    (the facts as judged before the scope set claims aside, see ChatService), else the
    decision's.
    """
    facts = decision.facts if gap_facts is None else gap_facts
    gaps = [f.fact for f in facts if f.is_critical and f.verification == "no_evidence"]
    return RetryContext(
        previous_verdict=decision.derived_verdict,
        previous_groundedness_score=decision.derived_score,
        evidence_gaps=list(dict.fromkeys(gaps)),
        gatekeeper_failed_rules=list(dict.fromkeys(gatekeeper.failed_rules)),
    )
