"""What a scripted ``content`` answer must be, per stage: the model the agent parses it into.

A script entry's ``content`` is the structured answer of one stage: the planner's
:class:`~pytest_diageval.core.contract.contracts.Plan`, the executor's final
:class:`~pytest_diageval.core.contract.contracts.ExecutorContract`, the verifier's
:class:`~pytest_diageval.core.contract.contracts.VerifierOutput`, the grader's
:class:`~pytest_diageval.agents.grader.GraderOutput` (a ``rubric`` check). Checking it when
the scenario is loaded turns a typo (``verification: supported``, a plan without ``plan``)
into one message at its line, instead of a re-ask that silently consumes the next entry and
ends as a ``ScriptError`` about entry counts.

The check is the agents' own parse (the JSON the scripted model sends, validated by the same
model), plus one thing the agents tolerate from a chatty model but a script author never means:
unknown keys, which are typos. A scenario that sends an invalid answer on purpose says so with
``invalid: true`` (or uses ``raw`` / ``raw_arguments``, which are free text).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from pytest_diageval.agents.grader import GraderOutput
from pytest_diageval.agents.llm import Stage
from pytest_diageval.core.contract.contracts import ExecutorContract, Plan, VerifierOutput
from pytest_diageval.core.evidence.store import stable_json

__all__ = [
    "STAGE_CONTENT_MODELS",
    "ContentProblem",
    "content_problems",
    "nested_model",
]

STAGE_CONTENT_MODELS: Mapping[Stage, type[BaseModel]] = {
    "planner": Plan,
    "executor": ExecutorContract,
    "verifier": VerifierOutput,
    "grader": GraderOutput,
}
"""The model each stage's ``content`` is parsed into by its agent."""

Loc = tuple[int | str, ...]


@dataclass(frozen=True)
class ContentProblem:
    """One problem inside ``content``: where (a path below ``content``) and what."""

    loc: Loc
    message: str
    suggested: Loc | None = None
    """For an unknown key, where the key it was probably meant to be would be."""


def content_problems(stage: Stage, content: Mapping[str, Any]) -> list[ContentProblem]:
    """Every problem of ``content`` as the answer of ``stage`` ([] when the agent accepts it)."""
    model = STAGE_CONTENT_MODELS[stage]
    try:
        text = stable_json(content)
    except (TypeError, ValueError) as error:
        return [ContentProblem((), f"is not JSON data ({error}); quote dates and other values")]
    found = list(_unknown_keys(model, content, ()))
    # A misspelt key is reported once, as unknown with its suggestion, not also as missing.
    suggested = {problem.suggested for problem in found if problem.suggested}
    try:
        model.model_validate_json(text)
    except ValidationError as error:
        described = [_describe(details) for details in error.errors()]
        found.extend(_group_missing([p for p in described if p.loc not in suggested]))
    return sorted(dict.fromkeys(found), key=lambda problem: [str(p) for p in problem.loc])


# --------------------------------------------------------------------------- unknown keys


def nested_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (``list[Claim] | None`` -> ``Claim``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = nested_model(arg)
        if found is not None:
            return found
    return None


def _unknown_keys(model: type[BaseModel], data: Any, loc: Loc) -> Iterator[ContentProblem]:
    """Keys the model does not know, at any depth (the agents' models ignore them)."""
    if isinstance(data, list):
        for index, item in enumerate(data):
            yield from _unknown_keys(model, item, (*loc, index))
        return
    if not isinstance(data, Mapping):
        return  # a plain-text hypothesis or action, or a type error pydantic reports
    allowed = list(model.model_fields)
    for key, value in data.items():
        field = model.model_fields.get(str(key))
        if field is None:
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            message = f"unknown key{hint} ({model.__name__} keys: {', '.join(allowed)})"
            guess = (*loc, close[0]) if close else None
            yield ContentProblem((*loc, key), message, guess)
            continue
        nested = nested_model(field.annotation)
        if nested is not None:
            yield from _unknown_keys(nested, value, (*loc, key))


# --------------------------------------------------------------------------- messages


def _group_missing(problems: list[ContentProblem]) -> list[ContentProblem]:
    """Several required keys missing from one mapping become one problem at that mapping."""
    missing: dict[Loc, list[str]] = {}
    for problem in problems:
        if problem.message == _MISSING and problem.loc:
            missing.setdefault(problem.loc[:-1], []).append(str(problem.loc[-1]))
    grouped = [p for p in problems if p.message != _MISSING or len(missing[p.loc[:-1]]) == 1]
    for parent, keys in missing.items():
        if len(keys) > 1:
            grouped.append(ContentProblem(parent, f"required keys are missing: {', '.join(keys)}"))
    return grouped


_MISSING = "required key is missing"


def _describe(error: ErrorDetails) -> ContentProblem:
    loc = tuple(error["loc"])
    kind, value = error["type"], error.get("input")
    if kind == "missing":
        return ContentProblem(loc, _MISSING)
    if kind == "literal_error":
        expected = str((error.get("ctx") or {}).get("expected", ""))
        allowed = expected.replace(" or ", ", ").replace("'", "")
        return ContentProblem(loc, f"{_shown(value)} is not one of {allowed}")
    message = str(error["msg"]).removeprefix("Value error, ")
    return ContentProblem(loc, f"{message}; got {_shown(value)}")


def _shown(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
