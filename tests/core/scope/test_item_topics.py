"""Issue 37: a claim's topics are read from its text and from its cited items' own fields, through
one vocabulary that the question's exclusions are read by too (the default world's values)."""

from __future__ import annotations

import pytest

from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    Claim,
    EvidenceItem,
    GatekeeperResult,
    RetrievalDetails,
    ToolInvocation,
)
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.scope.claims import EXCLUDED_TOPIC, OUT_OF_SCOPE, scope_problems
from pytest_diageval.core.scope.floor import topics_about
from pytest_diageval.core.scope.session import ScopeNames, cited_item_texts, session_scope
from pytest_diageval.core.text.normalised import normalise

WORLD = default_world()
SERVICES = sorted({a.service for a in WORLD.alerts} | {log.service for log in WORLD.logs})
ALERTS = sorted({a.alert_name for a in WORLD.alerts})
NAMES = ScopeNames.of(
    SERVICES, ALERTS, WORLD.aliases, (), [(a.alert_name, a.service) for a in WORLD.alerts]
)
LOG = {log.message: log for log in WORLD.logs}
HIKARI_LOG = "HikariPool-1 - Connection is not available, request timed out after 30000ms"
OOM_LOG = "处理订单 order-123 失败: java.lang.OutOfMemoryError: Java heap space"
SLOW_SQL_LOG = next(m for m in LOG if m.startswith("数据库慢查询: SELECT"))
CPU_LOG = "CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245"
REDIS_LOG = next(m for m in LOG if m.startswith("Redis"))


def _log_item(message: str) -> str:
    """A cited log item's text as the session builds it: its service and message."""
    return f"{LOG[message].service} {message}"


def _alert_item(name: str) -> str:
    alert = next(a for a in WORLD.alerts if a.alert_name == name)
    return f"{alert.alert_name} {alert.service} {alert.current} {alert.description}"


def _rules(query: str, claim_text: str, items: tuple[str, ...] = (), kind: str = "observation"):
    scope, _ = session_scope(query, NAMES)
    problems = scope_problems(
        kind, claim_text, scope, SERVICES, ALERTS, WORLD.aliases, item_texts=items
    )
    return [problem.rule for problem in problems]


def _topics(text: str) -> list[str]:
    return topics_about(normalise(text), SERVICES, WORLD.aliases, ALERTS)


# --------------------------------------------------------------------------- the vocabulary


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("HikariPool-1 - Connection is not available", "HikariCP"),
        ("HikariPool-7 连接获取失败", "HikariCP"),
        ("hikari_pool 2 耗尽", "HikariCP"),
        ("数据源连接数耗尽", "HikariCP"),
        ("Connection-Pool exhausted", "HikariCP"),
        ("java.lang.OutOfMemoryError: Java heap space", "内存"),
        ("JAVA HEAP SPACE", "内存"),
        ("堆内存 3.8GB/4GB", "内存"),
        ("heap usage 95%", "内存"),
        ("java.lang.OutOfMemoryError", "OOM"),
        ("进程被 OOMKilled", "OOM"),
        ("Slow Response on user-service", "响应变慢"),
        ("SlowResponse", "响应变慢"),
        ("slow_response", "响应变慢"),
        ("接口响应慢", "响应变慢"),
        ("P99 latency 4.2s", "响应变慢"),
        ("p99 4.2s above 3s", "响应变慢"),
        ("Redis 命令超时", "Redis"),
        ("缓存命中率下降", "Redis"),
        ("cache miss", "Redis"),
        ("Kafka consumer lag 12000", "Kafka"),
        ("消息队列积压", "Kafka"),
        ("MySQL 主库负载高", "数据库慢查询"),
        ("DB 连接失败", "数据库慢查询"),
        ("数据库 CPU 正常", "数据库慢查询"),
        ("慢查询 4820ms", "数据库慢查询"),
        ("慢 SQL 执行 3560ms", "数据库慢查询"),
        ("Full GC 15 次", "GC"),
        ("GC次数: 128", "GC"),
        ("OOM", "OOM"),
        ("CPU使用率过高: 92.0%", "CPU"),
        ("cpu usage 92%", "CPU"),
        ("disk usage 97%", "磁盘"),
        ("磁盘空间不足", "磁盘"),
        ("network jitter", "网络"),
        ("request timed out after 30000ms", "网络"),
        ("连接超时", "网络"),
        ("短信网关返回 503", "短信网关"),
        ("SMS vendor quota exceeded", "短信网关"),
        ("edge gateway 503", "网关"),
        ("API Gateway 路由失败", "网关"),
        ("网关 502", "网关"),
        ("订单 order-123 失败", "订单"),
        ("order-456 处理失败", "订单"),
    ],
)
def test_each_form_names_its_topic(text: str, topic: str) -> None:
    assert topic in _topics(text)


@pytest.mark.parametrize(
    ("text", "not_topic"),
    [
        ("GET /api/v1/users/orders 耗时 3750ms", "订单"),  # an endpoint path is not the order topic
        ("order-service 内存使用率 91%", "订单"),  # a service's name is the service
        ("订单服务内存使用率 91%", "订单"),  # and so is its alias
        ("ORDER BY create_time DESC", "订单"),
        ("数据库连接池耗尽", "数据库慢查询"),  # the pool, not the database itself
        ("短信网关返回 503", "网关"),  # the SMS gateway, not the edge gateway
        ("sms gateway down", "网关"),
        ("mongodb 正常", "数据库慢查询"),  # ASCII word edges: db inside mongodb
        ("cpuset 配置", "CPU"),
        ("room 12", "OOM"),
        ("java.lang.OutOfMemoryError", "内存"),  # memory inside OutOfMemoryError is no word
    ],
)
def test_a_look_alike_is_not_the_topic(text: str, not_topic: str) -> None:
    assert not_topic not in _topics(text)


def test_an_alert_named_is_about_its_topic() -> None:
    assert _topics("order-service 存在 HighMemoryUsage 告警") == ["内存"]
    assert _topics("user-service 的 SlowResponse 告警 firing") == ["响应变慢"]


# --------------------------------------------------------------------------- exclusions


@pytest.mark.parametrize(
    ("exclusion", "claim", "named"),
    [
        ("连接池", "order-service 数据源连接数耗尽", "HikariCP"),
        ("连接池", "order-service 出现 HikariPool-1 连接获取超时", "HikariCP"),
        ("HikariCP", "HikariPool-2 无可用连接", "HikariCP"),
        ("内存", "order-service 日志报 Java heap space", "内存"),
        ("SlowResponse", "user-service 出现 Slow Response，P99 4.2s", "SlowResponse"),
        ("Slow Response", "user-service SlowResponse 告警 firing", "SlowResponse"),
        ("响应慢", "user-service P99 latency 4.2s", "响应变慢"),
        ("缓存", "payment-service Redis 命令超时", "Redis"),
        ("消息队列", "Kafka consumer lag 12000", "Kafka"),
        ("数据库", "order-service 慢 SQL 执行 3560ms", "数据库慢查询"),
        ("GC", "order-service Full GC 15 次", "GC"),
        ("OOM", "order-123 OutOfMemoryError", "OOM"),
        ("磁盘", "disk usage 97%", "磁盘"),
        ("网络", "request timed out after 30000ms", "网络"),
        ("短信网关", "SMS vendor 返回失败", "短信网关"),
        ("API 网关", "edge gateway 503", "网关"),
        ("user-service", "用户中心接口变慢", "user-service"),
        ("用户服务", "user-service 慢请求 4200ms", "user-service"),
        ("灰度 发布", "payment-service 灰度发布失败", "灰度 发布"),  # outside the vocabulary
    ],
)
def test_an_exclusion_meets_every_form_of_its_topic(exclusion: str, claim: str, named: str) -> None:
    scope, _ = session_scope(f"现在系统有哪些问题？不要分析{exclusion}。", NAMES)
    assert named in scope.excluded
    problems = scope_problems("observation", claim, scope, SERVICES, ALERTS, WORLD.aliases)
    assert [p.rule for p in problems] == [EXCLUDED_TOPIC]


def test_an_exclusion_outside_the_vocabulary_is_its_literal_form_on_word_edges() -> None:
    scope, _ = session_scope("有哪些告警？排除 pay", NAMES)
    assert "pay" in scope.excluded
    assert _rules("有哪些告警？排除 pay", "pay 接口失败") == [EXCLUDED_TOPIC]
    assert _rules("有哪些告警？排除 pay", "payment-service CPU 92%") == []


def test_an_excluded_topic_is_not_met_by_a_service_name_holding_its_word() -> None:
    query = "现在系统有哪些问题？不要分析订单。"
    assert _rules(query, "订单服务内存使用率 91%") == []
    assert _rules(query, "order-service 处理 order-123 失败") == [EXCLUDED_TOPIC]


# --------------------------------------------------------------------------- cited items


def test_an_exclusion_met_only_through_the_cited_item() -> None:
    query = "只确认 order-service 是否存在 HighMemoryUsage 告警，不要分析连接池。"
    claim = "order-service 日志显示请求在 30000ms 后失败。"
    assert _rules(query, claim) == []
    # the item names the pool (excluded) and its timeout (a topic HighMemoryUsage does not hold)
    assert _rules(query, claim, (_log_item(HIKARI_LOG),)) == [OUT_OF_SCOPE, EXCLUDED_TOPIC]


def test_a_topic_one_of_several_items_mentions_in_passing_is_not_the_claims() -> None:
    query = "order-service 内存怎么样？不要分析 GC"
    memory_log = next(m for m in LOG if m.startswith("内存使用率过高: 91.0%"))
    alert, log = _alert_item("HighMemoryUsage"), _log_item(memory_log)
    claim = "order-service 内存使用率 91%。"
    assert _rules(query, claim, (alert, log)) == []  # the alert names no GC: the claim is memory
    assert _rules(query, claim, (log,)) == [EXCLUDED_TOPIC]  # resting on the GC-counting log alone


def test_an_endpoint_path_in_a_cited_alert_is_not_the_order_topic() -> None:
    query = "user-service 的 SlowResponse 告警是什么情况？不要分析订单。"
    assert _rules(query, "user-service P99 4.2s 超过 3s", (_alert_item("SlowResponse"),)) == []


# 004 本期验收: "HighCPUUsage 窄范围 case：不出现 HighMemoryUsage、SlowResponse、order-123、
# HikariCP、DB。"
CPU = "只确认 HighCPUUsage"


@pytest.mark.parametrize(
    ("claim", "items"),
    [
        ("order-service 存在 HighMemoryUsage 告警，内存使用率 91%。", ()),
        ("同时存在告警，当前 91%，持续 15m。", (_alert_item("HighMemoryUsage"),)),
        ("user-service 存在 SlowResponse 告警。", ()),
        ("接口 P99 4.2s，超过阈值 3s。", (_alert_item("SlowResponse"),)),
        ("处理订单 order-123 失败。", ()),
        ("日志中有一条处理失败的记录。", (_log_item(OOM_LOG),)),
        ("HikariCP 连接池已耗尽。", ()),
        ("日志显示请求 30000ms 后超时。", (_log_item(HIKARI_LOG),)),
        ("数据库出现慢查询，执行 4820ms。", ()),
        ("DB 执行时间 4820ms 超过阈值。", ()),
        ("一条语句执行 4820ms，超过阈值 1000ms。", (_log_item(SLOW_SQL_LOG),)),
    ],
)
def test_004_highcpu_acceptance_is_out_of_scope(claim: str, items: tuple[str, ...]) -> None:
    assert OUT_OF_SCOPE in _rules(CPU, claim, items)


def test_004_highcpu_claims_about_cpu_stay_in_scope() -> None:
    assert _rules(CPU, "payment-service CPU 使用率 92%。", (_alert_item("HighCPUUsage"),)) == []
    assert _rules(CPU, "payment-service CPU使用率过高: 92.0%。", (_log_item(CPU_LOG),)) == []
    # a topic the alert does not hold, on the alert's own service, is still out of scope
    assert _rules(CPU, "payment-service Redis 命令超时。", (_log_item(REDIS_LOG),)) == [
        OUT_OF_SCOPE
    ]


def test_a_highmemory_narrow_question_holds_the_gc_its_log_counts() -> None:
    query = "只确认 order-service 是否存在 HighMemoryUsage 告警"
    memory_log = next(m for m in LOG if m.startswith("内存使用率过高: 86.2%"))
    assert _rules(query, "order-service 内存使用率 86.2%。", (_log_item(memory_log),)) == []
    assert _rules(query, "order-service 数据源连接数耗尽。") == [OUT_OF_SCOPE]


# --------------------------------------------------------------------------- the items cited


def _invocation() -> ToolInvocation:
    return ToolInvocation(
        id=2,
        session_id="s",
        round=1,
        tool_name="query_logs",
        input_params={"service": "order-service"},
        duration_ms=1,
        success=True,
        retrieval_details=RetrievalDetails(
            evidence_status="supported",
            evidence_refs=[],
            evidence_items=[
                EvidenceItem(
                    raw_path="$.logs[0]",
                    fields={"service": "order-service", "message": HIKARI_LOG, "level": "ERROR"},
                ),
                EvidenceItem(
                    raw_path="$.logs[1]", fields={"service": "order-service", "message": OOM_LOG}
                ),
            ],
        ),
    )


def test_cited_item_texts_are_the_passed_bindings_items_fields() -> None:
    claim = Claim.model_validate(
        {
            "claim_id": "claim-1",
            "claim_type": "observation",
            "claim_text": "连接耗尽",
            "evidence_bindings": [
                {"tool_name": "query_logs", "source_invocation_id": 2, "raw_path": "$.logs[0]"},
                {"tool_name": "query_logs", "source_invocation_id": 2, "raw_path": "$.logs[1]"},
            ],
        }
    )
    both = [f"order-service {HIKARI_LOG}", f"order-service {OOM_LOG}"]
    assert cited_item_texts(claim, [_invocation()]) == both
    checked = GatekeeperResult(
        status="fail",
        severity="reject",
        checked_bindings=[
            CheckedBinding(
                claim_id="claim-1", source_invocation_id=2, raw_path="$.logs[0]", status="pass"
            ),
            CheckedBinding(
                claim_id="claim-1", source_invocation_id=2, raw_path="$.logs[1]", status="fail"
            ),
        ],
    )
    assert cited_item_texts(claim, [_invocation()], checked) == both[:1]
    assert cited_item_texts(claim, []) == []
