"""When two requests are the same, and what a stale-cassette error shows when they are not.

:mod:`pytest_diageval.harness.cassettes.cassette_session` re-exports the public names. Requests
match on method, path and the canonical body (:func:`canonical_body`; the vcrpy matcher is
:func:`body_matcher`). A replay miss is reported with a short unified diff of the recorded and
the current request: one message per block, JSON one field per line, prose split into sentences
and lines cut into chunks, Chinese kept readable, so the diff points at the sentence that
changed rather than at one huge JSON line.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import json
import re
from typing import Any

from vcr.request import Request

from pytest_diageval.agents.llm import ROUND_HEADER, STAGE_HEADER
from pytest_diageval.core.evidence.store import stable_json

__all__ = [
    "CANONICAL_BODY_KEYS",
    "UNMATCHED_BODY_KEYS",
    "body_matcher",
    "canonical_body",
    "describe_request",
    "request_diff",
]

_MAX_DIFF_LINES = 40
_CHUNK = 100  # rendered lines are cut into chunks this long, so a diff shows where they differ
_SENTENCE_END = re.compile(r"(?<=[。！？；])")

CANONICAL_BODY_KEYS = (
    "model",
    "messages",
    "tools",
    "tool_choice",
    "response_format",
    "temperature",
)
"""The keys the client itself sends that must match; every other key of a body (an extra
body's ``seed``, ``reasoning_effort``, a server's own sampling parameter) must match as well,
except :data:`UNMATCHED_BODY_KEYS`."""

UNMATCHED_BODY_KEYS = frozenset(
    {
        # Bounds on the answer's length, not inputs to it: a replay sends the recorded bound
        # (the cassette's request options) anyway, and a change of a stage's default bound
        # must not turn every cassette recorded before it stale.
        "max_tokens",
        "max_completion_tokens",
        # Bookkeeping that no answer depends on.
        "user",
        "metadata",
        "store",
        "service_tier",
        "prompt_cache_key",
        "safety_identifier",
        "stream_options",
    }
)


@functools.lru_cache(maxsize=64)
def canonical_body(body: bytes | None) -> str:
    """The part of a request body that must match; cached because it is asked for repeatedly.

    vcrpy bodies are immutable ``bytes`` (their hash is cached too), so the cache key is cheap.
    vcrpy matches each request against every recorded one of its cassette (tens of bodies);
    64 entries hold a cassette's several times over, where more would only keep other
    cassettes' bodies (tens of KB each, key and value) alive for a rare repeat.
    """
    if not body:
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        return "raw:" + body.decode("utf-8", "replace")
    if not isinstance(data, dict):
        return stable_json(data)
    picked = {key: value for key, value in data.items() if key not in UNMATCHED_BODY_KEYS}
    if isinstance(picked.get("temperature"), int | float):
        picked["temperature"] = float(picked["temperature"])  # 0 and 0.0 are the same request
    return stable_json(picked)


@functools.lru_cache(maxsize=64)
def sent_form(body: bytes | None) -> bytes | None:
    """A recorded JSON body as the SDK sends it: compact, keys in their order, real characters
    (cassettes keep bodies pretty-printed for review); None when the body is not JSON."""
    if not body:
        return None
    try:
        data = json.loads(body)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except ValueError:
        return None


def body_matcher(current: Request, recorded: Request) -> bool:
    """vcrpy matcher; a plain ``False`` on a miss (stock matchers build a diff per candidate).

    A request sent exactly as recorded (every request of an unchanged replay) is matched by
    its bytes, without parsing it: equal bytes to the recorded body's :func:`sent_form` are
    the same JSON, so the same canonical body. Any other body is canonicalised and compared.
    """
    if current.body is not None and current.body == sent_form(recorded.body):
        return True
    return canonical_body(current.body) == canonical_body(recorded.body)


def describe_request(request: Request | None) -> str:
    """``stage executor, round 2``: which agent made a call, from its recorded headers."""
    if request is None:
        return "no request"
    stage = request.headers.get(STAGE_HEADER) or f"unknown (no {STAGE_HEADER} header)"
    round_ = request.headers.get(ROUND_HEADER) or "?"
    return f"stage {stage}, round {round_}"


def request_diff(recorded: Request, current: Request) -> str:
    """A short unified diff of two requests, one message per block, Chinese kept readable."""
    before, after = _render_request(recorded), _render_request(current)
    diff = list(difflib.unified_diff(before, after, "recorded", "this run", n=2, lineterm=""))
    if not diff:
        return "(no visible difference in method, path, parameters or messages)"
    if len(diff) > _MAX_DIFF_LINES:
        diff = [*diff[:_MAX_DIFF_LINES], f"… ({len(diff) - _MAX_DIFF_LINES} more diff lines)"]
    return "\n".join(diff)


def _render_request(request: Request) -> list[str]:
    lines = [f"{request.method} {request.path}"]
    try:
        body = json.loads(request.body or b"null")
    except ValueError:
        return lines + _text_lines(request.body.decode("utf-8", "replace"))
    if not isinstance(body, dict):
        return lines + _text_lines(stable_json(body))
    for key in _parameter_keys(body):
        lines.extend(_chunks(f"{key}: {stable_json(body[key])}"))
    for tool in body.get("tools") or []:
        lines.append(f"── tool {tool.get('function', {}).get('name', '?')}")
        lines.extend(_text_lines(stable_json(tool)))
    for number, message in enumerate(body.get("messages") or [], start=1):
        lines.extend(_render_message(number, message))
    return lines


def _parameter_keys(body: dict[str, Any]) -> list[str]:
    """The body's keys shown as ``key: value`` lines: the client's own first, then
    ``max_tokens`` and any extra body key (``seed``, ``reasoning_effort``…) in body order."""
    first = ["model", "temperature", "max_tokens", "tool_choice", "response_format"]
    rest = [key for key in body if key not in first and key not in ("messages", "tools")]
    return [key for key in first if key in body] + rest


def _render_message(number: int, message: dict[str, Any]) -> list[str]:
    call_id = f" ({message['tool_call_id']})" if message.get("tool_call_id") else ""
    lines = [f"── message {number}: {message.get('role', '?')}{call_id}"]
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            lines.extend(_text_lines(part.get("text") or stable_json(part)))
    elif content is not None:
        lines.extend(_text_lines(str(content)))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        lines.extend(_chunks(f"→ {function.get('name')}({function.get('arguments')})"))
    return lines


def _text_lines(text: str) -> list[str]:
    """JSON pretty-printed (one field per line); prose split into lines and sentences."""
    if text[:1] in "{[":
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), ensure_ascii=False, indent=1)
    lines: list[str] = []
    for line in text.splitlines():
        for sentence in _SENTENCE_END.split(line):
            lines.extend(_chunks(sentence))
    return lines


def _chunks(line: str) -> list[str]:
    return [line[start : start + _CHUNK] for start in range(0, len(line), _CHUNK)] or [""]
