"""What is wrong with a cassette's content, said before vcrpy builds anything from it.

vcrpy trusts the file: a missing key surfaces as ``KeyError: 'response'``, a wrong type as
"string indices must be integers", a recorded HTTP 500 or an answer without ``choices`` only
as a failed model call much later (reported as unplayed interactions or a stale request).
:func:`cassette_problem` checks the structure vcrpy needs (format version 1) and that every
recorded answer is a usable chat completion (its ``usage``, when given, whole non-negative
token counts), and returns one sentence naming the interaction
(``#3``, 1-based, with its stage and round when the request says them) and what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["CASSETTE_VERSION", "cassette_problem", "is_token_count"]

CASSETTE_VERSION = 1
"""vcrpy's cassette format version, the only one this plugin reads and writes."""

_REQUEST_KEYS = {"method": str, "uri": str, "headers": Mapping}
_RERECORD = "; re-record the cassette (--diageval-record=rewrite)"


def cassette_problem(data: Any) -> str | None:
    """The first problem of a loaded cassette document, or None when it can be replayed."""
    if not isinstance(data, Mapping):
        return (
            "the top level must be a mapping with `version` and `interactions`;"
            f" got {type(data).__name__}"
        )
    if "version" not in data:
        return f"no `version` key: not a vcrpy cassette (version {CASSETTE_VERSION})"
    if data["version"] != CASSETTE_VERSION:
        return (
            f"version {data['version']!r} is not supported: this plugin reads vcrpy cassettes"
            f" of version {CASSETTE_VERSION}{_RERECORD}"
        )
    interactions = data.get("interactions")
    if not isinstance(interactions, list):
        return f"`interactions` must be a list; got {_kind(interactions)}"
    for number, interaction in enumerate(interactions, 1):
        problem = _interaction_problem(interaction)
        if problem is not None:
            return f"interaction #{number}{_label(interaction)}: {problem}"
    return None


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def _label(interaction: Any) -> str:
    """`` (planner, round 1)`` from the request's diageval headers, when readable."""
    try:
        headers = interaction["request"]["headers"]
        stage = headers["x-diageval-stage"][0]
        round_ = headers["x-diageval-round"][0]
    except (KeyError, IndexError, TypeError):
        return ""
    return f" ({stage}, round {round_})"


def _interaction_problem(interaction: Any) -> str | None:
    if not isinstance(interaction, Mapping):
        return f"must be a mapping with `request` and `response`; got {_kind(interaction)}"
    for part in ("request", "response"):
        if not isinstance(interaction.get(part), Mapping):
            return f"`{part}` is missing or not a mapping"
    return _request_problem(interaction["request"]) or _response_problem(interaction["response"])


def _request_problem(request: Mapping[str, Any]) -> str | None:
    for key, kind in _REQUEST_KEYS.items():
        if not isinstance(request.get(key), kind):
            return f"request.{key} is missing or not a {_type_name(kind)}"
    if "body" not in request or not isinstance(request["body"], str | bytes | None):
        return "request.body is missing or not text"
    extra = sorted(set(request) - {*_REQUEST_KEYS, "body"})
    if extra:
        return f"unknown request key(s) {', '.join(map(str, extra))}"
    return None


def _type_name(kind: type) -> str:
    return "mapping" if kind is Mapping else "string"


def _response_problem(response: Mapping[str, Any]) -> str | None:
    status = response.get("status")
    if not isinstance(status, Mapping) or not isinstance(status.get("code"), int):
        return "response.status.code is missing or not a number"
    if not isinstance(response.get("headers"), Mapping):
        return "response.headers is missing or not a mapping"
    body = response.get("body")
    if not isinstance(body, Mapping) or not isinstance(body.get("string"), str | bytes):
        return "response.body.string is missing or not text"
    code = status["code"]
    if not 200 <= code < 300:
        reason = f" {status.get('message')}" if status.get("message") else ""
        return (
            f"the recorded answer is HTTP {code}{reason}, not a chat completion: a replay"
            f" would fail this request the same way{_RERECORD}"
        )
    return _completion_problem(body["string"])


def _completion_problem(text: str | bytes) -> str | None:
    try:
        completion = json.loads(text)
    except ValueError as error:
        return f"the recorded answer is not JSON ({error}){_RERECORD}"
    if not isinstance(completion, Mapping):
        return f"the recorded answer is not a JSON object{_RERECORD}"
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices:
        return f"the recorded answer has no choices (the model answered nothing){_RERECORD}"
    first = choices[0]
    if not isinstance(first, Mapping) or not isinstance(first.get("message"), Mapping):
        return f"choices[0] of the recorded answer has no message{_RERECORD}"
    return _usage_problem(completion.get("usage"))


_USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _usage_problem(usage: Any) -> str | None:
    """What is wrong with a recorded answer's ``usage`` (none at all is fine: nothing is
    counted): each count it gives must be a whole number, 0 or more, or a token budget would
    pass on minus a million tokens."""
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        return f"usage is {_kind(usage)}, not a mapping of token counts{_RERECORD}"
    for name in _USAGE_COUNTS:
        count = usage.get(name)
        if name in usage and not is_token_count(count):
            return (
                f"usage.{name} is {count!r}, not a count of tokens (a whole number, 0 or"
                f" more){_RERECORD}"
            )
    return None


def is_token_count(value: Any) -> bool:
    """Whether ``value`` is a count of tokens: an ``int`` (not a bool), 0 or more."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
