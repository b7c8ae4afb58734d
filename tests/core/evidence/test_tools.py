"""The evidence tools over the real default world (and one large generated world)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from pytest_diageval.core.evidence.store import stable_json
from pytest_diageval.core.evidence.tool_search import expand_keyword, normalise_query, tokenize
from pytest_diageval.core.evidence.tools import (
    NO_LOG_HIT,
    TOOL_DEFINITIONS,
    ToolArgumentError,
    Toolbox,
    ToolExecutionError,
    ToolFailure,
    ToolTimeout,
    UnknownToolError,
    knowledge_index,
)
from pytest_diageval.core.evidence.world import World, default_world
from support.worlds import BASE, POOL_MESSAGE, build_world

HIKARI_MESSAGES = [
    "HikariPool-1 - Connection is not available, request timed out after 30000ms",
    "HikariCP pool stats: active=50/50, idle=0, waiting=32",
]
HIKARI_SYNONYMS = [
    "HikariCP",
    "HikariPool",
    "connection pool",
    "数据库连接池",
    "连接池耗尽",
    "连接池",
    "active=50/50",
    "request timed out after 30000ms",
    "waiting",
    "hikaricp",
    "CONNECTION POOL",
]


@pytest.fixture
def toolbox() -> Toolbox:
    return Toolbox(default_world())


def _messages(result: dict[str, Any]) -> list[str]:
    return [log["message"] for log in result["logs"]]


def _world_with(**update: Any) -> World:
    return World.model_validate({**default_world().model_dump(), **update})


# --------------------------------------------------------------------------- query_logs


@pytest.mark.parametrize("keyword", HIKARI_SYNONYMS)
def test_hikaricp_positive_every_synonym_hits_the_two_pool_logs(
    toolbox: Toolbox, keyword: str
) -> None:
    result = toolbox.query_logs(service="order-service", keywords=[keyword])
    assert _messages(result) == HIKARI_MESSAGES
    assert result["total"] == 2
    assert {log["service"] for log in result["logs"]} == {"order-service"}
    assert [log["level"] for log in result["logs"]] == ["ERROR", "WARN"]
    assert "generic-service" not in json.dumps(result)


def test_hikaricp_phrase_keyword_hits_through_its_contained_terms(toolbox: Toolbox) -> None:
    result = toolbox.query_logs(service="order-service", keywords="HikariCP connection pool")
    assert _messages(result) == HIKARI_MESSAGES


def test_specific_timeout_phrase_does_not_widen_to_other_timeouts(toolbox: Toolbox) -> None:
    result = toolbox.query_logs(keywords=["request timed out after 30000ms"])
    assert _messages(result) == HIKARI_MESSAGES
    generic = toolbox.query_logs(keywords=["timeout"])
    assert [log["service"] for log in generic["logs"]] == ["payment-service", "order-service"]


def test_hikaricp_negative_is_exactly_the_no_hit_result(toolbox: Toolbox) -> None:
    result = toolbox.query_logs(service="inventory-service", keywords=["HikariCP", "连接池"])
    assert result == {"success": True, "logs": [], "total": 0, "message": "未找到匹配的日志"}
    assert result == NO_LOG_HIT
    assert result is not NO_LOG_HIT


@pytest.mark.parametrize("service", ["generic-service", "order", "order-service-2", "svc"])
def test_service_filter_is_exact_never_a_substring_or_fallback(
    toolbox: Toolbox, service: str
) -> None:
    assert toolbox.query_logs(service=service) == NO_LOG_HIT


def test_service_filter_returns_only_that_service(toolbox: Toolbox) -> None:
    result = toolbox.query_logs(service="user-service")
    assert result["total"] == 6
    assert {log["service"] for log in result["logs"]} == {"user-service"}
    assert toolbox.query_logs(service="User-Service") == result


def test_level_filter_and_level_alias(toolbox: Toolbox) -> None:
    errors = toolbox.query_logs(level="ERROR")
    assert [(log["service"], log["message"].split(" ")[0]) for log in errors["logs"]] == [
        ("payment-service", "Redis"),
        ("order-service", "HikariPool-1"),
        ("order-service", "处理订单"),
    ]
    warnings = toolbox.query_logs(service="order-service", level="warning")
    assert {log["level"] for log in warnings["logs"]} == {"WARN"}
    assert warnings["total"] == 7


def test_limit_keeps_the_most_recent_matches_in_time_order(toolbox: Toolbox) -> None:
    result = toolbox.query_logs(service="user-service", keywords=["慢请求"], limit=2)
    assert _messages(result) == [
        "慢请求: GET /api/v1/users/orders 耗时 4050ms (阈值 3000ms)",
        "慢请求: GET /api/v1/users/profile 耗时 4200ms (阈值 3000ms)",
    ]
    assert result["total"] == 2
    assert result["matched_total"] == 5
    assert "共匹配 5 条日志" in result["message"]


def test_several_keywords_are_ored(toolbox: Toolbox) -> None:
    result = toolbox.query_logs(keywords=["order-123", "Redis"])
    assert [log["message"].split(":")[0] for log in result["logs"]] == [
        "Redis 命令超时",
        "处理订单 order-123 失败",
    ]


@pytest.mark.parametrize(
    ("keyword", "expected"),
    [
        ("HighCPUUsage", ["85.4%", "89.7%", "92.0%"]),
        ("OOM", ["OutOfMemoryError"]),
        ("SlowResponse", ["3600ms", "3750ms", "3900ms", "4050ms", "4200ms"]),
        ("慢查询", ["4820ms", "3560ms"]),
    ],
)
def test_topic_synonym_groups(toolbox: Toolbox, keyword: str, expected: list[str]) -> None:
    messages = _messages(toolbox.query_logs(keywords=[keyword]))
    assert len(messages) == len(expected)
    assert all(value in message for value, message in zip(expected, messages, strict=True))


def test_memory_keyword_finds_usage_gc_and_heap_logs_but_not_pool_logs(toolbox: Toolbox) -> None:
    messages = _messages(toolbox.query_logs(service="order-service", keywords=["HighMemoryUsage"]))
    assert len(messages) == 5
    assert sum(m.startswith("内存使用率过高") for m in messages) == 3
    assert any("Full GC" in m for m in messages)
    assert any("OutOfMemoryError" in m for m in messages)
    assert not set(messages) & set(HIKARI_MESSAGES)


def test_expand_keyword_prefers_an_exact_group_term() -> None:
    assert expand_keyword("request timed out after 30000ms")[0] == "request timed out after 30000ms"
    assert "timed out" not in expand_keyword("request timed out after 30000ms")
    assert "hikaripool" in expand_keyword("HikariCP connection pool")
    assert expand_keyword("order-123") == ("order-123",)


# --------------------------------------------------------------------------- query_metrics


def test_query_metrics_without_filters_returns_every_alert_in_world_order(
    toolbox: Toolbox,
) -> None:
    result = toolbox.query_metrics()
    assert [a["alert_name"] for a in result["alerts"]] == [
        "HighCPUUsage",
        "HighMemoryUsage",
        "SlowResponse",
    ]
    assert result["total"] == 3
    assert result["message"] == "找到 3 条告警"
    memory = result["alerts"][1]
    assert memory == {
        "alert_name": "HighMemoryUsage",
        "service": "order-service",
        "state": "firing",
        "severity": "critical",
        "current": "91%",
        "threshold": "85%",
        "duration": "15m",
        "description": "JVM heap usage 3.8GB/4GB",
        "samples": [86.2, 87.4, 88.6, 89.8, 91.0],
    }
    assert "samples" not in result["alerts"][0]
    assert result["alerts"][2]["apis"] == ["/api/v1/users/profile", "/api/v1/users/orders"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"service": "payment-service"}, ["HighCPUUsage"]),
        ({"alert_name": "highmemoryusage"}, ["HighMemoryUsage"]),
        ({"keywords": ["CPU"]}, ["HighCPUUsage"]),
        ({"keywords": ["内存", "/api/v1/users/orders"]}, ["HighMemoryUsage", "SlowResponse"]),
        ({"service": "order-service", "alert_name": "HighCPUUsage"}, []),
        ({"service": "order"}, []),
    ],
)
def test_query_metrics_filters(
    toolbox: Toolbox, arguments: dict[str, Any], expected: list[str]
) -> None:
    result = toolbox.call("query_metrics", arguments)
    assert [a["alert_name"] for a in result["alerts"]] == expected
    assert result["total"] == len(expected)
    if not expected:
        assert result == {
            "success": True,
            "alerts": [],
            "total": 0,
            "message": "未找到匹配的告警",
        }


# --------------------------------------------------------------------------- lookup_knowledge


def test_l0_exact_alert_name_returns_the_whole_runbook(toolbox: Toolbox) -> None:
    result = toolbox.lookup_knowledge("HighCPUUsage 怎么处理")
    assert result["retrieval_layer"] == "L0"
    assert (result["l0_count"], result["l1_count"], result["total"]) == (1, 0, 1)
    assert result["relevance_level"] == "high"
    (block,) = result["evidence_blocks"]
    assert block["title"] == "HighCPUUsage 告警处理手册"
    assert block["source"] == "runbooks/high-cpu-usage.md"
    assert block["relevance"] == 1.0
    assert "【排查步骤】" in block["content"]
    assert "【处置建议】" in block["content"]


def test_l0_exact_title(toolbox: Toolbox) -> None:
    result = toolbox.lookup_knowledge("HikariCP 数据库连接池耗尽排查手册")
    assert result["retrieval_layer"] == "L0"
    assert result["evidence_blocks"][0]["source"] == (
        "runbooks/hikaricp-connection-pool-exhaustion.md"
    )


def test_l1_ranks_sections_lexically(toolbox: Toolbox) -> None:
    result = toolbox.lookup_knowledge("耗尽 连接池 常见原因")
    assert result["retrieval_layer"] == "L1"
    assert (result["l0_count"], result["l1_count"]) == (0, 3)
    first = result["evidence_blocks"][0]
    assert first["title"] == "HikariCP 数据库连接池耗尽排查手册 / 常见原因"
    assert first["source"] == "runbooks/hikaricp-connection-pool-exhaustion.md#常见原因"
    assert result["relevance_level"] == "high"
    assert all(0.2 <= block["relevance"] <= 1.0 for block in result["evidence_blocks"])


def test_l1_prefers_the_section_that_holds_more_query_terms(toolbox: Toolbox) -> None:
    result = toolbox.lookup_knowledge("慢查询 导致 接口变慢", top_k=2)
    titles = [block["title"] for block in result["evidence_blocks"]]
    assert titles == [
        "SlowResponse 告警处理手册 / 排查步骤",
        "SlowResponse 告警处理手册 / 常见原因",
    ]
    relevances = [block["relevance"] for block in result["evidence_blocks"]]
    assert relevances == sorted(relevances, reverse=True)


def test_unrelated_query_finds_nothing(toolbox: Toolbox) -> None:
    result = toolbox.lookup_knowledge("kubernetes ingress 证书过期")
    assert result == {
        "success": True,
        "evidence_blocks": [],
        "total": 0,
        "retrieval_layer": "none",
        "l0_count": 0,
        "l1_count": 0,
        "relevance_level": "none",
        "message": "未找到相关知识",
    }


def test_one_shared_common_bigram_is_not_a_hit(toolbox: Toolbox) -> None:
    # "处理" occurs in every runbook title, but it is a small share of this query's terms.
    result = toolbox.lookup_knowledge("如何处理这个问题")
    assert result["retrieval_layer"] == "none"
    assert result["evidence_blocks"] == []


def test_top_k_bounds_the_blocks(toolbox: Toolbox) -> None:
    assert toolbox.lookup_knowledge("连接池", top_k=1)["l1_count"] == 1
    assert toolbox.lookup_knowledge("HikariCP", top_k=4)["l1_count"] == 4


def test_second_normalised_equal_query_is_deduped_without_a_search(
    toolbox: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = toolbox.lookup_knowledge("HighCPUUsage 怎么处理")
    assert first["retrieval_layer"] == "L0"

    def no_search(query: str, top_k: int) -> None:
        raise AssertionError("a deduped query must not search")

    monkeypatch.setattr(toolbox._knowledge, "search", no_search)
    second = toolbox.lookup_knowledge("  highcpuusage   怎么处理？", top_k=5)
    reason = second.pop("dedup_reason")
    assert second == {
        "success": True,
        "evidence_blocks": [],
        "total": 0,
        "deduped": True,
        "retrieval_layer": "dedup",
        "l0_count": 0,
        "l1_count": 0,
    }
    assert "'highcpuusage 怎么处理'" in reason
    assert "'HighCPUUsage 怎么处理'" in reason


def test_dedup_state_is_per_toolbox(toolbox: Toolbox) -> None:
    toolbox.lookup_knowledge("连接池")
    assert Toolbox(default_world()).lookup_knowledge("连接池")["retrieval_layer"] == "L1"
    assert toolbox.lookup_knowledge("连接池 排查")["retrieval_layer"] == "L1"


def test_tokenize_and_normalise() -> None:
    assert tokenize("HikariCP 连接池, active=50/50") == [
        "hikaricp",
        "连接",
        "接池",
        "active",
        "50",
        "50",
    ]
    assert tokenize("池") == ["池"]
    assert normalise_query("  ＨｉｋａｒｉＣＰ   连接池？ ") == "hikaricp 连接池"


# --------------------------------------------------------------------------- dispatch


def test_get_current_time_returns_the_world_now(toolbox: Toolbox) -> None:
    assert toolbox.get_current_time() == {"now": "2026-07-08T11:17:00+08:00"}
    assert toolbox.call("get_current_time", {}) == toolbox.get_current_time()


def test_unknown_tool_lists_the_allowed_tools(toolbox: Toolbox) -> None:
    with pytest.raises(UnknownToolError) as caught:
        toolbox.call("query_traces", {})
    assert str(caught.value) == (
        "unknown tool 'query_traces'; allowed tools:"
        " query_metrics, query_logs, lookup_knowledge, get_current_time"
    )


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("query_logs", {"servce": "x"}, "query_logs: unknown argument 'servce'"),
        ("query_logs", {"limit": 0}, "argument 'limit': Input should be greater than or equal"),
        ("query_logs", {"level": "TRACE"}, "argument 'level': Input should be 'DEBUG', 'INFO'"),
        ("query_logs", {"keywords": ["ok", 5]}, "argument 'keywords.1': Input should be a valid"),
        ("lookup_knowledge", {}, "lookup_knowledge: argument 'query': Field required"),
        ("lookup_knowledge", {"query": "？！"}, "query must contain words"),
        ("lookup_knowledge", {"query": "x", "top_k": 11}, "argument 'top_k': Input should be"),
        ("get_current_time", {"tz": "UTC"}, "get_current_time: unknown argument 'tz'"),
    ],
)
def test_bad_arguments_name_tool_argument_and_allowed(
    toolbox: Toolbox, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        toolbox.call(tool, arguments)
    assert expected in str(caught.value)
    assert "allowed arguments:" in str(caught.value)


def test_arguments_as_model_json_text(toolbox: Toolbox) -> None:
    as_text = toolbox.call("query_logs", '{"service": "order-service", "keywords": ["HikariCP"]}')
    assert _messages(as_text) == HIKARI_MESSAGES
    with pytest.raises(ToolArgumentError, match="query_logs: arguments are not valid JSON"):
        toolbox.call("query_logs", "{service:")
    with pytest.raises(ToolArgumentError, match="arguments must be an object, got list"):
        toolbox.call("query_logs", "[1]")


def test_blank_filters_mean_no_filter(toolbox: Toolbox) -> None:
    assert toolbox.call("query_logs", {"service": "", "keywords": "", "level": " "})["total"] == 20
    assert toolbox.query_logs(keywords="HikariCP, Redis")["total"] == 3


# --------------------------------------------------------------------------- failures


def test_world_failures_raise_timeout_and_error() -> None:
    toolbox = Toolbox(_world_with(failures={"query_logs": "timeout", "lookup_knowledge": "error"}))
    with pytest.raises(ToolTimeout, match=r"query_logs timed out \(world failures: query_logs"):
        toolbox.query_logs(service="order-service")
    with pytest.raises(ToolExecutionError, match="lookup_knowledge failed with a backend error"):
        toolbox.lookup_knowledge("HighCPUUsage")
    assert toolbox.query_metrics()["total"] == 3
    assert toolbox.get_current_time() == {"now": "2026-07-08T11:17:00+08:00"}


def test_failure_carries_the_tool_name_and_bad_arguments_come_first() -> None:
    toolbox = Toolbox(_world_with(failures={"query_metrics": "error"}))
    with pytest.raises(ToolFailure) as caught:
        toolbox.query_metrics(service="order-service")
    assert caught.value.tool_name == "query_metrics"
    with pytest.raises(ToolArgumentError):
        toolbox.call("query_metrics", {"bogus": 1})


# --------------------------------------------------------------------------- definitions


def test_tool_definitions_are_generated_from_the_argument_models() -> None:
    names = [tool["function"]["name"] for tool in TOOL_DEFINITIONS]
    assert names == ["query_metrics", "query_logs", "lookup_knowledge", "get_current_time"]
    assert {tool["type"] for tool in TOOL_DEFINITIONS} == {"function"}
    logs = TOOL_DEFINITIONS[1]["function"]["parameters"]
    assert list(logs["properties"]) == ["service", "keywords", "level", "limit"]
    assert logs["properties"]["level"]["enum"] == ["DEBUG", "INFO", "WARN", "ERROR"]
    assert logs["properties"]["keywords"]["type"] == "array"
    assert logs["properties"]["limit"] == {
        "default": 20,
        "description": "最多返回条数 / max logs returned",
        "maximum": 200,
        "minimum": 1,
        "type": "integer",
    }
    assert logs["additionalProperties"] is False
    assert TOOL_DEFINITIONS[2]["function"]["parameters"]["required"] == ["query"]
    assert '"title"' not in json.dumps(TOOL_DEFINITIONS)


# --------------------------------------------------------------------------- determinism


def test_outputs_are_deterministic_and_json_serialisable() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("query_metrics", {}),
        ("query_logs", {"keywords": ["HikariCP", "内存", "慢请求"]}),
        ("lookup_knowledge", {"query": "数据库连接池耗尽怎么办"}),
        ("get_current_time", {}),
    ]
    first = [Toolbox(default_world()).call(name, args) for name, args in calls]
    second = [Toolbox(default_world()).call(name, args) for name, args in calls]
    assert stable_json(first) == stable_json(second)
    assert json.loads(json.dumps(first, ensure_ascii=False)) == first


# --------------------------------------------------------------------------- scale


def test_large_world_queries_are_correct() -> None:
    toolbox = Toolbox(build_world())
    # Pool logs are i % 100 == 0; svc-00 is i % 40 == 0: both means i % 200 == 0 (50 logs).
    pool = toolbox.query_logs(service="svc-00", keywords=["connection pool"], limit=200)
    assert pool["total"] == 50
    assert {log["message"] for log in pool["logs"]} == {POOL_MESSAGE}
    latest = toolbox.query_logs(service="svc-00", keywords=["HikariCP"])
    assert latest["total"] == 20
    assert latest["matched_total"] == 50
    assert latest["logs"][0]["timestamp"] == (BASE + timedelta(seconds=6000)).isoformat()
    assert latest["logs"][-1]["timestamp"] == (BASE + timedelta(seconds=9800)).isoformat()
    assert toolbox.query_logs(service="svc-00", level="ERROR")["matched_total"] == 83
    assert toolbox.query_logs(service="svc-40") == NO_LOG_HIT
    disk = toolbox.query_metrics(service="svc-03", alert_name="DiskFull")
    assert disk["total"] == 25
    assert toolbox.query_metrics(keywords=["alert 999"])["alerts"][0]["service"] == "svc-39"
    assert toolbox.lookup_knowledge("HikariCP")["retrieval_layer"] == "L1"


# --------------------------------------------------------------------------- shared index


def test_sessions_over_one_world_share_its_index_and_keep_their_own_dedup_state() -> None:
    world = default_world()
    first, second = Toolbox(world), Toolbox(world)
    query = "HikariCP 数据库连接池耗尽排查手册"

    assert knowledge_index(world) is knowledge_index(world)
    first_answer, second_answer = first.lookup_knowledge(query), second.lookup_knowledge(query)
    assert first_answer["retrieval_layer"] == second_answer["retrieval_layer"] == "L0"
    assert first_answer["evidence_blocks"] == second_answer["evidence_blocks"]
    # Dedup stays per session: only the first session's second lookup is deduped.
    assert first.lookup_knowledge(query)["retrieval_layer"] == "dedup"
    other = World.model_validate(world.model_dump())
    assert knowledge_index(other) is not knowledge_index(world)


def test_the_schema_offers_five_keywords_and_the_parser_still_takes_more() -> None:
    from pytest_diageval.core.evidence.tool_arguments import KEYWORDS_OFFERED, parse_tool_arguments

    offered = {
        d["function"]["name"]: d["function"]["parameters"]["properties"].get("keywords")
        for d in TOOL_DEFINITIONS
    }
    assert offered["query_metrics"]["maxItems"] == offered["query_logs"]["maxItems"] == 5
    assert KEYWORDS_OFFERED == 5
    # A host that ignores the schema is not punished for a sixth keyword: they are OR-ed.
    many = ["a", "b", "c", "d", "e", "HikariCP"]
    assert parse_tool_arguments("query_logs", {"keywords": many}).keywords == many
