"""The one door to the model: an ``openai`` client (on ``httpx2``) plus ``instructor``.

Every agent talks to the model through :class:`LLM`:

* :meth:`LLM.chat` is a plain chat completion (the executor's function-calling loop);
* :meth:`LLM.structured` is a pydantic answer through instructor's TOOLS mode (planner,
  verifier, and the grader of a ``rubric`` check). ``structured_max_retries`` re-asks on
  invalid output, an answer cut at ``max_tokens`` included, so with the default of 1 a
  malformed or cut answer costs exactly two HTTP calls and a good one exactly one.

Both send through :func:`post_completion`: exactly what ``client.chat.completions.create``
sends, without its params walk (most of the SDK's time on a long conversation).

Every request carries ``X-Diageval-Stage`` and ``X-Diageval-Round`` so that a recording says
which agent made each call. The request *body* is deterministic for the same inputs: the SDK
serialises it with fixed separators and the key order of the dicts we pass, and tool results
go through :func:`tool_result_message` (``stable_json``). Headers that the SDK adds and that
differ between machines or retries (``x-stainless-os``/``-arch``/``-runtime-version``,
``x-stainless-retry-count`` on SDK retries, ``user-agent`` per SDK version) are not part of
that promise; see ``DETERMINISM NOTES`` below.

Failures come out as two project exceptions, never as SDK or instructor types:
:class:`LLMUnavailable` (nothing usable came back: timeouts, connection errors, HTTP errors
after the SDK's own retries, empty ``choices``) and :class:`StructuredOutputError` (the model
answered, but still not valid after the re-ask; the last raw text and the attempt count are
kept for the audit).
"""

# DETERMINISM NOTES (openai 3.3 / instructor 1.17, checked against the installed sources):
# - The body is ``json.dumps(ensure_ascii=False, separators=(",", ":"))`` of our params,
#   top-level keys in ``create``'s fixed order (see :func:`post_completion`).
# - No idempotency key is sent by the OpenAI client (``_idempotency_header`` is None).
# - ``x-stainless-retry-count`` is "0" unless the SDK itself retries (5xx, 408/409/429,
#   timeouts); SDK retries also sleep with random jitter, so live runs are not replayable
#   call-for-call when the server fails.
# - ``x-stainless-read-timeout`` mirrors ``LLMConfig.timeout``.
# - The environment leaks in: OPENAI_ORG_ID / OPENAI_PROJECT_ID add OpenAI-Organization /
#   OpenAI-Project headers, OPENAI_CUSTOM_HEADERS adds arbitrary headers.
# - instructor's re-ask message embeds pydantic's error text, which names the pydantic
#   version in a URL (errors.pydantic.dev/2.x/...): stable per environment, not across
#   pydantic upgrades.

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar, cast

import httpx2
import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.agents.instructor_adapter import (
    converted_messages,
    parse_answer,
    reask_request,
)
from pytest_diageval.agents.request_options import (
    FROM_SCHEMA,
    STAGE_MAX_TOKENS,
    STAGES,
    RequestOptions,
    Stage,
    StageOptions,
)
from pytest_diageval.agents.structured_output import (
    CUT_OFF_REASON,
    instructor_model,
    raw_text,
    reask_reason,
    reason_text,
    structured_request,
    with_parameters,
)
from pytest_diageval.core.contract.text_bounds import functions_char_bound, texts_at_bound
from pytest_diageval.core.evidence.store import stable_json

__all__ = [
    "CUT_OFF_REASON",
    "LLM",
    "ROUND_HEADER",
    "STAGES",
    "STAGE_HEADER",
    "STAGE_MAX_TOKENS",
    "LLMConfig",
    "LLMUnavailable",
    "Stage",
    "StructuredOutputError",
    "assistant_message",
    "instructor_model",
    "make_openai_client",
    "stage_headers",
    "tool_result_message",
]

STAGE_HEADER = "X-Diageval-Stage"
ROUND_HEADER = "X-Diageval-Round"

ModelT = TypeVar("ModelT", bound=BaseModel)


class LLMConfig(BaseModel):
    """Where the model lives and how patient we are with it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field(min_length=1)
    model: str = Field(min_length=1)
    # Required on purpose: an empty key would make the SDK read OPENAI_API_KEY behind our back.
    api_key: str = Field(min_length=1, repr=False)
    temperature: float = Field(default=0.0, ge=0.0)
    """The temperature of every stage the request options leave at the default."""
    request_options: RequestOptions = Field(default_factory=RequestOptions)
    """Per stage: temperature, max_tokens, extra body (``--diageval-temperature`` …)."""
    contract_points: bool = False
    """Offer points in the executor's contract (``--diageval-points offer``, docs/points.md):
    its schema and prompt ask each claim to point at its items' fields."""
    timeout: float = Field(default=60.0, gt=0.0)
    max_retries: int = Field(default=2, ge=0, description="SDK retries on 5xx/timeouts")
    structured_max_retries: int = Field(
        default=1, ge=0, description="instructor re-asks on invalid structured output"
    )


class LLMUnavailable(RuntimeError):
    """The model answered nothing usable (timeout, connection, HTTP error, empty choices)."""

    def __init__(self, detail: str, *, stage: str, round: int) -> None:
        super().__init__(f"LLM unavailable ({stage}, round {round}): {detail}")
        self.detail = detail
        self.stage = stage
        self.round = round


class StructuredOutputError(ValueError):
    """The model answered, but its structured output stayed invalid after the re-ask."""

    def __init__(
        self,
        detail: str,
        *,
        stage: str,
        round: int,
        response_model: str,
        attempts: int,
        last_raw: str | None,
    ) -> None:
        super().__init__(
            f"{response_model} output of {stage} (round {round}) still invalid after "
            f"{attempts} attempt(s): {detail}"
        )
        self.detail = detail
        self.stage = stage
        self.round = round
        self.response_model = response_model
        self.attempts = attempts
        self.last_raw = last_raw


def stage_headers(stage: str, round: int) -> dict[str, str]:
    """The headers that tell a recording which agent, in which round, made a call."""
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {', '.join(STAGES)}; got {stage!r}")
    if round < 1:
        raise ValueError(f"round must be 1 or more; got {round}")
    return {STAGE_HEADER: stage, ROUND_HEADER: str(round)}


def make_openai_client(
    config: LLMConfig, transport: httpx2.BaseTransport | None = None
) -> openai.OpenAI:
    """An ``openai.OpenAI`` on an explicit ``httpx2`` client, so a transport can be plugged in.

    ``DefaultHttpxClient`` is a plain ``httpx2.Client`` with the SDK's own defaults (limits,
    redirects); with ``transport=None`` it uses the normal network transport.
    """
    http_client = openai.DefaultHttpxClient(transport=transport, timeout=config.timeout)
    return openai.OpenAI(
        api_key=config.api_key,
        base_url=config.base_url,
        timeout=config.timeout,
        max_retries=config.max_retries,
        http_client=http_client,
    )


def tool_result_message(tool_call_id: str, payload: Any) -> dict[str, Any]:
    """A ``role: tool`` message whose content is the payload as ``stable_json``."""
    return {"role": "tool", "tool_call_id": tool_call_id, "content": stable_json(payload)}


def assistant_message(message: ChatCompletionMessage) -> dict[str, Any]:
    """The assistant turn to send back in the next request, with only the fields that matter.

    ``message.model_dump()`` would add null fields (refusal, audio, annotations…) that some
    OpenAI-compatible servers reject; tool-call arguments are passed back verbatim, exactly as
    the model wrote them.
    """
    result: dict[str, Any] = {"role": "assistant", "content": message.content}
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments},
        }
        for call in message.tool_calls or []
        if isinstance(call, ChatCompletionMessageFunctionToolCall)
    ]
    if calls:
        result["tool_calls"] = calls
    return result


class LLM:
    """The facade the agents call; owns one ``openai`` client (instructor works per call)."""

    def __init__(self, config: LLMConfig, *, transport: httpx2.BaseTransport | None = None):
        self.config = config
        self.client = make_openai_client(config, transport)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        stage: Stage,
        round: int,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
    ) -> ChatCompletion:
        """One plain chat completion; raises :class:`LLMUnavailable` when nothing came back."""
        headers = stage_headers(stage, round)
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(message) for message in messages],
            **self._stage_params(options := self._options(stage)),
            "extra_headers": headers,
        }
        if tools is not None:
            request["tools"] = [dict(tool) for tool in tools]
        if tool_choice is not None:
            request["tool_choice"] = tool_choice
        _bound_tokens(request, options, stage)
        return self._create(request, stage=stage, round=round)

    def structured(
        self,
        response_model: type[ModelT],
        messages: Sequence[Mapping[str, Any]],
        *,
        stage: Stage,
        round: int,
        parameters: Mapping[str, Any] | None = None,
        reasks: list[str] | None = None,
        at_bound: list[str] | None = None,
    ) -> ModelT:
        """A validated ``response_model`` through instructor (TOOLS mode, forced function).

        Costs ``1 + structured_max_retries`` calls at most; the re-ask is instructor's own
        (it appends the invalid answer and the error to the conversation). An answer cut at
        ``max_tokens`` (``finish_reason`` ``length``) is re-asked like an invalid one, with
        :data:`CUT_OFF_REASON`; instructor itself never re-asks it.

        ``parameters`` replaces the forced function's JSON Schema (a per-session narrowing of
        ``response_model``'s, e.g. the verifier's); the answer is still parsed by
        ``response_model``. The reason of each re-ask is appended to ``reasks`` (the audit's),
        and the free texts of the valid answer that reached their bound to ``at_bound``
        (:func:`~pytest_diageval.core.contract.text_bounds.texts_at_bound`).
        """
        headers = stage_headers(stage, round)
        prepared, additions = structured_request(response_model)
        request: dict[str, Any] = {
            "model": self.config.model,
            **self._stage_params(options := self._options(stage)),
            "extra_headers": headers,
            **(additions if parameters is None else with_parameters(additions, parameters)),
            # A list of our own: instructor's re-ask appends to it.
            "messages": converted_messages(messages),
        }
        _bound_tokens(request, options, stage)
        attempts = 1 + self.config.structured_max_retries
        for attempt in range(1, attempts + 1):
            completion = self._create(request, stage=stage, round=round)
            try:
                parsed = parse_answer(completion, prepared)
            except Exception as exc:
                problem = reask_reason(exc)
                if problem is None or attempt == attempts:  # a refusal is never re-asked
                    reason = problem or exc
                    raise self._invalid(
                        reason, completion, response_model, attempt, stage=stage, round=round
                    ) from exc
                if reasks is not None:
                    reasks.append(f"attempt {attempt}: {reason_text(problem)}")
                request = reask_request(request, completion, problem)
            else:
                if at_bound is not None:
                    at_bound.extend(_texts_at_bound(parsed, request))
                return cast(ModelT, parsed)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _options(self, stage: Stage) -> StageOptions:
        return self.config.request_options.stage(stage, self.config.temperature)

    @staticmethod
    def _stage_params(options: StageOptions) -> dict[str, Any]:
        """The stage's ``temperature`` and ``max_tokens`` (unless left out) and its extra body."""
        params = options.params()
        if options.extra_body:
            params["extra_body"] = dict(options.extra_body)
        return params

    def _create(self, request: Mapping[str, Any], *, stage: Stage, round: int) -> ChatCompletion:
        """One completion for a structured answer; nothing usable is :class:`LLMUnavailable`.

        Other client errors (the scripted model's ``ScriptError``) surface as themselves.
        """
        try:
            completion = post_completion(self.client, request)
        except openai.APIError as exc:
            raise LLMUnavailable(self._describe(exc), stage=stage, round=round) from exc
        if not completion.choices:
            raise LLMUnavailable("the response has no choices", stage=stage, round=round)
        return completion

    @staticmethod
    def _invalid(
        reason: Exception,
        last: ChatCompletion,
        model: type[BaseModel],
        attempts: int,
        *,
        stage: Stage,
        round: int,
    ) -> StructuredOutputError:
        """The answer stayed invalid: the reason, and what the model last said, for the audit."""
        return StructuredOutputError(
            reason_text(reason),
            stage=stage,
            round=round,
            response_model=model.__name__,
            attempts=attempts,
            last_raw=raw_text(last),
        )

    def _describe(self, exc: openai.APIError) -> str:
        where = f"{self.config.base_url} (model {self.config.model})"
        if isinstance(exc, openai.APITimeoutError):
            what = f"timed out after {self.config.timeout}s"
        elif isinstance(exc, openai.APIConnectionError):
            what = f"connection failed: {exc.__cause__ or exc}"
        elif isinstance(exc, openai.APIStatusError):
            what = f"HTTP {exc.status_code}: {exc.message}"
        else:
            what = str(exc)
        return f"{where} {what} (SDK retries: {self.config.max_retries})"


# The keys of a chat completion body, in the order ``chat.completions.create`` writes them;
# with ``extra_headers`` and ``extra_body``, what a request may hold (never ``stream``: the
# answer is parsed whole).
_BODY_KEYS = tuple(CompletionCreateParamsNonStreaming.__annotations__)
_REQUEST_KEYS = frozenset(_BODY_KEYS) - {"stream"} | {"extra_headers", "extra_body"}


def _bound_tokens(request: dict[str, Any], options: StageOptions, stage: Stage) -> None:
    """``max_tokens`` from the offered functions' schemas when the stage's option is
    :data:`FROM_SCHEMA` (the default; see ``core.contract.text_bounds``); a request offering no
    function takes :data:`STAGE_MAX_TOKENS`."""
    if options.max_tokens != FROM_SCHEMA:
        return
    tools = request.get("tools") or []
    request["max_tokens"] = (
        functions_char_bound(tools, message=request.get("tool_choice") in (None, "auto"))
        if tools
        else STAGE_MAX_TOKENS[stage]
    )


def _texts_at_bound(parsed: BaseModel, request: Mapping[str, Any]) -> list[str]:
    """The free texts of a valid forced answer that reached their bound (read from the parsed
    answer: its fields are the forced function's properties)."""
    tools = request.get("tools") or []
    if len(tools) != 1:
        return []
    return texts_at_bound(parsed.model_dump(), tools[0]["function"].get("parameters") or {})


def post_completion(client: openai.OpenAI, request: Mapping[str, Any]) -> ChatCompletion:
    """``client.chat.completions.create(**request)``, byte for byte, without its params walk.

    ``create`` walks the params against the SDK's TypedDicts to rename aliased keys and format
    dates; no chat param has an alias or a format, so for our plain JSON params the walk
    returns an equal copy, and it cost more than all of a request's other work together (it
    re-walks the whole growing conversation on every executor turn). So the body goes to the
    client's documented ``post`` with the same keys in the same order, the same auth and
    headers; ``tests/agents/test_post_completion.py`` checks them against ``create``'s, byte
    for byte, on every shipped scenario's requests. (A tracer that patches
    ``Completions.create`` does not see these calls; one at the HTTP level does.)
    """
    unknown = request.keys() - _REQUEST_KEYS
    if unknown:
        raise TypeError(f"not a non-streaming chat completion param: {sorted(unknown)}")
    body = {key: request[key] for key in _BODY_KEYS if key in request}
    if request.get("extra_body"):  # merged last, as ``create`` merges it (a new key at the end)
        body = {**body, **request["extra_body"]}
    options: Any = {"security": {"bearer_auth": True}}  # what ``create`` asks for
    if request.get("extra_headers") is not None:
        options["headers"] = request["extra_headers"]
    return client.post("/chat/completions", body=body, cast_to=ChatCompletion, options=options)
