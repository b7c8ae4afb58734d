"""Every instructor name outside its documented client API (``instructor.from_openai``, the
exceptions of ``instructor.core``) that the agents use: the v2 mode registry's TOOLS-mode
handlers for OpenAI and the response-model preparation they expect.

instructor may change these in any release, so ``pyproject.toml`` bounds instructor to
:data:`CHECKED_VERSIONS`, the releases this module was read against, and
``tests/agents/test_instructor_adapter.py`` fails on any other release and names each name
below that is gone. No other module of the package imports ``instructor.v2``
(``tests/test_private_names.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from instructor.v2 import Mode, ModeHandlers, Provider, mode_registry
from instructor.v2.core.response_model import prepare_response_model
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

__all__ = [
    "CHECKED_VERSIONS",
    "RELIED_ON",
    "converted_messages",
    "parse_answer",
    "prepared_model",
    "reask_request",
    "tools_additions",
]

CHECKED_VERSIONS = ">=1.17,<1.18"
"""The instructor releases this module was checked against; ``pyproject.toml`` pins the same."""

RELIED_ON = (
    ("instructor.v2", "Mode"),
    ("instructor.v2", "Provider"),
    ("instructor.v2", "ModeHandlers"),
    ("instructor.v2", "mode_registry"),
    ("instructor.v2.core.registry.ModeHandlers", "request_handler"),
    ("instructor.v2.core.registry.ModeHandlers", "response_parser"),
    ("instructor.v2.core.registry.ModeHandlers", "reask_handler"),
    ("instructor.v2.core.registry.ModeHandlers", "message_converter"),
    ("instructor.v2.core.response_model", "prepare_response_model"),
    ("instructor.v2.core.retry", "_RETRYABLE_PARSE_ERRORS"),
)
"""``(module or class, name)`` of each instructor name used or mirrored here (the agents re-ask
on the errors of ``_RETRYABLE_PARSE_ERRORS``): what to re-read in a new instructor release
before widening :data:`CHECKED_VERSIONS`."""


@functools.cache
def prepared_model(response_model: type[BaseModel]) -> type[BaseModel]:
    """``response_model`` as instructor's TOOLS mode prepares it (a ``ResponseSchema``
    subclass, which instructor passes through unchanged), once per model and process."""
    prepared = prepare_response_model(response_model)
    assert prepared is not None
    return prepared


@functools.cache
def _tools_handlers() -> ModeHandlers:
    return mode_registry.get_handlers(Provider.OPENAI, Mode.TOOLS)


def tools_additions(prepared: type[BaseModel]) -> tuple[type[BaseModel], dict[str, Any]]:
    """The model TOOLS mode answers with, and what it adds to a request for ``prepared``
    (``tools``, ``tool_choice``; the messages left out)."""
    model, additions = _tools_handlers().request_handler(response_model=prepared, kwargs={})
    additions.pop("messages")
    return model, additions


def converted_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as TOOLS mode sends them (copies; the re-ask appends to the list)."""
    params = [dict(message) for message in messages]
    converter = _tools_handlers().message_converter
    if converter is None:
        return params
    converted: list[dict[str, Any]] = converter(params, autodetect_images=False)
    return converted


def parse_answer(completion: ChatCompletion, prepared: type[BaseModel]) -> Any:
    """TOOLS mode's strict parse of ``completion`` into ``prepared``; raises what
    instructor raises on an invalid answer."""
    return _tools_handlers().response_parser(
        response=completion,
        response_model=prepared,
        validation_context=None,
        strict=True,  # what instructor's create passes by default
        stream=False,
        is_async=False,
    )


def reask_request(
    request: dict[str, Any], completion: ChatCompletion, problem: Exception
) -> dict[str, Any]:
    """``request`` with TOOLS mode's re-ask for ``completion`` and its ``problem`` added."""
    reasked: dict[str, Any] = _tools_handlers().reask_handler(
        kwargs=request, response=completion, exception=problem
    )
    return reasked
