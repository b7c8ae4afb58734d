"""The reference agent behind the OpenAI wire format: the scripted model's transport, serving
the reference agent's rounds.

The run decides how many rounds it asks for (a second only after a LOW_CONFID below 0.5), so
the transport holds as many rounds as the pipeline may run and the run may stop after any
whole one; a request out of step is still the scripted model's error.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx2

from pytest_diageval.agents.llm import LLM, STAGE_HEADER, LLMConfig
from pytest_diageval.agents.reference.answers import ROUND_ENTRIES, reference_script
from pytest_diageval.agents.scripted.model import (
    SCRIPTED_BASE_URL,
    ScriptedTransport,
    ScriptError,
)
from pytest_diageval.core.evidence.world import World

__all__ = ["REFERENCE_ROUNDS", "ReferenceTransport", "reference_llm"]

REFERENCE_ROUNDS = 2
"""Rounds the transport holds: as many as ``ChatService`` runs by default."""


class ReferenceTransport(ScriptedTransport):
    """A :class:`ScriptedTransport` whose run may end after any whole round, and which says
    so plainly when asked to grade (a ``rubric``): the reference agent never grades."""

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.headers.get(STAGE_HEADER) == "grader":
            error = ScriptError(
                "the reference agent does not grade: a `rubric` expectation needs a grader's"
                " answer, from a script (a grader entry after the last round) or a cassette"
            )
            self.errors.append(error)
            raise error
        return super().handle_request(request)

    def assert_exhausted(self) -> None:
        if self.errors:
            raise self.errors[0]
        if self.served == 0 or self.served % ROUND_ENTRIES:
            super().assert_exhausted()


def reference_llm(
    query: str,
    world: World,
    *,
    rounds: int = REFERENCE_ROUNDS,
    wrap: Callable[[httpx2.BaseTransport], httpx2.BaseTransport] | None = None,
) -> tuple[LLM, ReferenceTransport]:
    """An :class:`LLM` answered by the reference agent for ``query`` in ``world`` (seen through
    ``wrap``, say a usage meter, when given)."""
    transport = ReferenceTransport(reference_script(query, world, rounds=rounds))
    config = LLMConfig(
        base_url=SCRIPTED_BASE_URL, model="reference", api_key="reference", max_retries=0
    )
    outer = wrap(transport) if wrap is not None else transport
    return LLM(config, transport=outer), transport
