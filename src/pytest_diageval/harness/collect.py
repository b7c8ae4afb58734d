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

from pytest_diageval.harness.checks.failures import problems_repr
from pytest_diageval.harness.format.loader import (
    ScenarioError,
    duplicate_id_error,
    duplicate_ids,
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
from pytest_diageval.harness.pytest_adapter import TerminalRepr
from pytest_diageval.harness.settings import (
    SettingsError,
    allowed_roots,
    configured_cassette_dir,
    run_settings,
)

__all__ = [
    "INVALID_SCENARIO",
    "InvalidScenario",
    "ScenarioFile",
    "fail_reused_ids",
    "reload_late_checks",
]

SEEN_IDS_KEY = pytest.StashKey[dict[str, list[Path]]]()
"""Every scenario id collected in this run, with the files that gave it, in collection order."""


class ScenarioFile(LeanNode, pytest.File):
    final = False
    """Loaded for the last time: every conftest.py of the run has registered its checks."""

    def collect(self) -> Iterator[ScenarioNode | InvalidScenario]:
        error: ScenarioError | None = None
        try:
            outline, cassette = self._load()
        except ScenarioError as exc:
            error = exc
        except Exception as exc:  # the file's own failure, whatever it is: never the session's
            error = unexpected_error(self.path, exc)
        if error is not None:
            # Nothing runs: the error must show here (or, when a later conftest.py may still
            # register its unknown key, when collection ends: reload_late_checks).
            if self.config.option.collectonly and (self.final or not _unknown_key(error)):
                raise self.CollectError(str(error)) from None
            # One broken file fails as its own item; every other scenario still runs.
            checks = len(checks_of(self.config))  # loaded again if a later conftest adds one
            yield InvalidScenario.from_parent(
                self, name=INVALID_SCENARIO, error=error, checks_known=checks
            )
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
            reference=settings.reference,
        )
        return ScenarioOutline.of(scenario), cassette

    def _check_unique_id(self, scenario: Scenario) -> None:
        """A later file with an id already collected fails here; the first one fails once
        collection is over (:func:`fail_reused_ids`), so neither runs as the other."""
        files = self.config.stash.setdefault(SEEN_IDS_KEY, {}).setdefault(scenario.scenario_id, [])
        if self.path not in files:
            files.append(self.path)
        if files[0] != self.path:
            raise duplicate_id_error(scenario.scenario_id, files[0], self.path)

    def _cassette_dir(self) -> Path:
        return configured_cassette_dir(self.config) or self.path.parent / "cassettes"


INVALID_SCENARIO = "invalid-scenario"
"""The name of the item a broken scenario file fails as (``bad.yaml::invalid-scenario``)."""


class InvalidScenario(pytest.Item):
    """A scenario file that cannot be used: fails with the loader's ``file:line:col field:
    message`` lines, so the rest of the session runs and the exit code is still non-zero."""

    def __init__(self, *, error: ScenarioError, checks_known: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error
        self.checks_known = checks_known
        """How many checks the run had registered when the file failed to load."""

    def runtest(self) -> None:
        raise self.error

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        error = excinfo.value
        if not isinstance(error, ScenarioError):
            return super().repr_failure(excinfo)
        tb = style or self.config.getoption("tbstyle", "auto")
        return problems_repr(error.path, error.problems, self.config.rootpath, style=tb)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.error.line - 1 if self.error.line is not None else None
        return self.path, line, f"invalid scenario file {self.path.name}"


def reload_late_checks(items: list[pytest.Item], config: pytest.Config) -> None:
    """Load again each broken scenario file that failed before a conftest.py pytest loaded
    later (a scenario sub-folder's) registered more checks: its keys may be known now.

    pytest loads a folder's conftest.py when it collects that folder, so a key registered in
    ``scenarios/mine/conftest.py`` is unknown to a file collected before it; once collection
    has ended, every conftest.py of the run has registered its checks.
    """
    registered = len(checks_of(config))
    collect_only = config.option.collectonly  # an InvalidScenario there waited for this
    late = [
        item
        for item in items
        if isinstance(item, InvalidScenario)
        and (item.checks_known < registered or collect_only)
        and isinstance(item.parent, ScenarioFile)
    ]
    for item in late:
        file = item.parent
        assert isinstance(file, ScenarioFile)
        file.final = True
        try:
            loaded = list(_items_of(file))
        except ScenarioFile.CollectError as error:  # reported as pytest reports its own
            report = pytest.CollectReport(file.nodeid, "failed", str(error), [])
            config.hook.pytest_collectreport(report=report)
            loaded = []
        at = items.index(item)
        items[at : at + 1] = loaded


def _unknown_key(error: ScenarioError) -> bool:
    """The file names an ``expect`` key no check registered so far."""
    return any(
        problem.field_path.startswith("expect.") and problem.message.startswith("unknown key")
        for problem in error.problems
    )


def _items_of(node: pytest.Collector) -> Iterator[pytest.Item]:
    for child in node.collect():
        if isinstance(child, pytest.Item):
            yield child
        else:
            assert isinstance(child, pytest.Collector)
            yield from _items_of(child)


def fail_reused_ids(items: list[pytest.Item]) -> None:
    """The items of a scenario whose id a later file reused give way to one invalid-scenario
    item of its file, naming every file with that id (the later files failed when collected)."""
    seen = items[0].config.stash.get(SEEN_IDS_KEY, {}) if items else {}
    reused = {scenario_id: files for scenario_id, files in seen.items() if len(files) > 1}
    if not reused:
        return
    kept: list[pytest.Item] = []
    failed: set[Path] = set()
    for item in items:
        node = item.getparent(ScenarioNode)
        files = reused.get(node.scenario_id) if node is not None else None
        if node is None or files is None or node.path != files[0]:
            kept.append(item)
        elif node.path not in failed:
            failed.add(node.path)
            error = _reused_id_error(node.scenario_id, files)
            parent = node.parent
            assert isinstance(parent, ScenarioFile)
            kept.append(InvalidScenario.from_parent(parent, name=INVALID_SCENARIO, error=error))
    items[:] = kept


def _reused_id_error(scenario_id: str, files: list[Path]) -> ScenarioError:
    """The error of the first file with ``scenario_id``, at its ``id`` line, naming them all."""
    at = duplicate_id_error(scenario_id, files[1], files[0])  # at files[0]'s `id:` line
    (message,) = duplicate_ids([(scenario_id, path) for path in files])
    return ScenarioError(files[0], at.line, at.column, "id", message)
