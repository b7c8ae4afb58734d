"""Every vcrpy name outside its documented API (``vcr.VCR``, ``vcr.Request``) that the
cassettes use: private attributes, the cassette class and its construction, internal modules.

vcrpy may change any of these in a minor release, so ``pyproject.toml`` bounds vcrpy to
:data:`CHECKED_VERSIONS`, the releases this module was read against, and
``tests/harness/cassettes/test_vcr_adapter.py`` fails on any other release and names each
name below that is gone. No other module of the package touches a private vcrpy name
(``tests/test_private_names.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import vcr
from vcr.cassette import Cassette
from vcr.matchers import requests_match
from vcr.patch import PATCHER_NAMES
from vcr.persisters.filesystem import CassetteNotFoundError
from vcr.request import Request
from vcr.serialize import serialize
from vcr.serializers import compat, yamlserializer

__all__ = [
    "CHECKED_VERSIONS",
    "PATCHER_NAMES",
    "RELIED_ON",
    "AdaptedCassette",
    "CassetteNotFoundError",
    "cassette_context",
    "request_from_dict",
    "request_to_dict",
    "response_to_bytes",
    "serialize",
    "yaml_deserialize",
]

CHECKED_VERSIONS = ">=9.4.2,<9.5"
"""The vcrpy releases this module was checked against; ``pyproject.toml`` pins the same."""

RELIED_ON = (
    ("vcr.cassette.Cassette", "_responses"),
    ("vcr.cassette.Cassette", "_loaded_count"),
    ("vcr.cassette.Cassette", "_match_on"),
    ("vcr.cassette.Cassette", "_before_record_request"),
    ("vcr.cassette.Cassette", "data"),
    ("vcr.cassette.Cassette", "play_counts"),
    ("vcr.cassette.Cassette", "write_protected"),
    ("vcr.cassette.Cassette", "allow_playback_repeats"),
    ("vcr.cassette.Cassette", "can_play_response_for"),
    ("vcr.cassette.Cassette", "append"),
    ("vcr.cassette.Cassette", "use_arg_getter"),
    ("vcr.config.VCR", "get_merged_config"),
    ("vcr.request.Request", "_to_dict"),
    ("vcr.request.Request", "_from_dict"),
    ("vcr.patch", "PATCHER_NAMES"),
    ("vcr.persisters.filesystem", "CassetteNotFoundError"),
    ("vcr.serialize", "serialize"),
    ("vcr.serializers.compat", "convert_to_bytes"),
    ("vcr.serializers.yamlserializer", "deserialize"),
)
"""``(module or class, name)`` of each vcrpy name used here beyond the documented API: what to
re-read in a new vcrpy release before widening :data:`CHECKED_VERSIONS`."""


class AdaptedCassette(Cassette):  # type: ignore[misc]
    """vcrpy's cassette with public names for the private state the session reads, and a
    faster :meth:`_responses`."""

    @property
    def loaded_count(self) -> int:
        """How many interactions at the start of ``data`` came from the cassette file."""
        return int(self._loaded_count)

    def matches(self, request: Request, recorded: Request) -> bool:
        """Whether ``request`` matches ``recorded`` under this cassette's ``match_on``."""
        return bool(requests_match(request, recorded, self._match_on))

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


def cassette_context(
    cassette_class: type[AdaptedCassette], recorder: vcr.VCR, options: Callable[[], dict[str, Any]]
) -> Any:
    """What ``recorder.use_cassette(**options())`` returns, for ``cassette_class``; the
    options are read when the context is entered."""

    def config() -> dict[str, Any]:
        merged: dict[str, Any] = recorder.get_merged_config(**options())
        # VCR wraps request filters in a deepcopy of the request, run four times per replayed
        # request: the largest replay cost after stock body matching. We filter nothing at
        # request time (secrets are scrubbed on save, from copies), so we drop the wrapper.
        merged["before_record_request"] = None
        return merged

    return cassette_class.use_arg_getter(config)


def request_to_dict(request: Request) -> dict[str, Any]:
    """A request as vcrpy stores it in a cassette (method, uri, body, headers)."""
    data: dict[str, Any] = request._to_dict()
    return data


def request_from_dict(data: dict[str, Any]) -> Request:
    """The request a cassette's stored form describes (:func:`request_to_dict`'s inverse)."""
    return Request._from_dict(data)


def response_to_bytes(response: Any) -> Any:
    """A stored response with its body as bytes, as vcrpy's own loader hands it on."""
    return compat.convert_to_bytes(response)


def yaml_deserialize(cassette_string: str) -> Any:
    """vcrpy's YAML serializer's reading of a cassette file's text."""
    return yamlserializer.deserialize(cassette_string)
