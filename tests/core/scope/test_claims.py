"""The scope rules on the claims the real model made: every live cassette's recorded contracts,
judged against the scope of the live scenario's own question (issue 25: the model answers the
prompt's worked example, order-service memory and inventory-service HikariCP, whatever it is
asked)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_diageval.agents.prompts import example_subjects
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.scope.claims import (
    EXCLUDED_TOPIC,
    NARROW_CLAIM_TYPE,
    OUT_OF_SCOPE,
    scope_problems,
)
from pytest_diageval.core.scope.session import ScopeNames, session_scope
from support.shipped import shipped_files

REPO = Path(__file__).resolve().parents[3]
WORLD = default_world()
SERVICES = sorted({a.service for a in WORLD.alerts} | {log.service for log in WORLD.logs})
ALERTS = sorted({a.alert_name for a in WORLD.alerts})
# As the session's scope (chat_service._scope_names): the prompts' example subjects are names
# no question asks about.
FOREIGN = [name for names in example_subjects() for name in names]


# The world's alert catalog: a question naming an alert and no service is about its service.
NAMES = ScopeNames.of(
    SERVICES, ALERTS, WORLD.aliases, FOREIGN, [(a.alert_name, a.service) for a in WORLD.alerts]
)


def _rules(query: str, claim_type: str, claim_text: str) -> list[str]:
    scope, _ = session_scope(query, NAMES)  # the floor, anchored as the session's is
    problems = scope_problems(
        claim_type, claim_text, scope, SERVICES, ALERTS, WORLD.aliases, FOREIGN
    )
    return [problem.rule for problem in problems]


def _recorded_claims(cassette: Path) -> list[dict[str, Any]]:
    data = yaml.load(
        cassette.read_text("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    )
    claims = []
    for interaction in data["interactions"]:
        try:
            answer = json.loads(interaction["response"]["body"]["string"])
        except (TypeError, ValueError):
            continue
        for choice in answer.get("choices", []):
            for call in choice["message"].get("tool_calls") or []:
                if call["function"]["name"] != "submit_evidence_contract":
                    continue
                try:
                    claims += json.loads(call["function"]["arguments"]).get("claims", [])
                except ValueError:
                    continue
    return claims


LIVE = shipped_files("scenarios/live", "*.yaml")
OUT = [OUT_OF_SCOPE]


def _found(path: Path) -> dict[tuple[str, str], list[str]]:
    """(the claim's first 16 characters, its type) -> the rules it breaks, for every claim
    recorded in the live scenario's cassette (sample 1), judged against its own question."""
    scenario = yaml.safe_load(path.read_text("utf-8"))
    cassette = (path.parent / scenario["llm"]["cassette"]).resolve()
    found: dict[tuple[str, str], list[str]] = {}
    for claim in _recorded_claims(cassette):
        key = (claim["claim_text"][:16], claim["claim_type"])
        rules = _rules(scenario["query"], claim["claim_type"], claim["claim_text"])
        assert found.setdefault(key, rules) == rules, (key, claim["claim_text"])
    return found


# What the scope rules find in each live scenario's recorded claims (re-recorded on 2026-12-05
# with prompts that show no example: no claim names a subject of the former examples, nor any
# service or topic outside its question). Reviewed claim by claim: the claims say little (a
# repeated alert name, "未找到匹配的告警", prose about nothing in the world), and none names a
# subject the question leaves out.
EXPECTED: dict[str, dict[tuple[str, str], list[str]]] = {
    "live-forged-trap": {
        ('Q&A-104:Order', 'observation'): [],
    },
    "live-high-memory": {
        ('highMemoryUsage=', 'observation'): [],
        ('lowMemoryUsage=5', 'observation'): [],
    },
    "live-hikaricp-negative": {
        ('未找到匹配的日志', 'observation'): [],
        ('未找到匹配的告警', 'observation'): [],
        ('没有证据，只记录服务名。 该服务', 'observation'): [],
        ('未找到匹配的告警，只记录服务名和', 'negative_observation'): [],
    },
    "live-matrix-01-highcpu-narrow": {
        ('未找到匹配的告警,服务，或关键词', 'observation'): [],
    },
    "live-matrix-02-highmemory": {
        ('highMemoryUsage', 'observation'): [],
    },
    "live-matrix-03-slowresponse": {
        ('The claim is val', 'observation'): [],
    },
    "live-matrix-04-hikaricp-positive": {
        ('未找到匹配的日志, <tool_', 'observation'): [],
        ('未找到匹配的日志', 'observation'): [],
    },
    "live-matrix-05-hikaricp-negative": {
        ('inventory-servic', 'observation'): [],
    },
    "live-matrix-06-gatekeeper": {
        ('The system has a', 'observation'): [],
    },
    "live-matrix-07-narrow-forbidden": {
        ('High CPUUsage fi', 'observation'): [],
    },
    "live-narrow-forbidden": {
        ('high CPU usage f', 'observation'): [],
        ('high CPU usage o', 'observation'): [],
    },
    "live-new-auth-disk-english": {
        ('HighDiskUsage', 'observation'): [],
        ('NoSearch', 'observation'): [],
    },
    "live-new-notification-smtp-logs": {
        ('未找到匹配的告警', 'observation'): [],
        ('未找到匹配的日志', 'observation'): [],
        ('未找到匹配的证据', 'observation'): [],
    },
    "live-new-shipping-error-rate": {
        ('This claim has b', 'observation'): [],
    },
    "live-payment-oom-logs": {
        ('未找到匹配的告警', 'observation'): [],
    },
    "live-payment-redis-not-cpu": {
        ('未找到匹配的告警', 'observation'): [],
        ('I am a user of a', 'observation'): [],
        ('I am a user of t', 'observation'): [],
    },
    "live-user-slow-query-logs": {
        ('在某个地方使用服务时，在某种程度', 'observation'): [],
        ('在某地方，我不知道是否发生某种问', 'observation'): [],
    },
}  # fmt: skip


@pytest.mark.parametrize("path", LIVE, ids=lambda path: path.stem)
def test_the_scope_rules_on_the_real_models_claims(path: Path) -> None:
    assert _found(path) == EXPECTED[path.stem]


def test_a_root_cause_under_a_narrow_question_and_an_alert_outside_it() -> None:
    query = "只确认 order-service 是否存在 HighMemoryUsage 告警"
    assert _rules(query, "root_cause", "order-service 内存泄漏已确认") == [NARROW_CLAIM_TYPE]
    assert _rules(query, "observation", "order-service 存在 HighCPUUsage 告警") == OUT
    assert _rules(query, "observation", "订单服务存在 HighMemoryUsage 告警，91%") == []


def test_an_excluded_topic_by_its_vocabulary_and_an_excluded_phrase_as_written() -> None:
    query = "只确认 HighCPUUsage，不要分析订单123、OOM、数据库慢查询、连接池或 user-service"
    assert _rules(query, "observation", "payment-service 出现 OutOfMemoryError") == [EXCLUDED_TOPIC]
    assert _rules(query, "observation", "user-service 存在 SlowResponse 告警") == [
        OUT_OF_SCOPE,
        EXCLUDED_TOPIC,
    ]
    assert _rules(query, "observation", "payment-service 存在 HighCPUUsage 告警，92%") == []


def test_a_claim_about_the_prompts_example_subjects_is_out_of_scope_whatever_is_asked() -> None:
    # Matrix 07's question names an alert and no service: before the example subjects were
    # foreign names, its recorded "Billing-Gateway 有服务…" claim was in scope.
    for query in ("只确认 HighCPUUsage", "现在系统有哪些告警？", "只确认 order-service 的告警"):
        assert _rules(query, "observation", "Billing-Gateway 有服务") == OUT
        assert OUT[0] in _rules(query, "observation", "BillingGateway 存在 1 告警的 资源 堆栈")
        assert _rules(query, "observation", "存在 HighQueueLag 告警，积压 1840 条") == OUT
    assert (
        _rules("现在系统有哪些告警？", "observation", "payment-service 存在 HighCPUUsage 告警")
        == []
    )
