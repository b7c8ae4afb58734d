"""Reports for people and machines: the audit trail of a failing item, the terminal summary
(one row per scenario and a verdict confusion matrix) and the ``--diageval-report`` JSON.

Everything here reads plain dicts that travel on test reports, so the controller of a
pytest-xdist run builds the same summary as a single process does.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.usage import TokenUsage
from pytest_diageval.harness.cassettes.rerecord import rerecord_command
from pytest_diageval.harness.checks.evidence_lines import (
    decision_lines,
    gatekeeper_lines,
    refused_calls,
    route_text,
    scope_line,
    streamed_table,
    table,
)
from pytest_diageval.harness.report.audit_spool import AuditSpool, write_report
from pytest_diageval.harness.report.columns import (
    ColumnContext,
    ReportColumn,
    ReportColumnError,
    column_values,
    columns_of,
    is_check_column_key,
    report_columns,
)

if TYPE_CHECKING:
    from pytest_diageval.harness.format.scenario import Scenario
    from pytest_diageval.harness.runner import ScenarioRun

__all__ = [
    "RECORD_OPTIONS",
    "DiagevalReporter",
    "ScenarioSummaries",
    "audit_record",
    "audit_trail",
    "scenario_summary",
    "scope_summary",
]

VERDICTS = ("PASS", "LOW_CONFID", "REJECT")
RECORD_OPTIONS = ("diageval_report", "diageval_html", "diageval_baseline")
"""The options whose output holds every check's record and every scenario's audit trail."""
NO_VERDICT = "—"


def scenario_summary(
    scenario: Scenario,
    run: ScenarioRun,
    *more: ScenarioRun,
    columns: Sequence[ReportColumn] = (),
) -> dict[str, Any]:
    """The row of one scenario: what was expected, what happened (in sample 1, the only one
    unless ``more`` samples ran; then ``samples`` lists each and ``agreement`` says how many
    share the most common verdict, and the usage is that of all of them); ``columns`` holds
    the value of each added column (:func:`~.columns.report_columns`), when there are any."""
    expected = scenario.expect.verdict
    expected_text = "|".join(expected) if isinstance(expected, list) else (expected or NO_VERDICT)
    usage = TokenUsage.combined([sample.usage for sample in (run, *more)])
    row = {
        "id": scenario.scenario_id,
        "expected_verdict": expected_text,
        **_sample_row(run),
        "usage": usage.as_dict(),
        **scope_summary(run.result),
    }
    if more:
        samples = [_sample_row(sample) for sample in (run, *more)]
        row["samples"] = samples
        row["agreement"] = _agreement([sample["verdict"] for sample in samples])
    recorded = scenario.llm is not None and scenario.llm.cassette is not None
    if recorded and run.result is not None and run.world is not None:
        from pytest_diageval.agents.reference import evidence_recall  # a recorded run only

        row["reference"] = evidence_recall(run.result, run.world).text()
    if columns:
        ctx = ColumnContext(scenario, run.result, usage, run.grade, row["error"])
        row["columns"] = column_values(columns, ctx)
    return row


def _sample_row(run: ScenarioRun) -> dict[str, Any]:
    """What one run ended with: verdict, score, gatekeeper severity, rounds, error."""
    result = run.result
    last = None if result is None else result.last_round
    return {
        "verdict": _text(None if result is None else result.final_verdict),
        "score": NO_VERDICT if result is None or result.final_score is None else result.final_score,
        "severity": NO_VERDICT if last is None else last.gatekeeper.severity,
        "rounds": 0 if result is None else len(result.rounds),
        "error": None if run.error is None else f"{type(run.error).__name__}: {run.error}",
    }


def _agreement(verdicts: list[str]) -> str:
    """``2/3``: how many samples share the most common verdict, of how many; a sample that
    never reached a verdict (``—``) agrees with none (three that never ran: ``0/3``)."""
    reached = Counter(verdict for verdict in verdicts if verdict != NO_VERDICT).most_common(1)
    return f"{reached[0][1] if reached else 0}/{len(verdicts)}"


def scope_summary(result: ChatResult | None) -> dict[str, Any]:
    """The question's scope and what it kept out, round by round: the claims set aside (claim
    id, rules), the plan steps withheld from the executor and the calls refused before they
    ran; ``scope`` is None when the scenario did not run."""
    scope = None if result is None or result.scope is None else result.scope.model_dump()
    rounds = [] if result is None else result.rounds
    set_aside = [
        {"round": r.round, "claim_id": claim.claim_id, "rules": list(claim.rules)}
        for r in rounds
        for claim in r.set_aside
    ]
    withheld = [
        {"round": r.round, "step": item.step, "rule": item.rule}
        for r in rounds
        for item in r.plan_set_aside
    ]
    refused = [{"round": r.round, "call": call} for r in rounds for call in refused_calls(r)]
    return {
        "scope": scope,
        "set_aside": set_aside,
        "withheld_plan_steps": withheld,
        "refused_calls": refused,
    }


def _text(value: str | None) -> str:
    return NO_VERDICT if value is None else value


# --------------------------------------------------------------------------- audit trail


def audit_trail(result: ChatResult) -> str:
    """A compact, readable account of the session for a failure report (no JSON walls)."""
    lines = [f"session {result.session_id}: status={result.status}", scope_line(result.scope)]
    if result.error:
        lines.append(f"error: {result.error}")
    composer = None if result.composer_output is None else result.composer_output.model_dump()
    for round_result in result.rounds:
        plan = round_result.plan
        lines.append(f"round {round_result.round}:")
        lines.append(f"  plan: {plan.plan if plan else f'(none: {round_result.planner_error})'}")
        for item in round_result.plan_set_aside:  # what the executor was not shown, and why
            lines.append(f"  plan step withheld ({item.rule}): {item.step} ({item.reason})")
        for call in round_result.tool_calls:
            target = f"#{call.invocation_id}" if call.invocation_id is not None else "no row"
            problem = f"  ERROR {call.error}" if call.error else ""
            lines.append(f"  tool {call.name} {_args(call.arguments)} -> {target}{problem}")
        status = round_result.parse_status
        lines.append(f"  executor output: {status.status} ({status.detail})")
        lines.extend("  " + line for line in gatekeeper_lines(round_result.gatekeeper))
        lines.extend("  " + line for line in decision_lines(round_result))
        # The route's rule, then (last round) what was really published: it may differ.
        final = composer if round_result is result.rounds[-1] else None
        route = round_result.route
        lines.append(f"  route: {route_text(route.action, route.reason, final)}")
    lines.append(f"final answer ({result.answer_kind}):")
    lines.extend("  " + line for line in result.final_answer.splitlines())
    return "\n".join(lines)


def _args(arguments: dict[str, Any] | str) -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"


def audit_record(scenario: Scenario, path: Path, run: ScenarioRun, rootdir: Path) -> dict[str, Any]:
    """The full machine-readable trail of one scenario for ``--diageval-report``."""
    record: dict[str, Any] = {
        "id": scenario.scenario_id,
        "title": scenario.title,
        "file": (path.relative_to(rootdir) if path.is_relative_to(rootdir) else path).as_posix(),
        "tags": list(scenario.tags),
        "summary": scenario_summary(scenario, run),
    }
    if run.result is not None:
        # Durations are wall-clock: the one thing two identical runs never share.
        record["result"] = run.result.model_dump(
            mode="json", exclude={"invocations": {"__all__": {"duration_ms"}}}
        )
    if run.grade is not None:  # the grader's score and reasons (a rubric check, not the verdict)
        record["grade"] = run.grade.as_dict()
    return record


# --------------------------------------------------------------------------- aggregation


@dataclass
class ScenarioSummaries:
    """Collected on the controller from test reports; rendered once at the end."""

    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    passed: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    flaky: Counter[str] = field(default_factory=Counter)
    """Per scenario, the expectations that held on some samples and not on others."""
    # Full audit trails go to disk as they arrive: memory stays flat with the suite.
    audits: AuditSpool = field(default_factory=AuditSpool)
    verdict_checked: set[str] = field(default_factory=set)
    """Scenarios whose ``verdict`` item ran: only they count in the confusion matrix."""
    stale: dict[str, list[str]] = field(default_factory=dict)
    """Files of scenarios whose cassettes are stale, with the options they were recorded with."""
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Per scenario, every check that ran: name, outcome and its one-line message, and (for
    the HTML report) its expected, actual and evidence lines."""
    keep_results: bool = True
    """False when no output of :data:`RECORD_OPTIONS` is written: the terminal summary needs
    the counts and the table's columns only, so neither the check records (but the outcome of
    a registered check: a column) nor the rest of each row (the error, the usage of each
    stage) are held to the end."""
    added_columns: Callable[[], Sequence[ReportColumn]] = tuple
    """The columns a ``conftest.py`` or plugin added, asked for when a report is written."""

    def add(self, payload: dict[str, Any], passed: bool, outcome: str | None = None) -> None:
        """One item's report; the scenario's row comes with the first report of each run
        (``summary``), a newer run's row replacing the older."""
        scenario = payload["scenario"]
        summary = payload.get("summary")
        if summary is not None:
            self.rows[scenario] = summary if self.keep_results else _table_row(summary)
        (self.passed if passed else self.failed)[scenario] += 1
        samples = payload.get("samples")
        if samples is not None and samples["flaky"]:
            self.flaky[scenario] += 1
        if "key" in payload and (self.keep_results or is_check_column_key(payload["key"])):
            record = {
                "name": payload["key"],
                "outcome": outcome or ("passed" if passed else "failed"),
            }
            if self.keep_results:
                record["message"] = payload.get("message", "")
                record.update(payload.get("expectation") or {})
                if samples is not None:
                    record["samples"] = samples
            self.results.setdefault(scenario, []).append(record)
        stale = payload.get("stale")
        if stale is not None:
            self.stale.setdefault(stale["file"], stale["options"])
        if payload.get("key") == "verdict":
            self.verdict_checked.add(scenario)
        if payload.get("audit") is not None:
            self.audits.add(scenario, payload["audit"])

    def columns(self) -> list[ReportColumn]:
        """The columns of this run's tables (:func:`~.columns.columns_of` its entries)."""
        return columns_of(self.entries(), self.added_columns())

    def entries(self) -> list[dict[str, Any]]:
        """Each scenario's entry as the columns read it: the JSON report's, without the audit."""
        return [self._entry(key) for key in sorted(self.rows)]

    def table_lines(self) -> Iterator[str]:
        """One line per scenario, made as it is written (a suite has thousands), a cell per
        column of :meth:`columns` (with repeated samples, ``actual`` lists each sample's
        verdict and ``agree`` how many share the most common one; ``checks`` counts the flaky
        expectations)."""
        entries = self.entries()
        columns = [c for c in columns_of(entries, self.added_columns()) if c.in_tables]
        header = ["scenario", *(column.header for column in columns)]
        return streamed_table(
            header,
            lambda: ([entry["id"], *(c.cell(entry) for c in columns)] for entry in entries),
        )

    def confusion_counts(self) -> tuple[list[str], list[str], Counter[tuple[str, str]]]:
        """Expected labels (rows), actual labels (columns) and the count of each pair; the
        terminal and the HTML page both show these."""
        # A scenario deselected from its verdict (-k forbidden) was not judged on it; each
        # of a scenario's samples counts once.
        counts: Counter[tuple[str, str]] = Counter(
            (row["expected_verdict"], verdict)
            for key, row in self.rows.items()
            if key in self.verdict_checked
            for verdict in _sample_verdicts(row)
        )
        expected_labels = sorted({e for e, _ in counts}, key=_verdict_order)
        actual_labels = list(VERDICTS) + sorted({a for _, a in counts} - set(VERDICTS))
        return expected_labels, actual_labels, counts

    def confusion_lines(self) -> list[str]:
        expected_labels, actual_labels, counts = self.confusion_counts()
        rows = [
            [label, *(str(counts[(label, actual)]) for actual in actual_labels)]
            for label in expected_labels
        ]
        return table(["expected \\ actual", *actual_labels], rows)

    def report_data(self) -> dict[str, Any]:
        """What the JSON report holds; the HTML page and the baseline comparison read it too."""
        return {"version": 1, "scenarios": [self._report_entry(key) for key in sorted(self.rows)]}

    def write_json(self, path: Path) -> None:
        write_report(path, (self._report_entry(key) for key in sorted(self.rows)))

    def _report_entry(self, key: str) -> dict[str, Any]:
        return {**(self.audits.get(key) or {"id": key}), **self._entry(key)}

    def _entry(self, key: str) -> dict[str, Any]:
        checks = {"passed": self.passed[key], "failed": self.failed[key]}
        if self.flaky[key]:
            checks["flaky"] = self.flaky[key]
        return {
            "id": self.rows[key].get("id", key),
            "summary": self.rows[key],
            "checks": checks,
            "check_results": self.results.get(key, []),
        }


_TABLE_COLUMNS = ("id", "expected_verdict", "verdict", "score", "severity", "rounds")


def _table_row(summary: dict[str, Any]) -> dict[str, Any]:
    """What the terminal table, the CI summary and the confusion matrix read of a scenario's
    row (the built-in columns' fields and the added columns' values)."""
    row = {key: summary[key] for key in _TABLE_COLUMNS}
    row["usage"] = {"total": summary["usage"]["total"]}
    if "samples" in summary:
        row["samples"] = [{"verdict": sample["verdict"]} for sample in summary["samples"]]
        row["agreement"] = summary["agreement"]
    if "reference" in summary:
        row["reference"] = summary["reference"]
    if "columns" in summary:
        row["columns"] = summary["columns"]
    return row


def _sample_verdicts(row: dict[str, Any]) -> list[str]:
    """The verdict of each sample of a scenario's row (one, unless it was repeated)."""
    samples = row.get("samples")
    return [sample["verdict"] for sample in samples] if samples else [row["verdict"]]


def _verdict_order(label: str) -> tuple[int, str]:
    return (VERDICTS.index(label) if label in VERDICTS else len(VERDICTS), label)


class DiagevalReporter:
    """The plugin object that collects scenario rows from reports (also from xdist workers)
    and writes the terminal summary and the JSON report once, on the controller."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        keep = any(config.getoption(name, None) for name in RECORD_OPTIONS)
        self.summaries = ScenarioSummaries(keep_results=keep, added_columns=self.added_columns)

    def added_columns(self) -> tuple[ReportColumn, ...]:
        """The run's added columns; a hook that gives a bad one has made every scenario a
        collection error already (:func:`~.columns.report_columns`), so the reports show
        only the values the rows hold, under their names."""
        try:
            return report_columns(self.config)
        except ReportColumnError:
            return ()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "diageval", None)
        if payload is None:
            return
        if not hasattr(self.config, "workerinput"):  # a worker has sent it to the controller
            self.summaries.add(payload, passed=report.passed, outcome=report.outcome)
        # pytest keeps every report to the end (terminal stats): the payload is consumed now
        # (the row and the check's record in the summaries, the audit on disk in
        # ``summaries.audits``, or all of it on its way to the controller: xdist's worker hook
        # has serialised the report before this trylast one), so the report lets it go.
        del report.diageval

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        verbosity = self.config.get_verbosity()
        if not self.summaries.rows or verbosity < -1:
            return
        write = terminalreporter.write_line
        terminalreporter.write_sep("=", "diageval scenarios")
        if verbosity >= 0:  # -q keeps the confusion matrix only
            for line in self.summaries.table_lines():
                write(line)
            write("")
        if not self.summaries.verdict_checked:
            write("verdict confusion matrix: no verdict item ran")
            return
        write("verdict confusion matrix (rows: expected, columns: actual):")
        for line in self.summaries.confusion_lines():
            write(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """After pytest's last line: the one command that re-records every stale cassette."""
        stale = self.summaries.stale
        reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
        if not stale or reporter is None or hasattr(config, "workerinput"):
            return
        options = next(iter(stale.values()))
        command = rerecord_command(list(stale), "stale", options)
        reporter.write_line(
            f"diageval: {len(stale)} scenario file(s) have stale or missing cassettes;"
            " re-record exactly those with:"
        )
        reporter.write_line(command)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        target = self.config.getoption("diageval_report")
        if target is None or hasattr(self.config, "workerinput"):
            return
        try:
            self.summaries.write_json(Path(target))
        except OSError as error:  # say so and fail the run, rather than a traceback
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            message = f"--diageval-report {target}: cannot write the report: {error.strerror}"
            if reporter is not None:
                reporter.write_line(f"ERROR: {message}", red=True)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        finally:
            self.summaries.audits.close()
