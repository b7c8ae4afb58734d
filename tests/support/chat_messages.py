"""A short chat with one tool call, as an OpenAI request carries it (for the local server's
prompt tests): system text, a question, the model's ``query_logs`` call, the tool's answer."""

from __future__ import annotations

from typing import Any

__all__ = ["tool_conversation"]


def tool_conversation(system: str, question: str, tool_output: str) -> list[dict[str, Any]]:
    """The four messages; the call is ``query_logs(service=order-service)`` with id ``call_1``."""
    call = {"name": "query_logs", "arguments": '{"service": "order-service"}'}
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": question},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": tool_output},
    ]
