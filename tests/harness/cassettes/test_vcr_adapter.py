"""vcrpy's private names stay in ``harness/cassettes/vcr_adapter.py``, checked against the
vcrpy releases ``pyproject.toml`` allows: a new vcrpy release fails here first, naming what to
re-read, instead of a replay going subtly wrong."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from tests.support.adapters import (
    REPO,
    bounded_requirement,
    missing_names,
    unlisted_private_names,
    version_problem,
)
from vcr.request import Request

from pytest_diageval.harness.cassettes import vcr_adapter
from pytest_diageval.harness.cassettes.cassette_file import ReadableYaml, Utf8Persister
from pytest_diageval.harness.cassettes.replay import SessionCassette


def test_the_installed_vcrpy_is_one_the_adapter_was_checked_against() -> None:
    assert version_problem(vcr_adapter, "vcrpy") is None, version_problem(vcr_adapter, "vcrpy")


def test_pyproject_bounds_vcrpy_to_the_checked_releases() -> None:
    assert bounded_requirement("vcrpy").specifier == SpecifierSet(vcr_adapter.CHECKED_VERSIONS)
    assert SpecifierSet(vcr_adapter.CHECKED_VERSIONS).contains("9.4.2")
    assert not SpecifierSet(vcr_adapter.CHECKED_VERSIONS).contains("9.5.0")


def test_every_name_the_adapter_relies_on_still_exists() -> None:
    assert missing_names(vcr_adapter) == [], (
        "vcrpy no longer has these names harness/cassettes/vcr_adapter.py uses; adapt it"
    )


def test_the_adapter_lists_every_private_name_it_uses() -> None:
    assert unlisted_private_names(vcr_adapter) == set()


def test_the_session_cassette_is_the_adapted_one() -> None:
    assert issubclass(SessionCassette, vcr_adapter.AdaptedCassette)
    assert "_responses" in vars(vcr_adapter.AdaptedCassette)  # the override sits in the adapter
    assert "_responses" not in vars(SessionCassette)


def test_a_request_survives_the_stored_form() -> None:
    request = Request("POST", "http://x/v1/chat/completions", b'{"a": 1}', {"h": "v"})
    stored = vcr_adapter.request_to_dict(request)
    assert stored["method"] == "POST"
    assert stored["uri"] == "http://x/v1/chat/completions"
    back = vcr_adapter.request_from_dict(stored)
    assert (back.method, back.uri, back.body, dict(back.headers)) == (
        "POST",
        "http://x/v1/chat/completions",
        b'{"a": 1}',
        {"h": "v"},
    )


def test_a_loaded_cassette_counts_and_matches_its_interactions() -> None:
    path = REPO / "cassettes" / "live-new-shipping-error-rate.sample-2.yaml"
    persister = Utf8Persister(ValueError)
    requests, _ = persister.load_cassette(str(path), None)
    assert len(requests) >= 2
    cassette = vcr_adapter.AdaptedCassette(
        str(path),
        serializer=ReadableYaml(),
        persister=persister,
        match_on=[lambda current, recorded: current.body == recorded.body],
    )
    cassette._load()  # what entering a cassette context does
    assert cassette.loaded_count == len(requests)
    assert cassette.matches(requests[0], requests[0])
    assert not cassette.matches(requests[0], requests[1])
    assert [index for index, _ in cassette._responses(requests[1])] == [1]


@pytest.mark.parametrize("name", ["PATCHER_NAMES"])
def test_the_patcher_names_include_the_patched_library(name: str) -> None:
    assert "httpx2" in getattr(vcr_adapter, name)
