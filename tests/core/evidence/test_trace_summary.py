"""The verifier-facing tool trace summary, built from persisted rows only."""

from __future__ import annotations

from typing import Any

from pytest_diageval.core.contract.contracts import EvidenceRef, RetrievalDetails, ToolInvocation
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store, stable_json
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.trace_summary import (
    FACT_CHARS,
    OUTPUT_SUMMARY_CHARS,
    ToolTraceSummaryService,
    summarize_invocations,
    topic_key,
)
from pytest_diageval.core.evidence.world import World, default_world, load_world

NOW = "2026-07-08T11:17:00+08:00"
SESSION = "s1"

HIKARI_TIMEOUT = "HikariPool-1 - Connection is not available, request timed out after 30000ms"
HIKARI_STATS = "HikariCP pool stats: active=50/50, idle=0, waiting=32"


def _session(world: World | None = None, **options: Any) -> tuple[Store, ToolInvocationRecorder]:
    store = Store()
    store.create_session(SESSION, "诊断", NOW)
    toolbox = Toolbox(world or default_world())
    return store, ToolInvocationRecorder(store, toolbox, SESSION, **options)


def _row(
    row_id: int,
    tool_name: str,
    params: dict[str, Any],
    *,
    success: bool = True,
    details: RetrievalDetails | None = None,
    preview: str | None = None,
    truncated: bool = False,
    error: str | None = None,
    round: int = 1,
) -> ToolInvocation:
    return ToolInvocation(
        id=row_id,
        session_id=SESSION,
        round=round,
        tool_name=tool_name,
        input_params=params,
        duration_ms=1,
        success=success,
        error_message=error,
        output_preview=preview,
        output_truncated=truncated,
        retrieval_details=details,
    )


# --------------------------------------------------------------------------- mixed outcomes


def test_mixed_session_keeps_failure_no_hit_and_dedup_as_gaps() -> None:
    world = default_world().model_copy(update={"failures": {"query_metrics": "timeout"}})
    store, recorder = _session(world)
    recorder.call("query_metrics", {"service": "order-service"}, round=1)  # 1 fails
    recorder.call("query_logs", {"service": "order-service", "keywords": ["HikariCP"]}, round=1)
    recorder.call("query_logs", {"service": "inventory-service", "keywords": "HikariCP"}, round=1)
    recorder.call("lookup_knowledge", {"query": "HighMemoryUsage"}, round=1)  # 4
    recorder.call("lookup_knowledge", {"query": "highmemoryusage"}, round=1)  # 5 deduped
    recorder.call("get_current_time", {}, round=1)  # helper: no row, no entry

    items = ToolTraceSummaryService(store).build(SESSION)

    assert [(i.trace_ref, i.tool_name, i.source_invocation_ids) for i in items] == [
        ("trace-1", "query_metrics", [1]),
        ("trace-2", "query_logs", [2]),
        ("trace-3", "query_logs", [3]),
        ("trace-4", "lookup_knowledge", [4, 5]),
    ]
    failed, hikari, no_hit, knowledge = items
    assert (failed.success, failed.evidence_level, failed.failed_invocation_count) == (
        False,
        "none",
        1,
    )
    assert failed.output_summary == (
        "调用失败: timeout: query_metrics timed out (world failures: query_metrics: timeout)"
    )
    assert hikari.evidence_level == "direct"
    assert hikari.output_summary == (
        f"log_evidence: [2026-07-08T11:13:47+08:00][ERROR][order-service] {HIKARI_TIMEOUT}"
        f" | [2026-07-08T11:14:02+08:00][WARN][order-service] {HIKARI_STATS}"
    )
    assert (no_hit.success, no_hit.evidence_level, no_hit.no_hit_invocation_count) == (
        True,
        "none",
        1,
    )
    assert no_hit.output_summary == "无证据: 1 次调用成功但无匹配结果"
    assert "Hikari" not in no_hit.output_summary
    # A runbook hit is guidance, not an incident fact; the dedup adds no level, only a count.
    assert (knowledge.evidence_level, knowledge.deduped_invocation_count) == ("indirect", 1)
    assert knowledge.output_summary.startswith(
        "knowledge_guidance: HighMemoryUsage 告警处理手册 (runbooks/high-memory-usage.md):"
    )
    assert "; 另: 1 次检索被会话去重, 无新证据 (本会话已检索过相同的知识库查询" in (
        knowledge.output_summary
    )
    assert knowledge.retrieval_layers == ["L0", "dedup"]
    assert knowledge.relevance_levels == ["high"]
    assert knowledge.source_documents == ["runbooks/high-memory-usage.md"]
    assert knowledge.query_samples == ["HighMemoryUsage", "highmemoryusage"]


def test_deduped_row_alone_stays_at_no_evidence() -> None:
    store, recorder = _session()
    recorder.call("lookup_knowledge", {"query": "HikariCP"}, round=1)
    recorder.call("lookup_knowledge", {"query": "HikariCP"}, round=2)
    second = ToolTraceSummaryService(store).build(SESSION)[1]
    assert (second.trace_ref, second.round, second.source_invocation_ids) == ("trace-2", 2, [2])
    assert (second.success, second.evidence_level, second.deduped_invocation_count) == (
        True,
        "none",
        1,
    )
    assert second.output_summary.startswith("无证据: 1 次检索被会话去重, 无新证据 (")


# --------------------------------------------------------------------------- merging


def test_merged_log_calls_keep_the_direct_hit_all_ids_and_the_counts() -> None:
    store, recorder = _session()
    # Same tool, service and synonym group: one topic. The first call finds nothing.
    recorder.call(
        "query_logs",
        {"service": "order-service", "keywords": ["HikariCP"], "level": "INFO"},
        round=1,
    )
    recorder.call("query_logs", {"service": "order-service", "keywords": ["连接池耗尽"]}, round=1)
    recorder.call("query_logs", {"service": "order-service", "keywords": "hikaripool"}, round=1)

    (item,) = ToolTraceSummaryService(store).build(SESSION)

    assert item.source_invocation_ids == [1, 2, 3]
    assert (item.invocation_count, item.no_hit_invocation_count) == (3, 1)
    assert (item.success, item.evidence_level) == (True, "direct")
    # Calls 2 and 3 return the same two logs: each fact is shown once, then the gap.
    assert item.output_summary.count(HIKARI_TIMEOUT) == 1
    assert item.output_summary.count(HIKARI_STATS) == 1
    assert item.output_summary.endswith("; 另: 1 次调用成功但无匹配结果")
    assert (
        item.input_summary == "keywords=HikariCP, level=INFO, service=order-service (合并 3 次调用)"
    )
    assert item.query_samples == ["HikariCP", "连接池耗尽", "hikaripool"]


def test_failed_and_successful_calls_of_one_topic_merge_into_a_successful_entry() -> None:
    params = {"service": "payment-service"}
    hit = RetrievalDetails(
        evidence_status="supported",
        evidence_refs=[
            EvidenceRef(raw_path="$.alerts[0]", text="HighCPUUsage firing, current=92%")
        ],
    )
    rows = [
        _row(7, "query_metrics", params, success=False, error="timeout: query_metrics timed out"),
        _row(9, "query_metrics", params, details=hit),
    ]
    (item,) = summarize_invocations(rows)
    assert (item.success, item.evidence_level, item.failed_invocation_count) == (True, "direct", 1)
    assert item.source_invocation_ids == [7, 9]
    assert item.output_summary == (
        "metric_evidence: HighCPUUsage firing, current=92%"
        "; 另: 1 次调用失败 (timeout: query_metrics timed out)"
    )


def test_topics_merge_synonyms_and_normalised_queries_but_not_services() -> None:
    def key(tool: str, params: dict[str, Any]) -> str:
        return topic_key(_row(1, tool, params))

    hikari = key("query_logs", {"service": "order-service", "keywords": ["HikariCP"]})
    assert hikari == key("query_logs", {"service": "Order-Service", "keywords": "active=50/50"})
    assert hikari != key("query_logs", {"service": "user-service", "keywords": ["HikariCP"]})
    assert hikari != key("query_logs", {"service": "order-service", "keywords": ["慢查询"]})
    # Equality with a group term wins over containment: the specific timeout message stays in
    # the HikariCP topic and does not widen to the generic timeout group.
    assert hikari == key(
        "query_logs", {"service": "order-service", "keywords": ["request timed out after 30000ms"]}
    )
    assert key("lookup_knowledge", {"query": "HikariCP 连接池?"}) == key(
        "lookup_knowledge", {"query": " hikaricp   连接池"}
    )
    metrics = key("query_metrics", {"service": "order-service", "keywords": ["memory"]})
    assert metrics == key("query_metrics", {"service": "order-service"})
    assert metrics != key("query_metrics", {"service": "payment-service"})
    assert key("query_metrics", {"keywords": ["cpu"]}) != key(
        "query_metrics", {"keywords": ["内存"]}
    )


# --------------------------------------------------------------------------- bounds, truncation


def _world_with_many_logs(count: int) -> World:
    logs = [
        {
            "timestamp": f"2026-07-08T10:{index // 60:02d}:{index % 60:02d}+08:00",
            "level": "WARN",
            "service": "order-service",
            "message": f"内存使用率过高: {80 + index / 100:.2f}%, GC次数: {index}",
        }
        for index in range(count)
    ]
    return load_world({"now": NOW, "logs": logs})


def test_summary_of_a_huge_output_stays_bounded_and_leads_with_facts() -> None:
    store, recorder = _session(_world_with_many_logs(150))
    recorder.call("query_logs", {"service": "order-service", "limit": 150}, round=1)
    (item,) = ToolTraceSummaryService(store).build(SESSION)
    assert len(item.output_summary) <= OUTPUT_SUMMARY_CHARS
    assert item.output_summary.startswith(
        "log_evidence: [2026-07-08T10:00:00+08:00][WARN][order-service] 内存使用率过高: 80.00%"
    )
    shown = item.output_summary.count("内存使用率过高")
    assert shown >= 5
    assert item.output_summary.endswith(f" | (+{150 - shown} 条未列出)")


def test_one_huge_fact_is_cut_to_the_fact_bound() -> None:
    details = RetrievalDetails(
        evidence_status="supported",
        evidence_refs=[EvidenceRef(raw_path="$.evidence_blocks[0]", text="手册: " + "步骤" * 5000)],
    )
    (item,) = summarize_invocations([_row(1, "lookup_knowledge", {"query": "x"}, details=details)])
    assert len(item.output_summary) == len("knowledge_guidance: ") + FACT_CHARS
    assert item.output_summary.endswith("步…")


def test_truncated_preview_with_stored_refs_stays_direct() -> None:
    store, recorder = _session(preview_chars=120)
    recorder.call("query_logs", {"service": "user-service", "keywords": ["慢请求"]}, round=1)
    (row,) = store.list_invocations(SESSION)
    assert row.output_truncated is True
    assert row.output_preview is not None
    assert "4200ms" not in row.output_preview
    (item,) = summarize_invocations([row])
    assert (item.success, item.evidence_level) == (True, "direct")
    assert "慢请求: GET /api/v1/users/profile 耗时 4200ms (阈值 3000ms)" in item.output_summary


def test_legacy_row_without_refs_reads_complete_items_from_a_truncated_preview() -> None:
    output = Toolbox(default_world()).call("query_logs", {"service": "order-service"})
    full = stable_json(output)
    second_log_end = full.index("},{", full.index("},{") + 1)  # cut inside the third log
    preview = full[: second_log_end + 20]
    legacy = _row(3, "query_logs", {"service": "order-service"}, preview=preview, truncated=True)
    (item,) = summarize_invocations([legacy])
    assert item.evidence_level == "direct"
    first, second, third = (log["message"] for log in output["logs"][:3])
    assert item.output_summary.startswith(
        f"log_evidence: [2026-07-08T11:02:00+08:00][WARN][order-service] {first} | ["
    )
    assert item.output_summary.endswith(second)
    assert third not in item.output_summary
    cut_in_first = _row(4, "query_logs", {}, preview=full[:40], truncated=True)
    assert summarize_invocations([cut_in_first])[0].evidence_level == "none"


# --------------------------------------------------------------------------- numbering, facts


def test_trace_refs_number_entries_across_rounds_and_tools_by_first_invocation() -> None:
    store, recorder = _session()
    recorder.call("query_metrics", {"service": "user-service"}, round=1)  # 1 -> trace-1
    recorder.call("query_logs", {"service": "user-service"}, round=1)  # 2 -> trace-2
    recorder.call("query_metrics", {"service": "USER-SERVICE"}, round=1)  # 3 merges into trace-1
    recorder.call("query_metrics", {"service": "user-service"}, round=2)  # 4 -> trace-3
    recorder.call("lookup_knowledge", {"query": "SlowResponse"}, round=2)  # 5 -> trace-4
    recorder.call("query_logs", {"service": "user-service"}, round=2)  # 6 -> trace-5
    items = ToolTraceSummaryService(store).build(SESSION)
    assert [(i.trace_ref, i.round, i.source_invocation_ids) for i in items] == [
        ("trace-1", 1, [1, 3]),
        ("trace-2", 1, [2]),
        ("trace-3", 2, [4]),
        ("trace-4", 2, [5]),
        ("trace-5", 2, [6]),
    ]
    # Rows handed over in any order give the same summary.
    rows = store.list_invocations(SESSION)
    assert summarize_invocations(list(reversed(rows))) == items


def test_summary_names_only_alerts_the_output_contains() -> None:
    store, recorder = _session()
    recorder.call("query_metrics", {"service": "payment-service"}, round=1)
    recorder.call("query_metrics", {"alert_name": "HighDiskUsage"}, round=1)
    cpu, disk = ToolTraceSummaryService(store).build(SESSION)
    assert cpu.output_summary == (
        "metric_evidence: HighCPUUsage firing, service=payment-service, current=92%,"
        " threshold=80%, duration=25m; CPU usage 92% on payment-service (process java, PID 1),"
        " above 80% for 25m"
    )
    for absent in ("HighMemoryUsage", "SlowResponse", "order-service", "user-service"):
        assert absent not in cpu.output_summary
    assert disk.input_summary == "alert_name=HighDiskUsage"
    assert disk.output_summary == "无证据: 1 次调用成功但无匹配结果"
    assert disk.evidence_level == "none"


def test_helper_rows_are_never_summarised() -> None:
    hit = RetrievalDetails(
        evidence_status="supported", evidence_refs=[EvidenceRef(raw_path="$.logs[0]", text="x")]
    )
    rows = [_row(1, "get_current_time", {}, details=hit), _row(2, "query_logs", {}, details=hit)]
    assert [item.tool_name for item in summarize_invocations(rows)] == ["query_logs"]
    assert summarize_invocations([]) == []


def _build_reference_session() -> str:
    store, recorder = _session()
    recorder.call("query_metrics", {"service": "order-service"}, round=1)
    recorder.call(
        "query_logs", {"service": "order-service", "keywords": ["内存", "Full GC"]}, round=1
    )
    recorder.call("lookup_knowledge", {"query": "HighMemoryUsage 怎么处理"}, round=1)
    recorder.call("query_logs", {"service": "inventory-service", "keywords": ["HikariCP"]}, round=2)
    items = ToolTraceSummaryService(store).build(SESSION)
    return stable_json([item.model_dump(mode="json") for item in items])


def test_summary_is_deterministic_across_fresh_stores() -> None:
    assert _build_reference_session() == _build_reference_session()


def test_a_session_of_1000_invocations_is_partitioned_into_bounded_entries() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("query_metrics", {"service": "order-service"}),
        ("query_logs", {"service": "order-service", "keywords": ["HikariCP"]}),
        ("query_logs", {"service": "inventory-service", "keywords": ["HikariCP"]}),
        ("lookup_knowledge", {"query": "HighMemoryUsage"}),
    ]
    store, recorder = _session()
    for index in range(1000):
        tool, arguments = calls[index % len(calls)]
        recorder.call(tool, arguments, round=1 + index // 250)
    items = ToolTraceSummaryService(store).build(SESSION)

    assert [item.trace_ref for item in items] == [f"trace-{n}" for n in range(1, 17)]
    assert sorted(i for item in items for i in item.source_invocation_ids) == list(range(1, 1001))
    # 250 calls a round over 4 tools: two tools get 63 calls, two get 62; a round's entries are
    # numbered in the order of their first call (round 2 starts with the third tool).
    assert [(i.trace_ref, i.tool_name, i.round, i.invocation_count) for i in items[2:6]] == [
        ("trace-3", "query_logs", 1, 62),
        ("trace-4", "lookup_knowledge", 1, 62),
        ("trace-5", "query_logs", 2, 63),
        ("trace-6", "lookup_knowledge", 2, 63),
    ]
    assert all(len(item.output_summary) <= OUTPUT_SUMMARY_CHARS for item in items)
    no_hit = items[4]
    assert no_hit.input_summary == "keywords=HikariCP, service=inventory-service (合并 63 次调用)"
    assert (no_hit.evidence_level, no_hit.no_hit_invocation_count) == ("none", 63)
    knowledge = [item for item in items if item.tool_name == "lookup_knowledge"]
    # The toolbox deduplicates for the whole session: only the very first lookup searched.
    assert [(k.evidence_level, k.deduped_invocation_count) for k in knowledge] == [
        ("indirect", 61),
        ("none", 63),
        ("none", 62),
        ("none", 63),
    ]
