"""The Planner: a short evidence-gathering plan as structured output.

A planner that cannot produce a valid plan (after its one re-ask, which an answer cut at
``max_tokens`` gets too) is not fatal: the executor then works from the query alone, and the
failure is kept for the audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from pytest_diageval.agents.llm import LLM, StructuredOutputError
from pytest_diageval.agents.prompts import load_prompt, wrap_data
from pytest_diageval.core.contract.contracts import Plan, RetryContext

__all__ = ["PlannerRun", "run_planner"]


@dataclass(frozen=True)
class PlannerRun:
    plan: Plan | None
    error: str | None
    messages: list[dict[str, str]]
    reasks: list[str] = field(default_factory=list)
    """Why each re-ask was made (an answer cut at max_tokens says so), for the audit."""
    texts_at_bound: list[str] = field(default_factory=list)
    """The answer's free texts that reached their bound (the local server cuts them there)."""

    def step_output(self, set_aside: Sequence[BaseModel]) -> dict[str, Any]:
        """The planner's ``agent_step`` output, with the steps the scope withheld."""
        return {
            "plan": None if self.plan is None else self.plan.model_dump(),
            "error": self.error,
            "reasks": list(self.reasks),
            "texts_at_bound": list(self.texts_at_bound),
            "scope_set_aside": [item.model_dump() for item in set_aside],
        }


def planner_messages(query: str, retry_context: RetryContext | None) -> list[dict[str, str]]:
    user = wrap_data("user_query", query)
    if retry_context is not None:
        user += "\n" + wrap_data("retry_context", retry_context.model_dump_json())
    return [
        {"role": "system", "content": load_prompt("planner")},
        {"role": "user", "content": user},
    ]


def run_planner(
    llm: LLM, query: str, *, round: int, retry_context: RetryContext | None = None
) -> PlannerRun:
    messages = planner_messages(query, retry_context)
    reasks: list[str] = []
    at_bound: list[str] = []
    try:
        plan = llm.structured(
            Plan, messages, stage="planner", round=round, reasks=reasks, at_bound=at_bound
        )
    except StructuredOutputError as exc:
        error = f"planner output invalid: {exc}"
        return PlannerRun(plan=None, error=error, messages=messages, reasks=reasks)
    return PlannerRun(
        plan=plan, error=None, messages=messages, reasks=reasks, texts_at_bound=at_bound
    )
