"""One session's scope and the claims it sets aside (core/scope/session.py)."""

from __future__ import annotations

from pytest_diageval.core.contract.contracts import Claim, ExecutorContract, FactChecked
from pytest_diageval.core.contract.scope_contract import ScopeContract
from pytest_diageval.core.scope.session import (
    ScopeNames,
    about_set_aside,
    is_off_scope,
    session_scope,
    split_claims,
)

NAMES = ScopeNames.of(
    ["payment-service", "order-service", "order-service"],
    ["HighMemoryUsage", "HighCPUUsage"],
    {"order-service": ["订单服务"]},
)
QUERY = "只确认订单服务是否存在 HighMemoryUsage 告警，不要分析连接池"


def _contract(*claims: tuple[str, str, str]) -> ExecutorContract:
    return ExecutorContract(
        answer_version="2",
        diagnosis_summary="",
        claims=[Claim(claim_id=i, claim_type=t, claim_text=x) for i, t, x in claims],  # type: ignore[arg-type]
        hypotheses=[],
        recommended_actions=[],
        missing_info=[],
        user_facing_answer="",
    )


def test_the_names_are_sorted_and_unique_so_a_scope_is_the_same_on_every_run() -> None:
    assert NAMES.services == ("order-service", "payment-service")
    assert NAMES.alerts == ("HighCPUUsage", "HighMemoryUsage")


def test_the_floor_is_the_scope_and_a_proposal_may_narrow_it_never_widen_it() -> None:
    scope, widened = session_scope(QUERY, NAMES)
    assert (scope.services, scope.alerts, scope.excluded) == (
        ["order-service"],
        ["HighMemoryUsage"],
        ["HikariCP"],
    )
    assert widened == []
    proposal = ScopeContract(services=["payment-service"], narrow=True, claim_types=["observation"])
    narrowed, widened = session_scope(QUERY, NAMES, proposal)
    assert (narrowed.services, narrowed.claim_types) == (["order-service"], ["observation"])
    assert widened == ["service payment-service is not in the question's scope"]


CATALOG = ScopeNames.of(
    ["payment-service", "order-service", "user-service"],
    ["HighCPUUsage", "HighMemoryUsage", "DiskFull"],
    alert_services=[
        ("HighCPUUsage", "payment-service"),
        ("HighMemoryUsage", "order-service"),
        ("DiskFull", "user-service"),
        ("DiskFull", "order-service"),
    ],
)


def test_a_question_naming_an_alert_and_no_service_is_about_the_alerts_own_services() -> None:
    """004: "只确认 HighCPUUsage … claims 只围绕 HighCPUUsage / payment-service"."""
    scope, _ = session_scope("只确认 HighCPUUsage，不要分析 OOM", CATALOG)
    assert (scope.services, scope.services_from_alerts) == (["payment-service"], True)
    two_owners, _ = session_scope("只确认 DiskFull 告警", CATALOG)
    assert two_owners.services == ["order-service", "user-service"]  # the catalog's order
    assert CATALOG.alert_services["DiskFull"] == ("order-service", "user-service")
    # an excluded owner is never in scope; with none left, nothing is anchored
    assert session_scope("只确认 DiskFull 告警，不要分析 user-service", CATALOG)[0].services == [
        "order-service"
    ]
    lone, _ = session_scope("只确认 HighCPUUsage，不要分析 payment-service", CATALOG)
    assert (lone.services, lone.services_from_alerts) == ([], False)
    # a named service decides, and a world without a catalog anchors nothing
    named, _ = session_scope("只确认 order-service 是否存在 HighCPUUsage 告警", CATALOG)
    assert (named.services, named.services_from_alerts) == (["order-service"], False)
    assert session_scope("只确认 HighMemoryUsage 告警", NAMES)[0].services == []
    # the planner may narrow an anchored scope, never widen it, and it stays anchored
    proposal = ScopeContract(
        services=["order-service", "user-service"], narrow=True, claim_types=["observation"]
    )
    query = "只确认 DiskFull 告警，不要分析 user-service"
    narrowed, widened = session_scope(query, CATALOG, proposal)
    assert (narrowed.services, narrowed.services_from_alerts) == (["order-service"], True)
    assert widened == ["service user-service is not in the question's scope"]


def test_each_rule_sets_a_claim_aside_with_its_reason_and_the_rest_stay_in_order() -> None:
    scope, _ = session_scope(QUERY, NAMES)
    contract = _contract(
        ("c1", "observation", "订单服务存在 HighMemoryUsage 告警，91%"),
        ("c2", "observation", "payment-service 存在 HighCPUUsage 告警"),
        ("c3", "observation", "order-service 连接池耗尽"),
        ("c4", "root_cause", "order-service 内存泄漏已确认"),
        ("c5", "negative_observation", "order-service 未检索到 OOM 日志"),
    )
    split = split_claims(contract, scope, NAMES)
    assert split.contract is not None
    assert [c.claim_id for c in split.contract.claims] == ["c1", "c5"]
    assert [(c.claim_id, c.rules) for c in split.set_aside] == [
        ("c2", ["scope.out_of_scope"]),
        ("c3", ["scope.excluded_topic"]),
        ("c4", ["scope.narrow_claim_type"]),
    ]
    assert "HighCPUUsage" in split.set_aside[0].reason
    assert [c.claim_id for c in split.claims_set_aside] == ["c2", "c3", "c4"]
    assert [c.claim_id for c in contract.claims][-1] == "c5"  # the original is untouched


def test_nothing_set_aside_keeps_the_same_contract_and_no_contract_is_no_split() -> None:
    scope, _ = session_scope(QUERY, NAMES)
    contract = _contract(("c1", "observation", "订单服务存在 HighMemoryUsage 告警"))
    assert split_claims(contract, scope, NAMES).contract is contract
    assert split_claims(None, scope, NAMES).set_aside == []


def test_a_fact_is_about_a_set_aside_claim_by_its_id_or_else_by_the_same_text() -> None:
    aside = [Claim(claim_id="c2", claim_type="observation", claim_text="payment-service 告警 ")]

    def fact(text: str, claim_id: str | None) -> FactChecked:
        return FactChecked(
            fact=text,
            is_critical=True,
            verification="direct_evidence",
            detail="",
            claim_id=claim_id,
        )

    assert about_set_aside(fact("anything", "c2"), aside)
    assert not about_set_aside(fact("payment-service 告警", "c1"), aside)
    assert about_set_aside(fact("payment-service 告警", None), aside)
    assert not about_set_aside(fact("order-service 告警", None), aside)


def test_a_sentence_is_off_scope_by_service_alert_or_excluded_topic_never_by_its_type() -> None:
    scope, _ = session_scope(QUERY, NAMES)
    assert is_off_scope("payment-service 也有告警", scope, NAMES)
    assert is_off_scope("HikariCP 连接池正常", scope, NAMES)
    assert not is_off_scope("订单服务的内存告警存在，根因已确认", scope, NAMES)
