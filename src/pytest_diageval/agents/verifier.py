"""The Verifier: labels every fact of the executor's answer; the code decides the verdict.

It is given exactly a :class:`VerifierInput` (which forbids any other field), so planner and
executor intermediate reasoning cannot reach it, and reads the bounded view 004 §4–§5
describe (:func:`~pytest_diageval.core.judge.verifier_view.verifier_view`). It answers the
session's own schema (:func:`verifier_parameters`): each fact names one of the contract's
claim ids and cites only the session's trace refs. Its output comes through instructor with
one re-ask (an answer cut at ``max_tokens`` included); an answer that is still missing or
invalid is a fallback, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_diageval.agents.llm import LLM, StructuredOutputError
from pytest_diageval.agents.prompts import load_prompt, wrap_data
from pytest_diageval.agents.structured_output import structured_request
from pytest_diageval.core.contract.contracts import VerifierInput, VerifierOutput
from pytest_diageval.core.contract.verifier_schema import constrain_verifier_parameters
from pytest_diageval.core.evidence.store import stable_json
from pytest_diageval.core.judge.verifier_view import verifier_view

__all__ = ["VerifierRun", "run_verifier", "verifier_messages", "verifier_parameters"]


@dataclass(frozen=True)
class VerifierRun:
    output: VerifierOutput | None
    failure: str | None
    messages: list[dict[str, str]]
    reasks: list[str] = field(default_factory=list)
    """Why each re-ask was made (``attempt 1: the answer was cut off …``), for the audit."""
    texts_at_bound: list[str] = field(default_factory=list)
    """The answer's free texts that reached their bound (the local server cuts them there)."""

    def step_output(self) -> dict[str, Any]:
        """The verifier's ``agent_step`` output: an answer that parsed after a re-ask leaves
        no other trace of the re-ask than ``reasks``."""
        return {
            "verifier_output": None if self.output is None else self.output.model_dump(),
            "failure": self.failure,
            "reasks": list(self.reasks),
            "texts_at_bound": list(self.texts_at_bound),
        }


def verifier_messages(verifier_input: VerifierInput) -> list[dict[str, str]]:
    payload = stable_json(verifier_view(verifier_input))
    return [
        {"role": "system", "content": load_prompt("verifier")},
        {"role": "user", "content": wrap_data("verifier_input", payload)},
    ]


def verifier_parameters(verifier_input: VerifierInput) -> dict[str, Any]:
    """The verifier's function schema for this session: claim ids and trace refs as enums."""
    _, additions = structured_request(VerifierOutput)
    generic = additions["tools"][0]["function"]["parameters"]
    contract = verifier_input.executor_structured_output
    claim_ids = [] if contract is None else [claim.claim_id for claim in contract.claims]
    trace_refs = [item.trace_ref for item in verifier_input.tool_trace_summary]
    return constrain_verifier_parameters(generic, claim_ids, trace_refs)


def run_verifier(llm: LLM, verifier_input: VerifierInput, *, round: int) -> VerifierRun:
    messages = verifier_messages(verifier_input)
    reasks: list[str] = []
    at_bound: list[str] = []
    try:
        output = llm.structured(
            VerifierOutput,
            messages,
            stage="verifier",
            round=round,
            parameters=verifier_parameters(verifier_input),
            reasks=reasks,
            at_bound=at_bound,
        )
    except StructuredOutputError as exc:
        failure = f"verifier output unusable: {exc}"
        return VerifierRun(output=None, failure=failure, messages=messages, reasks=reasks)
    return VerifierRun(
        output=output, failure=None, messages=messages, reasks=reasks, texts_at_bound=at_bound
    )
