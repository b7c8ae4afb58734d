"""The report columns as data (``harness/report/columns.py``) on plain report entries: which
columns a table shows, how a cell is written, what the baseline compares, what a bad column
says."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval import ReportColumn, ReportColumnError
from pytest_diageval.harness.report.baseline import compare_reports
from pytest_diageval.harness.report.columns import BUILTIN_COLUMNS, columns_of
from pytest_diageval.harness.report.reporter import ScenarioSummaries


def _entry(scenario_id: str, columns: dict[str, Any] | None = None, **checks: str) -> Any:
    summary: dict[str, Any] = {
        "id": scenario_id,
        "expected_verdict": "PASS",
        "verdict": "PASS",
        "score": 1.0,
        "severity": "none",
        "rounds": 1,
        "usage": {"total": {"requests": 0}},
    }
    if columns is not None:
        summary["columns"] = columns
    return {
        "id": scenario_id,
        "summary": summary,
        "checks": {"passed": 1, "failed": 0},
        "check_results": [{"name": name, "outcome": outcome} for name, outcome in checks.items()],
    }


def _names(columns: list[ReportColumn]) -> list[str]:
    return [column.name for column in columns if column.in_tables]


TABLE = ["expected_verdict", "verdict", "score", "severity", "rounds", "tokens", "checks"]


def test_the_built_in_table_is_the_terminals_columns_in_order() -> None:
    assert _names(columns_of([_entry("a")])) == TABLE
    conditional = ("agreement", "reference")  # shown only where a row has them
    assert [c.header for c in BUILTIN_COLUMNS if c.in_tables and c.name not in conditional] == [
        "expected", "actual", "score", "gatekeeper", "rounds", "tokens", "checks",
    ]  # fmt: skip
    recorded = _entry("live")
    recorded["summary"]["reference"] = "cited 1/1 · fetched 1/1 · off-subject calls 0"
    assert "reference" in _names(columns_of([_entry("a"), recorded]))
    assert "reference" not in _names(columns_of([_entry("a")]))


def test_added_and_check_columns_go_before_checks_and_only_where_a_row_has_them() -> None:
    tools = ReportColumn("tools", "tools", lambda ctx: 0, text=lambda n: f"{n} calls")
    never = ReportColumn("never", "never", lambda ctx: 0)
    entries = [
        _entry("a", {"tools": 2, "from_worker": "x"}, verdict="passed", mine="failed"),
        _entry("b", {"tools": None}),
    ]

    columns = columns_of(entries, [tools, never])

    assert _names(columns) == [*TABLE[:-1], "tools", "from_worker", "mine", "checks"]
    by_name = {column.name: column for column in columns}
    assert [by_name["tools"].cell(e) for e in entries] == ["2 calls", "—"]
    assert [by_name["from_worker"].header, by_name["from_worker"].cell(entries[1])] == [
        "from_worker",
        "—",
    ]
    assert [by_name["mine"].cell(e) for e in entries] == ["FAIL", "—"]


def test_the_terminal_table_has_an_added_columns_cells() -> None:
    summaries = ScenarioSummaries(keep_results=False)
    summaries.added_columns = lambda: [ReportColumn("tools", "tools", lambda ctx: 0)]
    row = _entry("a", {"tools": 3})["summary"]
    summaries.add({"scenario": "a", "key": "verdict", "summary": row}, passed=True)
    summaries.add({"scenario": "a", "key": "mine"}, passed=False, outcome="failed")

    assert list(summaries.table_lines()) == [
        "  scenario | expected | actual | score | gatekeeper | rounds | tokens | tools | mine"
        " | checks",
        "  a        | PASS     | PASS   | 1.0   | none       | 1      | —      | 3     | FAIL"
        " | 1/2",
    ]


def test_the_baseline_compares_a_column_both_reports_have_unless_told_not_to() -> None:
    tools = ReportColumn("tools", "tools", lambda ctx: 0, text=lambda n: f"{n} calls")
    quiet = ReportColumn("quiet", "quiet", lambda ctx: 0, compare=False)
    old = {"scenarios": [_entry("a", {"tools": 2, "quiet": 1}), _entry("b")]}
    new = {"scenarios": [_entry("a", {"tools": 3, "quiet": 2}), _entry("b", {"tools": 9})]}

    comparison = compare_reports(new, old, "old.json", [tools, quiet])

    assert list(comparison.changes) == ["a"]  # b's baseline has no tools: not a change
    (change,) = comparison.changes["a"]
    assert (change.field, change.before, change.after) == ("tools", 2, 3)
    assert change.text() == "tools 2 calls → 3 calls"


def test_a_text_that_fails_writes_its_error_in_the_cell() -> None:
    column = ReportColumn("tools", "tools", lambda ctx: 0, text=lambda n: f"{n:.1f}")

    assert column.cell(_entry("a", {"tools": 2.25})) == "2.2"
    assert column.cell(_entry("a", {"tools": "x"})) == (
        "error: ValueError: Unknown format code 'f' for object of type 'str'"
    )


@pytest.mark.parametrize(
    ("name", "header", "message"),
    [
        ("Tools", "tools", "report column name 'Tools' must be a lowercase identifier"),
        ("tools", " ", "report column 'tools': its header must be a text"),
    ],
)
def test_a_bad_column_says_what_to_change(name: str, header: str, message: str) -> None:
    with pytest.raises(ReportColumnError, match=message):
        ReportColumn(name, header, lambda ctx: 0)
