"""Keeping credentials out of cassettes: scrub before save, scan after.

Everything that decides what may reach disk sits here;
:mod:`pytest_diageval.harness.cassettes.cassette_session` re-exports the public constants and raises
``SecretLeakError`` from :func:`find_secret`'s answer. This module knows nothing of the cassette
session or its errors: the dependency runs from ``cassettes`` to here only.

* Request headers are stored from an allowlist (content type, accept and the
  ``X-Diageval-*`` headers that say which agent made the call).
* Response headers lose :data:`DROPPED_HEADERS` (``Set-Cookie``, ``OpenAI-Organization``,
  ``OpenAI-Project``, the auth headers) and the ones that change with every recording.
* Every given secret, whatever its length, is replaced by :data:`SCRUBBED` in every recorded
  value: the URI, header names and values, the status message and the bodies (in a JSON body,
  inside its strings, so the body stays JSON whatever characters the key holds; the API's own
  field names are its vocabulary, not data, and are left as they are).
* The same save hook pretty-prints JSON bodies (real Chinese characters), because the
  response's ``content-length`` has to follow the body it rewrites.
* :class:`ScrubbingTransport` does the same to every answer before the SDK reads it, so an
  endpoint that echoes the key (in a 401 body, or in every answer) hands the run only
  :data:`SCRUBBED`: no error message, result, report or terminal line can carry the key.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from vcr.request import Request

from pytest_diageval.agents.llm import ROUND_HEADER, STAGE_HEADER
from pytest_diageval.harness.cassettes.vcr_adapter import request_from_dict, request_to_dict

__all__ = [
    "DROPPED_HEADERS",
    "MIN_SECRET_LENGTH",
    "SCRUBBED",
    "FoundSecret",
    "ScrubbingTransport",
    "before_save_scrubber",
    "find_secret",
    "scrub_text",
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
"""Below this length the after-write scan looks for a given secret in recorded values only
(not in the file's own field names, where three letters of ``request`` are no leak)."""
SCRUBBED = "<scrubbed-secret>"

_SK_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}")
_BEARER = re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{16,}", re.IGNORECASE)


@dataclass(frozen=True)
class FoundSecret:
    """A key-like string in a cassette file; ``value`` is the raw secret, never print it."""

    line_number: int
    kind: str
    value: str


def scrub_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every given secret replaced by :data:`SCRUBBED`."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, SCRUBBED)
    return text


def _scrub_data(value: Any, secrets: Sequence[str]) -> Any:
    """A copy of parsed JSON (or header values) with the secrets scrubbed from every string
    value; mapping keys (a JSON body's field names) are left as they are."""
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, list | tuple):
        return [_scrub_data(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: _scrub_data(item, secrets) for key, item in value.items()}
    return value


def _scrubbed_body(body: Any, secrets: Sequence[str], *, indent: int | None) -> Any:
    """A body with the secrets scrubbed: JSON inside its strings (re-serialised, pretty with
    real characters when ``indent`` is given), other text or bytes as text; unchanged when
    it holds none of them and needs no pretty-printing."""
    if not isinstance(body, bytes | str) or not body:
        return body
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    else:
        if indent is not None or _holds_secret(body, secrets):
            text = json.dumps(_scrub_data(data, secrets), ensure_ascii=False, indent=indent)
            return text if isinstance(body, str) or indent is not None else text.encode()
        return body
    if isinstance(body, bytes):
        decoded = body.decode("utf-8", errors="surrogateescape")
        scrubbed = scrub_text(decoded, secrets)
        return body if scrubbed == decoded else scrubbed.encode("utf-8", "surrogateescape")
    return scrub_text(body, secrets)


def _holds_secret(body: str | bytes, secrets: Sequence[str]) -> bool:
    """Whether ``body`` holds a secret as it is, or as JSON escapes it."""
    raw = body if isinstance(body, bytes) else body.encode("utf-8", "surrogateescape")
    for secret in secrets:
        forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
        if secret and any(form.encode("utf-8", "surrogateescape") in raw for form in forms):
            return True
    return False


def _scrub_headers(headers: Any, secrets: Sequence[str], keep: Callable[[str], bool]) -> Any:
    return {
        scrub_text(name, secrets): _scrub_data(values, secrets)
        for name, values in headers.items()
        if keep(name.lower())
    }


def _scrub_request(request: Request, secrets: Sequence[str]) -> Request:
    data = request_to_dict(request)
    data["headers"] = _scrub_headers(
        data["headers"], secrets, lambda name: name in _KEPT_REQUEST_HEADERS
    )
    data["uri"] = scrub_text(data["uri"], secrets)
    data["body"] = _scrubbed_body(data["body"], secrets, indent=2)
    return request_from_dict(data)


def _scrub_response(response: dict[str, Any], secrets: Sequence[str]) -> dict[str, Any]:
    dropped = DROPPED_HEADERS | _NOISY_RESPONSE_HEADERS
    headers = _scrub_headers(response["headers"], secrets, lambda name: name not in dropped)
    body = response["body"]["string"]
    readable = _scrubbed_body(body, secrets, indent=2)
    if readable is not body:
        body = readable.encode("utf-8") if isinstance(readable, str) else readable
        headers = {
            name: [str(len(body))] if name.lower() == "content-length" else values
            for name, values in headers.items()
        }
    result: dict[str, Any] = {**response, "headers": headers, "body": {"string": body}}
    status = response.get("status")
    if isinstance(status, dict):
        result["status"] = _scrub_data(status, secrets)
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


_FIELD_NAMES = re.compile(r'^\s*(?:- )?[\w.-]+:(?=\s|$)|"[\w.-]*"\s*:')
"""A YAML line's own key (``  request:``) and a JSON body's field names (``"model":``)."""


def _find_in_line(line: str, secrets: Sequence[str]) -> tuple[str, str] | None:
    values = _FIELD_NAMES.sub(" ", line)
    for secret in secrets:
        if secret and secret in (line if len(secret) >= MIN_SECRET_LENGTH else values):
            return "a given secret (e.g. OPENAI_API_KEY)", secret
    for match in _SK_KEY.finditer(line):
        if any(char.isdigit() for char in match.group()):
            return "an sk-… API key", match.group()
    bearer = _BEARER.search(line)
    if bearer is not None:
        return "a Bearer token", bearer.group()
    return None


class ScrubbingTransport(httpx2.BaseTransport):
    """A transport that passes requests through and scrubs the given secrets from every
    answer (its headers and its body) before anything above it reads the answer."""

    def __init__(self, inner: httpx2.BaseTransport, secrets: Sequence[str]) -> None:
        self.inner = inner
        self.secrets = tuple(secret for secret in secrets if secret)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        if not self.secrets:
            return response
        content = response.read()
        body = _scrubbed_body(content, self.secrets, indent=None)
        pairs = response.headers.multi_items()
        headers = [(scrub_text(k, self.secrets), scrub_text(v, self.secrets)) for k, v in pairs]
        if body is content and headers == pairs:
            return response
        # The body is decoded already: its length and encoding headers no longer apply.
        kept = [(k, v) for k, v in headers if k.lower() not in _BODY_HEADERS]
        return httpx2.Response(
            response.status_code,
            headers=kept,
            content=body,
            request=request,
            extensions=response.extensions,
        )

    def close(self) -> None:
        self.inner.close()


_BODY_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})
