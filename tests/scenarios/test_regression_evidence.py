"""The regression scenarios of seed 004's failure modes, checked where no ``expect`` key can look.

004 复现样例 2 and 3: the evidence was in the tool output and in the executor's excerpts, but the
lossy ``tool_trace_summary`` dropped it, so the verifier never saw it. What must hold now is
about the verifier's *input*, which an expectation cannot read (``required_keywords`` only
reads the final answer, which the executor writes itself). These tests run the shipped files
through the plugin's runner and read the verifier request the pipeline actually sent.

004 复现样例 4: a no-hit ``query_logs`` returned ``generic-service`` placeholder logs. The expect
key ``no_evidence`` shows that *some* row is a clean no-hit; here every row is checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from support.scenario_runs import (
    REGRESSION_DIR,
    ScenarioOutcome,
    load_raw,
    run_file,
    script_entries,
    verifier_inputs,
    write_scenario,
)

MEMORY = REGRESSION_DIR / "memory-summary-keeps-trend-and-gc.yaml"
SLOW = REGRESSION_DIR / "slowresponse-summary-keeps-all-slow-requests.yaml"
NO_HIT = REGRESSION_DIR / "placeholder-log-no-hit.yaml"

# The concrete values 004 lists as dropped (复现样例 2 and 3, under "Executor 的
# evidence_excerpt 中包含"), as the recorder's ref texts print them.
MEMORY_METRIC_VALUES = (
    "HighMemoryUsage firing",
    "current=91%",  # 当前内存使用率 91%
    "JVM heap usage 3.8GB/4GB",  # JVM 堆内存 3.8GB/4GB (the alert's description)
    "duration=15m",  # 持续 15m
    "samples=86.2, 87.4, 88.6, 89.8, 91.0",  # 多个采样点
)
MEMORY_LOG_VALUES = (
    "内存使用率过高: 86.2%",
    "15 次 Full GC, 平均耗时 850ms",  # Full GC 15 次，平均 850ms
    "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB",  # the one log the old summary kept
)
SLOW_METRIC_VALUES = (
    "SlowResponse firing, service=user-service, current=P99 4.2s",  # user-service P99=4.2s，firing
    "duration=10m",  # 持续 10m (only the SlowResponse alert lasts 10m in the default world)
)
SLOW_LOG_VALUES = tuple(
    f"GET /api/v1/users/{api} 耗时 {ms}ms"
    for api, ms in (
        ("profile", 3600),
        ("orders", 3750),
        ("profile", 3900),
        ("orders", 4050),
        ("profile", 4200),
    )
)


def _summary_of(verifier_input: dict[str, Any], tool: str) -> str:
    entries = [e for e in verifier_input["tool_trace_summary"] if e["tool_name"] == tool]
    assert len(entries) == 1, f"one {tool} entry expected, got {len(entries)}"
    return str(entries[0]["output_summary"])


def _passed_matches(verifier_input: dict[str, Any]) -> str:
    """Everything the gatekeeper matched on a passing binding (what the verifier may trust)."""
    rows = verifier_input["gatekeeper_result"]["checked_bindings"]
    return "\n".join(str(r["matched_text"]) for r in rows if r["status"] == "pass")


def _excerpts(verifier_input: dict[str, Any]) -> str:
    claims = verifier_input["executor_structured_output"]["claims"]
    return "\n".join(b["evidence_excerpt"] for c in claims for b in c["evidence_bindings"])


def missing_from_view(
    verifier_input: dict[str, Any], tool: str, values: Sequence[str]
) -> dict[str, list[str]]:
    """Per place the verifier reads evidence, the values it does not show (empty = all seen)."""
    places = {
        "output_summary": _summary_of(verifier_input, tool),
        "executor excerpts": _excerpts(verifier_input),
        "gatekeeper matched_text": _passed_matches(verifier_input),
    }
    missing = {place: [v for v in values if v not in text] for place, text in places.items()}
    return {place: values for place, values in missing.items() if values}


@pytest.fixture(scope="module")
def module_monkeypatch() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.fixture(scope="module")
def memory(module_monkeypatch: pytest.MonkeyPatch) -> ScenarioOutcome:
    return run_file(MEMORY, module_monkeypatch)


@pytest.fixture(scope="module")
def slow(module_monkeypatch: pytest.MonkeyPatch) -> ScenarioOutcome:
    return run_file(SLOW, module_monkeypatch)


@pytest.fixture(scope="module")
def no_hit(module_monkeypatch: pytest.MonkeyPatch) -> ScenarioOutcome:
    return run_file(NO_HIT, module_monkeypatch)


@pytest.mark.parametrize("name", ["memory", "slow", "no_hit"])
def test_the_regression_scenario_passes_its_own_expectations(
    name: str, request: pytest.FixtureRequest
) -> None:
    outcome: ScenarioOutcome = request.getfixturevalue(name)
    failures = {key: check.report() for key, check in outcome.checks.items() if not check.passed}
    assert failures == {}
    assert outcome.result.final_verdict == "PASS"


# --------------------------------------------------------------------------- summary loss


def test_verifier_sees_memory_trend_and_full_gc(memory: ScenarioOutcome) -> None:
    (sent,) = verifier_inputs(memory.requests)
    assert sent["gatekeeper_result"]["status"] == "pass"
    assert missing_from_view(sent, "query_metrics", MEMORY_METRIC_VALUES) == {}
    assert missing_from_view(sent, "query_logs", MEMORY_LOG_VALUES) == {}


def test_verifier_sees_slowresponse_alert_among_all_alerts_and_every_slow_request(
    slow: ScenarioOutcome,
) -> None:
    (sent,) = verifier_inputs(slow.requests)
    metrics = _summary_of(sent, "query_metrics")
    # The old summary "did not show the SlowResponse firing alert" of an all-alerts call.
    assert [name in metrics for name in ("HighCPUUsage", "HighMemoryUsage", "SlowResponse")] == [
        True,
        True,
        True,
    ]
    assert missing_from_view(sent, "query_metrics", SLOW_METRIC_VALUES) == {}
    assert missing_from_view(sent, "query_logs", SLOW_LOG_VALUES) == {}


def test_the_view_check_reports_values_a_lossy_run_drops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: limit=1 keeps only the newest memory log, as the old summary did."""
    data = load_raw(MEMORY)
    calls = script_entries(data, "executor")[0]["tool_calls"]
    calls[1]["arguments"]["limit"] = 1
    outcome = run_file(write_scenario(data, tmp_path / "lossy.yaml"), monkeypatch)
    (sent,) = verifier_inputs(outcome.requests)
    missing = missing_from_view(sent, "query_logs", MEMORY_LOG_VALUES)
    assert missing["output_summary"] == ["内存使用率过高: 86.2%", "15 次 Full GC, 平均耗时 850ms"]
    # The alert still carries its samples: that part of the view is intact.
    assert missing_from_view(sent, "query_metrics", MEMORY_METRIC_VALUES) == {}


# --------------------------------------------------------------------------- placeholder logs


def test_every_no_hit_log_query_is_an_empty_successful_no_evidence_row(
    no_hit: ScenarioOutcome,
) -> None:
    rows = [row for row in no_hit.result.invocations if row.tool_name == "query_logs"]
    assert [row.input_params["service"] for row in rows] == [
        "payment-service",
        "payment-service",
        "shipping-service",
    ]
    for row in rows:
        assert row.success is True
        assert row.retrieval_details is not None
        assert row.retrieval_details.evidence_status == "no_evidence"
        assert row.retrieval_details.total == 0
        assert row.retrieval_details.evidence_refs == []
        assert row.output_preview is not None
        output = json.loads(row.output_preview)
        assert (output["success"], output["logs"], output["total"]) == (True, [], 0)


def test_no_placeholder_service_reaches_outputs_summary_or_verifier(
    no_hit: ScenarioOutcome,
) -> None:
    previews = [row.output_preview or "" for row in no_hit.result.invocations]
    (sent,) = verifier_inputs(no_hit.requests)
    summary = sent["tool_trace_summary"]
    assert [(e["evidence_level"], e["no_hit_invocation_count"]) for e in summary] == [
        ("none", 2),
        ("none", 1),
    ]
    verifier_request = json.dumps(sent, ensure_ascii=False)
    assert [text for text in [*previews, verifier_request] if "generic-service" in text] == []
