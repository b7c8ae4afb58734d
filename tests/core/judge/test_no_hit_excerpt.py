"""A no-hit citation's excerpt is compared like any other: ``[]`` or ``not []`` cannot carry a
PASS (the live model's mutant "not []" passed before), and a contrary one is rejected."""

from __future__ import annotations

import pytest

from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.judge.gatekeeper import Gatekeeper
from support.contracts import parsed_contract

SESSION = "s1"


@pytest.fixture
def store() -> Store:
    """Session s1: one query_logs that finds nothing (invocation 1)."""
    store = Store()
    store.create_session(
        SESSION, "inventory-service 是否存在 HikariCP 日志?", "2026-07-08T11:17:00+08:00"
    )
    recorder = ToolInvocationRecorder(store, Toolbox(default_world()), SESSION)
    call = recorder.call(
        "query_logs", {"service": "inventory-service", "keywords": ["HikariCP"]}, round=1
    )
    assert call.invocation_id == 1
    row = store.list_invocations(SESSION)[0]
    assert row.retrieval_details is not None
    assert row.retrieval_details.evidence_status == "no_evidence"
    return store


def _grade(store: Store, excerpt: str | None) -> tuple[str, list[str]]:
    claim = {
        "claim_id": "claim-1",
        "claim_type": "negative_observation",
        "claim_text": "inventory-service 日志中未检索到 HikariCP 相关记录。",
        "evidence_bindings": [
            {
                "tool_name": "query_logs",
                "source_invocation_id": 1,
                "raw_path": "$.logs",
                "evidence_excerpt": excerpt,
            }
        ],
    }
    result = Gatekeeper(store).check(parsed_contract([claim]), SESSION)
    return result.severity, result.failed_rules


@pytest.mark.parametrize(
    ("excerpt", "severity", "rules"),
    [
        ("未找到匹配的日志", "none", []),
        ("[]", "low_confid", ["evidence.excerpt_too_short"]),
        ("not []", "low_confid", ["evidence.excerpt_too_short"]),
        (None, "low_confid", ["evidence.excerpt_missing"]),
        ("找到匹配的日志", "reject", ["evidence.excerpt_mismatch"]),
        ("HikariCP 连接池耗尽日志 3 条", "reject", ["evidence.excerpt_mismatch"]),
    ],
)
def test_a_no_hit_excerpt_is_compared_with_the_empty_result(
    store: Store, excerpt: str | None, severity: str, rules: list[str]
) -> None:
    assert _grade(store, excerpt) == (severity, rules)
