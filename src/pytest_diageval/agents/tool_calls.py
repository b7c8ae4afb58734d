"""The executor's tool calls: each one run, or refused, and answered as data.

A call runs through the :class:`ToolInvocationRecorder`; its reply wraps the output as data
(``<tool_output …>``) naming the ``source_invocation_id`` and the ``evidence_refs`` the model
may cite. A call is refused, never run (no row, no id, nothing a binding could cite), when its
arguments are not a JSON object or a tool rejects them, when the scope
(:class:`~pytest_diageval.core.contract.scope_contract.DecodingScope`) refuses it
(``scope.out_of_scope_call``), or when the tool-call budget is spent. A verbatim repeat is not
run again: of a refused call it stops the loop (``executor.repeated_argument_error``), of a
completed one (a helper such as ``get_current_time`` too) it points at the earlier result and
stops the loop (``executor.repeated_call``).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pytest_diageval.agents.prompts import wrap_data
from pytest_diageval.agents.results import ToolCallSummary
from pytest_diageval.core.contract.contract_schema import SUBMIT_CONTRACT_FUNCTION
from pytest_diageval.core.contract.scope_contract import DecodingScope
from pytest_diageval.core.evidence.recorder import (
    EVIDENCE_LIST_KEYS,
    RecordedCall,
    ToolInvocationRecorder,
)
from pytest_diageval.core.evidence.store import stable_json
from pytest_diageval.core.evidence.tools import ToolArgumentError, UnknownToolError

__all__ = [
    "FULL_SCOPE",
    "REPEATED_CALL_STOP",
    "REPEATED_ERROR_STOP",
    "LoopStop",
    "ToolCallLoop",
    "run_tool_call",
    "tool_reply",
]

REPEATED_ERROR_STOP = "executor.repeated_argument_error"
"""The audited name of the stop; the tool reply of the repeated call starts with it."""
REPEATED_CALL_STOP = "executor.repeated_call"
"""The same for a verbatim repeat of a call that completed (its result is already there)."""
_SUBMIT_INSTRUCTION = f"请根据已有证据调用 {SUBMIT_CONTRACT_FUNCTION} 提交契约。"
_REPEAT_INSTRUCTION = (
    "这与之前一次失败的调用完全相同（工具名与参数一字不差）。不要重复：改正参数"
    f"（按工具的参数说明），或调用 {SUBMIT_CONTRACT_FUNCTION} 提交契约。"
)

LoopStop = Literal["repeated_argument_error", "repeated_call"]
FULL_SCOPE = DecodingScope()  # a broad question: today's enums, every type, every invocation


class ToolCallLoop:
    """The tool calls of one executor loop: runs them and notices a verbatim repeat."""

    def __init__(
        self,
        recorder: ToolInvocationRecorder,
        round: int,
        max_tool_calls: int,
        scope: DecodingScope,
    ):
        self.recorder = recorder
        self.round = round
        self.max_tool_calls = max_tool_calls
        self.scope = scope
        self.calls: list[ToolCallSummary] = []
        self.stop: LoopStop | None = None
        self._refused: set[str] = set()
        # signature -> invocation id of a completed call (None: a helper, which records none)
        self._answered: dict[str, int | None] = {}

    def answer(self, tool_call: Any) -> dict[str, Any]:
        """Run one call (or refuse it) and return the ``role: tool`` message answering it."""
        name = tool_call.function.name
        raw_arguments = tool_call.function.arguments or "{}"
        signature = f"{name}\n{raw_arguments.strip()}"
        within_budget = len(self.calls) < self.max_tool_calls
        if within_budget and signature in self._refused:
            self.stop = "repeated_argument_error"
            record, reply = _repeat_reply(tool_call.id, name, raw_arguments, completed=False)
        elif within_budget and signature in self._answered:
            self.stop = "repeated_call"
            earlier = self._answered[signature]
            record, reply = _repeat_reply(
                tool_call.id, name, raw_arguments, completed=True, earlier=earlier
            )
        else:
            record, reply, refused = run_tool_call(
                self.recorder,
                tool_call,
                self.round,
                len(self.calls),
                self.max_tool_calls,
                self.scope,
            )
            if refused:
                self._refused.add(signature)
            elif record.invocation_id is not None or record.error is None:
                self._answered[signature] = record.invocation_id
        self.calls.append(record)
        return {"role": "tool", "tool_call_id": tool_call.id, "content": reply}

    @property
    def citable(self) -> bool:
        """Whether a call recorded an invocation a contract could cite (an evidence tool ran;
        a refused call and a helper such as ``get_current_time`` record none)."""
        return any(call.invocation_id is not None for call in self.calls)


def _repeat_reply(
    call_id: str, name: str, raw_arguments: str, completed: bool, earlier: int | None = None
) -> tuple[ToolCallSummary, str]:
    """The answer to a verbatim repeat: not run again; of a refused call the error, of a
    completed one where its result is (``earlier``: its invocation id, None for a helper such
    as get_current_time)."""
    if not completed:
        error = f"{REPEATED_ERROR_STOP}: {_REPEAT_INSTRUCTION}"
    elif earlier is None:
        error = (
            f"{REPEATED_CALL_STOP}: 与之前一次 {name} 调用完全相同，结果见上方 <tool_output>；"
            f"不再重复执行。{_SUBMIT_INSTRUCTION}"
        )
    else:
        error = (
            f"{REPEATED_CALL_STOP}: 与第 {earlier} 次取证调用（source_invocation_id={earlier}）"
            f"完全相同，结果见上方 <tool_output>；不再重复执行。{_SUBMIT_INSTRUCTION}"
        )
    return _error_reply(call_id, name, raw_arguments, error)


def run_tool_call(
    recorder: ToolInvocationRecorder,
    tool_call: Any,
    round: int,
    calls_so_far: int,
    max_tool_calls: int,
    scope: DecodingScope = FULL_SCOPE,
) -> tuple[ToolCallSummary, str, bool]:
    """Run one call: its summary, the reply text, and whether its arguments were refused."""
    name = tool_call.function.name
    raw_arguments = tool_call.function.arguments or "{}"
    try:
        arguments = json.loads(raw_arguments)
        if not isinstance(arguments, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError as exc:
        error = f"arguments of {name} are not a JSON object: {exc}"
        return (*_error_reply(tool_call.id, name, raw_arguments, error), True)
    if calls_so_far >= max_tool_calls:
        error = f"tool-call budget of {max_tool_calls} exhausted; {name} was not run"
        return (*_error_reply(tool_call.id, name, arguments, error), False)
    refusal = scope.refusal(arguments)
    if refusal is not None:  # never run: no row, no id, nothing a binding could cite
        return (*_error_reply(tool_call.id, name, arguments, refusal), True)
    try:
        recorded = recorder.call(name, arguments, round=round)
    except (UnknownToolError, ToolArgumentError) as exc:
        return (*_error_reply(tool_call.id, name, arguments, str(exc)), True)
    record = ToolCallSummary(
        call_id=tool_call.id,
        name=name,
        arguments=arguments,
        invocation_id=recorded.invocation_id,
        error=recorded.error_message,
    )
    return record, tool_reply(recorded), False


def tool_reply(recorded: RecordedCall) -> str:
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
