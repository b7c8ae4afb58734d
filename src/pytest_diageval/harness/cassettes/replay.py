"""The vcrpy cassette class of a :class:`~.session.CassetteSession`.

:mod:`pytest_diageval.harness.cassettes.session` documents the behaviour: a replay miss raises
the session's own error before any network, and an answer the SDK retried is replaced by the
retry's, so a cassette holds each request's final answer only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from vcr.cassette import Cassette
from vcr.matchers import requests_match
from vcr.request import Request

__all__ = ["SessionCassette", "is_sdk_retry"]


def is_sdk_retry(request: Request) -> bool:
    """Whether the SDK sent this request again after a failed attempt (its retry counter)."""
    return str(request.headers.get("x-stainless-retry-count") or "0") != "0"


class SessionCassette(Cassette):  # type: ignore[misc]
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
        if last < self._loaded_count:  # recorded in an earlier session: not ours to drop
            return
        request, response = self.data[last]
        # After a timeout or connection error nothing was recorded for the failed attempt:
        # the last answer then belongs to an earlier request, kept even if its body is equal.
        if response["status"]["code"] >= 400 and requests_match(retry, request, self._match_on):
            del self.data[last]

    def _responses(self, request: Request) -> Iterator[tuple[int, dict[str, Any]]]:
        """vcrpy's own, without the interactions that cannot be played again.

        vcrpy matches a request against every interaction twice (``in``, then
        ``play_response``), and both skip a played one unless repeats are allowed; skipping it
        before matching gives the same answers, and a replay's n-th request meets its own
        recording first instead of being compared with all the earlier ones again.
        """
        request = self._before_record_request(request)
        repeats = self.allow_playback_repeats
        for index, (stored_request, response) in enumerate(self.data):
            if (repeats or not self.play_counts[index]) and requests_match(
                request, stored_request, self._match_on
            ):
                yield index, response

    def can_play_response_for(self, request: Request) -> bool:
        self.requests_seen += 1
        if is_sdk_retry(request) and not self.write_protected:
            return False  # replaying the answer it retries would just fail it again
        if super().can_play_response_for(request):
            return True
        if self.write_protected and self.on_miss is not None:
            raise self.on_miss(request, self.requests_seen)
        return False
