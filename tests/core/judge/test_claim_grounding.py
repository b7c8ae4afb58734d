"""claim_grounding: a claim's key facts must be in the items it cites; negative claims need
no-hits that cover what they deny; two claims cannot read one item both ways."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    Claim,
    GatekeeperResult,
    RetrievalDetails,
    ToolInvocation,
)
from pytest_diageval.core.evidence.world import WorldError, load_world
from pytest_diageval.core.judge.claim_grounding import (
    contradicting_claims,
    negative_problem,
    negative_statement_problem,
    ungrounded,
)
from pytest_diageval.core.judge.claim_structure import CitedItem, structure_problem
from pytest_diageval.core.judge.claim_support import claim_ceilings

# Ref texts as the recorder writes them for the default world.
ALERT = "HighMemoryUsage firing, service=order-service, current=91%, threshold=85%, duration=15m"
LOG = (
    "[2026-07-08T11:17:00+08:00][WARN][order-service] 内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB,"
    " GC次数: 128"
)
SYNC = (
    "[2026-07-08T10:58:00+08:00][INFO][inventory-service] 库存同步完成: 1240 个 SKU 已更新,"
    " 耗时 860ms"
)
TRUNCATED = "HighMemoryUsage firing, service=order-service, current=91"


@pytest.mark.parametrize(
    ("claim", "cited", "rule"),
    [
        ("order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。", [ALERT], None),
        ("order-service JVM堆内存 3.8GB/4GB，GC 128 次。", [LOG], None),
        ("2026-07-08 11:17 order-service 内存使用率 91%。", [LOG], None),
        ("order-service 内存使用率达到 91GB。", [ALERT], "claim.number_not_cited"),  # unit
        ("order-service 内存使用率达到 91%。", [TRUNCATED], "claim.number_not_cited"),
        ("order-service 内存使用率达到 95%。", [ALERT], "claim.number_not_cited"),
        ("order-service JVM堆内存 3.9GB/4GB。", [LOG], "claim.number_not_cited"),
        ("order-service 出现 OutOfMemoryError。", [ALERT, LOG], "claim.entity_not_cited"),
        ("order-service 存在 HighCPUUsage 告警。", [ALERT], "claim.entity_not_cited"),
        ("2026-07-08 11:07 order-service 内存使用率 91%。", [LOG], "claim.timestamp_not_cited"),
        ("order-service 内存使用率达到 91%，请立即重启。", [ALERT], "claim.action_in_claim"),
        ("order-service 当前不存在 HighMemoryUsage 告警。", [ALERT], "claim.denial_without_no_hit"),
        ("order-service 内存使用率未达到 91%。", [ALERT], "claim.polarity_contradicts_item"),
        (  # a diagnosis neither item is about
            "order-service 内存使用率 91%，因此根因是内存泄漏。",
            [ALERT, LOG],
            "claim.topic_not_cited",
        ),
        (  # a cause joined across two items that neither links: indirect at most
            "order-service 内存使用率 91%，因此 JVM堆内存 3.8GB/4GB。",
            [ALERT, LOG],
            "claim.causal_across_items",
        ),
        ("order-service 内存使用率 91%，因此触发 HighMemoryUsage 告警。", [ALERT], None),
        (  # 860ms is inventory-service's, said of order-service
            "inventory-service 存在 HighMemoryUsage 告警，order-service 库存同步耗时 860ms。",
            [ALERT.replace("order-service", "inventory-service"), SYNC],
            "claim.subject_swapped",
        ),
        (
            "order-service 存在 HighMemoryUsage 告警，inventory-service 库存同步耗时 860ms。",
            [
                ALERT.replace("order-service", "inventory-service"),
                SYNC.replace("inventory", "order"),
            ],
            "claim.subject_swapped",
        ),
        # A number said of another service than the item's (claim_support's
        # claim.subject_not_cited stops it first in the pipeline).
        ("inventory-service 内存使用率达到 91%。", [ALERT], "claim.subject_swapped"),
    ],
)
def test_ungrounded_table(claim: str, cited: list[str], rule: str | None) -> None:
    """What a claim may say at all (:func:`ungrounded`), then what it says of its items
    (:mod:`claim_structure`), on items known only by their ref text (a row recorded before
    items were kept): the claim checks the pipeline runs, in its order."""
    found = _problem(claim, cited)
    assert (found[0] if found else None) == rule


def _problem(claim: str, cited: list[str]) -> tuple[str, str] | None:
    items = [CitedItem("query_logs", {"service": _service(text), "text": text}) for text in cited]
    found = structure_problem(claim, "observation", items)
    return ungrounded(claim, cited) or (None if found is None else (found.rule, found.reason))


def _service(text: str) -> str | None:
    named = re.search(r"(?:service=|\]\[)([a-z]+-service)", text)
    return named.group(1) if named else None


def test_ungrounded_says_which_fact() -> None:
    assert _problem("order-service 内存使用率达到 95%。", [ALERT]) == (
        "claim.number_not_cited",
        "the claim states '95%', which no cited item shows",
    )


def _search(tool: str, **params: Any) -> ToolInvocation:
    return ToolInvocation.model_validate(
        {
            "id": 4,
            "session_id": "s",
            "round": 1,
            "tool_name": tool,
            "input_params": params,
            "duration_ms": 1,
            "success": True,
        }
    )


NO_OOM_LOGS = _search("query_logs", service="order-service", keywords=["OutOfMemoryError"])
NO_ERROR_LOGS = _search(
    "query_logs", service="inventory-service", keywords=["HikariCP"], level="ERROR"
)
NO_ALERT = _search("query_metrics", service="order-service", alert_name="HighCPUUsage")


@pytest.mark.parametrize(
    ("claim", "searches", "rule"),
    [
        ("order-service 日志中未检索到 OutOfMemoryError。", [NO_OOM_LOGS], None),
        ("order-service 不存在 HighCPUUsage 告警。", [NO_ALERT], None),
        ("order-service 日志中未检索到 OutOfMemoryError。", [NO_ALERT], "claim.negative_kind"),
        ("order-service 不存在 HighCPUUsage 告警。", [NO_OOM_LOGS], "claim.negative_kind"),
        (
            "order-service 日志中未检索到 OutOfMemoryError 或 HikariCP 异常。",
            [NO_OOM_LOGS],
            "claim.negative_terms",
        ),
        (
            "inventory-service 日志中不存在 HikariCP 连接池耗尽。",
            [NO_ERROR_LOGS],
            "claim.negative_filter",
        ),
        ("inventory-service 的 ERROR 日志中不存在 HikariCP 连接池耗尽。", [NO_ERROR_LOGS], None),
    ],
)
def test_negative_problem_table(
    claim: str, searches: list[ToolInvocation], rule: str | None
) -> None:
    found = negative_problem(claim, searches)
    assert (found[0] if found else None) == rule


def _claim(claim_id: str, text: str) -> Claim:
    return Claim.model_validate(
        {"claim_id": claim_id, "claim_type": "observation", "claim_text": text}
    )


def _row(claim_id: str, path: str) -> CheckedBinding:
    return CheckedBinding(
        claim_id=claim_id, source_invocation_id=1, raw_path=path, status="pass", grade="none"
    )


def test_two_claims_reading_one_item_both_ways_contradict_each_other() -> None:
    claims = [
        _claim("claim-1", "order-service 存在 HighMemoryUsage 告警。"),
        _claim("claim-2", "order-service 不存在 HighMemoryUsage 告警。"),
        _claim("claim-3", "order-service 内存使用率 91%，JVM 堆内存不足。"),  # another reading
    ]
    passed = {c.claim_id: [_row(c.claim_id, "$.alerts[0]")] for c in claims}
    assert contradicting_claims(claims, passed) == {"claim-1": "claim-2", "claim-2": "claim-1"}
    # On different items the same two claims do not meet.
    passed["claim-2"] = [_row("claim-2", "$.alerts[1]")]
    assert contradicting_claims(claims, passed) == {}


def test_an_alias_names_its_service_in_the_subject_checks() -> None:
    claim = Claim.model_validate(
        {
            "claim_id": "claim-1",
            "claim_type": "observation",
            "claim_text": "payment-service CPU 使用率 92%，订单服务同样受影响。",
            "evidence_bindings": [
                {
                    "tool_name": "query_metrics",
                    "source_invocation_id": 1,
                    "raw_path": "$.alerts[0]",
                    "evidence_excerpt": "HighCPUUsage firing, service=payment-service, current=92%",
                }
            ],
        }
    )
    gate = GatekeeperResult(
        status="pass",
        severity="none",
        checked_bindings=[
            CheckedBinding(
                claim_id="claim-1",
                tool_name="query_metrics",
                source_invocation_id=1,
                raw_path="$.alerts[0]",
                status="pass",
                grade="none",
            )
        ],
    )
    refs = [
        {
            "raw_path": "$.alerts[0]",
            "text": "HighCPUUsage firing, service=payment-service, current=92%",
        }
    ]
    search = _search("query_metrics", service="payment-service").model_copy(
        update={
            "id": 1,
            "retrieval_details": RetrievalDetails(evidence_status="supported", evidence_refs=refs),
        }
    )
    without = claim_ceilings([claim], gate, [search])["claim-1"]
    with_aliases = claim_ceilings([claim], gate, [search], {"订单服务": "order-service"})["claim-1"]
    assert (without.rule, with_aliases.rule) == (None, "claim.subject_not_cited")
    assert "order-service" in with_aliases.reason


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        ({"order-service": ["订单服务"], "user-service": ["订单服务"]}, "names both"),
        ({"order-service": [" "]}, "an empty name"),
    ],
)
def test_a_world_alias_names_one_service(aliases: dict[str, list[str]], message: str) -> None:
    with pytest.raises(WorldError, match=message):
        load_world({"now": "2026-07-08T11:20:00+08:00", "aliases": aliases})
    assert load_world("default").entity_aliases()["order service"] == "order-service"


@pytest.mark.parametrize(
    ("claim", "rule"),
    [
        ("inventory-service 日志中未检索到 HikariCP 连接池耗尽。", None),
        ("inventory-service 日志中没有 HikariCP 相关记录。", None),  # 没有 + a noun denies too
        ("inventory-service 日志中检索到 HikariCP 连接池耗尽。", "claim.polarity_contradicts_item"),
        ("inventory-service 日志中未检索到 HikariCP，请重启。", "claim.action_in_claim"),
        (
            "inventory-service 日志中未检索到 HikariCP，因此根因是内存泄漏。",
            "claim.conclusion_not_cited",
        ),
    ],
)
def test_a_negative_observation_denies_and_concludes_nothing(claim: str, rule: str | None) -> None:
    found = negative_statement_problem(claim, [""])
    assert (found[0] if found else None) == rule
