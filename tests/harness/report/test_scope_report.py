"""The question's scope and the claims it set aside, in every report: the audit trail of a
failure, the JSON summary and the HTML page (issue 25)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.harness.report.html import render_html
from pytest_diageval.harness.report.reporter import audit_trail
from support.html_page import parse_html
from support.reports import SHIPPED, report_of

OUT_OF_SCOPE = SHIPPED / "scope" / "out-of-scope-verified-claim.yaml"
NONE_IN_SCOPE = SHIPPED / "scope" / "no-claim-in-scope.yaml"
ANCHORED = SHIPPED / "scope" / "alert-names-its-service.yaml"


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return report_of([OUT_OF_SCOPE, NONE_IN_SCOPE, ANCHORED])


def _entry(report: dict[str, Any], scenario_id: str) -> dict[str, Any]:
    return next(e for e in report["scenarios"] if e["id"] == scenario_id)


def _trail(entry: dict[str, Any]) -> list[str]:
    """The audit trail of a report entry's result, line by line."""
    data = copy.deepcopy(entry["result"])
    for row in data["invocations"]:
        row["duration_ms"] = 0  # the JSON report leaves wall-clock durations out
    return audit_trail(ChatResult.model_validate(data)).splitlines()


def test_the_json_summary_holds_the_scope_and_every_rounds_set_aside_claims(
    report: dict[str, Any],
) -> None:
    summary = _entry(report, "scope-out-of-scope-verified-claim")["summary"]
    assert (summary["scope"]["services"], summary["scope"]["alerts"]) == (
        ["order-service"],
        ["HighMemoryUsage"],
    )
    assert summary["set_aside"] == [
        {"round": 1, "claim_id": "claim-2", "rules": ["scope.out_of_scope"]}
    ]
    retried = _entry(report, "scope-no-claim-in-scope")["summary"]["set_aside"]
    assert [(row["round"], row["claim_id"]) for row in retried] == [(1, "claim-1"), (2, "claim-1")]


def test_the_audit_trail_says_the_scope_and_each_set_aside_claim_with_its_rule(
    report: dict[str, Any],
) -> None:
    lines = _trail(_entry(report, "scope-out-of-scope-verified-claim"))
    assert lines[1] == (
        "scope: services order-service; alerts HighMemoryUsage; topics any; excluded none;"
        " narrow (只确认, 是否存在 highmemoryusage 告警); claim types observation,"
        " negative_observation"
    )
    (aside,) = [line.strip() for line in lines if line.strip().startswith("set aside")]
    assert aside.startswith("set aside claim-2 (scope.out_of_scope): the claim is about")
    assert "payment-service" in aside


def test_the_page_shows_the_scope_and_marks_the_set_aside_claim(report: dict[str, Any]) -> None:
    page = parse_html(render_html(report, None))
    section = page.by_id("scenario-scope-out-of-scope-verified-claim")
    (scope,) = section.find_all("p", "scope")
    assert scope.text().startswith(
        "scope (read from the question): services order-service · alerts HighMemoryUsage"
    )
    (table,) = section.find_all("table", "set-aside")
    rows = [row.cells() for row in table.find_all("tr")[1:]]
    assert [row[:2] for row in rows] == [["claim-2", "scope.out_of_scope"]]
    claims = {c.text()[:7]: c for c in section.find_all("div", "claim")}
    assert "set aside: scope.out_of_scope" in claims["claim-2"].text()
    assert "set aside" not in claims["claim-1"].text()


def test_services_the_question_did_not_name_say_they_are_its_alerts_own(
    report: dict[str, Any],
) -> None:
    """ "只确认 HighCPUUsage" names no service; a reviewer must see why payment-service is the
    scope (the world's alert catalog), in the audit trail and on the page."""
    entry = _entry(report, "scope-alert-names-its-service")
    assert entry["summary"]["scope"]["services_from_alerts"] is True
    lines = _trail(entry)
    assert lines[1].startswith(
        "scope: services payment-service (the alerts' own); alerts HighCPUUsage;"
    )
    page = parse_html(render_html(report, None))
    (scope,) = page.by_id("scenario-scope-alert-names-its-service").find_all("p", "scope")
    assert scope.text().startswith(
        "scope (read from the question): services payment-service (the alerts' own) · alerts"
    )
    plain = page.by_id("scenario-scope-out-of-scope-verified-claim").find_all("p", "scope")[0]
    assert "alerts' own" not in plain.text()


def test_a_report_from_before_the_scope_still_renders(report: dict[str, Any]) -> None:
    older = copy.deepcopy(report)
    for entry in older["scenarios"]:
        del entry["result"]["scope"]
        for round_data in entry["result"]["rounds"]:
            del round_data["set_aside"]
            del round_data["plan_set_aside"]
    page = parse_html(render_html(older, None))
    assert page.find_all("p", "scope") == []
    assert page.find_all("table", "set-aside") == []


def test_the_audit_trail_says_each_withheld_plan_step_and_refused_call() -> None:
    plan = SHIPPED / "scope" / "plan-names-out-of-scope-service.yaml"
    refused = SHIPPED / "scope" / "out-of-scope-call-refused.yaml"
    entries = report_of([plan, refused])["scenarios"]
    trails = {entry["id"]: _trail(entry) for entry in entries}
    (step,) = [
        line.strip()
        for line in trails["scope-plan-names-out-of-scope-service"]
        if line.strip().startswith("plan step withheld")
    ]
    assert step == (
        "plan step withheld (scope.out_of_scope_plan_step): 用 query_logs 查询 inventory-service"
        " 的 HikariCP 连接池耗尽日志 (it is about inventory-service, HikariCP; the question asks"
        " about payment-service, HighCPUUsage)"  # HikariCP: a topic HighCPUUsage does not hold
    )
    (call,) = [
        line.strip() for line in trails["scope-out-of-scope-call-refused"] if "ERROR" in line
    ]
    assert call.startswith("tool query_logs ")
    assert call.endswith(
        "-> no row  ERROR scope.out_of_scope_call: service=payment-service is outside the"
        " question's scope (order-service); the call was not run"
    )
