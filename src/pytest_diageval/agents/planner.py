"""The Planner: a short evidence-gathering plan as structured output.

A planner that cannot produce a valid plan (after instructor's one re-ask) is not fatal: the
executor then works from the query alone, and the failure is kept for the audit.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_diageval.agents.llm import LLM, StructuredOutputError
from pytest_diageval.agents.prompts import load_prompt, wrap_data
from pytest_diageval.core.contract.contracts import Plan, RetryContext

__all__ = ["PlannerRun", "run_planner"]


@dataclass(frozen=True)
class PlannerRun:
    plan: Plan | None
    error: str | None
    messages: list[dict[str, str]]


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
    try:
        plan = llm.structured(Plan, messages, stage="planner", round=round)
    except StructuredOutputError as exc:
        return PlannerRun(plan=None, error=f"planner output invalid: {exc}", messages=messages)
    return PlannerRun(plan=plan, error=None, messages=messages)
