"""The terminal table of scenario rows: aligned (wide characters count two), one line at a time."""

from __future__ import annotations

from collections.abc import Iterator

from pytest_diageval.harness.checks.evidence_lines import streamed_table, table
from pytest_diageval.harness.report.reporter import ScenarioSummaries


def _payload(scenario_id: str, verdict: str, score: float) -> dict[str, object]:
    usage = {"prompt_tokens": 812, "completion_tokens": 47, "total_tokens": 859, "requests": 3}
    return {
        "scenario": scenario_id,
        "key": "verdict",
        "summary": {
            "id": scenario_id,
            "expected_verdict": "PASS",
            "verdict": verdict,
            "score": score,
            "severity": "none",
            "rounds": 1,
            "error": None,
            "usage": {"total": usage, "stages": {"planner": usage}},
        },
    }


def test_the_scenario_table_is_sorted_aligned_and_made_line_by_line() -> None:
    summaries = ScenarioSummaries(keep_results=False)
    summaries.add(_payload("订单-内存", "LOW_CONFID", 0.6), passed=False)
    summaries.add(_payload("auth-ok", "PASS", 1.0), passed=True)

    lines = summaries.table_lines()

    assert isinstance(lines, Iterator)  # written as made, never a list of thousands
    assert list(lines) == [
        "  scenario  | expected | actual     | score | gatekeeper | rounds | tokens | checks",
        "  auth-ok   | PASS     | PASS       | 1.0   | none       | 1      | 812+47 | 1/1",
        "  订单-内存 | PASS     | LOW_CONFID | 0.6   | none       | 1      | 812+47 | 0/1",
    ]


def test_a_streamed_table_reads_its_rows_twice_and_equals_the_whole_table() -> None:
    rows = [["a", "宽字符", "x"], ["bbbb", "c", "yy"]]
    calls = []

    def make_rows() -> Iterator[list[str]]:
        calls.append(1)
        return iter(rows)

    streamed = list(streamed_table(["h1", "h2", "h3"], make_rows))

    assert len(calls) == 2  # widths, then lines
    assert streamed == table(["h1", "h2", "h3"], rows)
    assert streamed == [
        "  h1   | h2     | h3",
        "  a    | 宽字符 | x",
        "  bbbb | c      | yy",
    ]
