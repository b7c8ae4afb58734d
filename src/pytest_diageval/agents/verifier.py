"""The Verifier: labels every fact of the executor's answer; the code decides the verdict.

It is given exactly a :class:`VerifierInput` (which forbids any other field), so planner and
executor intermediate reasoning cannot reach it, and reads the bounded view 004 §4–§5
describe (:func:`~pytest_diageval.core.judge.verifier_view.verifier_view`). Its output comes
through instructor with one re-ask; an answer that is still missing or invalid is a
fallback, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_diageval.agents.llm import LLM, StructuredOutputError
from pytest_diageval.agents.prompts import load_prompt, wrap_data
from pytest_diageval.core.contract.contracts import VerifierInput, VerifierOutput
from pytest_diageval.core.evidence.store import stable_json
from pytest_diageval.core.judge.verifier_view import verifier_view

__all__ = ["VerifierRun", "run_verifier", "verifier_messages"]


@dataclass(frozen=True)
class VerifierRun:
    output: VerifierOutput | None
    failure: str | None
    messages: list[dict[str, str]]


def verifier_messages(verifier_input: VerifierInput) -> list[dict[str, str]]:
    payload = stable_json(verifier_view(verifier_input))
    return [
        {"role": "system", "content": load_prompt("verifier")},
        {"role": "user", "content": wrap_data("verifier_input", payload)},
    ]


def run_verifier(llm: LLM, verifier_input: VerifierInput, *, round: int) -> VerifierRun:
    messages = verifier_messages(verifier_input)
    try:
        output = llm.structured(VerifierOutput, messages, stage="verifier", round=round)
    except StructuredOutputError as exc:
        return VerifierRun(
            output=None, failure=f"verifier output unusable: {exc}", messages=messages
        )
    return VerifierRun(output=output, failure=None, messages=messages)
