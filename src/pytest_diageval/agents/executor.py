"""The Executor: a function-calling loop that collects evidence and submits the contract.

Every turn offers the evidence tools (narrowed to the session's world,
:func:`~pytest_diageval.core.evidence.tool_arguments.constrained_tool_definitions`) and, once a
call recorded an invocation it could cite (a refused call or ``get_current_time`` records
none), the function ``submit_evidence_contract``, whose parameters are the contract's schema
generated from the invocations made so far
(:mod:`pytest_diageval.core.contract.contract_schema`), with
``tool_choice: "required"``: the model either gathers more evidence or submits. Every evidence
call goes through the :class:`ToolInvocationRecorder`, and its result goes back to the model
wrapped as data (``<tool_output …>``) naming the ``source_invocation_id`` and the
``evidence_refs`` it may cite.

How the loop stops (``ExecutorRun.stop_reason``, persisted with the executor's step):

* ``submitted``: the model called ``submit_evidence_contract``; its arguments are the contract;
* ``message``: the model answered text instead (a host that ignores ``tool_choice``); the text
  is parsed as the contract, as before the function existed;
* ``budget_exhausted``: the tool-call or turn budget ran out;
* ``repeated_argument_error``: the model repeated, verbatim, a call whose arguments a tool had
  already refused; the repeat is answered with the error and an instruction, and the loop stops
  instead of spending the budget on it;
* ``repeated_call`` (the same for a call that completed: a live model asked the same no-hit
  search five times): the repeat is not run again, its answer points at the earlier result.

A narrow question's scope
(:class:`~pytest_diageval.core.contract.scope_contract.DecodingScope`, issue 25 part 3)
narrows the tools' ``service`` / ``alert_name`` enums (the caller's ``tools``), the
contract's claim types and the invocations a binding may cite. A call that names a service or
alert outside it anyway (a host that ignores the schema, a scripted entry) is refused before it
runs: it gets no invocation id, so nothing can cite it; its reply and its ``error`` (persisted
with the executor's step) start with ``scope.out_of_scope_call``; a verbatim repeat stops the
loop like any refused call.

Each call is run, refused or answered as a repeat by :mod:`.tool_calls`.

The last two end with one request that forces ``submit_evidence_contract`` (and offers nothing
else). The contract is parsed once and never re-asked (the executor's re-ask count is 0): a
parse failure is recorded and the flow goes on (the verifier falls back to the raw text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from pytest_diageval.agents.llm import LLM, assistant_message
from pytest_diageval.agents.prompts import load_prompt, wrap_data
from pytest_diageval.agents.results import ToolCallSummary
from pytest_diageval.agents.tool_calls import (
    FULL_SCOPE,
    REPEATED_CALL_STOP,
    REPEATED_ERROR_STOP,
    LoopStop,
    ToolCallLoop,
)
from pytest_diageval.core.contract.claim_ids import renumber_repeated_claim_ids
from pytest_diageval.core.contract.contract_schema import (
    SUBMIT_CONTRACT_FUNCTION,
    submit_contract_tool,
)
from pytest_diageval.core.contract.contracts import (
    ExecutorContract,
    ParseStatus,
    Plan,
    RetryContext,
    ToolInvocation,
)
from pytest_diageval.core.contract.scope_contract import DecodingScope
from pytest_diageval.core.contract.text_bounds import texts_at_bound
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.tools import TOOL_DEFINITIONS

__all__ = [
    "BUDGET_EXHAUSTED_NOTICE",
    "REPEATED_CALL_STOP",
    "REPEATED_ERROR_NOTICE",
    "REPEATED_ERROR_STOP",
    "ExecutorBudget",
    "ExecutorRun",
    "StopReason",
    "parse_contract",
    "run_executor",
]

BUDGET_EXHAUSTED_NOTICE = (
    "取证预算已用完，不能再调用取证工具。请只根据以上 <tool_output> 中的证据，"
    f"调用 {SUBMIT_CONTRACT_FUNCTION} 提交最终的证据归因契约。"
)
REPEATED_ERROR_NOTICE = (
    "上一个工具调用与之前的调用完全相同，取证已停止。请只根据以上 <tool_output> 中的证据，"
    f"调用 {SUBMIT_CONTRACT_FUNCTION} 提交最终的证据归因契约。"
)

StopReason = Literal["submitted", "message", "budget_exhausted", LoopStop]
_REQUIRED = "required"
_FORCE_SUBMIT = {"type": "function", "function": {"name": SUBMIT_CONTRACT_FUNCTION}}


@dataclass(frozen=True)
class ExecutorBudget:
    """Bounds of one executor loop (per round)."""

    max_tool_calls: int = 8
    max_turns: int = 6


@dataclass
class ExecutorRun:
    final_answer: str
    contract: ExecutorContract | None
    parse_status: ParseStatus
    tool_calls: list[ToolCallSummary] = field(default_factory=list)
    turns: int = 0
    stop_reason: StopReason = "submitted"
    texts_at_bound: list[str] = field(default_factory=list)
    """The contract's free texts that reached their bound (a bounded server cuts them there;
    ``core.contract.text_bounds``): kept in the audit, not in the parse status the verifier
    reads."""

    @property
    def budget_exhausted(self) -> bool:
        return self.stop_reason == "budget_exhausted"

    def step_output(self) -> dict[str, Any]:
        """The executor's ``agent_step`` output: its answer, calls and why the loop stopped."""
        return {
            "final_answer": self.final_answer,
            "parse_status": self.parse_status.model_dump(),
            "tool_calls": [call.model_dump() for call in self.tool_calls],
            "turns": self.turns,
            "budget_exhausted": self.budget_exhausted,
            "stop_reason": self.stop_reason,
            "texts_at_bound": list(self.texts_at_bound),
        }


def executor_messages(
    query: str, plan: Plan | None, retry_context: RetryContext | None, *, points: bool = False
) -> list[dict[str, Any]]:
    parts = [wrap_data("user_query", query)]
    if plan is not None:
        parts.append(wrap_data("planner_plan", plan.model_dump_json()))
    if retry_context is not None:
        parts.append(wrap_data("retry_context", retry_context.model_dump_json()))
    return [
        {"role": "system", "content": executor_prompt(points)},
        {"role": "user", "content": "\n".join(parts)},
    ]


def executor_prompt(points: bool) -> str:
    """The executor's system prompt; with ``points``, the paragraph that asks for them
    (``prompts/executor_points.md``) closes its citation rules."""
    prompt = load_prompt("executor")
    if not points:
        return prompt
    paragraph = load_prompt("executor_points").rstrip()
    rules_end = "\n\n## 名称从哪里来"  # (a test fails if the heading moves and this misses)
    return prompt.replace(rules_end, f"\n{paragraph}{rules_end}")


def run_executor(
    llm: LLM,
    recorder: ToolInvocationRecorder,
    *,
    query: str,
    round: int,
    plan: Plan | None = None,
    retry_context: RetryContext | None = None,
    budget: ExecutorBudget = ExecutorBudget(),
    tools: Sequence[Mapping[str, Any]] = TOOL_DEFINITIONS,
    scope: DecodingScope = FULL_SCOPE,
) -> ExecutorRun:
    """One executor loop; ``tools`` are the evidence tools offered (the session's, narrowed),
    ``scope`` what the question lets the calls and the contract be about."""
    points = llm.config.contract_points
    messages = executor_messages(query, plan, retry_context, points=points)
    loop = ToolCallLoop(recorder, round, budget.max_tool_calls, scope)
    stop: StopReason = "budget_exhausted"
    turn = 0
    for turn in range(1, budget.max_turns + 1):
        if len(loop.calls) >= budget.max_tool_calls:
            break
        submit = _submit_tool(recorder, scope, points)
        # The contract cites this session's invocations: it is offered once there is one (a
        # small model otherwise submits at once, or after get_current_time, with nothing to cite).
        offered = [*tools, submit] if loop.citable or not tools else [*tools]
        completion = llm.chat(
            messages, stage="executor", round=round, tools=offered, tool_choice=_REQUIRED
        )
        message = completion.choices[0].message
        submitted = _submitted_arguments(message)
        if submitted is not None:
            return _finish(submitted, loop.calls, turns=turn, stop="submitted", submit=submit)
        if not message.tool_calls:
            return _finish(message.content or "", loop.calls, turns=turn, stop="message")
        messages.append(assistant_message(message))
        messages.extend(loop.answer(tool_call) for tool_call in message.tool_calls)
        if loop.stop is not None:
            stop = loop.stop
            break
    notice = BUDGET_EXHAUSTED_NOTICE if stop == "budget_exhausted" else REPEATED_ERROR_NOTICE
    messages.append({"role": "user", "content": notice})
    submit = _submit_tool(recorder, scope, points)
    completion = llm.chat(
        messages, stage="executor", round=round, tools=[submit], tool_choice=_FORCE_SUBMIT
    )
    message = completion.choices[0].message
    final = _submitted_arguments(message)
    text = final if final is not None else message.content or ""
    return _finish(text, loop.calls, turns=turn + 1, stop=stop, submit=submit)


def parse_contract(text: str) -> tuple[ExecutorContract | None, ParseStatus]:
    """Parse the executor's final message into the contract, or say exactly why not."""
    body = _strip_code_fence(text.strip())
    if not body:
        return None, ParseStatus(status="failed", detail="executor returned an empty final answer")
    data, renamed = renumber_repeated_claim_ids(body)
    try:
        contract = (
            ExecutorContract.model_validate(data)
            if renamed
            else ExecutorContract.model_validate_json(body)
        )
    except ValidationError as exc:
        return None, ParseStatus(status="failed", detail=_describe(exc))
    detail = "parsed executor evidence contract"
    if renamed:
        detail += f"; repeated claim ids renumbered: {', '.join(renamed)}"
    return contract, ParseStatus(status="valid", detail=detail)


# --------------------------------------------------------------------------- internals


def _finish(
    text: str,
    calls: list[ToolCallSummary],
    *,
    turns: int,
    stop: StopReason,
    submit: Mapping[str, Any] | None = None,
) -> ExecutorRun:
    contract, status = parse_contract(text)
    at_bound = (
        texts_at_bound(contract.model_dump(), submit["function"]["parameters"])
        if contract is not None and submit is not None
        else []
    )
    return ExecutorRun(
        final_answer=text,
        contract=contract,
        parse_status=status,
        tool_calls=calls,
        turns=turns,
        stop_reason=stop,
        texts_at_bound=at_bound,
    )


def _submit_tool(
    recorder: ToolInvocationRecorder, scope: DecodingScope, points: bool
) -> dict[str, Any]:
    """``submit_evidence_contract`` offering only the invocations and claim types in scope
    (and points on their items, when the run offers them)."""
    citable: list[ToolInvocation] = [row for row in recorder.invocations() if scope.admits(row)]
    return submit_contract_tool(citable, scope.claim_types, points=points)


def _submitted_arguments(message: Any) -> str | None:
    """The arguments text of the message's ``submit_evidence_contract`` call, if it made one.

    Other calls in the same message are not run: submitting ends the evidence gathering.
    """
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        if function is not None and function.name == SUBMIT_CONTRACT_FUNCTION:
            return str(function.arguments or "")
    return None


def _strip_code_fence(text: str) -> str:
    """Accept one fenced block (```json … ```): not a repair, only the wrapper models add."""
    if text.startswith("```") and text.endswith("```") and text.count("```") == 2:
        inner = text[3:-3]
        return inner.split("\n", 1)[1] if "\n" in inner else inner
    return text


def _describe(exc: ValidationError) -> str:
    problems = [
        f"{'.'.join(str(part) for part in error['loc']) or '<root>'}: {error['msg']}"
        for error in exc.errors()[:3]
    ]
    more = exc.error_count() - len(problems)
    suffix = f" (+{more} more)" if more > 0 else ""
    return "executor contract invalid: " + "; ".join(problems) + suffix
