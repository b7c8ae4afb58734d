"""instructor's v2 internals stay in ``agents/instructor_adapter.py``, checked against the
instructor releases ``pyproject.toml`` allows: a new instructor release fails here first,
naming what to re-read, instead of a structured answer parsed or re-asked differently."""

from __future__ import annotations

import importlib

from openai.types.chat import ChatCompletion
from packaging.specifiers import SpecifierSet
from pydantic import BaseModel
from tests.support.adapters import (
    bounded_requirement,
    missing_names,
    unlisted_private_names,
    version_problem,
)

from pytest_diageval.agents import instructor_adapter
from pytest_diageval.agents.structured_output import REASKED_ERRORS


class Answer(BaseModel):
    """An answer."""

    value: int


def test_the_installed_instructor_is_one_the_adapter_was_checked_against() -> None:
    problem = version_problem(instructor_adapter, "instructor")
    assert problem is None, problem


def test_pyproject_bounds_instructor_to_the_checked_releases() -> None:
    checked = SpecifierSet(instructor_adapter.CHECKED_VERSIONS)
    assert bounded_requirement("instructor").specifier == checked
    assert not checked.contains("1.18.0")


def test_every_name_the_adapter_relies_on_still_exists() -> None:
    assert missing_names(instructor_adapter) == [], (
        "instructor no longer has these names agents/instructor_adapter.py uses; adapt it"
    )


def test_the_adapter_lists_every_private_name_it_uses() -> None:
    assert unlisted_private_names(instructor_adapter) == set()


def test_the_agents_re_ask_on_what_instructor_re_asks_on() -> None:
    retry = importlib.import_module("instructor.v2.core.retry")
    assert set(REASKED_ERRORS) == set(retry._RETRYABLE_PARSE_ERRORS)


def _completion(arguments: str) -> ChatCompletion:
    call = {"id": "c1", "type": "function", "function": {"name": "Answer", "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": message}
    return ChatCompletion.model_validate(
        {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
    )


def test_tools_mode_forces_the_function_parses_it_and_re_asks() -> None:
    prepared = instructor_adapter.prepared_model(Answer)
    assert instructor_adapter.prepared_model(Answer) is prepared  # once per model
    model, additions = instructor_adapter.tools_additions(prepared)
    assert model is prepared
    assert "messages" not in additions
    assert additions["tool_choice"] == {"type": "function", "function": {"name": "Answer"}}
    assert [tool["function"]["name"] for tool in additions["tools"]] == ["Answer"]

    parsed = instructor_adapter.parse_answer(_completion('{"value": 3}'), prepared)
    assert parsed.value == 3

    messages = instructor_adapter.converted_messages([{"role": "user", "content": "hi"}])
    assert messages == [{"role": "user", "content": "hi"}]
    request = {"model": "m", "messages": messages, **additions}
    bad = _completion('{"value": "x"}')
    reasked = instructor_adapter.reask_request(request, bad, ValueError("value: not an int"))
    assert reasked["messages"][:1] == [{"role": "user", "content": "hi"}]
    assert len(reasked["messages"]) > 1
    assert "value: not an int" in str(reasked["messages"][1:])
