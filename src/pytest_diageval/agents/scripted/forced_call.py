"""Which function a chat request makes the model call, and which call carries the answer.

A structured answer is the arguments of a function call: the function a request forces
(``tool_choice`` naming it, or ``"required"`` with a single tool), else the offered
``submit_evidence_contract``. Read by the scripted model (to answer a script ``content``
entry as that call) and by whatever reads recorded calls back into script entries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_diageval.core.contract.contract_schema import SUBMIT_CONTRACT_FUNCTION

__all__ = ["answering_function", "forced_function", "structured_answer_call"]


def structured_answer_call(
    body: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The recorded call that carries a structured answer (a script ``content``), if any.

    That is the call of the function the request forced, or a ``submit_evidence_contract``
    call; other calls are evidence tool calls (a script ``tool_calls`` entry).
    """
    if not calls:
        return None
    if forced_function(body) is not None:
        return calls[0]
    return next(
        (call for call in calls if call["function"]["name"] == SUBMIT_CONTRACT_FUNCTION), None
    )


def answering_function(body: Mapping[str, Any]) -> str | None:
    """The function a structured answer calls: the forced one, else the offered submit."""
    forced = forced_function(body)
    if forced is not None:
        return forced
    tools = body.get("tools") or []
    offered = [tool.get("function", {}).get("name") for tool in tools if isinstance(tool, dict)]
    return SUBMIT_CONTRACT_FUNCTION if SUBMIT_CONTRACT_FUNCTION in offered else None


def forced_function(body: Mapping[str, Any]) -> str | None:
    """The function name a request forces: ``{"type":"function","function":{"name":…}}``.

    ``"required"`` with a single tool forces that tool too.
    """
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping):
        function = choice.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return str(function["name"])
    tools = body.get("tools")
    if choice == "required" and isinstance(tools, list) and len(tools) == 1:
        name = tools[0].get("function", {}).get("name")
        return name if isinstance(name, str) else None
    return None
