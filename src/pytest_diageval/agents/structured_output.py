"""Structured answers through instructor's TOOLS mode, prepared once per model and process.

instructor's own ``create`` (``instructor.from_openai``) wraps a plain model in a new class on
every call (so its schema cache never hits), re-checks the model graph for async validators
seven times per call and prepares the request anew. :class:`~pytest_diageval.agents.llm.LLM`
drives the same public handlers of instructor's TOOLS mode instead: the request, the strict
parse and the re-ask stay instructor's, built once per response model.

One decision is the project's own: an answer cut at ``max_tokens`` (``finish_reason``
``length``) is re-asked like an invalid one (:func:`reask_reason`). instructor raises
``IncompleteOutputException`` for it and never re-asks, but a cut answer is the commonest
invalid answer of a small model (5 of 16 recorded verifier calls), and 004 promises one re-ask
for invalid structured output.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from instructor.core import (
    AsyncValidationError,
    IncompleteOutputException,
    ResponseParsingError,
)
from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall
from pydantic import BaseModel, ValidationError

from pytest_diageval.agents.instructor_adapter import prepared_model, tools_additions

__all__ = [
    "CUT_OFF_REASON",
    "REASKED_ERRORS",
    "CutOffError",
    "instructor_model",
    "raw_text",
    "reask_reason",
    "reason_text",
    "structured_request",
    "with_parameters",
]

ModelT = TypeVar("ModelT", bound=BaseModel)

REASKED_ERRORS = (
    ValidationError,
    json.JSONDecodeError,
    AsyncValidationError,
    ResponseParsingError,
)
"""What instructor's own retry loop answers with a re-ask (``_RETRYABLE_PARSE_ERRORS``)."""

CUT_OFF_REASON = (
    "the answer was cut off at max_tokens (finish_reason length) before it was complete;"
    " call the function again with a complete, shorter answer: fewer facts, short texts"
)
"""Why a cut answer is re-asked: the re-ask's error text (the model reads it) and the audit's."""


class CutOffError(ValueError):
    """An answer cut at ``max_tokens``: invalid, and re-asked once like any invalid answer."""

    def __init__(self) -> None:
        super().__init__(CUT_OFF_REASON)


def reask_reason(exc: Exception) -> Exception | None:
    """The error a re-ask reports for ``exc``, or None when ``exc`` is not re-asked.

    instructor's own re-askable errors stand as they are; a cut answer becomes
    :class:`CutOffError` (instructor's own message names no fix); anything else (a refusal)
    is not re-asked: asking again would get the same refusal.
    """
    if isinstance(exc, IncompleteOutputException):
        return CutOffError()
    if isinstance(exc, REASKED_ERRORS):
        return exc
    return None


def with_parameters(additions: Mapping[str, Any], parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``additions`` (one forced function) with that function's parameters replaced.

    The name and description stay, so instructor's parse still finds the function and the
    response model still validates the answer; only what the model is offered narrows."""
    (tool,) = additions["tools"]
    function = {**tool["function"], "parameters": dict(parameters)}
    return {**additions, "tools": [{**tool, "function": function}]}


def instructor_model(response_model: type[ModelT]) -> type[ModelT]:
    """``response_model`` as instructor prepares it, once per model and process.

    instructor wraps a plain model in a new ``ResponseSchema`` subclass on every call, so its
    own schema cache (keyed by that class) never hits: the JSON schema, the docstring parse and
    the ``tools`` list were built again for each request, and the classes piled up. A model
    that already is a ``ResponseSchema`` passes through unchanged, so handing instructor the
    prepared class builds the tool schema once; the request is the same, byte for byte.
    """
    return cast(type[ModelT], prepared_model(response_model))


@functools.cache
def structured_request(
    response_model: type[BaseModel],
) -> tuple[type[BaseModel], Mapping[str, Any]]:
    """The prepared model, and what TOOLS mode adds to each request for it (``tools``,
    ``tool_choice``): built once; never mutated (the SDK and the re-ask copy what they
    change)."""
    return tools_additions(prepared_model(response_model))


def reason_text(reason: Exception) -> str:
    """An error as the audit words it (its type's name when it says nothing)."""
    return str(reason).strip() or type(reason).__name__


def raw_text(completion: ChatCompletion) -> str | None:
    """What the model actually said: the forced call's arguments, else the message text."""
    if not completion.choices:
        return None
    message = completion.choices[0].message
    for call in message.tool_calls or []:
        if isinstance(call, ChatCompletionMessageFunctionToolCall):
            return call.function.arguments
    return message.content
