"""The invocation recorder: evidence refs, and one persisted row per evidence-tool call."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from pytest_diageval.core.contract.contracts import EvidenceRef
from pytest_diageval.core.evidence.recorder import (
    RecordedCall,
    ToolInvocationRecorder,
    extract_evidence_refs,
)
from pytest_diageval.core.evidence.store import Store, stable_json
from pytest_diageval.core.evidence.tools import ToolArgumentError, Toolbox, UnknownToolError
from pytest_diageval.core.evidence.world import World, default_world

NOW = "2026-07-08T11:17:00+08:00"
SESSION = "s1"

MEMORY_ALERT_TEXT = (
    "HighMemoryUsage firing, service=order-service, current=91%, threshold=85%, duration=15m;"
    " JVM heap usage 3.8GB/4GB; samples=86.2, 87.4, 88.6, 89.8, 91.0"
)


def _store() -> Store:
    store = Store()
    store.create_session(SESSION, "order-service 是否存在 HighMemoryUsage 告警?", NOW)
    return store


def _recorder(store: Store, world: World | None = None, **options: Any) -> ToolInvocationRecorder:
    return ToolInvocationRecorder(store, Toolbox(world or default_world()), SESSION, **options)


def _failing_world(tool: str, kind: str) -> World:
    return default_world().model_copy(update={"failures": {tool: kind}})


# --------------------------------------------------------------------------- extract_evidence_refs


def test_metrics_refs_copy_alert_fields_at_their_list_index() -> None:
    output = {
        "success": True,
        "alerts": [
            {
                "alert_name": "HighCPUUsage",
                "service": "payment-service",
                "state": "firing",
                "current": "92%",
                "threshold": "80%",
                "duration": "25m",
                "description": "CPU usage 92% on payment-service",
            },
            {"service": "order-service", "state": "firing"},  # no alert_name: not usable
            "not an object",
            {"alert_name": "SlowResponse", "state": "firing", "current": 4.2},
        ],
        "total": 4,
        "message": "找到 4 条告警",
    }
    assert extract_evidence_refs("query_metrics", output) == [
        EvidenceRef(
            raw_path="$.alerts[0]",
            text="HighCPUUsage firing, service=payment-service, current=92%, threshold=80%,"
            " duration=25m; CPU usage 92% on payment-service",
        ),
        EvidenceRef(raw_path="$.alerts[3]", text="SlowResponse firing, current=4.2"),
    ]


def test_log_refs_copy_timestamp_level_service_and_message() -> None:
    output = {
        "success": True,
        "logs": [
            {
                "timestamp": "2026-07-08T11:14:02+08:00",
                "level": "WARN",
                "service": "order-service",
                "message": "HikariCP pool stats: active=50/50, idle=0, waiting=32",
            },
            {"timestamp": "2026-07-08T11:15:00+08:00", "level": "INFO"},  # no message
        ],
        "total": 2,
    }
    assert extract_evidence_refs("query_logs", output) == [
        EvidenceRef(
            raw_path="$.logs[0]",
            text="[2026-07-08T11:14:02+08:00][WARN][order-service]"
            " HikariCP pool stats: active=50/50, idle=0, waiting=32",
        )
    ]


def test_knowledge_refs_copy_title_source_content_in_full() -> None:
    content = "排查步骤。" * 1000
    output = {
        "success": True,
        "evidence_blocks": [
            {
                "title": "HighCPUUsage 告警处理手册",
                "source": "runbooks/cpu.md",
                "content": "先看线程",
            },
            {"title": "长手册", "source": "runbooks/long.md", "content": content, "relevance": 0.4},
        ],
        "total": 2,
        "retrieval_layer": "L1",
        "l0_count": 0,
        "l1_count": 2,
        "relevance_level": "medium",
    }
    short, long = extract_evidence_refs("lookup_knowledge", output)
    assert short == EvidenceRef(
        raw_path="$.evidence_blocks[0]",
        text="HighCPUUsage 告警处理手册 (runbooks/cpu.md): 先看线程",
    )
    # never cut: a quote from the end of a long item must still find its source text
    assert long == EvidenceRef(
        raw_path="$.evidence_blocks[1]", text="长手册 (runbooks/long.md): " + content
    )
    assert len(long.text) == 5024  # past the 600 characters where refs used to be cut


def test_refs_of_helper_tools_and_outputs_without_items_are_empty() -> None:
    assert extract_evidence_refs("get_current_time", {"now": NOW}) == []
    assert extract_evidence_refs("query_logs", {"success": True, "logs": [], "total": 0}) == []
    assert extract_evidence_refs("query_logs", {"success": True, "logs": "oops"}) == []
    assert extract_evidence_refs("query_metrics", None) == []


def test_refs_copy_the_memory_alert_and_infer_nothing() -> None:
    output = Toolbox(default_world()).call("query_metrics", {"alert_name": "HighMemoryUsage"})
    refs = extract_evidence_refs("query_metrics", output)
    # Exactly the alert's own fields, in a fixed layout: no "内存泄漏" from a 91% alert.
    assert refs == [EvidenceRef(raw_path="$.alerts[0]", text=MEMORY_ALERT_TEXT)]
    assert "泄漏" not in refs[0].text
    assert "leak" not in refs[0].text.lower()


# --------------------------------------------------------------------------- recorder rows


def test_successful_metrics_call_writes_one_row_with_refs_and_measured_duration() -> None:
    store = _store()
    ticks: Iterator[float] = iter([100.0, 100.042])
    recorder = _recorder(store, clock=lambda: next(ticks))
    call = recorder.call("query_metrics", {"service": "order-service"}, round=1)

    assert call.invocation_id == 1
    assert (call.success, call.evidence_status, call.error_message) == (True, "supported", None)
    assert call.evidence_refs == (EvidenceRef(raw_path="$.alerts[0]", text=MEMORY_ALERT_TEXT),)
    row = store.get_invocation(1)
    assert row is not None
    assert row.session_id == SESSION
    assert row.input_params == {"service": "order-service"}
    assert row.duration_ms == 42
    assert row.success is True
    assert row.output_preview == stable_json(call.output)
    assert row.output_truncated is False
    assert row.retrieval_details is not None
    assert row.retrieval_details.evidence_status == "supported"
    assert row.retrieval_details.total == 1
    assert row.retrieval_details.evidence_refs == list(call.evidence_refs)
    assert row.retrieval_details.retrieval_layer is None  # metrics have no retrieval fields
    assert store.get_session(SESSION)["tool_call_count"] == 1


def test_timeout_is_a_failed_row_with_error_message_and_no_output() -> None:
    store = _store()
    recorder = _recorder(store, _failing_world("query_logs", "timeout"))
    call = recorder.call("query_logs", {"service": "order-service"}, round=1)

    message = "timeout: query_logs timed out (world failures: query_logs: timeout)"
    assert call == RecordedCall(1, "query_logs", False, None, message, "failed")
    row = store.get_invocation(1)
    assert row is not None
    assert (row.success, row.error_message, row.output_preview) == (False, message, None)
    assert row.retrieval_details is not None
    assert row.retrieval_details.evidence_status == "failed"
    assert row.retrieval_details.evidence_refs == []


def test_execution_error_is_recorded_with_its_kind() -> None:
    store = _store()
    call = _recorder(store, _failing_world("lookup_knowledge", "error")).call(
        "lookup_knowledge", {"query": "HikariCP"}, round=2
    )
    assert call.error_message == (
        "error: lookup_knowledge failed with a backend error"
        " (world failures: lookup_knowledge: error)"
    )
    row = store.get_invocation(1)
    assert row is not None
    assert (row.round, row.success) == (2, False)


def test_no_hit_is_a_successful_row_with_no_evidence() -> None:
    store = _store()
    call = _recorder(store).call(
        "query_logs", {"service": "inventory-service", "keywords": ["HikariCP"]}, round=1
    )
    assert (call.success, call.evidence_status, call.evidence_refs) == (True, "no_evidence", ())
    row = store.get_invocation(1)
    assert row is not None
    assert row.success is True
    assert row.output_preview == stable_json(
        {"success": True, "logs": [], "total": 0, "message": "未找到匹配的日志"}
    )
    assert row.retrieval_details is not None
    assert row.retrieval_details.evidence_status == "no_evidence"
    assert (row.retrieval_details.total, row.retrieval_details.evidence_refs) == (0, [])


def test_knowledge_rows_keep_retrieval_fields_and_a_repeat_is_deduped() -> None:
    store = _store()
    recorder = _recorder(store)
    first = recorder.call("lookup_knowledge", {"query": "HighMemoryUsage"}, round=1)
    repeat = recorder.call("lookup_knowledge", {"query": " highmemoryusage"}, round=1)

    assert (first.evidence_status, repeat.evidence_status) == ("supported", "deduped")
    hit, deduped = store.list_invocations(SESSION)
    assert hit.retrieval_details is not None
    assert hit.retrieval_details.model_dump(
        exclude={"evidence_refs", "evidence_items", "dedup_reason"}
    ) == {
        "evidence_status": "supported",
        "total": 1,
        "retrieval_layer": "L0",
        "l0_count": 1,
        "l1_count": 0,
        "relevance_level": "high",
        "source_documents": ["runbooks/high-memory-usage.md"],
    }
    assert [ref.raw_path for ref in hit.retrieval_details.evidence_refs or []] == [
        "$.evidence_blocks[0]"
    ]
    details = deduped.retrieval_details
    assert details is not None
    assert (details.retrieval_layer, details.l0_count, details.l1_count) == ("dedup", 0, 0)
    assert details.evidence_refs == []
    assert details.source_documents == []
    assert details.dedup_reason is not None
    assert "'highmemoryusage'" in details.dedup_reason


def test_helper_tool_runs_without_a_row() -> None:
    store = _store()
    call = _recorder(store).call("get_current_time", {}, round=1)
    assert call == RecordedCall(None, "get_current_time", True, {"now": NOW}, None, None)
    assert store.list_invocations(SESSION) == []
    assert store.get_session(SESSION)["tool_call_count"] == 0


def test_unknown_tool_propagates_without_a_row() -> None:
    store = _store()
    with pytest.raises(UnknownToolError, match="query_traces"):
        _recorder(store).call("query_traces", {}, round=1)
    assert store.list_invocations(SESSION) == []


def test_argument_error_is_recorded_as_failed_then_raised() -> None:
    store = _store()
    with pytest.raises(ToolArgumentError, match="limit"):
        _recorder(store).call("query_logs", {"limit": "many"}, round=1)
    (row,) = store.list_invocations(SESSION)
    assert row.success is False
    assert row.input_params == {"limit": "many"}
    assert row.error_message is not None
    assert row.error_message.startswith("argument_error: query_logs: argument 'limit'")


def test_truncated_preview_keeps_every_ref() -> None:
    store = _store()
    call = _recorder(store, preview_chars=200).call(
        "query_logs", {"service": "user-service"}, round=1
    )
    row = store.get_invocation(1)
    assert row is not None
    assert row.retrieval_details is not None
    assert row.output_truncated is True
    assert row.output_preview == stable_json(call.output)[:200]
    refs = row.retrieval_details.evidence_refs or []
    assert [ref.raw_path for ref in refs] == [f"$.logs[{i}]" for i in range(6)]
    last = refs[-1].text
    assert last.endswith("慢请求: GET /api/v1/users/profile 耗时 4200ms (阈值 3000ms)")
    assert "4200ms" not in row.output_preview


class _ScriptedToolbox:
    """A toolbox whose evidence tool reports a failure or breaks: paths the real one lacks."""

    def __init__(self, outcome: dict[str, Any] | Exception) -> None:
        self._outcome = outcome

    def call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if isinstance(self._outcome, Exception):
            raise self._outcome
        return self._outcome


LONG_LOG = {
    "timestamp": "2026-07-08T11:16:10+08:00",
    "level": "WARN",
    "service": "order-service",
    "message": "GC pauses: "
    + ", ".join(f"young pause {i} took {10 + i}ms" for i in range(40))
    + "; final: old gen occupancy 97.5% after Full GC 128",
}


def test_a_long_item_is_persisted_in_full_in_its_ref() -> None:
    store = _store()
    output = {"success": True, "logs": [LONG_LOG], "total": 1}
    ToolInvocationRecorder(store, _ScriptedToolbox(output), SESSION).call("query_logs", {}, round=1)
    row = store.get_invocation(1)
    assert row is not None
    assert row.retrieval_details is not None
    [ref] = row.retrieval_details.evidence_refs or []
    expected = "[2026-07-08T11:16:10+08:00][WARN][order-service] " + LONG_LOG["message"]
    assert len(expected) > 1000
    assert ref == EvidenceRef(raw_path="$.logs[0]", text=expected)
    assert ref.text.endswith("; final: old gen occupancy 97.5% after Full GC 128")


def test_an_output_reporting_success_false_is_a_failed_row() -> None:
    store = _store()
    recorder = ToolInvocationRecorder(
        store, _ScriptedToolbox({"success": False, "error": "backend down"}), SESSION
    )
    call = recorder.call("query_metrics", {}, round=1)
    assert (call.success, call.error_message, call.evidence_status) == (
        False,
        "error: backend down",
        "failed",
    )
    row = store.get_invocation(1)
    assert row is not None
    assert row.success is False


def test_a_broken_tool_is_recorded_and_its_error_reraised() -> None:
    store = _store()
    recorder = ToolInvocationRecorder(store, _ScriptedToolbox(KeyError("alerts")), SESSION)
    with pytest.raises(KeyError):
        recorder.call("query_metrics", {}, round=1)
    row = store.get_invocation(1)
    assert row is not None
    assert (row.success, row.error_message) == (False, "exception: 'alerts'")


def test_preview_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="preview_chars must be a positive integer, got 0"):
        _recorder(_store(), preview_chars=0)
