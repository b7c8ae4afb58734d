"""The ``agent_step`` rows of one round: what each stage was given and what it returned.

One row per agent run (its re-asks inside it), written as the round goes, so a session that
stops half-way keeps the steps it took. Each row is the stage's own audit: the planner's plan
and the steps the scope withheld, the executor's calls and parse status, the verifier's
answer and why each re-ask was made.
"""

from __future__ import annotations

from typing import Any

from pytest_diageval.agents.executor import ExecutorRun
from pytest_diageval.agents.planner import PlannerRun
from pytest_diageval.agents.verifier import VerifierRun
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.scope.session import SetAsidePlanStep

__all__ = ["persist_executor", "persist_planner", "persist_verifier"]


def persist_planner(
    store: Store,
    session_id: str,
    round_number: int,
    run: PlannerRun,
    set_aside: list[SetAsidePlanStep],
) -> None:
    output = {
        "plan": None if run.plan is None else run.plan.model_dump(),
        "error": run.error,
        "reasks": list(run.reasks),
        "scope_set_aside": [item.model_dump() for item in set_aside],
    }
    _persist(store, session_id, round_number, "planner", {"messages": run.messages}, output)


def persist_executor(
    store: Store, session_id: str, round_number: int, run: ExecutorRun, query: str
) -> None:
    output = {
        "final_answer": run.final_answer,
        "parse_status": run.parse_status.model_dump(),
        "tool_calls": [call.model_dump() for call in run.tool_calls],
        "turns": run.turns,
        "budget_exhausted": run.budget_exhausted,
        "stop_reason": run.stop_reason,
    }
    _persist(store, session_id, round_number, "executor", {"query": query}, output)


def persist_verifier(store: Store, session_id: str, round_number: int, run: VerifierRun) -> None:
    output = {
        "verifier_output": None if run.output is None else run.output.model_dump(),
        "failure": run.failure,
        # Why each re-ask was made (a cut-off one says so): an answer that parsed after a
        # re-ask leaves no other trace.
        "reasks": list(run.reasks),
    }
    _persist(store, session_id, round_number, "verifier", {"messages": run.messages}, output)


def _persist(
    store: Store, session_id: str, round_number: int, agent: str, input: Any, output: Any
) -> None:
    """One agent step row (an agent's run in one round); bumps ``step_count``."""
    store.add_agent_step(session_id, round=round_number, agent=agent, input=input, output=output)
