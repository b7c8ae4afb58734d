"""The plan the executor may see (issue 25 part 4): steps outside the question withheld."""

from __future__ import annotations

from pytest_diageval.core.contract.contracts import Plan
from pytest_diageval.core.scope.session import ScopeNames, checked_plan, session_scope

NAMES = ScopeNames.of(
    ["payment-service", "order-service", "inventory-service"],
    ["HighMemoryUsage", "HighCPUUsage"],
    {"order-service": ["订单服务"]},
)
CPU = "只确认 payment-service 是否存在 HighCPUUsage 告警，不要分析连接池"


def test_a_step_about_another_service_or_an_excluded_topic_is_withheld_with_its_reason() -> None:
    scope, _ = session_scope(CPU, NAMES)
    plan = Plan(
        plan="只确认 payment-service 的告警",
        steps=[
            "用 query_metrics 查询 payment-service 的 HighCPUUsage 告警",
            "用 query_logs 查询 inventory-service 的日志",
            "用 query_logs 查询 payment-service 的连接池日志",
            "用 query_metrics 查询订单服务的告警",
        ],
    )
    seen, withheld = checked_plan(plan, scope, NAMES)
    assert seen == Plan(plan=plan.plan, steps=[plan.steps[0]])
    assert [(item.step, item.rule) for item in withheld] == [
        (plan.steps[1], "scope.out_of_scope_plan_step"),
        (plan.steps[2], "scope.out_of_scope_plan_step"),
        (plan.steps[3], "scope.out_of_scope_plan_step"),
    ]
    assert withheld[0].reason == (
        "it is about inventory-service; the question asks about payment-service, HighCPUUsage"
    )
    assert withheld[1].reason == "it names HikariCP, which the user excluded"
    assert withheld[2].reason.startswith("it is about order-service;")  # by its alias


def test_a_plan_whose_sentence_is_off_scope_is_withheld_whole() -> None:
    scope, _ = session_scope(CPU, NAMES)
    copied = Plan(plan="只确认 order-service 的 HighMemoryUsage 告警", steps=["用 query_metrics"])
    seen, withheld = checked_plan(copied, scope, NAMES)
    assert seen is None  # the executor then works from the question alone
    assert [item.step for item in withheld] == [copied.plan]


def test_a_plan_within_the_scope_or_a_question_naming_nothing_is_passed_as_is() -> None:
    scope, _ = session_scope(CPU, NAMES)
    plan = Plan(plan="查 payment-service", steps=["用 query_metrics 查询 payment-service"])
    assert checked_plan(plan, scope, NAMES) == (plan, [])
    broad, _ = session_scope("现在有哪些告警？", NAMES)
    other = Plan(plan="查 order-service", steps=["用 query_logs 查询 inventory-service"])
    assert checked_plan(other, broad, NAMES) == (other, [])
    assert checked_plan(None, scope, NAMES) == (None, [])
