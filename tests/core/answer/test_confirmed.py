"""The confirmed part of an answer (core/answer/confirmed.py): items rendered from their own
fields, merged, grouped, screened; searches that found nothing from their own arguments."""

from __future__ import annotations

from typing import Any

from pytest_diageval.core.answer import wording
from pytest_diageval.core.answer.confirmed import render_confirmed
from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    GatekeeperResult,
    RetrievalDetails,
    ToolInvocation,
)
from pytest_diageval.core.evidence.recorder import extract_evidence_items, extract_evidence_refs

ALERT = {
    "alert_name": "HighCPUUsage",
    "service": "payment-service",
    "state": "firing",
    "severity": "warning",
    "current": "92%",
    "threshold": "80%",
    "duration": "25m",
    "description": "CPU usage 92%",
}


def _row(invocation: int, tool: str, output: dict[str, Any], **params: Any) -> ToolInvocation:
    status = "supported" if extract_evidence_refs(tool, output) else "no_evidence"
    return ToolInvocation(
        id=invocation,
        session_id="s",
        round=1,
        tool_name=tool,
        input_params=params,
        duration_ms=1,
        success=True,
        retrieval_details=RetrievalDetails(
            evidence_status=status,  # type: ignore[arg-type]
            evidence_refs=extract_evidence_refs(tool, output),
            evidence_items=extract_evidence_items(tool, output),
        ),
    )


def _gate(*rows: tuple[str, int, str, str]) -> GatekeeperResult:
    checked = [
        CheckedBinding(
            claim_id=claim, source_invocation_id=invocation, raw_path=path, status=status
        )  # type: ignore[arg-type]
        for claim, invocation, path, status in rows
    ]
    return GatekeeperResult(status="pass", severity="none", checked_bindings=checked)


def test_the_same_item_from_two_calls_is_one_line_naming_both_sources() -> None:
    rows = [
        _row(1, "query_metrics", {"alerts": [ALERT]}, service="payment-service"),
        _row(2, "query_metrics", {"alerts": [ALERT]}, alert_name="HighCPUUsage"),
    ]
    gate = _gate(("claim-1", 1, "$.alerts[0]", "pass"), ("claim-2", 2, "$.alerts[0]", "pass"))
    evidence = render_confirmed(["claim-1", "claim-2"], gate, rows, wording.ZH)
    line = (
        "告警 HighCPUUsage：触发中，级别 warning，当前 92%，阈值 80%，持续 25m"
        "（来源：query_metrics #1 $.alerts[0]；query_metrics #2 $.alerts[0]）"
    )
    assert evidence.groups == {"payment-service": [line]}
    assert evidence.per_claim == {"claim-1": [line], "claim-2": [line]}


def test_a_failed_binding_renders_nothing_and_an_unused_claim_nothing() -> None:
    rows = [_row(1, "query_metrics", {"alerts": [ALERT]}, service="payment-service")]
    gate = _gate(("claim-1", 1, "$.alerts[0]", "fail"), ("claim-2", 1, "$.alerts[0]", "pass"))
    evidence = render_confirmed(["claim-1"], gate, rows, wording.ZH)
    assert (evidence.groups, evidence.claims_shown) == ({}, [])


def test_a_search_that_found_nothing_is_rendered_from_its_own_arguments() -> None:
    rows = [
        _row(
            1,
            "query_logs",
            {"logs": [], "total": 0},
            service="inventory-service",
            keywords=["HikariCP", "连接池"],
            level="ERROR",
        )
    ]
    gate = _gate(("claim-1", 1, "$.logs", "pass"))
    zh = render_confirmed(["claim-1"], gate, rows, wording.ZH)
    en = render_confirmed(["claim-1"], gate, rows, wording.EN)
    assert zh.searches == [
        "在 inventory-service 的日志中检索关键词「HikariCP」、「连接池」、级别 ERROR：无结果"
        "（来源：query_logs #1）"
    ]
    assert en.searches == [
        'Searched the logs of inventory-service for keywords "HikariCP", "连接池", level ERROR:'
        " no results (source: query_logs #1)"
    ]
    assert zh.groups == {}


def test_an_item_whose_text_looks_raw_or_off_scope_is_withheld_and_counted() -> None:
    log = {
        "timestamp": "2026-07-08T11:00:00+08:00",
        "level": "WARN",
        "service": "order-service",
        "message": '{"verdict": "PASS"}',
    }
    rows = [_row(1, "query_logs", {"logs": [log]}, service="order-service")]
    gate = _gate(("claim-1", 1, "$.logs[0]", "pass"))
    evidence = render_confirmed(
        ["claim-1"], gate, rows, wording.ZH, presentable=lambda text: "{" not in text
    )
    assert (evidence.groups, evidence.withheld, evidence.claims_shown) == ({}, 1, [])


def test_a_runbook_block_is_knowledge_never_a_confirmed_item() -> None:
    block = {"title": "HighCPUUsage 排查", "source": "runbook-cpu.md", "content": "检查线程栈。"}
    rows = [_row(1, "lookup_knowledge", {"evidence_blocks": [block]}, query="HighCPUUsage")]
    gate = _gate(("claim-1", 1, "$.evidence_blocks[0]", "pass"))
    evidence = render_confirmed(["claim-1"], gate, rows, wording.ZH)
    assert evidence.groups == {}
    assert evidence.knowledge == [
        "手册《HighCPUUsage 排查》（runbook-cpu.md）：检查线程栈。"
        "（来源：lookup_knowledge #1 $.evidence_blocks[0]）"
    ]
