"""Scenario files as pytest nodes: file → scenario → one item per ``expect`` key.

Node ids read ``scenarios/hikaricp/negative.yaml::hikaricp-negative::verdict``. The pipeline
runs once per scenario per process, whichever of its items runs first; under pytest-xdist the
items of one scenario carry one ``xdist_group`` so they stay on one worker.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ExceptionInfo, TerminalRepr

from pytest_diageval.harness.cassettes.rerecord import (
    RecordingMetadata,
    display_path,
    read_metadata,
    rerecord_command,
)
from pytest_diageval.harness.checks.evaluators import CheckOutcome, run_check
from pytest_diageval.harness.checks.failures import (
    FULL_STYLES,
    ScenarioFailures,
    expect_line,
    failure_repr,
    problems_repr,
)
from pytest_diageval.harness.format.loader import (
    ScenarioError,
    duplicate_id_error,
    load_scenario,
    load_scenario_world,
    resolve_cassette_path,
)
from pytest_diageval.harness.format.markers import register_tag
from pytest_diageval.harness.format.outline import ScenarioOutline
from pytest_diageval.harness.format.registry import config_checks as checks_of
from pytest_diageval.harness.format.scenario import Scenario
from pytest_diageval.harness.lean_nodes import LeanNode
from pytest_diageval.harness.report.reporter import audit_trail, scenario_summary
from pytest_diageval.harness.runner import ScenarioRun, run_scenario
from pytest_diageval.harness.settings import (
    RecordMode,
    SettingsError,
    allowed_roots,
    configured_cassette_dir,
    run_settings,
)

__all__ = [
    "INVALID_SCENARIO",
    "ExpectationFailed",
    "InvalidScenario",
    "ScenarioFile",
    "ScenarioItem",
    "ScenarioNode",
    "ScenarioRunFailed",
]

SEEN_IDS_KEY = pytest.StashKey[dict[str, Path]]()


class ExpectationFailed(Exception):
    """One facet of a scenario did not hold; carries the reviewer-facing outcome."""

    def __init__(self, outcome: CheckOutcome) -> None:
        super().__init__(outcome.report())
        self.outcome = outcome


class ScenarioRunFailed(Exception):
    """The scenario could not run to the end (stale cassette, broken script, …)."""


class ScenarioFile(LeanNode, pytest.File):
    def collect(self) -> Iterator[ScenarioNode | InvalidScenario]:
        try:
            outline, cassette = self._load()
        except ScenarioError as exc:
            if self.config.option.collectonly:  # nothing runs: the error must show here
                raise self.CollectError(str(exc)) from None
            # One broken file fails as its own item; every other scenario still runs.
            yield InvalidScenario.from_parent(self, name=INVALID_SCENARIO, error=exc)
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


class ScenarioNode(LeanNode, pytest.Collector):
    """One scenario; owns the (cached) run that all its expectation items check.

    From collection to its run it holds only the scenario's outline (see
    :mod:`~pytest_diageval.harness.format.outline`); :attr:`scenario` unpacks the collected scenario
    when it runs, and :meth:`teardown` lets it go with the run.
    """

    def __init__(self, *, outline: ScenarioOutline, cassette: Path | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.outline = outline
        self.cassette = cassette
        self._scenario: Scenario | None = None
        self._run: ScenarioRun | None = None
        self._summary: dict[str, Any] | None = None
        self._summary_unsent = False  # a new run's row, not yet given to a report
        self._properties: tuple[tuple[str, object], ...] = ()
        self.audit_reported = False
        self.failures = ScenarioFailures()
        self.record_mode: RecordMode | None = None
        """Overrides the run's record mode for this scenario (``--diageval-record=stale``)."""

    @property
    def scenario_id(self) -> str:
        return self.outline.scenario_id

    @property
    def scenario(self) -> Scenario:
        """The scenario as collected (unpacked from the outline on first use after collection).

        After :meth:`teardown` of a replay the outline no longer holds it: an item that runs
        after its scenario's teardown (a plugin reordered or re-ran it) reads the file again.
        """
        if self._scenario is None:
            packed = self.outline.scenario()
            self._scenario = packed or load_scenario(self.path, checks_of(self.config))
        return self._scenario

    def collect(self) -> Iterator[ScenarioItem]:
        # Markers on the scenario node, once: its items inherit them (``-m``, ``-k`` and
        # xdist's ``get_closest_marker`` walk up the tree), so no item carries its own copy.
        if self.config.pluginmanager.hasplugin("xdist"):  # for --dist loadgroup users
            self.add_marker(pytest.mark.xdist_group(name=self.scenario_id))
        for tag in self.outline.tags:
            register_tag(self.config, tag)
            self.add_marker(tag)
        for key in self.outline.expect_keys:
            yield ScenarioItem.from_parent(self, name=key, key=key)

    def run(self) -> ScenarioRun:
        if self._run is None:
            settings = run_settings(self.config)
            if self.record_mode is not None:
                settings = dataclasses.replace(settings, record_mode=self.record_mode)
            self._run = run_scenario(
                self.scenario,
                self.path,
                cassette=self.cassette,
                settings=settings,
                rerecord_command=self.rerecord_command("rewrite"),
            )
            self._summary = scenario_summary(self.scenario, self._run)
            self._summary_unsent = True
        return self._run

    def forget_run(self) -> None:
        """Drop the cached run, so the next :meth:`run` runs the scenario again."""
        self._run = None
        self._summary = None
        self._properties = ()

    def recording_metadata(self) -> RecordingMetadata | None:
        """What the scenario's cassette was recorded with (None: scripted or unreadable)."""
        return None if self.cassette is None else read_metadata(self.cassette)

    @property
    def summary(self) -> dict[str, Any]:
        """The scenario's row (one dict, shared by the reports of all its items)."""
        if self._summary is None:
            self.run()
        assert self._summary is not None
        return self._summary

    def unsent_summary(self) -> dict[str, Any] | None:
        """The summary the first time it is asked for after each run, else None.

        The reporter keeps a scenario's row from the first report that carries it, so each
        run's row goes with one report, not with every item's (under xdist every report is
        serialised and sent to the controller: eight copies a scenario were a third of it).
        """
        summary = self.summary
        if not self._summary_unsent:
            return None
        self._summary_unsent = False
        return summary

    @property
    def properties(self) -> tuple[tuple[str, object], ...]:
        """The summary as junit properties, built once: every item of the scenario (and
        each of their reports, which pytest keeps to the end) lists the same tuples."""
        if not self._properties:
            self._properties = tuple((prop, self.summary[name]) for name, prop in _PROPERTIES)
        return self._properties

    def teardown(self) -> None:
        """pytest leaves the scenario (its last selected item has run): release the run.

        Only the outline's names stay (the summary row lives on in the reporter), so memory
        does not grow with the suite. The items of a scenario run one after another; should
        a plugin reorder them apart, a later item replays the scenario again (replays are
        deterministic). Recording modes keep the run: a second pass would record the model
        twice.
        """
        self._scenario = None
        mode = self.record_mode or _configured_record_mode(self.config)
        if mode == "none":
            self.forget_run()
            self.outline = self.outline.without_scenario()

    def rerecord_command(self, mode: RecordMode) -> str:
        """The command that re-records this scenario, as recorded before (never the key)."""
        target = f"{display_path(self.path)}::{self.scenario_id}"
        metadata = self.recording_metadata()
        return rerecord_command([target], mode, metadata.options() if metadata else [])


class ScenarioItem(LeanNode, pytest.Item):
    """One expectation key of one scenario."""

    def __init__(self, *, key: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.key = key
        self.outcome: CheckOutcome | None = None
        self.shown_under: str | None = None
        """The item that shows what this item's scenario shares (None: this one does)."""
        self._report_keywords: Mapping[str, Any] | None = None
        self._no_sections: list[tuple[str, str]] | None = None

    @property
    def scenario_node(self) -> ScenarioNode:
        assert isinstance(self.parent, ScenarioNode)
        return self.parent

    def runtest(self) -> None:
        failure = self._check()
        if failure is not None:
            raise failure

    def _check(self) -> Exception | None:
        """The item's failure, returned rather than raised here: a traceback through this
        frame would keep the whole run alive (pytest keeps the last one in sys.last_traceback)
        after the scenario has released it."""
        node = self.scenario_node
        run = node.run()
        self._record_properties()
        if run.result is None:
            self.shown_under = node.failures.claim(self.nodeid)
            return ScenarioRunFailed(f"{type(run.error).__name__}: {run.error}")
        expected = node.scenario.expect.value_of(self.key)
        checks = checks_of(self.config)
        self.outcome = run_check(self.key, expected, run.result, run.usage, checks, run.grade)
        if not self.outcome.passed:
            self.shown_under = node.failures.claim(self.nodeid)
            if self.shown_under is None and self._tb_style() in FULL_STYLES:
                self.add_report_section("call", "diageval audit trail", audit_trail(run.result))
            return ExpectationFailed(self.outcome)
        return None

    def check_message(self) -> str:
        """The check's one line (expected against actual), or why the scenario did not run."""
        if self.outcome is not None:
            return self.outcome.headline(self.key)
        error = self.scenario_node.run().error
        first = str(error).splitlines()[0] if error is not None and str(error) else ""
        return f"{self.key}: the scenario did not run: {type(error).__name__}: {first}"

    def _tb_style(self) -> str:
        return str(self.config.getoption("tbstyle", "auto"))

    def _record_properties(self) -> None:
        self.user_properties.extend(self.scenario_node.properties)

    def share_report_fields(self, report: pytest.TestReport) -> None:
        """Let the item's reports share what is equal among them (pytest builds a keywords
        dict, a property list and a sections list for each of the three, and keeps every
        report to the end of the session: a suite's memory grew by them)."""
        kept = self._report_keywords
        if kept is not None and kept == report.keywords:
            report.keywords = kept
        else:
            self._report_keywords = report.keywords
        if report.user_properties and report.user_properties == self.user_properties:
            report.user_properties = self.user_properties
        if not report.sections:  # one empty list, and never one that has been filled since
            if self._no_sections is None:
                self._no_sections = report.sections
            elif not self._no_sections:
                report.sections = self._no_sections

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        outline = self.scenario_node.outline
        header = f"scenario {outline.scenario_id} ({outline.title}) — expectation '{self.key}'"
        error = excinfo.value
        if isinstance(error, ExpectationFailed):
            outcome = error.outcome
            lines = [f"{header} failed", *outcome.report().splitlines()]
            if self.shown_under is not None:
                lines.append(f"audit trail: shown once, under {self.shown_under}")
            return self._failure(outcome.headline(self.key), lines, short_lines=3)
        if isinstance(error, ScenarioRunFailed):
            first, *rest = str(error).splitlines() or [""]
            lines = [f"{header}: the scenario did not run to the end", first]
            if self.shown_under is None:
                lines += rest
            elif rest:
                lines.append(f"(the full message is shown once, under {self.shown_under})")
            return self._failure(f"{self.key}: the scenario did not run: {first}", lines, 2)
        return super().repr_failure(excinfo)

    def _failure(self, first_line: str, lines: list[str], short_lines: int) -> TerminalRepr:
        location = (self.nodeid.split("::", 1)[0], expect_line(self.path, self.key))
        return failure_repr(
            location, first_line, lines, style=self._tb_style(), short_lines=short_lines
        )

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.scenario_node.scenario_id}::{self.key}"

    def teardown(self) -> None:
        """The check's outcome is on the item's report now; the item (which pytest keeps to
        the end of the session) lets it go."""
        self.outcome = None


_PROPERTIES = tuple((n, f"diageval_{n}") for n in ("verdict", "score", "severity", "rounds"))
"""Summary fields as junit properties (summary key, property name)."""


def _configured_record_mode(config: pytest.Config) -> RecordMode:
    """The run's record mode; ``none`` when the settings cannot be read (every scenario then
    failed with the reason, so there is nothing recorded to keep)."""
    try:
        return run_settings(config).record_mode
    except SettingsError:
        return "none"
