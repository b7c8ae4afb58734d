"""The vcrpy cassette class of a :class:`~.cassette_session.CassetteSession`.

:mod:`pytest_diageval.harness.cassettes.cassette_session` documents the behaviour: a replay miss
raises the session's own error before any network, and an answer the SDK retried is replaced by the
retry's, so a cassette holds each request's final answer only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vcr.request import Request

from pytest_diageval.harness.cassettes.vcr_adapter import AdaptedCassette

__all__ = ["SessionCassette", "is_sdk_retry"]


def is_sdk_retry(request: Request) -> bool:
    """Whether the SDK sent this request again after a failed attempt (its retry counter)."""
    return str(request.headers.get("x-stainless-retry-count") or "0") != "0"


class SessionCassette(AdaptedCassette):
    """A vcrpy cassette that reports a replay miss with our own error, before any network,
    and keeps only the final answer of a request the SDK retried."""

    on_miss: Callable[[Request, int], Exception] | None = None
    requests_seen = 0

    def append(self, request: Request, response: dict[str, Any]) -> None:
        if is_sdk_retry(request):
            self._drop_retried_answer(request)
        super().append(request, response)

    def _drop_retried_answer(self, retry: Request) -> None:
        """Forget the error answer this retry replaces: the run never used it, and a replay
        (no SDK retries) would take it for the request's answer."""
        last = len(self.data) - 1
        if last < self.loaded_count:  # recorded in an earlier session: not ours to drop
            return
        request, response = self.data[last]
        # After a timeout or connection error nothing was recorded for the failed attempt:
        # the last answer then belongs to an earlier request, kept even if its body is equal.
        if response["status"]["code"] >= 400 and self.matches(retry, request):
            del self.data[last]

    def can_play_response_for(self, request: Request) -> bool:
        self.requests_seen += 1
        if is_sdk_retry(request) and not self.write_protected:
            return False  # replaying the answer it retries would just fail it again
        if super().can_play_response_for(request):
            return True
        if self.write_protected and self.on_miss is not None:
            raise self.on_miss(request, self.requests_seen)
        return False
