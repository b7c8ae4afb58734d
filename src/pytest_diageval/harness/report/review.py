"""The reviewer's reports of a run: ``--diageval-html`` and ``--diageval-baseline``.

A plugin object of its own beside :class:`~.reporter.DiagevalReporter`: it reads that reporter's
:class:`ScenarioSummaries` (the data the ``--diageval-report`` JSON holds, merged from every
xdist worker) and, on the controller only, writes the HTML page and prints the comparison with
the baseline as a short terminal section. Light at import: this module is loaded for every
scenario item (:func:`expectation_record`); Jinja2 and the baseline are imported only when asked
for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_diageval.harness.checks.outcome import CheckOutcome
    from pytest_diageval.harness.report.baseline import Comparison
    from pytest_diageval.harness.report.reporter import ScenarioSummaries

__all__ = ["ReviewReporter", "expectation_record", "outcome_record", "register_review"]


def expectation_record(item: Any, report: pytest.TestReport) -> dict[str, Any]:
    """What the HTML report adds to an item's check result: expected, actual and evidence.

    An item whose check could not judge (the scenario did not run to the end) gives the run's
    error as its actual value; any other failure without an outcome, its failure text.
    """
    if item.outcome is not None:
        return outcome_record(item.outcome)
    from pytest_diageval.harness.checks.outcome import describe_expected

    error = item.scenario_node.summary.get("error")
    failure = "" if report.passed else report.longreprtext
    return {
        "expected": describe_expected(item.scenario_node.scenario.expect.value_of(item.key)),
        "actual": f"the scenario did not run to the end: {error}" if error else failure,
        "details": [],
    }


def outcome_record(outcome: CheckOutcome) -> dict[str, Any]:
    """A judged expectation: expected, actual and the evidence lines of its check."""
    return {
        "expected": outcome.expected,
        "actual": outcome.actual,
        "details": list(outcome.details),
    }


def register_review(config: pytest.Config) -> None:
    """Register the reviewer's reports next to the diageval reporter; a baseline that cannot
    be read stops the run before any scenario runs (a typo must not cost a whole run)."""
    summaries = getattr(config.pluginmanager.get_plugin("diageval-reporter"), "summaries", None)
    if summaries is None:
        raise pytest.UsageError(
            "--diageval-html and --diageval-baseline report on scenario runs, and this run"
            " has none (--diageval-mutate runs mutants): drop them from this command"
        )
    baseline = None
    path = config.getoption("diageval_baseline")
    if path is not None and not hasattr(config, "workerinput"):  # only the controller compares
        from pytest_diageval.harness.report.baseline import BaselineError, load_baseline

        try:
            baseline = load_baseline(Path(path))
        except BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.register(ReviewReporter(config, summaries, baseline), "diageval-review")


class ReviewReporter:
    """Writes the HTML page and the baseline comparison once, on the controller."""

    def __init__(
        self,
        config: pytest.Config,
        summaries: ScenarioSummaries,
        baseline: dict[str, Any] | None,
    ) -> None:
        self.config = config
        self.summaries = summaries
        self.baseline = baseline
        self.comparison: Comparison | None = None
        self.html_written: Path | None = None
        self.html_error: str | None = None

    # Before the diageval reporter's own sessionfinish: that one may release the audits.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):
            return
        data = self.summaries.report_data()
        if self.baseline is not None:
            from pytest_diageval.harness.report.baseline import compare_reports

            name = str(self.config.getoption("diageval_baseline"))
            added = self.summaries.added_columns()
            self.comparison = compare_reports(data, self.baseline, name, added)
        target = self.config.getoption("diageval_html")
        if target is not None:
            from pytest_diageval.harness.report.html import write_html

            try:
                write_html(
                    Path(target),
                    data,
                    self.comparison,
                    self.summaries.confusion_counts(),
                    self.summaries.added_columns(),
                )
            except OSError as error:  # a full disk: said, the other outputs still written
                self.html_error = f"--diageval-html {target}: cannot write the page: {error}"
                if session.exitstatus == pytest.ExitCode.OK:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
                return
            self.html_written = Path(target)

    @pytest.hookimpl(trylast=True)  # after the diageval scenarios table
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.comparison is not None:
            terminalreporter.write_sep("=", "diageval changes since baseline")
            for line in self.comparison.terminal_lines():
                terminalreporter.write_line(line)
        if self.html_written is not None:
            terminalreporter.write_line(f"diageval html report: {self.html_written}")
        if self.html_error is not None:
            terminalreporter.write_line(f"ERROR: {self.html_error}", red=True)
