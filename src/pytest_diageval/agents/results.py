"""What one ChatService run produced: every round, every decision, the final answer.

This is the object the pytest plugin checks expectations against and writes into reports, so
it carries everything a reviewer needs and nothing that varies between two identical runs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.answer.composer import ComposerOutput
from pytest_diageval.core.answer.routing import RouteDecision
from pytest_diageval.core.contract.contracts import (
    ExecutorContract,
    GatekeeperResult,
    ParseStatus,
    Plan,
    RetryContext,
    ToolInvocation,
    ToolTraceSummaryItem,
    Verdict,
    VerifierOutput,
)
from pytest_diageval.core.contract.scope_contract import ScopeContract
from pytest_diageval.core.judge.verdict import VerdictDecision
from pytest_diageval.core.scope.session import SetAsideClaim, SetAsidePlanStep

__all__ = ["AnswerKind", "ChatResult", "RoundResult", "ToolCallSummary"]

AnswerKind = Literal["direct", "disclaimer", "degraded"]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCallSummary(_Result):
    """One tool call the executor asked for (evidence or helper, valid or not)."""

    call_id: str
    name: str
    arguments: dict[str, Any] | str
    invocation_id: int | None
    error: str | None


class RoundResult(_Result):
    """One Planner → Executor → Gatekeeper → Verifier round."""

    round: int
    retry_context: RetryContext | None = None
    plan: Plan | None  # what the planner said; the executor saw it without plan_set_aside
    planner_error: str | None = None
    # Plan steps outside the question's scope, withheld from the executor (the rule and why).
    plan_set_aside: list[SetAsidePlanStep] = Field(default_factory=list)
    executor_final_answer: str
    executor_contract: ExecutorContract | None
    parse_status: ParseStatus
    tool_calls: list[ToolCallSummary] = Field(default_factory=list)
    executor_turns: int = 0
    executor_budget_exhausted: bool = False
    executor_stop_reason: str = "submitted"
    gatekeeper: GatekeeperResult
    tool_trace_summary: list[ToolTraceSummaryItem]
    verifier_output: VerifierOutput | None
    verifier_failure: str | None = None
    decision: VerdictDecision
    route: RouteDecision
    # The claims outside the question's scope: never judged, never shown (the rule and why).
    set_aside: list[SetAsideClaim] = Field(default_factory=list)
    # The free texts of the round's answers that reached their bound, by stage
    # ("executor: claims[0].claim_text (128 characters)"): a bounded server cut them there.
    texts_at_bound: list[str] = Field(default_factory=list)


class ChatResult(_Result):
    """A whole diagnosis session. ``status="error"`` when the LLM answered nothing usable."""

    session_id: str
    query: str
    # The question's scope, read from the query once per session (None: a result from before).
    scope: ScopeContract | None = None
    status: Literal["completed", "error"]
    error: str | None = None
    rounds: list[RoundResult] = Field(default_factory=list)
    final_verdict: Verdict | None = None
    final_score: float | None = None
    answer_kind: AnswerKind | None = None
    final_answer: str = ""
    # What the composer published and why (None when the session ended in an error).
    composer_output: ComposerOutput | None = None
    invocations: list[ToolInvocation] = Field(default_factory=list)
    step_count: int = 0
    tool_call_count: int = 0

    @property
    def last_round(self) -> RoundResult | None:
        return self.rounds[-1] if self.rounds else None
