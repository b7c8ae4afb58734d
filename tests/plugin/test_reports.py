"""Reports: the terminal summary and confusion matrix, the ``--diageval-report`` JSON (content
and stability), JUnit XML properties, and the failure report of a failing item."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import ScenarioDir

SUMMARY = [
    "  scenario              | expected   | actual     | score | gatekeeper | rounds | checks",
    "  forged-citation       | PASS       | REJECT     | 0.0   | reject     | 1      | 0/2",
    "  high-memory-positive  | PASS       | PASS       | 1.0   | none       | 1      | 11/11",
    "  memory-low-confidence | LOW_CONFID | LOW_CONFID | 0.6   | none       | 1      | 2/2",
    "",
    "verdict confusion matrix (rows: expected, columns: actual):",
    "  expected \\ actual | PASS | LOW_CONFID | REJECT",
    "  PASS              | 1    | 0          | 1",
    "  LOW_CONFID        | 0    | 1          | 0",
]


def _report(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def _short(check: dict[str, Any]) -> dict[str, Any]:
    return {key: check[key] for key in ("name", "outcome", "message")}


def test_terminal_summary_has_one_row_per_scenario_and_the_confusion_matrix(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    result = pytester.runpytest()

    result.assert_outcomes(passed=13, failed=2)
    assert scenarios.summary_without_tokens(result) == SUMMARY


def test_json_report_holds_every_scenario_with_its_full_audit_trail(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    memory, low, forged = scenarios.write_trio()

    result = pytester.runpytest("--diageval-report", "out/report.json")

    result.assert_outcomes(passed=13, failed=2)
    report = _report(pytester.path / "out" / "report.json")
    assert report["version"] == 1
    by_id = {entry["id"]: entry for entry in report["scenarios"]}
    assert list(by_id) == ["forged-citation", "high-memory-positive", "memory-low-confidence"]
    assert {key: entry["file"] for key, entry in by_id.items()} == {
        "forged-citation": forged.relative_to(pytester.path).as_posix(),
        "high-memory-positive": memory.relative_to(pytester.path).as_posix(),
        "memory-low-confidence": low.relative_to(pytester.path).as_posix(),
    }
    usage = by_id["forged-citation"]["summary"].pop("usage")
    assert sorted(usage["stages"]) == ["executor", "planner", "verifier"]
    assert usage["total"]["requests"] == 4
    assert usage["total"]["total_tokens"] == sum(
        stage["total_tokens"] for stage in usage["stages"].values()
    )
    scope = by_id["forged-citation"]["summary"].pop("scope")
    assert (scope["services"], scope["alerts"], scope["narrow"]) == (
        ["order-service"],
        ["HighMemoryUsage"],
        True,
    )
    assert by_id["forged-citation"]["summary"] == {
        "set_aside": [],
        "withheld_plan_steps": [],
        "refused_calls": [],
        "id": "forged-citation",
        "expected_verdict": "PASS",
        "verdict": "REJECT",
        "score": 0.0,
        "severity": "reject",
        "rounds": 1,
        "error": None,
    }
    assert by_id["forged-citation"]["checks"] == {"passed": 0, "failed": 2}
    # name, outcome and message; expected, actual and the evidence lines ride along for the
    # HTML report (tests/plugin/test_html_report.py).
    assert [_short(c) for c in by_id["forged-citation"]["check_results"]] == [
        {
            "name": "verdict",
            "outcome": "failed",
            "message": "verdict: expected PASS, got REJECT"
            " (gatekeeper reject: evidence.excerpt_mismatch)",
        },
        {"name": "answer", "outcome": "failed", "message": "answer: expected direct, got degraded"},
    ]
    assert [c["name"] for c in by_id["high-memory-positive"]["check_results"]] == list(
        scenarios.expect_order
    )
    assert [(c["expected"], c["actual"]) for c in by_id["forged-citation"]["check_results"]] == [
        ("PASS", "REJECT (score 0.0)"),
        ("direct", "degraded"),
    ]
    assert _short(by_id["high-memory-positive"]["check_results"][2]) == {
        "name": "rounds",
        "outcome": "passed",
        "message": "rounds: expected 1, got 1",
    }
    assert by_id["high-memory-positive"]["checks"] == {"passed": 11, "failed": 0}
    assert by_id["memory-low-confidence"]["tags"] == ["memory", "negative"]

    result_json = by_id["high-memory-positive"]["result"]
    assert result_json["final_verdict"] == "PASS"
    assert result_json["answer_kind"] == "direct"
    assert result_json["final_answer"].splitlines()[:3] == [
        "已确认（以下由工具返回的证据逐条呈现，不含模型措辞）：",
        "order-service：",
        "- 告警 HighMemoryUsage：触发中，级别 critical，当前 91%，阈值 85%，持续 15m，"
        "采样 86.2, 87.4, 88.6, 89.8, 91.0（来源：query_metrics #1 $.alerts[0]）",
    ]
    (round_1,) = result_json["rounds"]
    assert round_1["plan"] == {"plan": "查询告警与日志", "steps": ["query_metrics", "query_logs"]}
    assert [(c["name"], c["invocation_id"]) for c in round_1["tool_calls"]] == [
        ("query_metrics", 1),
        ("query_logs", 2),
    ]
    # Tool calls with their evidence refs: the cited log line is among invocation 2's refs.
    refs = {
        ref["raw_path"]: ref["text"]
        for ref in result_json["invocations"][1]["retrieval_details"]["evidence_refs"]
    }
    assert "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB" in refs["$.logs[4]"]
    # Gatekeeper rows, facts checked and the derived verdict.
    rows = [(b["raw_path"], b["status"]) for b in round_1["gatekeeper"]["checked_bindings"]]
    assert rows == [("$.alerts[0]", "pass"), ("$.logs[4]", "pass")]
    decision = round_1["decision"]
    assert (decision["derived_verdict"], decision["derived_score"]) == ("PASS", 1.0)
    assert [(f["claim_id"], f["verification"]) for f in decision["facts"]] == [
        ("claim-1", "direct_evidence")
    ]

    forged_round = by_id["forged-citation"]["result"]["rounds"][0]
    (failed_row,) = [
        b for b in forged_round["gatekeeper"]["checked_bindings"] if b["status"] == "fail"
    ]
    assert failed_row["rule"] == "evidence.excerpt_mismatch"
    assert failed_row["evidence_excerpt"] == scenarios.forged_excerpt
    assert forged_round["decision"]["model_verdict"] == "PASS"
    assert forged_round["decision"]["derived_verdict"] == "REJECT"
    assert by_id["memory-low-confidence"]["result"]["final_answer"].startswith("【低置信度提示】")


def test_json_report_of_two_runs_differs_only_in_tool_durations(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    pytester.runpytest("--diageval-report", "first.json").assert_outcomes(passed=13, failed=2)
    pytester.runpytest("--diageval-report", "second.json").assert_outcomes(passed=13, failed=2)

    first = _report(pytester.path / "first.json")
    second = _report(pytester.path / "second.json")
    assert scenarios.without_durations(first) == scenarios.without_durations(second)
    # Sorted keys, two-space indent: a diff of two files shows only what changed.
    text = (pytester.path / "first.json").read_text("utf-8")
    assert text == json.dumps(first, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


SLOW_TOOLS_CONFTEST = """
import time

import pytest
from pytest_diageval.core.evidence.tools import Toolbox

_patch = pytest.MonkeyPatch()


def pytest_configure(config):
    original = Toolbox.call

    def slow_call(self, name, arguments):
        time.sleep(0.02)  # a slower machine, a busier CI worker
        return original(self, name, arguments)

    _patch.setattr(Toolbox, "call", slow_call)


def pytest_unconfigure(config):
    _patch.undo()
"""


def test_json_report_does_not_depend_on_how_long_tools_take(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())
    pytester.runpytest("--diageval-report", "fast.json").assert_outcomes(passed=11)
    scenarios.write_text("conftest.py", SLOW_TOOLS_CONFTEST)
    pytester.runpytest("--diageval-report", "slow.json").assert_outcomes(passed=11)

    fast = (pytester.path / "fast.json").read_text("utf-8")
    slow = (pytester.path / "slow.json").read_text("utf-8")
    assert fast == slow


def test_junit_xml_carries_verdict_score_severity_and_rounds_per_item(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write_trio()

    result = pytester.runpytest("--junitxml", "junit.xml")

    result.assert_outcomes(passed=13, failed=2)
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    properties = {
        (case.get("classname"), case.get("name")): {
            prop.get("name"): prop.get("value") for prop in case.iter("property")
        }
        for case in cases
    }
    assert len(properties) == 15
    forged = {
        "diageval_verdict": "REJECT",
        "diageval_score": "0.0",
        "diageval_severity": "reject",
        "diageval_rounds": "1",
    }
    assert properties[("scenarios.forged.yaml.forged-citation", "verdict")] == forged
    assert properties[("scenarios.forged.yaml.forged-citation", "answer")] == forged
    low = properties[("scenarios.low.yaml.memory-low-confidence", "answer")]
    assert low["diageval_verdict"] == "LOW_CONFID"
    assert low["diageval_score"] == "0.6"
    memory_items = [
        key for key in properties if key[0] == "scenarios.memory.yaml.high-memory-positive"
    ]
    assert len(memory_items) == 11
    assert all(properties[key]["diageval_verdict"] == "PASS" for key in memory_items)


def test_a_failing_verdict_shows_the_decision_and_the_audit_trail_section(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/forged.yaml", scenarios.forged_citation())

    result = pytester.runpytest()

    result.assert_outcomes(failed=2)
    verdict_failure = [
        "scenario forged-citation (伪造的告警引用) — expectation 'verdict' failed",
        "expected: PASS",
        "actual:   REJECT (score 0.0)",
        "round 1: REJECT 0.0 -> degraded *",
        "derived: REJECT 0.0 | model: PASS 1.0",
        # The forged alert binding failed; the log it still cites never shows the alert.
        "override fact.claim_ceiling: direct_evidence -> no_evidence *claim.entity_not_cited*",
        "override gatekeeper.reject: LOW_CONFID -> REJECT *",
        "facts checked:",
        "  fact * | critical | verification | refs",
        "  order-service 存在 HighMemoryUsage 告警，91% | yes      | no_evidence  | trace-1[1]",
        "gatekeeper: severity reject; failed rules: evidence.excerpt_mismatch",
        "*- Captured diageval audit trail call -*",
        "session forged-citation: status=completed",
        "round 1:",
        "  plan: 查询告警与日志",
        '  tool query_metrics {"service": "order-service"} -> #1',
        '  tool query_logs {"keywords": ["内存"], "service": "order-service"} -> #2',
        "  executor output: valid *",
        "  failed bindings:",
        "    claim   | raw_path    | rule                      | message",
        # fnmatch: "[[]" is a literal "[".
        "    claim-1 | $.alerts[[]0] | evidence.excerpt_mismatch | claim claim-1, binding 1: *",
        "  route: degraded *",
        "final answer (degraded):",
        "  【无法可靠回答】*",
    ]
    result.stdout.fnmatch_lines(verdict_failure, consecutive=False)
    sections = [line for line in result.outlines if "Captured diageval audit trail" in line]
    assert len(sections) == 1  # once per scenario, on its first failing item
    assert (
        "audit trail: shown once, under scenarios/forged.yaml::forged-citation::verdict"
        in result.outlines
    )


def test_passing_items_show_no_audit_trail(
    pytester: pytest.Pytester, scenarios: ScenarioDir
) -> None:
    scenarios.write("scenarios/memory.yaml", scenarios.full())

    result = pytester.runpytest("-rA")

    result.assert_outcomes(passed=11)
    assert "diageval audit trail" not in result.stdout.str()
