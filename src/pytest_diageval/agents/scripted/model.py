"""The scripted model: an ``httpx2`` transport that answers chat completions from a script.

It sits under the real ``openai`` client (and instructor on top of it), so tests and what-if
scenarios run exactly the client code path of a live run. A script is a list of entries, one
per expected request, served in order:

* ``{stage, content: {...}}`` answers in the form the request asks for: as the arguments of
  the forced function when the request forces one (instructor's TOOLS mode), as a call of
  ``submit_evidence_contract`` when the request offers that function (the executor's contract),
  otherwise as the message content (``stable_json``), which also serves ``response_format``
  requests;
* ``{stage, tool_calls: [{name, arguments}, ...]}`` answers with an assistant message calling
  those tools. Ids are ``call_1``, ``call_2``, … numbered over the whole script in order, so a
  script author can predict them; a forced function call made for a ``content`` entry gets
  ``call_forced_<entry number>`` instead, so it never shifts those numbers;
* ``{stage, content: {...}, invalid: true}`` is the same answer, deliberately not valid for
  its stage (the loader checks every other ``content`` against the stage's model, see
  :mod:`pytest_diageval.agents.scripted.content`);
* ``{stage, raw: "<text>"}`` answers with exactly that text as content (malformed output);
* ``{stage, raw_arguments: "<text>"}`` (an extension) calls the function the request forces
  (or ``submit_evidence_contract`` when offered), with exactly that text as its ``arguments``
  string: the malformed function call a real model sends, which ``raw`` cannot express because
  it answers with message content. ``raw`` on the executor's last entry is a host that answered
  text instead of calling ``submit_evidence_contract``;
* ``finish_reason: length`` beside ``raw`` or ``raw_arguments`` (an extension) reports that
  answer as cut at ``max_tokens``, as a server does when the tokens ran out mid-answer.

The entry's ``stage`` must equal the request's ``X-Diageval-Stage`` header. A mismatch, a
request after the last entry, and (through :meth:`ScriptedTransport.assert_exhausted`) entries
left unused each raise :class:`ScriptError`. Entry numbers in messages are 1-based.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Self

import httpx2
import openai
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

from pytest_diageval.agents.llm import LLM, STAGE_HEADER, LLMConfig, Stage
from pytest_diageval.agents.scripted.forced_call import answering_function
from pytest_diageval.agents.scripted.token_estimate import estimated_tokens, prompt_tokens
from pytest_diageval.core.contract.contract_schema import SUBMIT_CONTRACT_FUNCTION
from pytest_diageval.core.evidence.store import stable_json

__all__ = [
    "SCRIPTED_BASE_URL",
    "RecordedRequest",
    "ScriptEntry",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptFormatError",
    "ScriptToolCall",
    "ScriptedTransport",
    "estimated_tokens",
    "parse_script",
    "scripted_llm",
]

SCRIPTED_BASE_URL = "http://scripted.invalid/v1"
_COMPLETIONS_SUFFIX = "/chat/completions"


class ScriptError(openai.OpenAIError):
    """The run and the script disagree (wrong stage, too many or too few requests).

    It derives from ``openai.OpenAIError`` because the SDK re-raises those untouched; any
    other exception from a transport is retried and then wrapped as a connection error,
    which would disguise a broken script as an unavailable model.
    """


class ScriptExhaustedError(ScriptError):
    """A request came after the script's last entry (``stage`` asked, ``request`` its number)."""

    def __init__(self, message: str, *, stage: str | None, request: int) -> None:
        super().__init__(message)
        self.stage, self.request = stage, request


class ScriptFormatError(ValueError):
    """A script that does not have the public scenario format."""


class ScriptToolCall(BaseModel):
    """One tool call the scripted model makes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="Tool name. 工具名。")
    arguments: dict[str, Any] | str = Field(
        default_factory=dict,
        description="Tool arguments: a mapping, or the exact arguments text a model sent (e.g."
        " malformed JSON, a call cut at max_tokens). 工具参数。",
    )


_ANSWER_FIELDS = ("content", "tool_calls", "raw", "raw_arguments")


class ScriptEntry(BaseModel):
    """One scripted answer: exactly one of ``content``, ``tool_calls``, ``raw``,
    ``raw_arguments``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Stage = Field(description="Agent that must make this request. 发起该请求的 agent。")
    content: dict[str, Any] | None = Field(
        None,
        description="Structured answer: forced function arguments or JSON message content;"
        " a planner Plan, an executor contract, a VerifierOutput or a GraderOutput, by stage."
        " 结构化回答。",
    )
    tool_calls: list[ScriptToolCall] | None = Field(
        None, min_length=1, description="Tool calls, ids call_1, call_2, … over the script."
    )
    raw: str | None = Field(None, description="Exact message text (e.g. malformed output).")
    raw_arguments: str | None = Field(
        None,
        description="Exact arguments text of the forced function call (e.g. malformed JSON)."
        " 强制函数调用的原始参数文本。",
    )
    invalid: StrictBool = Field(
        False,
        description="true: `content` is deliberately not a valid answer of its stage (it is"
        " then not checked at load). 故意无效的结构化回答。",
    )
    finish_reason: Literal["length"] | None = Field(
        None,
        description="length: the answer was cut at max_tokens (`raw` or `raw_arguments` is"
        " the partial text the server sent). 回答在 max_tokens 处被截断。",
    )

    @model_validator(mode="after")
    def _exactly_one_answer(self) -> Self:
        given = [name for name in _ANSWER_FIELDS if getattr(self, name) is not None]
        if len(given) != 1:
            found = ", ".join(given) if given else "none"
            raise ValueError(
                f"an entry needs exactly one of {', '.join(_ANSWER_FIELDS)} (found: {found})"
            )
        if self.finish_reason is not None and self.raw is None and self.raw_arguments is None:
            raise ValueError(
                "finish_reason: length marks a cut answer, whose partial text is `raw` or"
                " `raw_arguments`; a whole `content` or `tool_calls` was not cut"
            )
        if self.invalid and self.content is None:
            raise ValueError(
                "invalid: true marks a deliberately invalid `content`; raw, raw_arguments and"
                " tool_calls are never checked, so remove it"
            )
        return self


def parse_script(entries: Sequence[Any], *, source: str = "script") -> list[ScriptEntry]:
    """Validate raw entries; errors name the source, the 1-based entry and the field path."""
    parsed: list[ScriptEntry] = []
    for number, raw_entry in enumerate(entries, start=1):
        if isinstance(raw_entry, ScriptEntry):
            parsed.append(raw_entry)
            continue
        try:
            parsed.append(ScriptEntry.model_validate(raw_entry))
        except ValidationError as exc:
            problems = "; ".join(_describe_error(error) for error in exc.errors())
            raise ScriptFormatError(f"{source}: entry {number} (1-based): {problems}") from None
    return parsed


def _describe_error(error: Mapping[str, Any]) -> str:
    path = ".".join(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{path}: {message}" if path else message


@dataclass(frozen=True)
class RecordedRequest:
    """One request the scripted model saw, as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    content: bytes

    @property
    def stage(self) -> str | None:
        return self.headers.get(STAGE_HEADER.lower())

    @functools.cached_property
    def body(self) -> Any:
        """The parsed JSON body (None when it is none); parsed when first asked for, so a
        run keeps its requests' text, not thousands of parsed objects per request."""
        return _parsed(self.content)


class ScriptedTransport(httpx2.BaseTransport):
    """Answers each ``POST …/chat/completions`` from the next script entry."""

    def __init__(self, entries: Sequence[ScriptEntry | Mapping[str, Any]]) -> None:
        self.entries = parse_script(entries)
        self.requests: list[RecordedRequest] = []
        self.errors: list[ScriptError] = []
        self._tool_call_ids = _number_tool_calls(self.entries)
        self._served = 0

    @property
    def served(self) -> int:
        """How many entries have been answered so far."""
        return self._served

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        recorded = _record(request)
        self.requests.append(recorded)
        body = _parsed(recorded.content)  # this answer's own copy, released after it
        try:
            index = self._claim_entry(recorded, body)
            payload = self._answer(index, recorded, body)
        except ScriptError as exc:
            self.errors.append(exc)
            raise
        return httpx2.Response(
            200,
            headers={"content-type": "application/json"},
            content=stable_json(payload).encode("utf-8"),
        )

    def assert_exhausted(self) -> None:
        """End-of-run check: re-raise the first script error, then complain about leftovers.

        Re-raising matters because a caller that turns every failure into a recorded session
        error would otherwise swallow a broken script.
        """
        if self.errors:
            raise self.errors[0]
        unused = self.entries[self._served :]
        if unused:
            listed = ", ".join(
                f"entry {self._served + offset} (stage {entry.stage!r})"
                for offset, entry in enumerate(unused, start=1)
            )
            raise ScriptError(
                f"scripted model: {len(unused)} script entr{'y' if len(unused) == 1 else 'ies'}"
                f" left unused (1-based): {listed}; expected a request from stage "
                f"{unused[0].stage!r} next, but the run made no further request"
            )

    def _claim_entry(self, recorded: RecordedRequest, body: Any) -> int:
        if recorded.method != "POST" or not recorded.path.endswith(_COMPLETIONS_SUFFIX):
            raise ScriptError(
                f"scripted model only answers POST …{_COMPLETIONS_SUFFIX}; "
                f"got {recorded.method} {recorded.path}"
            )
        if not isinstance(body, dict):
            raise ScriptError("scripted model got a request whose body is not a JSON object")
        number = self._served + 1
        if self._served >= len(self.entries):
            raise ScriptExhaustedError(
                f"scripted model: request {len(self.requests)} from stage {recorded.stage!r} "
                f"came after the last script entry (the script has {len(self.entries)} "
                f"entries; entry {number} (1-based) does not exist)",
                stage=recorded.stage,
                request=len(self.requests),
            )
        expected = self.entries[self._served].stage
        if recorded.stage != expected:
            actual = repr(recorded.stage) if recorded.stage else f"none (no {STAGE_HEADER})"
            raise ScriptError(
                f"scripted model: entry {number} (1-based) expects stage {expected!r}, "
                f"but the request came from stage {actual}"
            )
        self._served = number
        return number - 1

    def _answer(
        self, index: int, recorded: RecordedRequest, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        entry = self.entries[index]
        forced = answering_function(body)
        if entry.raw_arguments is not None:
            if forced is None:
                raise ScriptError(
                    f"scripted model: entry {index + 1} (1-based) has raw_arguments, but the "
                    f"request from stage {entry.stage!r} forces no function to call (nor"
                    f" offers {SUBMIT_CONTRACT_FUNCTION})"
                )
            call = _tool_call(f"call_forced_{index + 1}", forced, entry.raw_arguments)
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish_reason = "stop"
        elif entry.tool_calls is not None:
            calls = [
                _tool_call(call_id, call.name, call.arguments)
                for call_id, call in zip(self._tool_call_ids[index], entry.tool_calls, strict=True)
            ]
            message = {"role": "assistant", "content": None, "tool_calls": calls}
            finish_reason = "tool_calls"
        elif entry.content is not None and forced is not None:
            call = _tool_call(f"call_forced_{index + 1}", forced, entry.content)
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            # What OpenAI itself reports when tool_choice names the function.
            finish_reason = "stop"
        else:
            text = entry.raw if entry.raw is not None else stable_json(entry.content)
            message = {"role": "assistant", "content": text}
            finish_reason = "stop"
        if entry.finish_reason is not None:
            finish_reason = entry.finish_reason
        prompt = prompt_tokens(recorded.content.decode("utf-8"), body)
        return _completion(index + 1, body, message, finish_reason, prompt)


def scripted_llm(
    entries: Sequence[ScriptEntry | Mapping[str, Any]],
    config: LLMConfig | None = None,
    *,
    wrap: Callable[[httpx2.BaseTransport], httpx2.BaseTransport] | None = None,
) -> tuple[LLM, ScriptedTransport]:
    """An :class:`LLM` whose requests are answered by a fresh :class:`ScriptedTransport`
    (seen through ``wrap``, say a usage meter, when given)."""
    transport = ScriptedTransport(entries)
    config = config or LLMConfig(
        base_url=SCRIPTED_BASE_URL, model="scripted-model", api_key="scripted", max_retries=0
    )
    outer = wrap(transport) if wrap is not None else transport
    return LLM(config, transport=outer), transport


def _number_tool_calls(entries: Sequence[ScriptEntry]) -> list[list[str]]:
    """``call_1``, ``call_2``, … over every scripted tool call, in script order."""
    ids: list[list[str]] = []
    counter = 0
    for entry in entries:
        entry_ids = []
        for _ in entry.tool_calls or []:
            counter += 1
            entry_ids.append(f"call_{counter}")
        ids.append(entry_ids)
    return ids


def _record(request: httpx2.Request) -> RecordedRequest:
    return RecordedRequest(
        method=request.method,
        path=request.url.path,
        headers={key.lower(): value for key, value in request.headers.items()},
        content=request.read(),
    )


def _parsed(content: bytes) -> Any:
    try:
        return json.loads(content) if content else None
    except ValueError:
        return None  # _claim_entry reports it, after the request has been recorded


def _tool_call(call_id: str, name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
    """A function tool call; a string is sent as the arguments text exactly as given."""
    text = arguments if isinstance(arguments, str) else stable_json(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def _completion(
    number: int,
    body: Mapping[str, Any],
    message: dict[str, Any],
    finish_reason: str,
    prompt_tokens: int,
) -> dict[str, Any]:
    """A valid ``chat.completion`` object; nothing in it depends on time or chance."""
    completion_tokens = estimated_tokens(message)
    return {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": str(body.get("model", "")),
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
