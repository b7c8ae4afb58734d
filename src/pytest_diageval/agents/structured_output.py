"""Structured answers through instructor's TOOLS mode, prepared once per model and process.

instructor's own ``create`` (``instructor.from_openai``) wraps a plain model in a new class on
every call (so its schema cache never hits), re-checks the model graph for async validators
seven times per call and prepares the request anew. :class:`~pytest_diageval.agents.llm.LLM`
drives the same public handlers of instructor's TOOLS mode instead: the request, the strict
parse and the re-ask stay instructor's, built once per response model.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

from instructor.core.exceptions import AsyncValidationError, ResponseParsingError
from instructor.v2 import Mode, ModeHandlers, Provider, mode_registry
from instructor.v2.core.response_model import prepare_response_model
from pydantic import BaseModel, ValidationError

__all__ = [
    "REASKED_ERRORS",
    "converted_messages",
    "instructor_model",
    "structured_request",
    "tools_handlers",
]

ModelT = TypeVar("ModelT", bound=BaseModel)

REASKED_ERRORS = (
    ValidationError,
    json.JSONDecodeError,
    AsyncValidationError,
    ResponseParsingError,
)
"""What instructor's own retry loop answers with a re-ask (``_RETRYABLE_PARSE_ERRORS``)."""


def instructor_model(response_model: type[ModelT]) -> type[ModelT]:
    """``response_model`` as instructor prepares it, once per model and process.

    instructor wraps a plain model in a new ``ResponseSchema`` subclass on every call, so its
    own schema cache (keyed by that class) never hits: the JSON schema, the docstring parse and
    the ``tools`` list were built again for each request, and the classes piled up. A model
    that already is a ``ResponseSchema`` passes through unchanged, so handing instructor the
    prepared class builds the tool schema once; the request is the same, byte for byte.
    """
    return cast(type[ModelT], _prepared_model(response_model))


@functools.cache
def _prepared_model(response_model: type[BaseModel]) -> type[BaseModel]:
    prepared = prepare_response_model(response_model)
    assert prepared is not None
    return prepared


@functools.cache
def tools_handlers() -> ModeHandlers:
    return mode_registry.get_handlers(Provider.OPENAI, Mode.TOOLS)


@functools.cache
def structured_request(
    response_model: type[BaseModel],
) -> tuple[type[BaseModel], Mapping[str, Any]]:
    """The prepared model, and what TOOLS mode adds to each request for it (``tools``,
    ``tool_choice``): built once; never mutated (the SDK and the re-ask copy what they
    change)."""
    prepared, additions = tools_handlers().request_handler(
        response_model=_prepared_model(response_model), kwargs={}
    )
    additions.pop("messages")
    return prepared, additions


def converted_messages(
    handlers: ModeHandlers, messages: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    params = [dict(message) for message in messages]
    if handlers.message_converter is None:
        return params
    converted: list[dict[str, Any]] = handlers.message_converter(params, autodetect_images=False)
    return converted
