"""Citations of the soundness session (``support.soundness_cases.TEMPLATE``), real texts.

The session: 1 order-service metrics, 2 order-service memory logs, 3 the HighMemoryUsage
runbook, 4 a no-hit HikariCP search of inventory-service, 5 payment-service metrics.
"""

from __future__ import annotations

from typing import Any

from pytest_diageval.core.contract.contracts import ExecutorContract

__all__ = [
    "ALERT",
    "FORGED",
    "LOG",
    "LOG_91",
    "MEMORY",
    "NEG",
    "NEG_INVENTORY",
    "NEG_INVENTORY_GC",
    "NEG_ORDER",
    "NO_HIT",
    "POS_INVENTORY",
    "RUNBOOK",
    "claim_data",
    "make_contract",
]

MEMORY = "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。"
ALERT = {
    "tool_name": "query_metrics",
    "source_invocation_id": 1,
    "raw_path": "$.alerts[0]",
    "evidence_excerpt": "HighMemoryUsage firing, service=order-service, current=91%",
}
LOG_91 = (
    "[2026-07-08T11:17:00+08:00][WARN][order-service] 内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB"
)
LOG = {
    "tool_name": "query_logs",
    "source_invocation_id": 2,
    "raw_path": "$.logs[4]",
    "evidence_excerpt": LOG_91,
}
RUNBOOK = {
    "tool_name": "lookup_knowledge",
    "source_invocation_id": 3,
    "raw_path": "$.evidence_blocks[0]",
    "evidence_excerpt": "没有堆 dump 时不能确认内存泄漏",
}
NO_HIT = {
    "tool_name": "query_logs",
    "source_invocation_id": 4,
    "raw_path": "$.logs",
    "evidence_excerpt": "未找到匹配的日志",
}
FORGED = {**ALERT, "evidence_excerpt": "HighMemoryUsage firing, service=order-service, current=97%"}
NEG_INVENTORY = "inventory-service 日志中未检索到 HikariCP 连接池耗尽的真实证据。"
NEG_ORDER = "order-service 日志中未检索到 HikariCP 连接池耗尽的真实证据。"
NEG = "negative_observation"
POS_INVENTORY = NEG_INVENTORY.replace("未检索到", "检索到")
NEG_INVENTORY_GC = "inventory-service 日志中未检索到 Full GC 的真实证据。"


def claim_data(text: str, bindings: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {
        "claim_id": "claim-1",
        "claim_type": "observation",
        "claim_text": text,
        "evidence_bindings": bindings,
        **fields,
    }


def make_contract(*claims: dict[str, Any], answer: str = MEMORY) -> ExecutorContract:
    return ExecutorContract.model_validate(
        {
            "answer_version": "2",
            "diagnosis_summary": "order-service 告警核查。",
            "claims": list(claims),
            "hypotheses": [],
            "recommended_actions": [],
            "missing_info": [],
            "user_facing_answer": answer,
        }
    )
