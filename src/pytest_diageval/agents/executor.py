"""The Executor: a native function-calling loop that collects evidence and returns the contract.

Every evidence call goes through the :class:`ToolInvocationRecorder`, and its result goes back
to the model wrapped as data (``<tool_output …>``) naming the ``source_invocation_id`` and the
``evidence_refs`` it may cite. The first assistant message without tool calls is the final
answer: the evidence-attribution contract. It is parsed once and never re-asked; a parse
failure is recorded and the flow goes on (the verifier falls back to the raw text).

A budget (tool calls and turns) bounds the loop; when it runs out, one final request that
offers no tools asks for the contract.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from pytest_diageval.agents.llm import LLM, assistant_message
from pytest_diageval.agents.prompts import load_prompt, wrap_data
from pytest_diageval.agents.results import ToolCallSummary
from pytest_diageval.core.contracts import ExecutorContract, ParseStatus, Plan, RetryContext
from pytest_diageval.core.recorder import (
    EVIDENCE_LIST_KEYS,
    RecordedCall,
    ToolInvocationRecorder,
)
from pytest_diageval.core.store import stable_json
from pytest_diageval.core.tools import TOOL_DEFINITIONS, ToolArgumentError, UnknownToolError

__all__ = [
    "BUDGET_EXHAUSTED_NOTICE",
    "ExecutorBudget",
    "ExecutorRun",
    "parse_contract",
    "run_executor",
]

BUDGET_EXHAUSTED_NOTICE = (
    "取证预算已用完，不能再调用工具。请只根据以上 <tool_output> 中的证据，"
    "直接输出最终的证据归因契约 JSON 对象。"
)


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
    budget_exhausted: bool = False


def executor_messages(
    query: str, plan: Plan | None, retry_context: RetryContext | None
) -> list[dict[str, Any]]:
    parts = [wrap_data("user_query", query)]
    if plan is not None:
        parts.append(wrap_data("planner_plan", plan.model_dump_json()))
    if retry_context is not None:
        parts.append(wrap_data("retry_context", retry_context.model_dump_json()))
    return [
        {"role": "system", "content": load_prompt("executor")},
        {"role": "user", "content": "\n".join(parts)},
    ]


def run_executor(
    llm: LLM,
    recorder: ToolInvocationRecorder,
    *,
    query: str,
    round: int,
    plan: Plan | None = None,
    retry_context: RetryContext | None = None,
    budget: ExecutorBudget = ExecutorBudget(),
) -> ExecutorRun:
    messages = executor_messages(query, plan, retry_context)
    calls: list[ToolCallSummary] = []
    for turn in range(1, budget.max_turns + 1):
        if len(calls) >= budget.max_tool_calls:
            break
        completion = llm.chat(messages, stage="executor", round=round, tools=TOOL_DEFINITIONS)
        message = completion.choices[0].message
        if not message.tool_calls:
            return _finish(message.content or "", calls, turns=turn, exhausted=False)
        messages.append(assistant_message(message))
        for tool_call in message.tool_calls:
            record, reply = _run_tool_call(recorder, tool_call, round, len(calls), budget)
            calls.append(record)
            messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": reply})
    messages.append({"role": "user", "content": BUDGET_EXHAUSTED_NOTICE})
    completion = llm.chat(messages, stage="executor", round=round)
    final = completion.choices[0].message.content or ""
    return _finish(final, calls, turns=budget.max_turns + 1, exhausted=True)


def parse_contract(text: str) -> tuple[ExecutorContract | None, ParseStatus]:
    """Parse the executor's final message into the contract, or say exactly why not."""
    body = _strip_code_fence(text.strip())
    if not body:
        return None, ParseStatus(status="failed", detail="executor returned an empty final answer")
    try:
        contract = ExecutorContract.model_validate_json(body)
    except ValidationError as exc:
        return None, ParseStatus(status="failed", detail=_describe(exc))
    return contract, ParseStatus(status="valid", detail="parsed executor evidence contract")


# --------------------------------------------------------------------------- internals


def _finish(text: str, calls: list[ToolCallSummary], *, turns: int, exhausted: bool) -> ExecutorRun:
    contract, status = parse_contract(text)
    return ExecutorRun(
        final_answer=text,
        contract=contract,
        parse_status=status,
        tool_calls=calls,
        turns=turns,
        budget_exhausted=exhausted,
    )


def _run_tool_call(
    recorder: ToolInvocationRecorder,
    tool_call: Any,
    round: int,
    calls_so_far: int,
    budget: ExecutorBudget,
) -> tuple[ToolCallSummary, str]:
    name = tool_call.function.name
    raw_arguments = tool_call.function.arguments or "{}"
    try:
        arguments = json.loads(raw_arguments)
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError as exc:
        error = f"arguments of {name} are not a JSON object: {exc}"
        return _error_reply(tool_call.id, name, raw_arguments, error)
    if calls_so_far >= budget.max_tool_calls:
        error = f"tool-call budget of {budget.max_tool_calls} exhausted; {name} was not run"
        return _error_reply(tool_call.id, name, arguments, error)
    try:
        recorded = recorder.call(name, arguments, round=round)
    except (UnknownToolError, ToolArgumentError) as exc:
        return _error_reply(tool_call.id, name, arguments, str(exc))
    record = ToolCallSummary(
        call_id=tool_call.id,
        name=name,
        arguments=arguments,
        invocation_id=recorded.invocation_id,
        error=recorded.error_message,
    )
    return record, _tool_reply(recorded)


def _tool_reply(recorded: RecordedCall) -> str:
    """The tool message: the output as data, with the id and the refs the model may cite."""
    if recorded.invocation_id is None:  # a helper tool: data, but nothing to cite
        return wrap_data("tool_output", stable_json(recorded.output), tool_name=recorded.tool_name)
    payload: dict[str, Any] = {
        "source_invocation_id": recorded.invocation_id,
        "tool_name": recorded.tool_name,
        "success": recorded.success,
        "evidence_status": recorded.evidence_status,
        "evidence_refs": [ref.model_dump() for ref in recorded.evidence_refs],
    }
    if recorded.success and recorded.output is not None:
        # The cited items are already in evidence_refs; sending them twice only costs context.
        payload["output"] = {
            key: value for key, value in recorded.output.items() if key not in EVIDENCE_LIST_KEYS
        }
    else:
        payload["error"] = recorded.error_message
    return wrap_data(
        "tool_output",
        stable_json(payload),
        source_invocation_id=recorded.invocation_id,
        tool_name=recorded.tool_name,
    )


def _error_reply(
    call_id: str, name: str, arguments: dict[str, Any] | str, error: str
) -> tuple[ToolCallSummary, str]:
    record = ToolCallSummary(
        call_id=call_id, name=name, arguments=arguments, invocation_id=None, error=error
    )
    reply = wrap_data(
        "tool_output", stable_json({"success": False, "error": error}), tool_name=name
    )
    return record, reply


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
