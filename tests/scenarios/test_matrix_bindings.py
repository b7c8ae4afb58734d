"""Facets of the acceptance-matrix scenarios that no ``expect`` key can show, checked on the run.

Seed 004's matrix asks for things about *which evidence a claim binds* and *what a tool
returned*, while the expectation keys see claims, the answer, the gatekeeper summary and row
counts. Each test runs the shipped scenario file through the plugin's runner and reads the
gatekeeper's checked bindings or the stored tool rows:

* HighMemoryUsage positive: the one claim binds the alert (``$.alerts[i]`` of query_metrics)
  and the log (``$.logs[i]`` of query_logs), and every binding passed;
* SlowResponse positive: one claim binds the SlowResponse alert and the slow-request logs;
* HikariCP positive: query_logs returned order-service HikariCP logs only, and the claim's
  passing bindings quote ``HikariPool`` and ``active=50/50``;
* HikariCP negative: every query_logs output is ``"logs": []`` and nothing names generic-service.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from pytest_diageval.core.contract.contracts import CheckedBinding
from support.scenario_runs import MATRIX_DIR, ScenarioOutcome, run_file

_PATH_KIND = re.compile(r"^\$\.(alerts|logs|evidence_blocks)\[\d+\]$")


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, ScenarioOutcome]]:
    with pytest.MonkeyPatch.context() as patch:
        yield {
            name: run_file(MATRIX_DIR / f"{name}.yaml", patch)
            for name in (
                "02-highmemory-positive",
                "03-slowresponse-positive",
                "04-hikaricp-positive",
                "05-hikaricp-negative",
            )
        }


def _claim_bindings(outcome: ScenarioOutcome, claim_id: str) -> list[CheckedBinding]:
    rows = outcome.result.rounds[-1].gatekeeper.checked_bindings
    return [row for row in rows if row.claim_id == claim_id]


def _kinds(rows: list[CheckedBinding]) -> set[tuple[str | None, str]]:
    """``(tool, alerts|logs|evidence_blocks)`` of each binding, e.g. ``("query_logs", "logs")``."""
    kinds = set()
    for row in rows:
        found = _PATH_KIND.match(row.raw_path or "")
        assert found is not None, f"malformed raw_path {row.raw_path!r}"
        kinds.add((row.tool_name, found.group(1)))
    return kinds


def test_memory_claim_binds_the_alert_and_the_log(runs: dict[str, ScenarioOutcome]) -> None:
    outcome = runs["02-highmemory-positive"]
    contract = outcome.result.rounds[-1].executor_contract
    assert contract is not None
    assert [(c.claim_id, c.claim_type) for c in contract.claims] == [("claim-1", "observation")]
    rows = _claim_bindings(outcome, "claim-1")
    assert [row.status for row in rows] == ["pass"] * 3
    assert _kinds(rows) == {("query_metrics", "alerts"), ("query_logs", "logs")}
    assert [row.source_invocation_id for row in rows] == [1, 1, 2]


def test_slowresponse_claim_binds_the_alert_and_every_slow_request_log(
    runs: dict[str, ScenarioOutcome],
) -> None:
    rows = _claim_bindings(runs["03-slowresponse-positive"], "claim-1")
    assert {row.status for row in rows} == {"pass"}
    assert _kinds(rows) == {("query_metrics", "alerts"), ("query_logs", "logs")}
    alert = [row.matched_text for row in rows if row.tool_name == "query_metrics"]
    assert alert == ["SlowResponse firing, service=user-service, current=P99 4.2s,"
                     " threshold=P99 3s, duration=10m"]  # fmt: skip
    logs = [row.raw_path for row in rows if row.tool_name == "query_logs"]
    assert logs == [f"$.logs[{i}]" for i in range(5)]


def test_hikaricp_positive_hits_real_order_service_pool_logs(
    runs: dict[str, ScenarioOutcome],
) -> None:
    outcome = runs["04-hikaricp-positive"]
    (row,) = outcome.result.invocations
    assert row.output_preview is not None
    logs = json.loads(row.output_preview)["logs"]
    assert [log["service"] for log in logs] == ["order-service", "order-service"]
    assert "generic-service" not in row.output_preview
    quoted = " ".join(r.matched_text or "" for r in _claim_bindings(outcome, "claim-1"))
    assert [r.status for r in _claim_bindings(outcome, "claim-1")] == ["pass", "pass"]
    assert "HikariPool-1 - Connection is not available" in quoted
    assert "active=50/50" in quoted


def test_hikaricp_negative_outputs_are_empty_and_placeholder_free(
    runs: dict[str, ScenarioOutcome],
) -> None:
    outcome = runs["05-hikaricp-negative"]
    previews = [row.output_preview or "" for row in outcome.result.invocations]
    assert [json.loads(p)["logs"] for p in previews] == [[], []]
    assert not any("generic-service" in p for p in previews)
    (entry,) = outcome.result.rounds[-1].tool_trace_summary
    assert (entry.evidence_level, entry.no_hit_invocation_count) == ("none", 2)
    # The negative claim cites both searches' empty results: the gatekeeper passes the
    # collection path of a completed no-hit and describes the empty search.
    rows = outcome.result.rounds[-1].gatekeeper.checked_bindings
    assert [(r.source_invocation_id, r.raw_path, r.status) for r in rows] == [
        (1, "$.logs", "pass"),
        (2, "$.logs", "pass"),
    ]
    assert all("inventory-service" in (r.matched_text or "") for r in rows)
    (ceiling,) = outcome.result.rounds[-1].decision.claim_ceilings
    assert (ceiling.ceiling, ceiling.bound_invocation_ids) == ("direct_evidence", [1, 2])
