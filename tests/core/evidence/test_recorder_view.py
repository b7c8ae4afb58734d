"""The recorder's view of the session's rows (what the executor builds each turn's submit
schema from) is the store's, field for field and key for key, without re-reading it."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import ToolArgumentError, Toolbox
from pytest_diageval.core.evidence.world import World, default_world

NOW = "2026-07-08T11:17:00+08:00"
SESSION = "s1"


def _store() -> Store:
    store = Store()
    store.create_session(SESSION, "order-service 是否存在 HighMemoryUsage 告警?", NOW)
    return store


def _recorder(store: Store, world: World | None = None) -> ToolInvocationRecorder:
    ticks = iter(float(n) / 1000 for n in range(0, 10_000, 7))
    return ToolInvocationRecorder(
        store, Toolbox(world or default_world()), SESSION, clock=lambda: next(ticks)
    )


def _same_as_store(recorder: ToolInvocationRecorder, store: Store) -> list[str]:
    """The view as JSON (the order of input_params' keys included), checked against the store."""
    view = [row.model_dump_json() for row in recorder.invocations()]
    assert view == [row.model_dump_json() for row in store.list_invocations(SESSION)]
    return view


class _Broken:
    def call(self, name: str, arguments: Any) -> dict[str, Any]:
        raise KeyError("alerts")


def test_every_kind_of_row_enters_the_view_as_the_store_keeps_it() -> None:
    store = _store()
    world = default_world().model_copy(update={"failures": {"query_logs": "timeout"}})
    recorder = _recorder(store, world)
    assert _same_as_store(recorder, store) == []  # read before the first write

    recorder.call(
        "query_metrics", {"service": "order-service", "alert_name": "HighMemoryUsage"}, round=1
    )
    _same_as_store(recorder, store)
    recorder.call("query_logs", {"service": "order-service", "keywords": ["OOM"]}, round=1)
    recorder.call("lookup_knowledge", {"query": "HighMemoryUsage"}, round=1)
    recorder.call("lookup_knowledge", {"query": " highmemoryusage"}, round=2)  # deduped
    recorder.call("query_metrics", {"service": "no-such-service"}, round=2)  # no hit
    with pytest.raises(ToolArgumentError):
        recorder.call("query_metrics", {"service": 7}, round=2)
    recorder.call("get_current_time", {}, round=2)  # a helper: no row
    view = _same_as_store(recorder, store)

    assert len(view) == 6
    assert '"input_params":{"alert_name":"HighMemoryUsage","service":"order-service"}' in view[0]
    assert [row.retrieval_details.evidence_status for row in recorder.invocations()] == [
        "supported",
        "failed",
        "supported",
        "deduped",
        "no_evidence",
        "failed",
    ]


def test_a_broken_tool_row_enters_the_view_before_the_error_propagates() -> None:
    store = _store()
    recorder = ToolInvocationRecorder(store, _Broken(), SESSION)
    recorder.invocations()
    with pytest.raises(KeyError):
        recorder.call("query_metrics", {}, round=1)
    assert len(_same_as_store(recorder, store)) == 1


def test_the_view_starts_from_the_rows_already_stored_and_hands_out_copies() -> None:
    store = _store()
    _recorder(store).call("query_metrics", {"service": "order-service"}, round=1)
    later = _recorder(store)
    later.call("query_logs", {"service": "order-service"}, round=2)  # written before the read
    first = later.invocations()
    first.clear()
    later.call("lookup_knowledge", {"query": "HighMemoryUsage"}, round=2)
    assert [row.id for row in later.invocations()] == [1, 2, 3]
    _same_as_store(later, store)
