"""The scope in the per-session schemas (issue 25 part 3): a narrow question's services, alerts
and claim types become the tools' enums and the contract's; a broad one keeps today's."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval.core.contract.contract_schema import contract_parameters
from pytest_diageval.core.contract.contracts import ToolInvocation
from pytest_diageval.core.contract.scope_contract import DecodingScope, ScopeContract
from pytest_diageval.core.evidence.tool_arguments import constrained_tool_definitions
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.scope.session import ScopeNames, decoding_scope, session_scope

WORLD = default_world()
NAMES = ScopeNames.of(
    [a.service for a in WORLD.alerts] + [log.service for log in WORLD.logs],
    [a.alert_name for a in WORLD.alerts],
    WORLD.aliases,
    alert_services=[(a.alert_name, a.service) for a in WORLD.alerts],
)
ALL_SERVICES = ["inventory-service", "order-service", "payment-service", "user-service"]
ALL_ALERTS = ["HighCPUUsage", "HighMemoryUsage", "SlowResponse"]


def _enums(query: str) -> tuple[list[str], list[str]]:
    scope, _ = session_scope(query, NAMES)
    tools = {
        d["function"]["name"]: d["function"]["parameters"]["properties"]
        for d in constrained_tool_definitions(WORLD, query, DecodingScope.of(scope))
    }
    assert tools["query_logs"]["service"]["enum"] == tools["query_metrics"]["service"]["enum"]
    return tools["query_metrics"]["service"]["enum"], tools["query_metrics"]["alert_name"]["enum"]


@pytest.mark.parametrize(
    ("query", "services", "alerts"),
    [
        # narrow, naming a service and an alert: both enums are the question's
        (
            "只确认 order-service 是否存在 HighMemoryUsage 告警。",
            ["order-service"],
            ["HighMemoryUsage"],
        ),
        # narrow, by an alias: the service it names
        ("只确认订单服务当前是否存在内存告警", ["order-service"], ALL_ALERTS),
        # narrow, naming only an alert: the alert's own service (004: "claims 只围绕
        # HighCPUUsage / payment-service")
        ("只确认 HighCPUUsage，不要分析 user-service", ["payment-service"], ["HighCPUUsage"]),
        # ... unless the question excludes it: then the world's, less what it excludes
        (
            "只确认 HighCPUUsage，不要分析 payment-service",
            ["inventory-service", "order-service", "user-service"],
            ["HighCPUUsage"],
        ),
        # broad, excluding a service and an alert: every other one
        (
            "系统有哪些告警？排除 order-service 和 SlowResponse",
            ["inventory-service", "payment-service", "user-service"],
            ["HighCPUUsage", "HighMemoryUsage"],
        ),
        # broad, naming a service: today's full enums (never narrower than the question)
        ("order-service 的 HighMemoryUsage 告警是什么原因？", ALL_SERVICES, ALL_ALERTS),
        # broad, naming nothing
        ("现在系统有哪些告警？", ALL_SERVICES, ALL_ALERTS),
    ],
)
def test_the_enums_come_from_a_narrow_questions_scope_only(
    query: str, services: list[str], alerts: list[str]
) -> None:
    assert _enums(query) == (services, alerts)


def _metrics_parameters(query: str) -> dict[str, Any]:
    scope, _ = session_scope(query, NAMES)
    tools = constrained_tool_definitions(WORLD, query, decoding_scope(scope, NAMES))
    parameters: dict[str, Any] = tools[0]["function"]["parameters"]
    assert tools[0]["function"]["name"] == "query_metrics"
    return parameters


def test_a_narrow_question_naming_an_alert_takes_the_alert_by_name_and_no_keywords() -> None:
    """Live, the model never filled alert_name unasked: it wrote "high_memory_usage" or the
    question's excluded topics as keywords, which are AND-ed with every other filter."""
    about_alert = _metrics_parameters("只确认 HighCPUUsage，不要分析 OOM")
    assert sorted(about_alert["properties"]) == ["alert_name", "service"]
    assert about_alert["required"] == ["service", "alert_name"]
    assert about_alert["properties"]["service"]["enum"] == ["payment-service"]
    # so does a narrow question naming its service too (live: keywords ["high_memory_usage"])
    with_service = _metrics_parameters("只确认 order-service 是否存在 HighMemoryUsage 告警")
    assert sorted(with_service["properties"]) == ["alert_name", "service"]
    assert with_service["required"] == ["service", "alert_name"]
    assert with_service["properties"]["service"]["enum"] == ["order-service"]
    # a narrow question naming no alert keeps keywords and an optional alert name, as before
    by_topic = _metrics_parameters("只确认 payment-service 当前是否存在 CPU 使用率过高告警。")
    assert sorted(by_topic["properties"]) == ["alert_name", "keywords", "service"]
    assert by_topic["required"] == ["service"]
    # so does a broad question about an alert: its scope is anchored, its decoding is not
    broad = _metrics_parameters("HighCPUUsage 告警是什么原因？")
    assert sorted(broad["properties"]) == ["alert_name", "keywords", "service"]
    assert session_scope("HighCPUUsage 告警是什么原因？", NAMES)[0].services == ["payment-service"]


def test_a_search_for_an_excluded_topic_is_refused_by_the_keyword_that_names_it() -> None:
    query = "只确认 HighCPUUsage，不要分析订单123、OOM、数据库慢查询、连接池或 user-service"
    decoding = decoding_scope(session_scope(query, NAMES)[0], NAMES)
    live = ["high_cpu_usage, oom, database_l1", "connection_pool_l1", "user-service"]
    assert decoding.refusal({"service": "payment-service", "keywords": live}) == (
        "scope.out_of_scope_call: keywords=high_cpu_usage, oom, database_l1 is outside the"
        " question's scope (it searches for OOM, 数据库慢查询, which the question excludes); the"
        " call was not run"  # database_l1: an underscore is a word's separator (issue 37)
    )
    words = ["CPU", "HikariPool", "连接池", "order-888", "slow query", "user-service", "java"]
    refused = {word: decoding.refusal({"keywords": [word]}) for word in words}
    assert [word for word, why in refused.items() if why is None] == ["CPU", "java"]
    assert "searches for HikariCP" in (refused["HikariPool"] or "")
    assert "searches for 订单" in (refused["order-888"] or "")
    assert decoding.refusal({"keywords": "CPU, OOM"}) is not None  # a string is a list too
    # without the scope rules' reading (a DecodingScope built by hand), keywords pass
    assert DecodingScope.of(session_scope(query, NAMES)[0]).refusal({"keywords": live}) is None


def test_a_call_naming_an_example_subject_is_refused_unless_the_question_asks_about_it() -> None:
    names = ScopeNames.of(
        NAMES.services, NAMES.alerts, NAMES.aliases, ["billing-gateway", "HighQueueLag"]
    )
    decoding = decoding_scope(session_scope("order-service 为什么慢？", names)[0], names)
    # Recorded live (five samples): order-service's logs searched for the example's service.
    copied = {"service": "order-service", "keywords": ["user-service", "Billing-Gateway"]}
    assert decoding.refusal(copied) == (
        "scope.out_of_scope_call: keywords=Billing-Gateway is outside the question's scope (it"
        " names billing-gateway, a subject of the prompts' former examples, which no question asks"
        " about); the call was not run"
    )
    assert "alert_name=HighQueueLag is outside" in (
        decoding.refusal({"alert_name": "HighQueueLag"}) or ""
    )
    assert decoding.refusal({"service": "billing-gateway"}) is not None
    assert decoding.refusal({"service": "order-service", "keywords": ["gateway"]}) is None
    # Outside every question, as the claims about them are (ScopeNames.foreign).
    asked = decoding_scope(session_scope("只确认 billing-gateway 是否有告警", names)[0], names)
    assert asked.refusal({"service": "billing-gateway"}) is not None


def test_a_narrow_question_about_a_service_the_world_lacks_can_still_search_it() -> None:
    query = "只确认 shipping-service 的日志里是否有 HikariCP 记录"
    names = ScopeNames.of([*NAMES.services, "shipping-service"], NAMES.alerts, WORLD.aliases)
    scope, _ = session_scope(query, names)
    tools = constrained_tool_definitions(WORLD, query, DecodingScope.of(scope))
    enum = tools[1]["function"]["parameters"]["properties"]["service"]["enum"]
    assert enum == ["shipping-service"]


def _invocation(id: int, **params: Any) -> ToolInvocation:
    return ToolInvocation.model_validate(
        {
            "id": id,
            "session_id": "s",
            "round": 1,
            "tool_name": "query_metrics",
            "input_params": params,
            "duration_ms": 1,
            "success": True,
            "retrieval_details": {
                "evidence_status": "supported",
                "evidence_refs": [{"raw_path": "$.alerts[0]", "text": "t"}],
            },
        }
    )


def test_a_call_outside_the_scope_is_refused_by_name_and_blank_values_are_no_filter() -> None:
    scope = DecodingScope(services=("order-service",), alerts=("HighMemoryUsage",))
    assert scope.refusal({"service": "order-service", "alert_name": "HighMemoryUsage"}) is None
    assert scope.refusal({"service": " ", "keywords": ["oom"]}) is None
    assert scope.refusal({}) is None
    assert scope.refusal({"service": "payment-service"}) == (
        "scope.out_of_scope_call: service=payment-service is outside the question's scope"
        " (order-service); the call was not run"
    )
    assert (scope.refusal({"service": "order-service", "alert_name": "HighCPUUsage"}) or "")[
        :40
    ] == "scope.out_of_scope_call: alert_name=High"
    assert DecodingScope().refusal({"service": "payment-service"}) is None  # broad: anything
    assert scope.admits(_invocation(1, service="order-service"))
    assert not scope.admits(_invocation(2, service="payment-service"))


def test_a_call_on_what_the_question_excludes_is_refused_narrow_or_broad() -> None:
    """A live model asked "只确认 HighCPUUsage，不要分析 … user-service" called user-service
    three times: the question names no service, so only the exclusion can stop it."""
    for query in ("只确认 HighCPUUsage，不要分析 user-service", "有哪些告警？不用看 user-service"):
        scope, _ = session_scope(query, NAMES)
        decoding = DecodingScope.of(scope)
        assert decoding.refusal({"service": "user-service"}) == (
            "scope.out_of_scope_call: service=user-service is outside the question's scope"
            " (the question excludes it); the call was not run"
        )
        assert decoding.refusal({"service": "payment-service"}) is None
        assert not decoding.admits(_invocation(1, service="user-service"))
    excluded_alert = DecodingScope.of(session_scope("有哪些告警？排除 SlowResponse", NAMES)[0])
    assert (excluded_alert.refusal({"alert_name": "SlowResponse"}) or "").startswith(
        "scope.out_of_scope_call: alert_name=SlowResponse"
    )


def test_the_contract_schema_offers_the_scopes_claim_types_and_its_invocations() -> None:
    narrow = DecodingScope.of(
        ScopeContract(services=["order-service"], narrow=True, claim_types=["observation"])
    )
    rows = [_invocation(1, service="order-service"), _invocation(2, service="payment-service")]
    schema = contract_parameters([r for r in rows if narrow.admits(r)], narrow.claim_types)
    claim = schema["properties"]["claims"]["items"]["properties"]
    assert claim["claim_type"]["enum"] == ["observation"]
    binding = claim["evidence_bindings"]["items"]
    assert binding["properties"]["source_invocation_id"] == {"type": "integer", "const": 1}
    broad = contract_parameters(rows)["properties"]["claims"]["items"]["properties"]
    assert broad["claim_type"]["enum"] == [
        "observation",
        "negative_observation",
        "root_cause",
        "risk",
    ]
