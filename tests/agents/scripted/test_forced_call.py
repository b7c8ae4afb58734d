"""Which function a request makes the model call, read from real request shapes."""

from __future__ import annotations

from typing import Any

from pytest_diageval.agents.scripted.forced_call import (
    answering_function,
    forced_function,
    structured_answer_call,
)
from pytest_diageval.core.contract.contract_schema import SUBMIT_CONTRACT_FUNCTION


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def _call(name: str) -> dict[str, Any]:
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": "{}"}}


PLANNER = {
    "tools": [_tool("Plan")],
    "tool_choice": {"type": "function", "function": {"name": "Plan"}},
}
EXECUTOR = {
    "tools": [_tool("query_logs"), _tool(SUBMIT_CONTRACT_FUNCTION)],
    "tool_choice": "required",
}
REQUIRED_ONE = {"tools": [_tool("Verdict")], "tool_choice": "required"}
PLAIN = {"messages": []}


def test_a_named_tool_choice_or_a_single_required_tool_is_forced() -> None:
    assert forced_function(PLANNER) == "Plan"
    assert forced_function(REQUIRED_ONE) == "Verdict"
    assert forced_function(EXECUTOR) is None  # two tools offered: the model picks
    assert forced_function(PLAIN) is None


def test_an_executor_answers_through_the_offered_submit_function() -> None:
    assert answering_function(EXECUTOR) == SUBMIT_CONTRACT_FUNCTION
    assert answering_function(PLANNER) == "Plan"
    assert answering_function(PLAIN) is None


def test_the_answer_is_the_forced_call_else_the_submit_call() -> None:
    assert structured_answer_call(PLANNER, [_call("Plan")]) == _call("Plan")
    calls = [_call("query_logs"), _call(SUBMIT_CONTRACT_FUNCTION)]
    assert structured_answer_call(EXECUTOR, calls) == _call(SUBMIT_CONTRACT_FUNCTION)
    assert structured_answer_call(EXECUTOR, [_call("query_logs")]) is None
    assert structured_answer_call(EXECUTOR, []) is None
