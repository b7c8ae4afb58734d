"""The SQLite store: rows, counters and the self_evaluation channel container."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from pytest_diageval.core.contract.contracts import EvidenceRef, RetrievalDetails
from pytest_diageval.core.evidence.store import Store, StoreError, stable_json

NOW = "2026-07-08T11:17:00+08:00"


def _insert_row(store: Store, session_id: str, tool: str = "query_logs") -> int:
    details = RetrievalDetails(
        evidence_status="supported",
        evidence_refs=[EvidenceRef(raw_path="$.logs[0]", text="WARN order-service 内存使用率过高")],
    )
    return store.insert_invocation(
        session_id=session_id,
        round=1,
        tool_name=tool,
        input_params={"service": "order-service"},
        duration_ms=3,
        success=True,
        error_message=None,
        output_preview='{"logs":[]}',
        output_truncated=False,
        retrieval_details=details,
    )


def test_invocation_ids_follow_call_order_from_one_in_a_fresh_store() -> None:
    store = Store()
    store.create_session("s1", "q", NOW)
    ids = [_insert_row(store, "s1") for _ in range(3)]
    assert ids == [1, 2, 3]
    row = store.get_invocation(2)
    assert row is not None
    assert row.session_id == "s1"
    assert row.retrieval_details is not None
    assert row.retrieval_details.evidence_refs == [
        EvidenceRef(raw_path="$.logs[0]", text="WARN order-service 内存使用率过高")
    ]
    assert store.get_invocation(99) is None


def test_counts_keep_model_steps_and_evidence_rows_apart() -> None:
    store = Store()
    store.create_session("s1", "q", NOW)
    _insert_row(store, "s1")
    store.add_agent_step("s1", round=1, agent="planner", input={"q": "x"}, output={"plan": "p"})
    store.add_agent_step("s1", round=1, agent="executor", input={}, output={})
    store.add_agent_step("s1", round=1, agent="verifier", input={}, output={})
    session = store.get_session("s1")
    assert (session["step_count"], session["tool_call_count"]) == (3, 1)
    steps = store.list_agent_steps("s1")
    assert [s["agent"] for s in steps] == ["planner", "executor", "verifier"]
    assert [s["step_index"] for s in steps] == [0, 1, 2]


def test_list_invocations_is_per_session() -> None:
    store = Store()
    store.create_session("a", "q", NOW)
    store.create_session("b", "q", NOW)
    _insert_row(store, "a")
    _insert_row(store, "b")
    _insert_row(store, "a")
    assert [row.id for row in store.list_invocations("a")] == [1, 3]
    assert [row.id for row in store.list_invocations("b")] == [2]


def test_channel_update_keeps_the_other_channel_and_creates_only_from_null() -> None:
    store = Store()
    store.create_session("s1", "q", NOW)
    assert store.get_session("s1")["self_evaluation"] is None
    store.update_self_evaluation("s1", "rule_evaluation", {"score": 0.5})
    store.update_self_evaluation("s1", "verifier_evaluation", {"verdict": "PASS"})
    store.update_self_evaluation("s1", "rule_evaluation", {"score": 0.8})
    assert store.get_session("s1")["self_evaluation"] == {
        "rule_evaluation": {"score": 0.8},
        "verifier_evaluation": {"verdict": "PASS"},
    }


def test_unknown_channel_and_unknown_session_are_clear_errors() -> None:
    store = Store()
    store.create_session("s1", "q", NOW)
    with pytest.raises(StoreError, match="allowed: rule_evaluation, verifier_evaluation"):
        store.update_self_evaluation("s1", "verifer_evaluation", {})
    with pytest.raises(StoreError, match="no diagnosis_session with id 'nope'"):
        store.update_self_evaluation("nope", "rule_evaluation", {})
    with pytest.raises(StoreError, match="'nope'"):
        _insert_row(store, "nope")


def test_finish_session_records_verdict_and_answer() -> None:
    store = Store()
    store.create_session("s1", "q", NOW)
    store.finish_session("s1", status="completed", now=NOW, final_verdict="PASS", final_answer="答")
    session = store.get_session("s1")
    assert (session["status"], session["final_verdict"], session["final_answer"]) == (
        "completed",
        "PASS",
        "答",
    )


def test_stable_json_is_sorted_compact_and_keeps_chinese() -> None:
    assert stable_json({"b": 1, "a": "内存"}) == '{"a":"内存","b":1}'


# ------------------------------------------------------------------ concurrency

WRITES_PER_WORKER = 200


def _write_channel(path: str, channel: str, worker: int) -> None:
    store = Store(path)
    for i in range(WRITES_PER_WORKER):
        store.update_self_evaluation("s1", channel, {"worker": worker, "i": i})
    store.close()


def test_interleaved_thread_writers_lose_no_channel(tmp_path: Path) -> None:
    path = str(tmp_path / "audit.sqlite")
    Store(path).create_session("s1", "q", NOW)
    # One writer per channel, each ending on its own last write: a lost update anywhere at
    # the end leaves a stale or missing channel.
    threads = [
        threading.Thread(target=_write_channel, args=(path, channel, n))
        for n, channel in enumerate(["rule_evaluation", "verifier_evaluation"])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    container = Store(path).get_session("s1")["self_evaluation"]
    assert container == {
        "rule_evaluation": {"worker": 0, "i": WRITES_PER_WORKER - 1},
        "verifier_evaluation": {"worker": 1, "i": WRITES_PER_WORKER - 1},
    }


def test_interleaved_process_writers_lose_no_channel(tmp_path: Path) -> None:
    path = str(tmp_path / "audit.sqlite")
    Store(path).create_session("s1", "q", NOW)
    ctx = multiprocessing.get_context("spawn")
    workers = [
        ctx.Process(target=_write_channel, args=(path, channel, n))
        for n, channel in enumerate(["rule_evaluation", "verifier_evaluation"])
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    container = Store(path).get_session("s1")["self_evaluation"]
    assert container == {
        "rule_evaluation": {"worker": 0, "i": WRITES_PER_WORKER - 1},
        "verifier_evaluation": {"worker": 1, "i": WRITES_PER_WORKER - 1},
    }


def test_modify_channel_sees_the_old_value_inside_the_same_transaction() -> None:
    store = Store()
    store.create_session("s1", "q", NOW)
    seen: list[object] = []

    def append_round(old: object) -> dict[str, list[int]]:
        seen.append(old)
        rounds = [] if old is None else list(old["rounds"])  # type: ignore[index]
        return {"rounds": [*rounds, len(rounds) + 1]}

    store.modify_self_evaluation("s1", "verifier_evaluation", append_round)
    store.modify_self_evaluation("s1", "verifier_evaluation", append_round)
    assert seen == [None, {"rounds": [1]}]
    assert store.get_session("s1")["self_evaluation"] == {"verifier_evaluation": {"rounds": [1, 2]}}


def _schema(store: Store) -> list[tuple[str, ...]]:
    rows = store._conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
    ).fetchall()
    return [tuple(row) for row in rows]


def test_a_memory_store_has_the_file_stores_schema_and_its_own_rows(tmp_path: Path) -> None:
    on_disk, first, second = Store(tmp_path / "audit.db"), Store(), Store()
    assert _schema(first) == _schema(on_disk)
    assert [name for _, name, _, _ in _schema(first)] == [
        "agent_step",
        "diagnosis_session",
        "sqlite_autoindex_diagnosis_session_1",
        "tool_invocation",
        "tool_invocation_session",
    ]
    first.create_session("s1", "q", "2026-07-08T11:17:00+08:00")
    first.add_agent_step("s1", round=1, agent="planner", input={"a": 1}, output={"b": 2})
    assert first.get_session("s1")["step_count"] == 1
    with pytest.raises(StoreError, match="no diagnosis_session with id 's1'"):
        second.get_session("s1")  # every memory store starts empty
    assert Store()._conn.execute("SELECT COUNT(*) FROM agent_step").fetchone()[0] == 0


def test_several_channels_change_in_one_write_and_a_bad_name_changes_none() -> None:
    store = Store()
    store.create_session("s1", "q", NOW)
    store.update_self_evaluation("s1", "rule_evaluation", {"score": 0.5})
    seen: list[object] = []

    def bump(old: object) -> object:
        seen.append(old)
        return {"score": 0.9}

    store.modify_self_evaluation_channels(
        "s1", {"rule_evaluation": bump, "verifier_evaluation": lambda old: {"was": old}}
    )
    assert seen == [{"score": 0.5}]
    assert store.get_session("s1")["self_evaluation"] == {
        "rule_evaluation": {"score": 0.9},
        "verifier_evaluation": {"was": None},
    }
    with pytest.raises(StoreError, match="unknown self_evaluation channel 'verdict'"):
        store.modify_self_evaluation_channels(
            "s1", {"rule_evaluation": lambda old: {}, "verdict": lambda old: 1}
        )
    assert store.get_session("s1")["self_evaluation"]["rule_evaluation"] == {"score": 0.9}
