"""The ``rubric`` expectation: the grader's score of the published answer, against a minimum.

The grader (:mod:`pytest_diageval.agents.grader`) was asked by the runner after the pipeline
finished, through the run's own client (recorded, replayed and scripted as stage ``grader``);
this check only compares its score with ``min_score`` and shows its reasons. The verdict stays
the code's: a rubric passes or fails its own item and nothing else.
"""

from __future__ import annotations

from pytest_diageval.agents.grader import GraderRun
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.harness.checks import evidence_lines as ev
from pytest_diageval.harness.checks.outcome import CheckOutcome
from pytest_diageval.harness.format.scenario import RubricExpectation

__all__ = ["check_rubric", "grader_lines"]


def check_rubric(
    expected: RubricExpectation, result: ChatResult, grade: GraderRun | None = None
) -> CheckOutcome:
    """The grader's score is at least ``min_score``; its reasons are the evidence."""
    want = f"grader score >= {expected.min_score:g}"
    criteria = f"criteria: {ev.shorten(expected.criteria, 300)}"
    if result.status == "error":  # as every check fails an errored session (needs_rounds)
        ran = f"rounds completed before the error: {len(result.rounds)}"
        return CheckOutcome(False, want, f"session error: {result.error or 'no message'}", [ran])
    if not result.rounds:
        return CheckOutcome(False, want, "the session ran no round")
    if grade is None:
        return CheckOutcome(False, want, "the grader was not asked for this run", [criteria])
    if grade.output is None:
        detail = grade.failure or "no answer"
        return CheckOutcome(
            False,
            want,
            f"the grader gave no usable score: {ev.shorten(detail, 200)}",
            [criteria, *grader_lines(grade)],
            got="no score",
            reason="grader failed",
        )
    score = grade.output.score
    return CheckOutcome(
        score >= expected.min_score,
        want,
        f"grader score {score:g}",
        [criteria, *grader_lines(grade)],
        got=f"{score:g}",
        reason="; ".join(ev.shorten(reason, 80) for reason in grade.output.reasons),
    )


def grader_lines(grade: GraderRun) -> list[str]:
    """The grader's reasons, then what it was shown (the verified claims, the answer)."""
    lines: list[str] = []
    if grade.output is not None:
        lines.append(f"grader reasons (score {grade.output.score:g}):")
        lines += [f"  - {reason}" for reason in grade.output.reasons]
    graded = grade.graded
    claims = graded.verified_claims
    excerpts = sum(len(claim.evidence) for claim in claims)
    kept = ", ".join(claim.claim_id for claim in claims) or "none"
    lines.append(
        f"graded: the final answer ({graded.answer_kind}) and {len(claims)} verified claim(s)"
        f" ({kept}) with {excerpts} verified excerpt(s); nothing the code did not verify"
    )
    lines.append(f"final answer: {ev.shorten(graded.final_answer, 200) or '(empty)'}")
    return lines
