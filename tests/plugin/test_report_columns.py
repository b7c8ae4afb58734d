"""Report columns of one's own in real pytest runs: a column that docs/api.md's ``conftest.py``
adds (run as written) shows in the terminal table, the ``--diageval-report`` JSON, the
``--diageval-html`` overview and the ``--diageval-summary`` Markdown, also under xdist; the
baseline comparison names a changed value; a registered check is a column without more code;
a bad column is said clearly."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from support.html_page import parse_html

if TYPE_CHECKING:
    from conftest import ScenarioDir

ROOT = Path(__file__).resolve().parents[2]
API_DOC = (ROOT / "docs" / "api.md").read_text("utf-8")
(COLUMNS_CONFTEST,) = re.findall(
    r"```python\n# conftest\.py \(api-columns\)\n(.*?)```", API_DOC, re.S
)
PROJECT_CONFTEST = (ROOT / "conftest.py").read_text("utf-8")
LEAN = ("-p", "no:hypothesispytest", "--assert=plain")
TRIO = ["forged-citation", "high-memory-positive", "memory-low-confidence"]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("|")]


def _table(lines: list[str]) -> dict[str, dict[str, str]]:
    """The terminal table (or a Markdown one) as scenario → header → cell."""
    header, *rows = [_cells(line.strip().strip("|")) for line in lines]
    return {row[0]: dict(zip(header, row, strict=True)) for row in rows}


def _terminal_table(summary: list[str]) -> dict[str, dict[str, str]]:
    return _table(summary[: summary.index("")])


def _markdown_table(markdown: str) -> dict[str, dict[str, str]]:
    lines = markdown.splitlines()
    start = lines.index("### Scenarios") + 2
    end = next((i for i in range(start, len(lines)) if not lines[i]), len(lines))
    return _table([lines[start], *lines[start + 2 : end]])


def _html_table(path: Path) -> dict[str, dict[str, str]]:
    table = parse_html(path.read_text("utf-8")).by_id("scenario-table")
    header = [th.text() for th in table.find_all("th")]
    rows = [row.cells() for row in table.find_all("tr", "scenario-row")]
    # The scenario's cell may carry a "changed" badge after its id.
    return {row[1].split()[0]: dict(zip(header, row, strict=True)) for row in rows}


def _tool_calls(entry: dict[str, Any]) -> int:
    """Counted from the JSON report's own result, not from the column."""
    return sum(len(round_["tool_calls"]) for round_ in entry["result"]["rounds"])


def test_a_conftest_column_shows_in_the_terminal_json_html_and_ci_summary(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(COLUMNS_CONFTEST)  # docs/api.md's example, verbatim
    scenarios.write_trio()

    result = pytester.runpytest(
        "--diageval-report", "r.json", "--diageval-html", "r.html", "--diageval-summary", "ci.md"
    )

    result.assert_outcomes(passed=13, failed=2)
    report = json.loads((pytester.path / "r.json").read_text("utf-8"))
    by_id = {entry["id"]: entry for entry in report["scenarios"]}
    expected = {
        key: {
            "tool_calls": _tool_calls(entry),
            "answer_chars": len(entry["result"]["final_answer"]),
        }
        for key, entry in by_id.items()
    }
    assert {key: entry["summary"]["columns"] for key, entry in by_id.items()} == expected
    assert expected["high-memory-positive"] == {"tool_calls": 2, "answer_chars": 285}
    terminal = _terminal_table(scenarios.summary(result))
    html = _html_table(pytester.path / "r.html")
    markdown = _markdown_table((pytester.path / "ci.md").read_text("utf-8"))
    for table in (terminal, html, markdown):
        assert sorted(table) == TRIO
        for key, values in expected.items():
            assert table[key]["tools"] == f"{values['tool_calls']} calls"
            assert table[key]["answer chars"] == str(values["answer_chars"])
    header = scenarios.summary(result)[0]
    assert _cells(header)[-4:] == ["tokens", "tools", "answer chars", "checks"]
    assert list(markdown["forged-citation"])[-4:] == ["tokens", "tools", "answer chars", "checks"]
    assert markdown["forged-citation"]["checks"] == terminal["forged-citation"]["checks"] == "0/2"


def test_without_columns_of_ones_own_the_reports_are_as_before(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    result = pytester.runpytest("--diageval-report", "r.json", "--diageval-summary", "ci.md")

    result.assert_outcomes(passed=13, failed=2)
    report = json.loads((pytester.path / "r.json").read_text("utf-8"))
    assert all("columns" not in entry["summary"] for entry in report["scenarios"])
    assert "### Scenarios" not in (pytester.path / "ci.md").read_text("utf-8")


def test_a_column_computed_on_an_xdist_worker_shows_on_the_controller(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(COLUMNS_CONFTEST)
    scenarios.write_trio()

    result = pytester.runpytest_subprocess(*LEAN, "-n", "2", "--diageval-summary", "ci.md")

    result.assert_outcomes(passed=13, failed=2)
    terminal = _terminal_table(scenarios.summary(result))
    assert terminal["high-memory-positive"]["tools"] == "2 calls"
    assert terminal["high-memory-positive"]["answer chars"] == "285"
    markdown = _markdown_table((pytester.path / "ci.md").read_text("utf-8"))
    assert markdown["high-memory-positive"]["tools"] == "2 calls"


BONUS_CONFTEST = """
import os

from pytest_diageval import ReportColumn


def pytest_diageval_report_columns(config):
    bonus = int(os.environ.get("EXTRA_CALLS", "0"))
    return [
        ReportColumn("calls", "calls", lambda ctx: len(ctx.result.rounds[0].tool_calls) + bonus),
        ReportColumn("quiet", "quiet", lambda ctx: bonus, compare=False),
    ]
"""


def test_the_baseline_names_a_scenario_whose_column_changed(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    pytester.runpytest("--diageval-report", "before-columns.json")
    pytester.makeconftest(BONUS_CONFTEST)
    pytester.runpytest("--diageval-report", "old.json").assert_outcomes(passed=11)
    monkeypatch.setenv("EXTRA_CALLS", "1")

    result = pytester.runpytest("--diageval-baseline", "old.json", "--diageval-html", "r.html")
    unchanged = pytester.runpytest("--diageval-baseline", "before-columns.json")

    result.assert_outcomes(passed=11)
    assert "  high-memory-positive: calls 2 → 3" in result.outlines
    assert "changes since baseline old.json: 1 of 1 compared scenario changed" in result.outlines
    row = _html_table(pytester.path / "r.html")["high-memory-positive"]
    assert row["calls"] == "3 was 2"
    assert row["quiet"] == "1"  # not compared: no "was"
    # A baseline from before the column was added has no value for it: not a change.
    assert (
        "changes since baseline before-columns.json: 0 of 1 compared scenario changed"
        in unchanged.outlines
    )


def test_a_registered_check_is_a_column_without_more_code(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(PROJECT_CONFTEST)  # registers max_answer_chars, nothing else
    for name, expect in (("short", {"max_answer_chars": 400}), ("long", {"max_answer_chars": 10})):
        data = scenarios.example()
        data["id"] = name
        data["expect"] = {"verdict": "PASS", **expect}
        scenarios.write(f"scenarios/{name}.yaml", data)
    plain = scenarios.example()
    plain["id"] = "plain"
    plain["expect"] = {"verdict": "PASS"}
    scenarios.write("scenarios/plain.yaml", plain)

    # Without an output that keeps every check's record (the terminal's own), then with one.
    result = pytester.runpytest("--diageval-summary", "ci.md")
    pytester.runpytest("--diageval-html", "r.html").assert_outcomes(passed=4, failed=1)

    result.assert_outcomes(passed=4, failed=1)
    terminal = _terminal_table(scenarios.summary(result))
    html = _html_table(pytester.path / "r.html")
    markdown = _markdown_table((pytester.path / "ci.md").read_text("utf-8"))
    for table in (terminal, html, markdown):
        assert {key: row["max_answer_chars"] for key, row in table.items()} == {
            "long": "FAIL",
            "plain": "—",
            "short": "pass",
        }
    assert _cells(scenarios.summary(result)[0])[-2:] == ["max_answer_chars", "checks"]


def test_a_registered_checks_outcome_change_is_a_baseline_change(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(PROJECT_CONFTEST)
    data = scenarios.example()
    data["expect"] = {"verdict": "PASS", "max_answer_chars": 400}
    scenarios.write("scenarios/s.yaml", data)
    pytester.runpytest("--diageval-report", "old.json").assert_outcomes(passed=2)
    data["expect"]["max_answer_chars"] = 10
    scenarios.write("scenarios/s.yaml", data)

    result = pytester.runpytest("--diageval-baseline", "old.json")

    result.assert_outcomes(passed=1, failed=1)
    assert f"  {data['id']}: max_answer_chars pass → FAIL" in result.outlines


def test_a_bad_column_is_a_collection_error_that_says_what_to_change(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.example())
    pytester.makeconftest(
        "def pytest_diageval_report_columns(config):\n    return [('tools', 'x')]\n"
    )
    not_a_column = pytester.runpytest()
    pytester.makeconftest(
        "from pytest_diageval import ReportColumn\n\n"
        "def pytest_diageval_report_columns(config):\n"
        "    return [ReportColumn('score', 'mine', lambda ctx: 1)]\n"
    )
    taken = pytester.runpytest()

    for result in (not_a_column, taken):
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*ERROR collecting scenarios/memory.yaml*"])
    not_a_column.stdout.fnmatch_lines(
        ["*ReportColumnError: pytest_diageval_report_columns returned ('tools', 'x'): each item"
         " must be a pytest_diageval.ReportColumn"]
    )  # fmt: skip
    taken.stdout.fnmatch_lines(
        ["*ReportColumnError: report column 'score' is already a column (built-in: *"
         "; or added twice): choose another name"]
    )  # fmt: skip


def test_a_value_that_raises_is_written_in_its_cell_with_a_warning(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    pytester.makeconftest(
        "from pytest_diageval import ReportColumn\n\n"
        "def pytest_diageval_report_columns(config):\n"
        "    return [ReportColumn('broken', 'broken', lambda ctx: 1 / 0),\n"
        "            ReportColumn('not_json', 'not json', lambda ctx: {1, 2})]\n"
    )
    scenarios.write("scenarios/memory.yaml", scenarios.full())

    result = pytester.runpytest("--diageval-report", "r.json")

    result.assert_outcomes(passed=11, warnings=2)
    row = _terminal_table(scenarios.summary(result))["high-memory-positive"]
    assert row["broken"] == "error: ZeroDivisionError: division by zero"
    assert row["not json"] == "error: TypeError: Object of type set is not JSON serializable"
    result.stdout.fnmatch_lines(
        ["*report column 'broken' of scenario 'high-memory-positive': value(ctx) failed*"]
    )
    (entry,) = json.loads((pytester.path / "r.json").read_text("utf-8"))["scenarios"]
    assert entry["summary"]["columns"]["broken"].startswith("error: ZeroDivisionError")
