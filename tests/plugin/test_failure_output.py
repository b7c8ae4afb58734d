"""Reading a failure: a one-line headline with expected and actual, ``--tb`` honoured, the
scenario-wide audit trail once, ``-q`` without the table, and a confusion matrix of the
verdict items that ran (real pytest runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

FORGED = "scenarios/forged.yaml"
HEADLINE = "verdict: expected PASS, got REJECT (gatekeeper reject: evidence.excerpt_mismatch)"


def _expect_line(scenarios: ScenarioDir, key: str) -> int:
    lines = (scenarios.root / FORGED).read_text("utf-8").splitlines()
    start = lines.index("expect:")
    return next(n for n, line in enumerate(lines[start:], start + 1) if f"  {key}:" in line)


def test_the_short_summary_line_carries_expected_and_actual(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")  # pytest then prints the summary line untruncated
    scenarios.write(FORGED, scenarios.forged_citation())

    result = pytester.runpytest("-rf")

    result.assert_outcomes(failed=2)
    assert f"FAILED {FORGED}::forged-citation::verdict - {HEADLINE}" in result.outlines
    assert f"FAILED {FORGED}::forged-citation::answer - answer: expected direct, got degraded" in (
        result.outlines
    )


@pytest.mark.parametrize("workers", [(), ("-p", "xdist", "-n", "1")], ids=["one", "xdist"])
def test_tb_line_prints_one_line_per_failure_at_the_expectation(
    pytester: pytest.Pytester, scenarios: ScenarioDir, workers: tuple[str, ...]
) -> None:
    scenarios.write(FORGED, scenarios.forged_citation())

    if workers:
        result = pytester.runpytest_subprocess("--tb=line", *workers)
    else:
        result = pytester.runpytest("--tb=line")

    result.assert_outcomes(failed=2)
    failures = [line for line in scenarios.failures(result) if not line.startswith("[gw")]
    assert failures == [
        f"{FORGED}:{_expect_line(scenarios, 'verdict')}: {HEADLINE}",
        f"{FORGED}:{_expect_line(scenarios, 'answer')}: answer: expected direct, got degraded",
    ]


def test_tb_short_stops_after_expected_and_actual(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write(FORGED, scenarios.forged_citation())

    result = pytester.runpytest("--tb=short")

    result.assert_outcomes(failed=2)
    failures = scenarios.failures(result)
    verdict = failures[1 : failures.index(next(f for f in failures[1:] if f.startswith("_")))]
    assert verdict == [
        HEADLINE,
        "scenario forged-citation (伪造的告警引用) — expectation 'verdict' failed",
        "expected: PASS",
        "actual:   REJECT (score 0.0)",
    ]
    assert "diageval audit trail" not in result.stdout.str()


def test_tb_no_prints_no_failure_report(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    scenarios.write(FORGED, scenarios.forged_citation())

    result = pytester.runpytest("--tb=no")

    result.assert_outcomes(failed=2)
    output = result.stdout.str()
    assert "expected: PASS" not in output
    assert "diageval audit trail" not in output
    assert "diageval scenarios" in output  # the run's summary stays


def test_quiet_drops_the_table_and_keeps_the_confusion_matrix(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    result = pytester.runpytest("-q")

    result.assert_outcomes(passed=13, failed=2)
    assert scenarios.summary(result) == [
        "verdict confusion matrix (rows: expected, columns: actual):",
        "  expected \\ actual | PASS | LOW_CONFID | REJECT",
        "  PASS              | 1    | 0          | 1",
        "  LOW_CONFID        | 0    | 1          | 0",
    ]


def test_deselected_verdict_items_do_not_count_in_the_confusion_matrix(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    # forged-citation keeps its answer item but not its verdict item.
    result = pytester.runpytest("-k", "not forged or answer")

    result.assert_outcomes(passed=13, failed=1)
    summary = scenarios.summary_without_tokens(result)
    assert (
        "  forged-citation       | PASS       | REJECT     | 0.0   | reject     | 1      | 0/1"
        in (summary)
    )
    assert summary[-3:] == [
        "  expected \\ actual | PASS | LOW_CONFID | REJECT",
        "  PASS              | 1    | 0          | 0",
        "  LOW_CONFID        | 0    | 1          | 0",
    ]


def test_no_verdict_item_selected_says_so(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    result = pytester.runpytest("-k", "forbidden")

    result.assert_outcomes(passed=1)
    assert scenarios.summary(result)[-1] == "verdict confusion matrix: no verdict item ran"
