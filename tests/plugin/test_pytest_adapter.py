"""pytest's private names stay in ``harness/pytest_adapter.py``, checked against the pytest
releases ``pyproject.toml`` allows: a new pytest release fails here first, naming what to
re-read, instead of a failure report that reads wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from tests.support.adapters import (
    bounded_requirement,
    missing_names,
    unlisted_private_names,
    version_problem,
)

from pytest_diageval.harness import pytest_adapter


def test_the_installed_pytest_is_one_the_adapter_was_checked_against() -> None:
    assert version_problem(pytest_adapter, "pytest") is None, version_problem(
        pytest_adapter, "pytest"
    )


def test_pyproject_bounds_pytest_to_the_checked_releases() -> None:
    assert bounded_requirement("pytest").specifier == SpecifierSet(pytest_adapter.CHECKED_VERSIONS)
    assert not SpecifierSet(pytest_adapter.CHECKED_VERSIONS).contains("10.0.0")


def test_every_name_the_adapter_relies_on_still_exists() -> None:
    assert missing_names(pytest_adapter) == [], (
        "pytest no longer has these names harness/pytest_adapter.py uses; adapt it"
    )


def test_the_adapter_lists_every_private_name_it_uses() -> None:
    assert unlisted_private_names(pytest_adapter) == set()


def test_a_native_failure_prints_its_lines_and_carries_its_crash_line() -> None:
    failure = pytest_adapter.native_failure("s.yaml", 7, "verdict: expected PASS", ["a", "b"])
    assert isinstance(failure, pytest_adapter.TerminalRepr)
    assert (failure.reprcrash.path, failure.reprcrash.lineno, failure.reprcrash.message) == (
        "s.yaml",
        7,
        "verdict: expected PASS",
    )
    assert str(failure) == "a\nb"


def test_a_standalone_config_is_the_folders_and_ends_on_leaving(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(pytester.path)
    ended = []
    with pytest_adapter.standalone_config([]) as config:
        assert config.rootpath == Path(pytester.path)
        config.add_cleanup(lambda: ended.append(True))
        assert ended == []
    assert ended == [True]
