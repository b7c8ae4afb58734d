"""``--diageval-html`` and ``--diageval-baseline`` in real pytest runs: the page agrees with the
terminal summary and the JSON report, is the same under xdist, and a baseline marks what a
change moved (in the terminal and on the page)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from support.html_page import Element, parse_html
from support.shipped import shipped_scenario_paths

if TYPE_CHECKING:
    from conftest import ScenarioDir

LEAN = ("-p", "no:hypothesispytest", "--assert=plain")
CHANGES = [
    "changes since baseline old.json: 1 of 3 compared scenarios changed",
    "  memory-low-confidence: verdict LOW_CONFID → PASS; score 0.6 → 1.0;"
    " answer kind disclaimer → direct; final answer changed",
]


def _changes_section(lines: list[str]) -> list[str]:
    """The ``diageval changes since baseline`` section, up to the next section."""
    start = lines.index(next(line for line in lines if "diageval changes since baseline" in line))
    section = []
    for line in lines[start + 1 :]:
        if line.startswith("="):
            break
        section.append(line)
    return section


def _page(path: Path) -> Element:
    return parse_html(path.read_text("utf-8"))


def _rows(page: Element) -> list[Element]:
    return page.by_id("scenario-table").find_all("tr", "scenario-row")


def _terminal_cells(lines: list[str]) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("|")] for line in lines]


def test_the_page_shows_what_the_terminal_summary_shows(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    result = pytester.runpytest("--diageval-html", "out/report.html")

    result.assert_outcomes(passed=13, failed=2)
    summary = scenarios.summary(result)
    assert summary[-1] == "diageval html report: out/report.html"
    page = _page(pytester.path / "out" / "report.html")
    table_rows = _terminal_cells(summary[1:4])
    page_rows = [row.cells() for row in _rows(page)]
    # scenario | expected | actual | score | gatekeeper | rounds | tokens | checks
    assert [[row[1], *row[4:11]] for row in page_rows] == table_rows
    matrix = _terminal_cells(summary[6:9])
    assert [row.cells() for row in page.by_id("confusion-matrix").find_all("tr")] == matrix
    assert page.by_id("totals").text() == "3 scenarios · 1 failing · checks 13/15 passed"
    sections = [e.attrs["id"] for e in page.find_all("section", "scenario")]
    assert sections == [
        "scenario-forged-citation",
        "scenario-high-memory-positive",
        "scenario-memory-low-confidence",
    ]


def test_the_page_and_the_json_report_hold_the_same_failed_expectations(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    pytester.runpytest("--diageval-report", "r.json", "--diageval-html", "r.html")

    report = json.loads((pytester.path / "r.json").read_text("utf-8"))
    forged = report["scenarios"][0]
    assert forged["id"] == "forged-citation"
    failed = [e for e in forged["check_results"] if e["outcome"] == "failed"]
    assert [(e["name"], e["expected"], e["actual"]) for e in failed] == [
        ("verdict", "PASS", "REJECT (score 0.0)"),
        ("answer", "direct", "degraded"),
    ]
    section = _page(pytester.path / "r.html").by_id("scenario-forged-citation")
    (table,) = section.find_all("div", "failed-expectations")[0].find_all("table")
    assert [row.cells()[:3] for row in table.find_all("tr")[1:]] == [
        ["verdict", "PASS", "REJECT (score 0.0)"],
        ["answer", "direct", "degraded"],
    ]
    assert "evidence.excerpt_mismatch" in table.find_all("pre")[0].text()


def test_a_scenario_that_did_not_run_shows_why(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.full()
    data["llm"]["script"].pop()  # the verifier's answer is missing from the script
    scenarios.write("scenarios/memory.yaml", data)

    pytester.runpytest("--diageval-html", "r.html").assert_outcomes(failed=11)

    page = _page(pytester.path / "r.html")
    (row,) = _rows(page)
    assert row.cells()[5] == "—"
    assert row.attrs["data-failing"] == "1"
    section = page.by_id("scenario-high-memory-positive")
    (error,) = section.find_all("div", "error-box")
    stopped = "the scenario did not run to the end: ScriptExhaustedError: scripted model: request 4"
    assert error.text().startswith(stopped)
    (table,) = section.find_all("div", "failed-expectations")[0].find_all("table")
    failed = [row.cells() for row in table.find_all("tr")[1:]]
    assert [cells[0] for cells in failed] == list(scenarios.expect_order)
    assert all(cells[2].startswith(stopped) for cells in failed)
    assert failed[0][1] == "PASS"


def test_two_workers_write_the_same_page_as_one_process(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    pytester.runpytest("--diageval-html", "single.html").assert_outcomes(passed=13, failed=2)
    parallel = pytester.runpytest_subprocess(*LEAN, "-n", "2", "--diageval-html", "parallel.html")

    parallel.assert_outcomes(passed=13, failed=2)
    single = (pytester.path / "single.html").read_text("utf-8")
    assert (pytester.path / "parallel.html").read_text("utf-8") == single
    assert len(_rows(parse_html(single))) == 3


def _now_supported(scenarios: ScenarioDir) -> None:
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence_now_supported())


def test_a_baseline_marks_a_moved_verdict_in_the_terminal_and_on_the_page(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    pytester.runpytest("--diageval-report", "old.json").assert_outcomes(passed=13, failed=2)
    _now_supported(scenarios)

    result = pytester.runpytest("--diageval-html", "new.html", "--diageval-baseline", "old.json")

    result.assert_outcomes(passed=11, failed=4)
    assert _changes_section(result.outlines) == [*CHANGES, "diageval html report: new.html"]
    page = _page(pytester.path / "new.html")
    changed = {row.cells()[1]: row.attrs["data-changed"] for row in _rows(page)}
    assert changed == {
        "forged-citation": "0",
        "high-memory-positive": "0",
        "memory-low-confidence changed": "1",
    }
    (row,) = [row for row in _rows(page) if row.attrs["data-changed"] == "1"]
    assert row.cells()[5:7] == ["PASS was LOW_CONFID", "1.0 was 0.6"]


def test_a_baseline_alone_adds_the_terminal_section_only(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()
    pytester.runpytest("--diageval-report", "old.json")
    _now_supported(scenarios)

    result = pytester.runpytest("--diageval-baseline", "old.json")

    assert _changes_section(result.outlines) == CHANGES
    assert sorted(p.name for p in pytester.path.glob("*.html")) == []


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, ": cannot read the file"),
        ('{"scenarios": [', ":1:16: not JSON"),
        ('{"version": 1}', ": not a diageval report"),
    ],
)
def test_an_unusable_baseline_stops_the_run_before_any_scenario(
    pytester: pytest.Pytester, scenarios: ScenarioDir, content: str | None, problem: str
) -> None:
    scenarios.write_trio()
    scenarios.count_runs()
    if content is not None:
        (pytester.path / "old.json").write_text(content, encoding="utf-8")

    result = pytester.runpytest("--diageval-baseline", "old.json")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: --diageval-baseline old.json{problem}" in str(result.stderr)
    assert scenarios.runs() == []


def test_the_shipped_suite_writes_a_page_with_every_scenario(pytester: pytest.Pytester) -> None:
    files = shipped_scenario_paths()  # named one by one: a user's own scenarios/mine/ is not run

    result = pytester.runpytest(
        *map(str, files), "-p", "no:cacheprovider", "--diageval-html", "r.html"
    )

    assert result.ret == pytest.ExitCode.OK
    page = _page(pytester.path / "r.html")
    rows = _rows(page)
    assert len(rows) == len(files) == len(page.find_all("section", "scenario"))
    assert all(row.attrs["data-failing"] == "0" for row in rows)
    assert page.by_id("totals").text().startswith(f"{len(files)} scenarios · 0 failing")


def test_a_mutation_run_refuses_the_review_options(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    result = pytester.runpytest("--diageval-mutate", "--diageval-html", "r.html")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--diageval-mutate runs mutants): drop them from this command" in str(result.stderr)
    assert not (pytester.path / "r.html").exists()
