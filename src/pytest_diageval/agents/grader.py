"""The Grader: a graded rubric over a finished run, as structured output. A check, never a judge.

``expect: {rubric: {criteria: "...", min_score: 0.8}}`` asks a language model how well the run's
*published* answer meets the author's criteria. The grader never decides the verdict: the
pipeline (:class:`~pytest_diageval.agents.chat_service.ChatService`) has finished when the
harness asks it, through the same client and transport the run used (so a cassette records
it and the scripted model answers it, ``X-Diageval-Stage: grader``), and its score only passes
or fails the ``rubric`` item.

It reads exactly a :class:`GraderInput`: the query, the final answer as published, and the
verified evidence alone, i.e. the claims the code kept (``composer_output.claims_used`` of the
last round) with the excerpts of their bindings that passed the gatekeeper. The executor's
unverified claims, its ``user_facing_answer`` (unless published: then it *is* the final answer)
and the verifier's labels never reach it. Its answer comes through instructor with one
re-ask, like the planner's and the verifier's; an answer that stays invalid, or a model that
answers nothing, is a :class:`GraderRun` with a ``failure``, which fails the item.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from pytest_diageval.agents.llm import LLM, LLMUnavailable, StructuredOutputError
from pytest_diageval.agents.prompts import load_prompt, wrap_data
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.core.answer.answer_templates import strip_control
from pytest_diageval.core.evidence.store import stable_json

__all__ = [
    "GRADER_REASONS_MAX",
    "GRADER_REASON_CHARS",
    "GradedClaim",
    "GradedEvidence",
    "GraderInput",
    "GraderOutput",
    "GraderRun",
    "grader_input",
    "grader_messages",
    "run_grader",
]

GRADER_REASONS_MAX = 5
GRADER_REASON_CHARS = 200


_Reason = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=GRADER_REASON_CHARS)
]


class GraderOutput(BaseModel):
    """The grader's structured output: a score in 0..1 and a few short reasons."""

    model_config = ConfigDict(extra="ignore")

    score: float = Field(ge=0.0, le=1.0, description="How well the answer meets the criteria.")
    reasons: list[_Reason] = Field(
        min_length=1, max_length=GRADER_REASONS_MAX, description="Short reasons, 1 to 5."
    )


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GradedEvidence(_Input):
    """One binding of a kept claim that passed the gatekeeper: where it points and its quote."""

    tool_name: str | None
    source_invocation_id: int | None
    raw_path: str | None
    excerpt: str


class GradedClaim(_Input):
    """A claim the code kept, with its verified excerpts."""

    claim_id: str
    claim_type: str
    claim_text: str
    evidence: list[GradedEvidence]


class GraderInput(_Input):
    """Everything the grader reads, and nothing else (``extra="forbid"``)."""

    query: str
    answer_kind: str | None
    final_answer: str
    verified_claims: list[GradedClaim]


def grader_input(result: ChatResult) -> GraderInput:
    """The query, the published answer and the verified claims of the last round."""
    last = result.last_round
    composer = result.composer_output
    used = [] if composer is None else composer.claims_used
    claims = [] if last is None or last.executor_contract is None else last.executor_contract.claims
    kept: list[GradedClaim] = []
    for claim_id in used:
        claim = next((c for c in claims if c.claim_id == claim_id), None)
        if claim is None or last is None:
            continue
        evidence = [
            GradedEvidence(
                tool_name=row.tool_name,
                source_invocation_id=row.source_invocation_id,
                raw_path=row.raw_path,
                excerpt=_clean(row.evidence_excerpt or ""),
            )
            for row in last.gatekeeper.checked_bindings
            if row.claim_id == claim_id and row.status == "pass" and row.evidence_excerpt
        ]
        kept.append(
            GradedClaim(
                claim_id=claim.claim_id,
                claim_type=claim.claim_type,
                claim_text=_clean(claim.claim_text),
                evidence=evidence,
            )
        )
    return GraderInput(
        query=result.query,
        answer_kind=result.answer_kind,
        final_answer=result.final_answer,
        verified_claims=kept,
    )


def _clean(text: str) -> str:
    return " ".join(strip_control(text).split())


def grader_messages(criteria: str, graded: GraderInput) -> list[dict[str, str]]:
    """The system prompt, then the criteria and the input as data (byte-identical per input)."""
    user = wrap_data("rubric_criteria", criteria)
    user += "\n" + wrap_data("grader_input", stable_json(graded.model_dump(mode="json")))
    return [
        {"role": "system", "content": load_prompt("grader")},
        {"role": "user", "content": user},
    ]


@dataclass(frozen=True)
class GraderRun:
    """What the grader said (``output``), or why it said nothing usable (``failure``)."""

    criteria: str
    graded: GraderInput
    output: GraderOutput | None
    failure: str | None
    messages: list[dict[str, str]]
    unavailable: bool = False
    """The model answered nothing (connection, timeout, HTTP error): a recording is abandoned."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "criteria": self.criteria,
            "score": None if self.output is None else self.output.score,
            "reasons": [] if self.output is None else list(self.output.reasons),
            "failure": self.failure,
            "verified_claims": [c.claim_id for c in self.graded.verified_claims],
        }


def run_grader(llm: LLM, criteria: str, result: ChatResult) -> GraderRun:
    """Ask the grader once (one re-ask on invalid output), in the round of the last answer."""
    graded = grader_input(result)
    messages = grader_messages(criteria, graded)
    round_ = max(1, len(result.rounds))
    try:
        output = llm.structured(GraderOutput, messages, stage="grader", round=round_)
    except StructuredOutputError as exc:
        failure = f"grader output unusable: {exc}"
        return GraderRun(criteria, graded, None, failure, messages)
    except LLMUnavailable as exc:
        return GraderRun(criteria, graded, None, str(exc), messages, unavailable=True)
    return GraderRun(criteria, graded, output, None, messages)
