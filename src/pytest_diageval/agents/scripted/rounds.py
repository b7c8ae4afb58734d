"""Why a scripted run asked for more than its script holds: a retry round nobody scripted.

A round that ends LOW_CONFID below the disclaimer score is retried once
(``core.answer.routing``), and the retry asks the model again from the planner on. A script
written for one round then runs out at the retry's first request, which alone says only
"request 5 from stage 'planner' came after the last script entry". :func:`explain_exhaustion`
adds what the author needs: the verdict and score the last round reached, the route's reason
for another round, and which entries a retry round needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_diageval.agents.results import RoundResult
from pytest_diageval.core.answer.routing import DISCLAIMER_SCORE_THRESHOLD, build_retry_context

__all__ = ["GRADER_ENTRY", "ROUND_STAGES", "explain_exhaustion"]

ROUND_STAGES = (
    "planner (one entry; two when its answer is malformed and re-asked)",
    "executor (one entry per turn: each tool-call turn, then the contract)",
    "verifier (one entry; two when re-asked)",
)
"""The requests of one round, in order (docs/reference.md's *Script entries, stage by stage*)."""

GRADER_ENTRY = "{stage: grader, content: {score: 0.9, reasons: [...]}}"
"""The entry a ``rubric`` check needs after the last round's (the grader's ``GraderOutput``)."""


def explain_exhaustion(rounds: Sequence[RoundResult], stage: str | None) -> str | None:
    """What to add to the exhaustion error when the last finished round asked for another
    one (its route is ``retry``): a clause for its first line, then lines of detail; None
    otherwise (then the script is simply short). The grader of a ``rubric`` check asks after
    the pipeline finished: its clause says which entry that needs."""
    if stage == "grader":
        return (
            f": the scenario's `rubric` check asks the grader stage after the pipeline finished"
            f" ({len(rounds)} round(s)), and the script has no entry left for it\n"
            f"Add one entry after round {len(rounds) or 1}'s: {GRADER_ENTRY} (a GraderOutput:"
            " score 0..1 and 1 to 5 short reasons; two entries when its answer is malformed and"
            " re-asked)."
        )
    if not rounds or rounds[-1].route.action != "retry":
        return None
    last = rounds[-1]
    decision = last.decision
    context = build_retry_context(decision, last.gatekeeper)
    lines = [
        f": round {last.round} ended {decision.derived_verdict} with score"
        f" {decision.derived_score:g}, so the pipeline asked for a retry round (round"
        f" {last.round + 1}), which the script has no entries for",
        f"Why round {last.round + 1} was asked: {last.route.reason}.",
    ]
    gaps = [f"{len(context.evidence_gaps)} critical fact(s) without evidence"]
    if context.gatekeeper_failed_rules:
        gaps.append(f"gatekeeper failed rules {', '.join(context.gatekeeper_failed_rules)}")
    lines.append(f"The retry is told: {'; '.join(gaps)}.")
    asked = f" (its first request came from stage {stage!r})" if stage else ""
    lines.append(
        f"A retry round needs its own script entries after round {last.round}'s{asked}, in"
        f" order: {'; '.join(ROUND_STAGES)}. Or make round {last.round} end in one round:"
        f" PASS, REJECT, or LOW_CONFID with a score of at least {DISCLAIMER_SCORE_THRESHOLD:g}."
    )
    return "\n".join(lines)
