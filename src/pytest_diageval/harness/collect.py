"""Scenario files as pytest collectors: a file → its scenario node, or the item it fails as.

A file is loaded and checked as a run would check it (the scenario, its world, its cassette)
and kept only as an outline; :mod:`~pytest_diageval.harness.items` holds the scenario node and
its expectation items. A broken file becomes one failing item (:class:`InvalidScenario`), so
the rest of the session runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ExceptionInfo, TerminalRepr

from pytest_diageval.harness.checks.failures import problems_repr
from pytest_diageval.harness.format.loader import (
    ScenarioError,
    duplicate_id_error,
    load_scenario,
    load_scenario_world,
    resolve_cassette_path,
    unexpected_error,
)
from pytest_diageval.harness.format.outline import ScenarioOutline
from pytest_diageval.harness.format.registry import config_checks as checks_of
from pytest_diageval.harness.format.scenario import Scenario
from pytest_diageval.harness.items import ScenarioNode
from pytest_diageval.harness.lean_nodes import LeanNode
from pytest_diageval.harness.settings import (
    SettingsError,
    allowed_roots,
    configured_cassette_dir,
    run_settings,
)

__all__ = ["INVALID_SCENARIO", "InvalidScenario", "ScenarioFile"]

SEEN_IDS_KEY = pytest.StashKey[dict[str, Path]]()


class ScenarioFile(LeanNode, pytest.File):
    def collect(self) -> Iterator[ScenarioNode | InvalidScenario]:
        error: ScenarioError | None = None
        try:
            outline, cassette = self._load()
        except ScenarioError as exc:
            error = exc
        except Exception as exc:  # the file's own failure, whatever it is: never the session's
            error = unexpected_error(self.path, exc)
        if error is not None:
            if self.config.option.collectonly:  # nothing runs: the error must show here
                raise self.CollectError(str(error)) from None
            # One broken file fails as its own item; every other scenario still runs.
            yield InvalidScenario.from_parent(self, name=INVALID_SCENARIO, error=error)
            return
        if cassette is not None:  # `scenarios/live/../../cassettes/x.yaml` reads badly
            cassette = Path(os.path.normpath(cassette))
        yield ScenarioNode.from_parent(
            self, name=outline.scenario_id, outline=outline, cassette=cassette
        )

    def _load(self) -> tuple[ScenarioOutline, Path | None]:
        """Check the file as a run would; keep its outline (the parse is dropped here)."""
        try:
            settings = run_settings(self.config)
        except SettingsError as error:
            raise ScenarioError(self.path, None, None, "", str(error)) from None
        scenario = load_scenario(self.path, checks_of(self.config))
        self._check_unique_id(scenario)
        roots = allowed_roots(self.config)
        load_scenario_world(scenario, self.path, roots=roots)
        cassette = resolve_cassette_path(
            scenario,
            self.path,
            self._cassette_dir(),
            must_exist=settings.record_mode == "none",
            roots=roots,
        )
        return ScenarioOutline.of(scenario), cassette

    def _check_unique_id(self, scenario: Scenario) -> None:
        seen = self.config.stash.setdefault(SEEN_IDS_KEY, {})
        first = seen.setdefault(scenario.scenario_id, self.path)
        if first != self.path:
            raise duplicate_id_error(scenario.scenario_id, first, self.path)

    def _cassette_dir(self) -> Path:
        return configured_cassette_dir(self.config) or self.path.parent / "cassettes"


INVALID_SCENARIO = "invalid-scenario"
"""The name of the item a broken scenario file fails as (``bad.yaml::invalid-scenario``)."""


class InvalidScenario(pytest.Item):
    """A scenario file that cannot be used: fails with the loader's ``file:line:col field:
    message`` lines, so the rest of the session runs and the exit code is still non-zero."""

    def __init__(self, *, error: ScenarioError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise self.error

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        error = excinfo.value
        if not isinstance(error, ScenarioError):
            return super().repr_failure(excinfo)
        tb = style or self.config.getoption("tbstyle", "auto")
        return problems_repr(error.path, error.problems, self.config.rootpath, style=tb)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.error.line - 1 if self.error.line is not None else None
        return self.path, line, f"invalid scenario file {self.path.name}"
