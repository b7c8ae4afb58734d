"""Scenarios as pytest nodes: scenario → one item per ``expect`` key (the file that holds the
scenario is :mod:`~pytest_diageval.harness.collect`).

Node ids read ``scenarios/hikaricp/negative.yaml::hikaricp-negative::verdict``. The pipeline
runs once per scenario per process, whichever of its items runs first; under pytest-xdist the
items of one scenario carry one ``xdist_group`` so they stay on one worker.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_diageval.harness.cassettes.rerecord import (
    RecordingMetadata,
    display_path,
    read_metadata,
    rerecord_command,
)
from pytest_diageval.harness.cassettes.samples import recorded_samples
from pytest_diageval.harness.checks.evaluators import CheckOutcome, run_check
from pytest_diageval.harness.checks.failures import (
    FULL_STYLES,
    ScenarioFailures,
    expect_line,
    failure_repr,
)
from pytest_diageval.harness.checks.outcome import CheckRaised
from pytest_diageval.harness.checks.pass_at_k import SampleStats, sampled_outcome
from pytest_diageval.harness.format.loader import load_scenario
from pytest_diageval.harness.format.markers import register_tag
from pytest_diageval.harness.format.outline import ScenarioOutline
from pytest_diageval.harness.format.registry import config_checks as checks_of
from pytest_diageval.harness.format.scenario import Scenario
from pytest_diageval.harness.lean_nodes import LeanNode
from pytest_diageval.harness.pytest_adapter import TerminalRepr
from pytest_diageval.harness.report.columns import report_columns
from pytest_diageval.harness.report.reporter import audit_trail, scenario_summary
from pytest_diageval.harness.runner import ScenarioRun, run_samples
from pytest_diageval.harness.settings import RecordMode, SettingsError, run_settings

__all__ = ["ExpectationFailed", "ScenarioItem", "ScenarioNode", "ScenarioRunFailed"]


class ExpectationFailed(Exception):
    """One facet of a scenario did not hold; carries the reviewer-facing outcome."""

    def __init__(self, outcome: CheckOutcome) -> None:
        super().__init__(outcome.report())
        self.outcome = outcome


class ScenarioRunFailed(Exception):
    """The scenario could not run to the end (stale cassette, broken script, …)."""


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
        self._runs: list[ScenarioRun] | None = None
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
        report_columns(self.config, final=False)  # a bad column: this scenario's collection error
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
        """The run of sample 1 (the only one, unless the scenario has repeated samples)."""
        return self.runs()[0]

    def runs(self) -> list[ScenarioRun]:
        """The run of every sample, in order (see ``--diageval-repeat``)."""
        if self._runs is None:
            settings = run_settings(self.config)
            columns = report_columns(self.config)
            if self.record_mode is not None:
                settings = dataclasses.replace(settings, record_mode=self.record_mode)
            repeat = self.config.getoption("diageval_repeat", None)
            try:
                self._runs = run_samples(
                    self.scenario,
                    self.path,
                    cassette=self.cassette,
                    settings=settings,
                    command=functools.partial(self.rerecord_command, samples=repeat),
                    repeat=repeat,
                )
            except Exception as exc:  # a value in a user's file: the items' failure, once
                self._runs = [ScenarioRun(None, error=exc)]
            self._summary = scenario_summary(self.scenario, *self._runs, columns=columns)
            self._summary_unsent = True
        return self._runs

    def run_error(self) -> BaseException | None:
        """What stopped a run: of sample 1, else of the first sample that did not run (a
        stale or missing sample cassette is the harness's problem, not a flaky model)."""
        return next((run.error for run in self.runs() if run.result is None), None)

    def run_error_text(self) -> str:
        """:meth:`run_error` as a message, naming the sample when there are several."""
        runs = self.runs()
        for sample, run in enumerate(runs, 1):
            if run.result is None:
                label = f"sample {sample} of {len(runs)}: " if len(runs) > 1 else ""
                return f"{label}{type(run.error).__name__}: {run.error}"
        return ""

    def forget_run(self) -> None:
        """Drop the cached runs, so the next :meth:`run` runs the scenario again."""
        self._runs = None
        self._summary = None
        self._properties = ()

    def recording_metadata(self) -> RecordingMetadata | None:
        """What the scenario's cassette was recorded with (None: scripted or unreadable)."""
        if self.cassette is None:
            return None
        try:
            return read_metadata(self.cassette)
        except Exception:  # a value the metadata cannot hold: as if none was recorded
            return None

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

    def rerecord_command(self, mode: RecordMode, samples: int | None = None) -> str:
        """The command that re-records this scenario, as recorded before (never the key),
        with ``samples`` samples (default: as many as are recorded)."""
        target = f"{display_path(self.path)}::{self.scenario_id}"
        metadata = self.recording_metadata()
        options = metadata.options() if metadata else []
        count = samples or (recorded_samples(self.cassette) if self.cassette else 1)
        if count > 1:
            options = [*options, "--diageval-repeat", str(count)]
        return rerecord_command([target], mode, options)


class ScenarioItem(LeanNode, pytest.Item):
    """One expectation key of one scenario."""

    def __init__(self, *, key: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.key = key
        self.outcome: CheckOutcome | None = None
        self.sample_stats: SampleStats | None = None
        """How the expectation fared over the samples (None: one sample)."""
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
        runs = node.runs()
        self._record_properties()
        if node.run_error() is not None:
            self.shown_under = node.failures.claim(self.nodeid)
            return ScenarioRunFailed(node.run_error_text())
        outcomes = [self._outcome(run) for run in runs]
        if len(outcomes) == 1:
            self.outcome = outcomes[0]
        else:
            rule = self.config.getoption("diageval_require_samples", "all")
            self.outcome, self.sample_stats = sampled_outcome(outcomes, rule)
        if not self.outcome.passed:
            self.shown_under = node.failures.claim(self.nodeid)
            if self.shown_under is None and self._tb_style() in FULL_STYLES:
                self._add_audit_section(runs, outcomes)
            return ExpectationFailed(self.outcome)
        return None

    def _add_audit_section(self, runs: list[ScenarioRun], outcomes: list[CheckOutcome]) -> None:
        """The audit trail of the first sample that missed the check and ran to the end."""
        for sample, (run, outcome) in enumerate(zip(runs, outcomes, strict=True), 1):
            if run.result is not None and not outcome.passed:
                title = "diageval audit trail" + (f" (sample {sample})" if len(runs) > 1 else "")
                self.add_report_section("call", title, audit_trail(run.result))
                return

    def _outcome(self, run: ScenarioRun) -> CheckOutcome:
        """The check on one sample's run."""
        expected = self.scenario_node.scenario.expect.value_of(self.key)
        assert run.result is not None  # a sample that did not run failed the item before
        checks = checks_of(self.config)
        return run_check(self.key, expected, run.result, run.usage, checks, run.grade)

    def check_message(self) -> str:
        """The check's one line (expected against actual), or why the scenario did not run."""
        if self.outcome is not None:
            return self.outcome.headline(self.key)
        text = self.scenario_node.run_error_text()
        first = text.splitlines()[0] if text else ""
        return f"{self.key}: the scenario did not run: {first}"

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
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
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
        if isinstance(error, CheckRaised):  # a check of a project's own, not the harness
            lines = [f"{header} raised", str(error), *error.frames.rstrip().splitlines()]
            return self._failure(str(error), lines, short_lines=2)
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
        self.sample_stats = None


_PROPERTIES = tuple((n, f"diageval_{n}") for n in ("verdict", "score", "severity", "rounds"))
"""Summary fields as junit properties (summary key, property name)."""


def _configured_record_mode(config: pytest.Config) -> RecordMode:
    """The run's record mode; ``none`` when the settings cannot be read (every scenario then
    failed with the reason, so there is nothing recorded to keep)."""
    try:
        return run_settings(config).record_mode
    except SettingsError:
        return "none"
