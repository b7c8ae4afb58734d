"""The reference agent's decisions: which calls a question's scope makes, what it cites, and
the verdict the real pipeline reaches on its answers (no model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_diageval.agents.chat_service import ChatService
from pytest_diageval.agents.reference import reference_llm, reference_script
from pytest_diageval.agents.results import ChatResult
from pytest_diageval.agents.scripted.model import ScriptError, scripted_llm
from pytest_diageval.core.contract.contracts import Plan
from pytest_diageval.core.evidence.world import World, load_world

WORLD = load_world("default")


def calls(query: str, world: World = WORLD) -> list[tuple[str, dict[str, Any]]]:
    entries = reference_script(query, world)
    return [(call["name"], call["arguments"]) for call in entries[1]["tool_calls"]]


def claims(query: str, world: World = WORLD) -> list[dict[str, Any]]:
    return list(reference_script(query, world)[2]["content"]["claims"])


def run(query: str, world: World = WORLD) -> ChatResult:
    llm, transport = scripted_llm(reference_script(query, world))
    with llm:
        result = ChatService().run(query, world, llm)
    transport.assert_exhausted()
    return result


# --------------------------------------------------------------------------- calls


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "只确认 order-service 是否存在 HighMemoryUsage 告警。",
            [("query_metrics", {"service": "order-service", "alert_name": "HighMemoryUsage"})],
        ),
        (  # an alert named alone is asked on the service it belongs to
            "只确认 HighCPUUsage，不要分析订单123、OOM、数据库慢查询、连接池或 user-service",
            [("query_metrics", {"service": "payment-service", "alert_name": "HighCPUUsage"})],
        ),
        (  # a topic is searched in the logs by its name and its vocabulary's plain forms
            "请确认 inventory-service 是否存在 HikariCP 连接池耗尽，只确认这一件事。",
            [
                (
                    "query_logs",
                    {
                        "service": "inventory-service",
                        "keywords": [
                            "HikariCP",
                            "hikaripool",
                            "连接池",
                            "connection pool",
                            "数据库连接池",
                        ],
                    },
                )
            ],
        ),
        (  # a topic asked as an alert: the alerts and the logs, by the topic
            "只确认 payment-service 当前是否存在 CPU 使用率过高告警。",
            [
                ("query_metrics", {"service": "payment-service", "keywords": ["CPU"]}),
                ("query_logs", {"service": "payment-service", "keywords": ["CPU"]}),
            ],
        ),
        (  # a service and nothing else: everything about it
            "order-service 怎么了？",
            [
                ("query_metrics", {"service": "order-service"}),
                ("query_logs", {"service": "order-service"}),
            ],
        ),
        ("现在有哪些告警？", [("query_metrics", {})]),
    ],
)
def test_the_calls_follow_the_question_s_scope(
    query: str, expected: list[tuple[str, dict[str, Any]]]
) -> None:
    assert calls(query) == expected


def test_no_call_names_an_excluded_topic_or_service() -> None:
    made = calls("只确认 HighCPUUsage，不要分析订单123、OOM、数据库慢查询、连接池或 user-service")
    text = repr(made).casefold()
    for excluded in ("user-service", "oom", "连接池", "订单", "慢查询"):
        assert excluded not in text


# --------------------------------------------------------------------------- citations


def test_every_matching_item_is_cited_verbatim_by_its_ref() -> None:
    (claim,) = claims("确认 order-service 是否存在 HikariCP 连接池耗尽。")
    assert claim["claim_type"] == "observation"
    bindings = claim["evidence_bindings"]
    assert [b["raw_path"] for b in bindings] == ["$.logs[0]", "$.logs[1]"]
    assert all(b["source_invocation_id"] == 1 for b in bindings)
    assert bindings[0]["evidence_excerpt"].startswith("[2026-07-08T")
    assert "HikariPool-1 - Connection is not available" in bindings[0]["evidence_excerpt"]


def test_a_search_that_found_nothing_is_a_negative_observation_citing_the_collection() -> None:
    (claim,) = claims("请确认 inventory-service 是否存在 HikariCP 连接池耗尽，只确认这一件事。")
    assert claim["claim_type"] == "negative_observation"
    assert claim["evidence_bindings"] == [
        {
            "tool_name": "query_logs",
            "source_invocation_id": 1,
            "raw_path": "$.logs",
            "evidence_excerpt": "未找到匹配的日志",
        }
    ]


def test_each_claim_states_its_items_as_points_copied_from_the_items() -> None:
    """The reference agent points (docs/points.md): an item's name and state, or a log's level
    and service, copied from the item; a no-hit's empty result. The code decides these, never
    the claim's plain text."""
    (alert,) = claims("只确认 order-service 是否存在 HighMemoryUsage 告警。")
    assert alert["points"] == [
        {"binding": 1, "field": "alert_name", "relation": "equals", "value": "HighMemoryUsage"},
        {"binding": 1, "field": "state", "relation": "equals", "value": "firing"},
    ]
    (logs,) = claims("确认 order-service 是否存在 HikariCP 连接池耗尽。")
    assert [(p["binding"], p["field"]) for p in logs["points"]] == [
        (1, "level"), (1, "service"), (2, "level"), (2, "service"),
    ]  # fmt: skip
    assert {p["value"] for p in logs["points"] if p["field"] == "service"} == {"order-service"}
    (negative,) = claims("请确认 inventory-service 是否存在 HikariCP 连接池耗尽，只确认这一件事。")
    assert negative["points"] == [
        {"binding": 1, "field": "results", "relation": "equals", "value": "0"}
    ]


def test_a_reference_claim_is_judged_by_its_points_not_its_text() -> None:
    """Its text rewritten to say the opposite, the reference answer still passes: the points
    decide. A point made false stops the claim."""
    query = "只确认 order-service 是否存在 HighMemoryUsage 告警。"
    script = reference_script(query, WORLD)
    claim = script[2]["content"]["claims"][0]
    claim["claim_text"] = "order-service 没有任何告警，内存只有 10%。"
    llm, _ = scripted_llm(script)
    with llm:
        assert ChatService().run(query, WORLD, llm).final_verdict == "PASS"
    claim["points"][1]["value"] = "resolved"
    llm, _ = scripted_llm(script + script)  # a retry round is answered the same way
    with llm:
        result = ChatService().run(query, WORLD, llm)
    assert result.final_verdict != "PASS"


def test_the_verifier_labels_each_claim_direct_with_its_own_trace_entry() -> None:
    verifier = reference_script("只确认 payment-service 当前是否存在 CPU 使用率过高告警。", WORLD)[
        3
    ]
    facts = verifier["content"]["facts_checked"]
    assert [(f["claim_id"], f["verification"]) for f in facts] == [
        ("claim-1", "direct_evidence"),
        ("claim-2", "direct_evidence"),
    ]
    assert [f["evidence_refs"] for f in facts] == [
        [{"trace_ref": "trace-1", "source_invocation_ids": [1]}],
        [{"trace_ref": "trace-2", "source_invocation_ids": [2]}],
    ]


def test_a_failed_call_is_missing_information_never_a_claim() -> None:
    world = WORLD.model_copy(update={"failures": {"query_metrics": "timeout"}})
    contract = reference_script("只确认 order-service 是否存在 HighMemoryUsage 告警。", world)[2]
    assert contract["content"]["claims"] == []
    assert [m["description"] for m in contract["content"]["missing_info"]] == [
        "query_metrics order-service HighMemoryUsage 调用失败，没有可引用的证据。"
    ]


# --------------------------------------------------------------------------- verdicts


@pytest.mark.parametrize(
    ("query", "answer_part"),
    [
        ("只确认 order-service 是否存在 HighMemoryUsage 告警。", "当前 91%"),
        ("请确认 inventory-service 是否存在 HikariCP 连接池耗尽，只确认这一件事。", "「HikariCP"),
        ("Is there a HighMemoryUsage alert on order-service?", "current 91%"),
        # a no-hit of an alert on a service it does not belong to (the judge once compared the
        # lower-cased alert name with the claim's text split at its capitals)
        ("只确认 order-service 是否存在 HighCPUUsage 告警", "HighCPUUsage"),
    ],
)
def test_the_pipeline_passes_the_reference_answers_in_one_round(
    query: str, answer_part: str
) -> None:
    result = run(query)
    assert (result.final_verdict, len(result.rounds)) == ("PASS", 1)
    assert result.rounds[0].decision.overrides == []
    assert answer_part in (result.final_answer or "")


# --------------------------------------------------------------------------- seed matrix

MATRIX = Path(__file__).resolve().parents[3] / "scenarios" / "matrix"


@pytest.mark.parametrize(
    "name",
    [
        "01-highcpu-narrow-baseline.yaml",
        "02-highmemory-positive.yaml",
        "03-slowresponse-positive.yaml",
        "04-hikaricp-positive.yaml",
        "05-hikaricp-negative.yaml",
        "07-narrow-forbidden-claim.yaml",
    ],
)
def test_on_the_seed_matrix_the_reference_reaches_the_verdict_004_asks_for(name: str) -> None:
    """Same question and world, the reference instead of the script. (06 is excluded: its
    REJECT is earned by a forged citation, which the reference never makes.)"""
    scenario = yaml.safe_load((MATRIX / name).read_text("utf-8"))
    assert scenario["world"] == "default"
    result = run(scenario["query"])
    assert result.final_verdict == scenario["expect"]["verdict"] == "PASS"
    assert len(result.rounds) == 1


# --------------------------------------------------------------------------- rounds


def test_a_retry_round_is_answered_the_same_way_and_the_run_ends_on_a_verdict() -> None:
    """Every call failed: no claim, LOW_CONFID 0.0 in round 1, so the code asks a second
    round; the reference answers it (its own invocation ids) instead of running out."""
    world = WORLD.model_copy(update={"failures": {"query_logs": "timeout"}})
    query = "确认 order-service 是否存在 HikariCP 连接池耗尽。"
    llm, transport = reference_llm(query, world)
    with llm:
        result = ChatService().run(query, world, llm)
    transport.assert_exhausted()
    assert (result.final_verdict, len(result.rounds), transport.served) == ("LOW_CONFID", 2, 8)
    assert [row.id for row in result.invocations] == [1, 2]
    assert [row.round for row in result.invocations] == [1, 2]


def test_a_run_that_stops_inside_a_round_is_still_an_error() -> None:
    llm, transport = reference_llm("只确认 order-service 是否存在 HighMemoryUsage 告警。", WORLD)
    with llm:
        llm.structured(Plan, [{"role": "user", "content": "plan"}], stage="planner", round=1)
    with pytest.raises(ScriptError, match="left unused"):
        transport.assert_exhausted()
