"""Every expectation key passes on a true expectation and fails on a wrong one (no check is
vacuous), the failure shows expected against actual and the evidence, and the pipeline runs
once per scenario whatever number of its items run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

NODE = "scenarios/memory.yaml::high-memory-positive"


def test_every_key_of_a_true_scenario_passes(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())

    result = pytester.runpytest("-v")

    result.assert_outcomes(passed=11)
    result.stdout.fnmatch_lines([f"{NODE}::{key} PASSED*" for key in scenarios.expect_order])


@dataclass(frozen=True)
class WrongExpectation:
    """One key set to a value the run contradicts, and the lines its failure must show."""

    key: str
    wrong: Any
    expected: str  # the "expected: …" line
    actual: str  # the "actual:   …" line
    evidence: list[str] = field(default_factory=list)  # further lines (fnmatch patterns)


WRONG = [
    WrongExpectation(
        "verdict",
        "REJECT",
        "REJECT",
        "PASS (score 1.0)",
        [
            "round 1: PASS 1.0 -> direct (PASS publishes the evidence the verified claims cite;"
            " the evidence cited by claim-1, rendered by code: the executor's user-facing answer"
            " was not published)",
            "derived: PASS 1.0 | model: PASS 1.0",
            "facts checked:",
            "  fact * | critical | verification    | refs",
            "  order-service 存在 HighMemoryUsage 告警，91% | yes      | direct_evidence"
            " | trace-1[1]",
            "gatekeeper: severity none; failed rules: none",
        ],
    ),
    WrongExpectation(
        "groundedness",
        {"max": 0.5},
        "score <= 0.5",
        "score 1.0",
        ["derived: PASS 1.0 | model: PASS 1.0"],
    ),
    WrongExpectation(
        "rounds",
        2,
        "2",
        "1",
        ["round 1: PASS 1.0 -> direct *"],
    ),
    WrongExpectation(
        "answer",
        "disclaimer",
        "disclaimer",
        "direct",
        ["final answer: 已确认（以下由工具返回的证据逐条呈现，不含模型措辞）：*"],
    ),
    WrongExpectation(
        "parse_status",
        "failed",
        "failed",
        "valid",
        ["round 1: valid (parsed executor evidence contract)"],
    ),
    WrongExpectation(
        "gatekeeper",
        {"severity": "reject", "failed_rules_include": ["evidence.excerpt_mismatch"]},
        "severity=reject, failed_rules_include=[evidence.excerpt_mismatch]",
        "severity=none, failed_rules=[], warnings=[]",
        [
            "severity: expected reject, got none",
            "failed_rules_include: not present: evidence.excerpt_mismatch",
            "checked bindings: 2 (0 failed)",
        ],
    ),
    WrongExpectation(
        "forbidden_keywords",
        ["内存泄漏已确认", "heapdump", "highmemoryusage 告警"],
        "none of [内存泄漏已确认, heapdump, highmemoryusage 告警]",
        "found highmemoryusage 告警",
        [],
    ),
    WrongExpectation(
        "required_keywords",
        ["HighMemoryUsage", "OutOfMemoryError"],
        "all of [HighMemoryUsage, OutOfMemoryError]",
        "missing OutOfMemoryError",
        [
            "'HighMemoryUsage' found: …order-service： - 告警 «HighMemoryUsage»：触发中，"
            "级别 critical，当前 …",
            "final answer: 已确认（以下由工具返回的证据逐条呈现，不含模型措辞）：*",
        ],
    ),
    WrongExpectation(
        "claims",
        {"min": 2, "types": ["negative_observation"]},
        "min=2, types=[negative_observation]",
        "1 claim(s) in round 1, types: observation",
        [
            "1 claims < min 2",
            "type not allowed: claim-1 is observation",
            "  claim   | type        | support | bindings | text",
        ],
    ),
    WrongExpectation(
        "no_evidence",
        [{"tool": "query_logs", "evidence_status": "no_evidence", "total": 0}],
        "[tool=query_logs, evidence_status=no_evidence, total=0]",
        "no matching row for tool=query_logs, evidence_status=no_evidence, total=0",
        [
            "tool=query_logs, evidence_status=no_evidence, total=0: no matching row among:",
            "  row | round | evidence_status | success | total | input",
            "  #2  | 1     | supported       | true    | 5     |"
            ' {"keywords":["内存"],"service":"order-service"}',
        ],
    ),
    WrongExpectation(
        "tool_calls",
        {"exclude": ["query_logs"], "max": 1},
        "exclude=[query_logs], max=1",
        "2 call(s): query_metrics, query_logs",
        [
            "called but excluded: query_logs",
            "2 calls > max 1",
            'round 1: query_metrics {"service":"order-service"} -> invocation #1',
        ],
    ),
]


def test_the_wrong_values_cover_every_key(scenarios: ScenarioDir) -> None:
    assert [case.key for case in WRONG] == list(scenarios.expect_order)


@pytest.mark.parametrize("case", WRONG, ids=[case.key for case in WRONG])
def test_a_wrong_expectation_fails_exactly_its_item(
    pytester: pytest.Pytester, scenarios: ScenarioDir, case: WrongExpectation
) -> None:
    data = scenarios.full()
    data["expect"][case.key] = case.wrong
    scenarios.write("scenarios/memory.yaml", data)

    result = pytester.runpytest("-v")

    result.assert_outcomes(passed=10, failed=1)
    failed = [line for line in result.outlines if " FAILED" in line]
    assert failed == [f"{NODE}::{case.key} FAILED{failed[0].split('FAILED', 1)[1]}"]
    header = (
        f"scenario high-memory-positive (HighMemoryUsage 证据存在时 PASS)"
        f" — expectation '{case.key}' failed"
    )
    result.stdout.fnmatch_lines(
        [header, f"expected: {case.expected}", f"actual:   {case.actual}", *case.evidence],
        consecutive=False,
    )
    assert f"actual:   {case.actual}" in result.outlines  # exactly, not as a pattern


def test_forbidden_keyword_report_says_which_where_and_around(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.full()
    data["expect"]["forbidden_keywords"] = ["内存使用率", "heapdump"]
    scenarios.write("scenarios/memory.yaml", data)

    result = pytester.runpytest()

    result.assert_outcomes(passed=10, failed=1)
    failures = scenarios.failures(result)
    assert failures.count("actual:   found 内存使用率") == 1
    claim = (
        "'内存使用率' in claim claim-1 (round 1): … HighMemoryUsage 告警，«内存使用率»达到 91%。"
    )
    answer = (
        "'内存使用率' in final answer: …07-08 11:17:00 WARN：«内存使用率»过高: 91.0%, JVM堆内存: 3…"
    )
    assert claim in failures
    assert answer in failures  # the cited log, rendered: the claim's words are not published
    assert "scanned 1 claim(s) over 1 round(s) and the final answer (285 chars)" in failures


def test_in_ci_the_short_summary_carries_the_whole_headline_after_the_failures_section(
    pytester: pytest.Pytester, scenarios: ScenarioDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest never truncates the short summary in CI; the line is the headline (expectation,
    # expected, actual), not the whole report a second time.
    monkeypatch.setenv("CI", "true")
    data = scenarios.full()
    data["expect"]["forbidden_keywords"] = ["内存使用率"]
    scenarios.write("scenarios/memory.yaml", data)

    result = pytester.runpytest()

    result.assert_outcomes(passed=10, failed=1)
    # The short summary line is the one-line headline, whole (CI never truncates it).
    assert result.outlines.count("actual:   found 内存使用率") == 1
    result.stdout.fnmatch_lines(
        [
            "*short test summary info*",
            f"FAILED {NODE}::forbidden_keywords - forbidden_keywords: expected none of"
            " [内存使用率], got found 内存使用率",
            "*= * =*",
        ]
    )


def test_a_verdict_list_passes_when_the_verdict_is_among_it(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.full()
    data["expect"] = {"verdict": ["LOW_CONFID", "PASS"]}
    scenarios.write("scenarios/memory.yaml", data)
    wrong = scenarios.full()
    wrong["id"] = "wrong-list"
    wrong["expect"] = {"verdict": ["LOW_CONFID", "REJECT"]}
    scenarios.write("scenarios/wrong.yaml", wrong)

    result = pytester.runpytest("-v")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"{NODE}::verdict PASSED*",
            "scenarios/wrong.yaml::wrong-list::verdict FAILED*",
            "expected: one of LOW_CONFID, REJECT",
            "actual:   PASS (score 1.0)",
        ],
        consecutive=False,
    )


# --------------------------------------------------------------------------- run once


def test_the_pipeline_runs_once_per_scenario_for_all_its_items(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.count_runs()
    scenarios.write("scenarios/memory.yaml", scenarios.full())  # 11 items
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())  # 2 items

    result = pytester.runpytest("-p", "no:randomly")

    result.assert_outcomes(passed=13)
    assert sorted(scenarios.runs()) == [
        ("high-memory-positive", "main"),
        ("memory-low-confidence", "main"),
    ]


def test_collect_only_runs_no_scenario(pytester: pytest.Pytester, scenarios: ScenarioDir) -> None:
    scenarios.count_runs()
    scenarios.write("scenarios/memory.yaml", scenarios.full())

    result = pytester.runpytest("--collect-only", "-q")

    result.stdout.fnmatch_lines(["11 tests collected in *"])
    assert scenarios.runs() == []
    assert "diageval scenarios" not in result.stdout.str()


def test_a_scenario_whose_items_are_not_selected_does_not_run(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.count_runs()
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    scenarios.write("scenarios/low.yaml", scenarios.low_confidence())

    result = pytester.runpytest("-k", "tool_calls or claims")

    result.assert_outcomes(passed=2, deselected=11)
    assert scenarios.runs() == [("high-memory-positive", "main")]


def test_a_run_that_stops_fails_every_item_with_its_error(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.count_runs()
    data = scenarios.full()
    data["llm"]["script"].pop()  # the verifier's answer is missing from the script
    scenarios.write("scenarios/memory.yaml", data)

    result = pytester.runpytest()

    result.assert_outcomes(failed=11)
    stopped = [line for line in scenarios.failures(result) if "did not run to the end" in line]
    assert len(stopped) == 11
    result.stdout.fnmatch_lines(
        ["ScriptExhaustedError: scripted model: request 4 from stage 'verifier'*"]
    )
    assert scenarios.runs() == [("high-memory-positive", "main")]
    assert scenarios.summary_without_tokens(result)[:2] == [
        "  scenario             | expected | actual | score | gatekeeper | rounds | checks",
        "  high-memory-positive | PASS     | —      | —     | —          | 0      | 0/11",
    ]


def test_answer_forbidden_keywords_scans_the_final_answer_only(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    data = scenarios.full()
    # HighMemoryUsage is in the claim and the answer; "91%" too; 堆转储 in neither.
    data["expect"] = {"answer_forbidden_keywords": ["堆转储"]}
    scenarios.write("scenarios/ok.yaml", data)
    bad = scenarios.full()
    bad["id"] = "answer-leak"
    bad["expect"] = {"answer_forbidden_keywords": ["堆转储", "highmemoryusage"]}
    scenarios.write("scenarios/bad.yaml", bad)

    result = pytester.runpytest()

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "expected: none of [堆转储, highmemoryusage] in the final answer",
            "actual:   found highmemoryusage",
            "'highmemoryusage' in final answer: *«HighMemoryUsage»*",
        ]
    )
