"""The run's Markdown summary for CI: ``--diageval-summary PATH.md`` and ``$GITHUB_STEP_SUMMARY``.

GitHub Actions shows the Markdown a step appends to the file named by ``GITHUB_STEP_SUMMARY`` on
the run's page; ``--diageval-summary`` writes the same text to a file of one's own (any CI can
publish it). Written once, at the end of the session, on the controller: the totals (scenarios,
checks passed / failed / skipped, the verdict confusion counts of the terminal summary), the
failing scenarios each with the headline the terminal and JUnit show for its failing checks
(the failure's ``reprcrash`` message, which travels on xdist's reports), a table of the
scenarios when the project has columns of its own (added by ``pytest_diageval_report_columns``
or a registered check: :mod:`.columns`; the built-in ones alone repeat the totals), the
changes since ``--diageval-baseline`` (the comparison :mod:`.review` made, :mod:`.baseline`'s)
and where the ``--diageval-html`` page is. Light at import: loaded by every run of the plugin.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_diageval.harness.outputs import replacing

if TYPE_CHECKING:
    from pytest_diageval.harness.report.baseline import Comparison
    from pytest_diageval.harness.report.reporter import ScenarioSummaries

__all__ = [
    "MAX_LISTED",
    "SUMMARY_VARIABLE",
    "CiSummary",
    "FailingScenario",
    "RunTotals",
    "ScenarioTable",
    "register_ci_summary",
    "summary_markdown",
]

SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
MAX_LISTED = 50
"""Failing scenarios (and changed ones) listed; the rest are counted (GitHub keeps at most
1 MiB of a step's summary)."""
_INVALID_ITEM = "::invalid-scenario"
"""How the item of an unusable scenario file ends (``harness.collect.INVALID_SCENARIO``)."""


def register_ci_summary(config: pytest.Config) -> None:
    """Register the summary writer when ``--diageval-summary`` or ``$GITHUB_STEP_SUMMARY`` asks
    for one (on the controller only; an xdist worker's reports reach it)."""
    target = config.getoption("diageval_summary", None)
    appended = os.environ.get(SUMMARY_VARIABLE) or None
    if (target is None and appended is None) or hasattr(config, "workerinput"):
        return
    summaries = getattr(config.pluginmanager.get_plugin("diageval-reporter"), "summaries", None)
    if summaries is None:  # --diageval-mutate: its own summary, no scenario rows
        if target is not None:
            raise pytest.UsageError(
                "--diageval-summary summarises scenario runs, and this run has none"
                " (--diageval-mutate runs mutants): drop it from this command"
            )
        return
    plugin = CiSummary(
        config,
        summaries,
        None if target is None else Path(target),
        None if appended is None else Path(appended),
    )
    config.pluginmanager.register(plugin, "diageval-ci-summary")


@dataclass
class FailingScenario:
    """A scenario with failing checks (or an unusable scenario file) and their headlines."""

    name: str
    file: str
    headlines: list[str] = field(default_factory=list)
    invalid: bool = False


@dataclass
class ScenarioTable:
    """The scenarios' table: its header and one row of cell texts per scenario."""

    header: list[str]
    rows: list[list[str]]


@dataclass
class RunTotals:
    """What the summary counts: scenarios run, checks by outcome, unusable files."""

    scenarios: int = 0
    checks: Counter[str] = field(default_factory=Counter)
    invalid_files: int = 0


def summary_markdown(
    totals: RunTotals,
    failing: Sequence[FailingScenario],
    confusion: tuple[list[str], list[str], Counter[tuple[str, str]]] | None,
    comparison: Comparison | None = None,
    html: Path | None = None,
    flaky: Sequence[str] = (),
    table: ScenarioTable | None = None,
) -> str:
    """The Markdown text; ``confusion`` is None when no ``verdict`` item ran; ``flaky`` lists
    the expectations that held on some samples only (``scenario::key held on 2 of 3``);
    ``table`` is the scenarios' table, when the run has columns of its own."""
    lines = [f"## diageval: {_title(totals, failing)}", ""]
    lines += [
        "| scenarios | checks passed | checks failed | checks skipped | invalid scenario files |",
        "|--:|--:|--:|--:|--:|",
        f"| {totals.scenarios} | {totals.checks['passed']} | {totals.checks['failed']}"
        f" | {totals.checks['skipped']} | {totals.invalid_files} |",
        "",
    ]
    lines += _confusion_lines(confusion)
    if failing:
        lines += ["### Failing scenarios", ""]
        lines += [_failing_line(entry) for entry in failing[:MAX_LISTED]]
        lines += _more(len(failing), "failing scenario")
        lines.append("")
    if flaky:
        lines += ["### Flaky expectations (held on some samples only)", ""]
        lines += [f"- {_code(entry)}" for entry in flaky[:MAX_LISTED]]
        lines += _more(len(flaky), "flaky expectation")
        lines.append("")
    if table is not None:
        lines += _table_lines(table)
    if comparison is not None:
        lines += _comparison_lines(comparison)
    if html is not None:
        lines += [f"HTML report: {_code(html.as_posix())}", ""]
    return "\n".join(lines)


def _title(totals: RunTotals, failing: Sequence[FailingScenario]) -> str:
    failed = sum(1 for entry in failing if not entry.invalid)
    plural = "" if totals.scenarios == 1 else "s"
    if failed or totals.invalid_files:
        text = f"❌ {failed} of {totals.scenarios} scenario{plural} failing"
        if totals.invalid_files:
            text += f", {totals.invalid_files} invalid scenario file"
            text += "" if totals.invalid_files == 1 else "s"
        return text
    if not totals.scenarios:
        return "no scenario ran"
    return f"✅ {totals.scenarios} scenario{plural} passing"


def _confusion_lines(
    confusion: tuple[list[str], list[str], Counter[tuple[str, str]]] | None,
) -> list[str]:
    if confusion is None:
        return ["Verdict confusion: no verdict item ran.", ""]
    expected_labels, actual_labels, counts = confusion
    lines = [
        "Verdict confusion (rows: expected, columns: actual):",
        "",
        "| expected \\ actual | " + " | ".join(actual_labels) + " |",
        "|---|" + "--:|" * len(actual_labels),
    ]
    for label in expected_labels:
        cells = " | ".join(str(counts[(label, actual)]) for actual in actual_labels)
        lines.append(f"| {_cell(label)} | {cells} |")
    return [*lines, ""]


def _cell(text: str) -> str:
    """A table cell's text: an allowed-verdict list such as ``LOW_CONFID|REJECT`` keeps its
    ``|`` without ending the cell."""
    return text.replace("|", "\\|")


def _table_lines(table: ScenarioTable) -> list[str]:
    """The scenarios' table, a row per scenario up to :data:`MAX_LISTED`; a cell is one line,
    its ``|`` and ``<`` kept as text."""

    def cells(texts: Sequence[str]) -> str:
        shown = [_cell(" ".join(text.splitlines())).replace("<", "&lt;") for text in texts]
        return "| " + " | ".join(shown) + " |"

    lines = ["### Scenarios", "", cells(table.header), "|---" * len(table.header) + "|"]
    lines += [cells(row) for row in table.rows[:MAX_LISTED]]
    lines += _more(len(table.rows), "scenario")
    return [*lines, ""]


def _failing_line(entry: FailingScenario) -> str:
    if entry.invalid:
        return f"- invalid scenario file {_code(entry.file)}: {_code(entry.headlines[0])}"
    first, *rest = entry.headlines
    line = f"- {_code(entry.name)} ({_code(entry.file)}): {_code(first)}"
    return "\n".join([line, *(f"  - {_code(headline)}" for headline in rest)])


def _comparison_lines(comparison: Comparison) -> list[str]:
    from pytest_diageval.harness.report.baseline import MISSING_LISTED

    header, *_ = comparison.terminal_lines()
    name = _code(comparison.baseline)
    lines = ["### Changes since baseline", "", header.replace(comparison.baseline, name, 1), ""]
    listed = [
        f"- {_code(key)}: " + _code("; ".join(change.text() for change in changes))
        for key, changes in sorted(comparison.changes.items())
    ]
    listed += [f"- {_code(key)}: new (not in the baseline)" for key in comparison.added]
    lines += listed[:MAX_LISTED]
    lines += _more(len(listed), "changed scenario")
    if len(comparison.missing) > MISSING_LISTED:
        lines.append(f"- {len(comparison.missing)} scenarios of the baseline not run now")
    else:
        lines += [f"- {_code(key)}: in the baseline, not run now" for key in comparison.missing]
    return [*lines, ""]


def _more(count: int, what: str) -> list[str]:
    hidden = count - MAX_LISTED
    if hidden <= 0:
        return []
    return [f"- … and {hidden} more {what}{'' if hidden == 1 else 's'} (see the terminal)"]


def _code(text: str) -> str:
    """``text`` as one Markdown code span, whatever backticks it holds (CommonMark)."""
    text = " ".join(text.splitlines())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}"


class CiSummary:
    """Collects the failing checks' headlines as reports arrive and writes the Markdown once."""

    def __init__(
        self,
        config: pytest.Config,
        summaries: ScenarioSummaries,
        target: Path | None,
        appended: Path | None,
    ) -> None:
        self.config = config
        self.summaries = summaries
        self.target = target
        self.appended = appended
        self.checks: Counter[str] = Counter()
        self.failing: dict[str, FailingScenario] = {}
        self.invalid: dict[str, FailingScenario] = {}
        self.files: set[str] = set()
        self.setup_skips: Counter[str] = Counter()
        self.flaky: list[str] = []
        self.written: list[str] = []

    # Before the diageval reporter's trylast hook, which lets the report's payload go.
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "diageval", None)
        file = report.nodeid.split("::", 1)[0]
        if payload is not None:
            self.checks[report.outcome] += 1
            self.files.add(file)
            samples = payload.get("samples")
            if samples is not None and samples["flaky"]:
                held = f"held on {samples['held']} of {samples['samples']}"
                self.flaky.append(f"{payload['scenario']}::{payload['key']} {held}")
            if report.failed:
                entry = self.failing.setdefault(
                    payload["scenario"], FailingScenario(payload["scenario"], file)
                )
                entry.headlines.append(_headline(report, payload.get("message", "")))
        elif report.failed and report.nodeid.endswith(_INVALID_ITEM):
            self.invalid[file] = FailingScenario(file, file, [_headline(report, "")], True)
        elif report.skipped and report.when == "setup":
            self.setup_skips[file] += 1  # counted when the file turns out to hold scenarios

    def markdown(self) -> str:
        checks = Counter(self.checks)
        checks["skipped"] += sum(n for file, n in self.setup_skips.items() if file in self.files)
        totals = RunTotals(len(self.summaries.rows), checks, len(self.invalid))
        failing = [self.failing[key] for key in sorted(self.failing)]
        failing += [self.invalid[key] for key in sorted(self.invalid)]
        confusion = self.summaries.confusion_counts() if self.summaries.verdict_checked else None
        review = self.config.pluginmanager.get_plugin("diageval-review")
        return summary_markdown(
            totals,
            failing,
            confusion,
            getattr(review, "comparison", None),
            getattr(review, "html_written", None),
            sorted(self.flaky),
            self.scenario_table(),
        )

    def scenario_table(self) -> ScenarioTable | None:
        """Every scenario's cells, a column per table column of the run's reports; None when
        all of them are built-in (the totals and the failing list say it already)."""
        from pytest_diageval.harness.report.columns import BUILTIN_NAMES, columns_of

        entries = self.summaries.entries()
        columns = [c for c in columns_of(entries, self.summaries.added_columns()) if c.in_tables]
        if all(column.name in BUILTIN_NAMES for column in columns):
            return None
        header = ["scenario", *(column.header for column in columns)]
        rows = [[entry["id"], *(c.cell(entry) for c in columns)] for entry in entries]
        return ScenarioTable(header, rows)

    @pytest.hookimpl(trylast=True)  # after the HTML page and the baseline comparison
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        ran = bool(self.summaries.rows or self.invalid)
        if self.target is None and not ran:  # $GITHUB_STEP_SUMMARY of a run without scenarios
            return
        text = self.markdown()
        if self.target is not None:
            self._write(self.target, text, "w", str(self.target), session)
        if self.appended is not None and ran:
            where = f"${SUMMARY_VARIABLE} ({self.appended})"
            self._write(self.appended, text, "a", where, session, fail=False)

    def _write(
        self,
        path: Path,
        text: str,
        mode: str,
        where: str,
        session: pytest.Session,
        fail: bool = True,
    ) -> None:
        try:
            separator = "\n" if mode == "a" and _needs_separator(path) else ""
            # Whole or not at all, an append too: what was there and the new text, renamed.
            with replacing(path, keep_existing=mode == "a") as stream:
                stream.write(separator + text)
        except OSError as error:
            option = "" if mode == "a" else "--diageval-summary "
            message = f"{option}{where}: cannot write the summary: {error.strerror}"
            self.written.append(f"ERROR: {message}")
            if fail and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        verb = "appended to" if mode == "a" else "written to"
        self.written.append(f"diageval summary {verb} {where}")

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.written:
            terminalreporter.write_line(line, red=line.startswith("ERROR"))


def _headline(report: pytest.TestReport, fallback: str) -> str:
    """The failure's first line as the short test summary, ``--tb=line`` and JUnit show it."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    if message:
        return str(message)
    return fallback or (report.longreprtext.splitlines() or [""])[0]


def _needs_separator(path: Path) -> bool:
    """Whether appending to ``path`` needs a blank line first: what is there ends its own
    Markdown block (another step's summary, an earlier run's)."""
    try:
        return path.stat().st_size > 0
    except OSError:
        return False
