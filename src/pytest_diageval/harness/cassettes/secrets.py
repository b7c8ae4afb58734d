"""Keeping credentials out of cassettes: scrub before save, scan after.

Split from :mod:`pytest_diageval.harness.cassettes.session` (which re-exports the public constants
and raises ``SecretLeakError`` from :func:`find_secret`'s answer), so everything that decides
what may reach disk sits in one place. This module knows nothing of the cassette session or
its errors: the dependency runs from ``cassettes`` to here only.

* Request headers are stored from an allowlist (content type, accept and the
  ``X-Diageval-*`` headers that say which agent made the call).
* Response headers lose :data:`DROPPED_HEADERS` (``Set-Cookie``, ``OpenAI-Organization``,
  ``OpenAI-Project``, the auth headers) and the ones that change with every recording.
* Every given secret (of at least :data:`MIN_SECRET_LENGTH` characters; shorter values are
  no keys and replacing them would mangle the text) is replaced by :data:`SCRUBBED`.
* The same save hook pretty-prints JSON bodies (real Chinese characters), because the
  response's ``content-length`` has to follow the body it rewrites.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vcr.filters import replace_text
from vcr.request import Request

from pytest_diageval.agents.llm import ROUND_HEADER, STAGE_HEADER

__all__ = [
    "DROPPED_HEADERS",
    "MIN_SECRET_LENGTH",
    "SCRUBBED",
    "FoundSecret",
    "before_save_scrubber",
    "find_secret",
]

DROPPED_HEADERS = frozenset(
    {
        "authorization",
        "api-key",
        "x-api-key",
        "openai-organization",
        "openai-project",
        "cookie",
        "set-cookie",
    }
)
# They change with every recording and would make a re-recorded cassette's diff noisy.
_NOISY_RESPONSE_HEADERS = frozenset({"date", "x-request-id", "openai-processing-ms", "cf-ray"})
_KEPT_REQUEST_HEADERS = frozenset(
    {"content-type", "accept", STAGE_HEADER.lower(), ROUND_HEADER.lower()}
)
MIN_SECRET_LENGTH = 8
SCRUBBED = "<scrubbed-secret>"

_SK_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}")
_BEARER = re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{16,}", re.IGNORECASE)


@dataclass(frozen=True)
class FoundSecret:
    """A key-like string in a cassette file; ``value`` is the raw secret, never print it."""

    line_number: int
    kind: str
    value: str


def _readable_json(body: Any) -> Any:
    """Pretty JSON text with real characters, or the body unchanged when it is not JSON."""
    if not isinstance(body, bytes | str) or not body:
        return body
    try:
        data = json.loads(body)
    except ValueError:
        return body
    return json.dumps(data, ensure_ascii=False, indent=2)


def _scrub_request(request: Request, secrets: Sequence[str]) -> Request:
    data = request._to_dict()
    data["headers"] = {
        name: values
        for name, values in data["headers"].items()
        if name.lower() in _KEPT_REQUEST_HEADERS
    }
    data["body"] = _readable_json(data["body"])
    for secret in secrets:
        data = replace_text(data, secret, SCRUBBED)
    return Request._from_dict(data)


def _scrub_response(response: dict[str, Any], secrets: Sequence[str]) -> dict[str, Any]:
    headers = {
        name: values
        for name, values in response["headers"].items()
        if name.lower() not in DROPPED_HEADERS | _NOISY_RESPONSE_HEADERS
    }
    body = response["body"]["string"]
    readable = _readable_json(body)
    if readable is not body:
        body = readable.encode("utf-8")
        headers = {
            name: [str(len(body))] if name.lower() == "content-length" else values
            for name, values in headers.items()
        }
    result: dict[str, Any] = {**response, "headers": headers, "body": {"string": body}}
    for secret in secrets:
        result = replace_text(result, secret, SCRUBBED)
    return result


def before_save_scrubber(
    secrets: Sequence[str],
) -> Callable[[Request, Any], tuple[Request, Any]]:
    """vcrpy's ``before_save_interaction`` hook: scrubbed, readable copies of one interaction."""

    def scrub(request: Request, response: Any) -> tuple[Request, Any]:
        return _scrub_request(request, secrets), _scrub_response(response, secrets)

    return scrub


def find_secret(path: str | os.PathLike[str], secrets: Sequence[str] = ()) -> FoundSecret | None:
    """The first key-like string in the file, or ``None`` when it is clean.

    Looks for the given secrets, ``sk-…`` keys (with a digit, so words like ``disk-usage-…``
    do not count) and ``Bearer`` tokens.
    """
    text = Path(path).read_text("utf-8")
    for line_number, line in enumerate(text.splitlines(), start=1):
        found = _find_in_line(line, secrets)
        if found is not None:
            kind, value = found
            return FoundSecret(line_number, kind, value)
    return None


def _find_in_line(line: str, secrets: Sequence[str]) -> tuple[str, str] | None:
    for secret in secrets:
        if len(secret) >= MIN_SECRET_LENGTH and secret in line:
            return "a given secret (e.g. OPENAI_API_KEY)", secret
    for match in _SK_KEY.finditer(line):
        if any(char.isdigit() for char in match.group()):
            return "an sk-… API key", match.group()
    bearer = _BEARER.search(line)
    if bearer is not None:
        return "a Bearer token", bearer.group()
    return None
