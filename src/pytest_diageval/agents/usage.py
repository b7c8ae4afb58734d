"""Token usage per stage, read from the ``usage`` of every chat completion a run receives.

:class:`UsageMeter` wraps the transport under the SDK (the network transport vcrpy patches,
or the scripted model), so it sees exactly the answers the agents get: recorded ones in a
replay (cassettes keep the server's ``usage``), live ones when recording, and the scripted
model's deterministic estimate. SDK retries that failed carry no usage and count nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from pytest_diageval.agents.llm import ROUND_HEADER, STAGE_HEADER, STAGES

__all__ = ["AnswerListener", "StageUsage", "TokenUsage", "UsageMeter"]

AnswerListener = Callable[[str, str, Mapping[str, Any], float], None]
"""Told of every answered request: stage, round, the answer's ``usage`` (empty when it has
none or failed) and the seconds the request took (a recording's progress)."""


@dataclass(frozen=True)
class StageUsage:
    """Tokens of one stage over a whole run."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def plus(self, prompt: int, completion: int) -> StageUsage:
        return StageUsage(
            self.prompt_tokens + prompt, self.completion_tokens + completion, self.requests + 1
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "requests": self.requests,
        }


@dataclass
class TokenUsage:
    """Per-stage usage of one run (stages in pipeline order), and its total."""

    stages: dict[str, StageUsage] = field(default_factory=dict)
    source: str = ""
    """Who counted the tokens: ``estimated by <estimate>`` (the scripted model) or ``reported
    by the endpoint (<model>)`` (a cassette, as the server reported them when recording)."""

    def add(self, stage: str, usage: Mapping[str, Any]) -> None:
        """One answer's usage; a value that is no count of tokens (negative, fractional, a
        bool) counts 0 (a replayed cassette refuses such an answer before it is played)."""
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        self.stages[stage] = self.stages.get(stage, StageUsage()).plus(
            _count(prompt), _count(completion)
        )

    @classmethod
    def combined(cls, usages: Sequence[TokenUsage]) -> TokenUsage:
        """The usage of several runs together (the samples of one scenario)."""
        stages: dict[str, StageUsage] = {}
        for usage in usages:
            for stage, counted in usage.stages.items():
                known = stages.get(stage, StageUsage())
                stages[stage] = StageUsage(
                    known.prompt_tokens + counted.prompt_tokens,
                    known.completion_tokens + counted.completion_tokens,
                    known.requests + counted.requests,
                )
        return cls(stages, usages[0].source if usages else "")

    @property
    def total(self) -> StageUsage:
        ordered = self.ordered()
        return StageUsage(
            sum(s.prompt_tokens for s in ordered.values()),
            sum(s.completion_tokens for s in ordered.values()),
            sum(s.requests for s in ordered.values()),
        )

    def ordered(self) -> dict[str, StageUsage]:
        known = [stage for stage in STAGES if stage in self.stages]
        return {stage: self.stages[stage] for stage in [*known, *sorted(self.stages)]}

    def as_dict(self) -> dict[str, Any]:
        counted = {
            "total": self.total.as_dict(),
            "stages": {stage: usage.as_dict() for stage, usage in self.ordered().items()},
        }
        return {**counted, "source": self.source} if self.source else counted


class UsageMeter(httpx2.BaseTransport):
    """A transport that passes everything through and adds up each completion's ``usage``."""

    def __init__(
        self,
        inner: httpx2.BaseTransport,
        usage: TokenUsage | None = None,
        *,
        on_answer: AnswerListener | None = None,
    ) -> None:
        self.inner = inner
        self.usage = usage if usage is not None else TokenUsage()
        self.on_answer = on_answer

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        started = time.monotonic()
        response = self.inner.handle_request(request)
        stage = request.headers.get(STAGE_HEADER, "unknown")
        usage: Mapping[str, Any] | None = None
        if response.status_code == 200 and "json" in response.headers.get("content-type", ""):
            usage = _usage_of(response.read())
            if usage is not None:
                self.usage.add(stage, usage)
        if self.on_answer is not None:
            round_ = request.headers.get(ROUND_HEADER, "?")
            self.on_answer(stage, round_, usage or {}, time.monotonic() - started)
        return response

    def close(self) -> None:
        self.inner.close()


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _usage_of(content: bytes) -> Mapping[str, Any] | None:
    try:
        body = json.loads(content)
    except ValueError:
        return None
    usage = body.get("usage") if isinstance(body, dict) else None
    return usage if isinstance(usage, Mapping) else None
