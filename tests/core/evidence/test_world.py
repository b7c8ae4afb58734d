"""The mock world: the packaged default world and the errors of a bad world file."""

from __future__ import annotations

import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_diageval.core.evidence.world import (
    World,
    WorldError,
    available_worlds,
    default_world,
    load_world,
)

CST = timezone(timedelta(hours=8))

VALID_ALERT = """\
  - alert_name: HighCPUUsage
    service: payment-service
    state: firing
    current: "92%"
    threshold: "80%"
    duration: 25m
    description: CPU usage 92%
"""


def _write(tmp_path: Path, text: str, name: str = "world.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _error_for(tmp_path: Path, text: str) -> str:
    path = _write(tmp_path, text)
    with pytest.raises(WorldError) as caught:
        load_world(path)
    return str(caught.value)


# --------------------------------------------------------------------------- default world


def test_default_world_carries_the_seed_alerts() -> None:
    world = default_world()
    assert world.now == datetime(2026, 7, 8, 11, 17, tzinfo=CST)
    summary = [
        (a.alert_name, a.service, a.state, a.current, a.threshold, a.duration) for a in world.alerts
    ]
    assert summary == [
        ("HighCPUUsage", "payment-service", "firing", "92%", "80%", "25m"),
        ("HighMemoryUsage", "order-service", "firing", "91%", "85%", "15m"),
        ("SlowResponse", "user-service", "firing", "P99 4.2s", "P99 3s", "10m"),
    ]
    memory = world.alerts[1]
    assert memory.description == "JVM heap usage 3.8GB/4GB"
    assert memory.samples == [86.2, 87.4, 88.6, 89.8, 91.0]
    assert world.alerts[2].apis == ["/api/v1/users/profile", "/api/v1/users/orders"]
    assert world.failures == {}


def test_default_world_logs_hold_the_seed_facts_and_no_placeholder_service() -> None:
    world = default_world()
    messages = {log.message for log in world.logs}
    assert "CPU使用率过高: 92.0%, 进程: java (PID: 1), 线程数: 245" in messages
    assert "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB, GC次数: 128" in messages
    assert "频繁 Full GC 警告: 过去10分钟内发生 15 次 Full GC, 平均耗时 850ms" in messages
    assert "HikariPool-1 - Connection is not available, request timed out after 30000ms" in (
        messages
    )
    assert "HikariCP pool stats: active=50/50, idle=0, waiting=32" in messages
    slow = sorted(log.message for log in world.logs if log.message.startswith("慢请求"))
    assert [m.split("耗时 ")[1] for m in slow] == [
        "3750ms (阈值 3000ms)",
        "4050ms (阈值 3000ms)",
        "3600ms (阈值 3000ms)",
        "3900ms (阈值 3000ms)",
        "4200ms (阈值 3000ms)",
    ]
    services = {log.service for log in world.logs}
    assert services == {
        "payment-service",
        "order-service",
        "user-service",
        "inventory-service",
    }
    assert all(log.timestamp <= world.now for log in world.logs)
    assert [log.timestamp for log in world.logs] == sorted(log.timestamp for log in world.logs)


def test_default_world_runbooks_cover_the_five_topics() -> None:
    knowledge = default_world().knowledge
    assert [doc.alert_name for doc in knowledge] == [
        "HighCPUUsage",
        "HighMemoryUsage",
        "SlowResponse",
        None,
        "ServiceUnavailable",
    ]
    assert "HikariCP" in knowledge[3].title
    for doc in knowledge:
        assert [s.heading for s in doc.sections] == ["触发条件", "排查步骤", "常见原因", "处置建议"]


def test_default_world_is_cached_and_frozen() -> None:
    world = default_world()
    assert default_world() is world
    assert load_world("default") == world
    with pytest.raises(ValidationError, match="frozen"):
        world.now = datetime(2020, 1, 1, tzinfo=CST)  # type: ignore[misc]


def test_available_worlds_lists_the_packaged_default() -> None:
    assert "default" in available_worlds()


# --------------------------------------------------------------------------- loading


def test_relative_path_is_resolved_against_base_dir(tmp_path: Path) -> None:
    _write(tmp_path, f'now: "2026-07-08T11:17:00+08:00"\nalerts:\n{VALID_ALERT}', "w.yaml")
    world = load_world("w.yaml", base_dir=tmp_path)
    assert [a.alert_name for a in world.alerts] == ["HighCPUUsage"]
    assert load_world(tmp_path / "w.yaml") == world


def test_inline_mapping_with_failures_and_level_alias() -> None:
    world = load_world(
        {
            "now": "2026-07-08T11:17:00+08:00",
            "logs": [
                {
                    "timestamp": "2026-07-08T11:00:00+08:00",
                    "level": "warning",
                    "service": "order-service",
                    "message": "x",
                }
            ],
            "failures": {"query_logs": "timeout", "lookup_knowledge": "error"},
        }
    )
    assert world.logs[0].level == "WARN"
    assert world.failures == {"query_logs": "timeout", "lookup_knowledge": "error"}


def test_unquoted_yaml_timestamp_is_accepted(tmp_path: Path) -> None:
    path = _write(tmp_path, "now: 2026-07-08T11:17:00+08:00\n")
    assert load_world(path).now == datetime(2026, 7, 8, 11, 17, tzinfo=CST)


# --------------------------------------------------------------------------- errors


def test_wrong_type_names_file_field_path_line_and_value(tmp_path: Path) -> None:
    memory_alert = """\
  - alert_name: HighMemoryUsage
    service: order-service
    state: firing
    current: 91
    threshold: "85%"
    duration: 15m
    description: JVM heap usage 3.8GB/4GB
"""
    text = f'now: "2026-07-08T11:17:00+08:00"\nalerts:\n{VALID_ALERT}{memory_alert}'
    message = _error_for(tmp_path, text)
    assert str(tmp_path / "world.yaml") in message
    assert "alerts[1].current (line 13): Input should be a valid string; got 91" in message


def test_bad_literal_lists_the_allowed_values(tmp_path: Path) -> None:
    text = f'now: "2026-07-08T11:17:00+08:00"\nalerts:\n{VALID_ALERT.replace("firing", "burning")}'
    message = _error_for(tmp_path, text)
    assert (
        "alerts[0].state (line 5): Input should be 'firing', 'pending' or 'resolved';"
        " got 'burning'" in message
    )


def test_unknown_key_lists_the_allowed_keys(tmp_path: Path) -> None:
    text = f'now: "2026-07-08T11:17:00+08:00"\nalerts:\n{VALID_ALERT}    colour: red\n'
    message = _error_for(tmp_path, text)
    assert "alerts[0].colour (line 10): unknown key 'colour'; allowed keys: alert_name," in message
    assert "samples, apis" in message


def test_unknown_failure_tool_lists_the_evidence_tools(tmp_path: Path) -> None:
    text = """\
        now: "2026-07-08T11:17:00+08:00"
        failures:
          query_logs: timeout
          query_trace: error
        """
    message = _error_for(tmp_path, text)
    assert (
        "failures.query_trace (line 4): unknown tool 'query_trace'; allowed tools:"
        " 'query_metrics', 'query_logs' or 'lookup_knowledge'" in message
    )


def test_bad_failure_kind_lists_timeout_and_error(tmp_path: Path) -> None:
    message = _error_for(
        tmp_path, 'now: "2026-07-08T11:17:00+08:00"\nfailures: {query_logs: slow}\n'
    )
    assert "failures.query_logs (line 2): Input should be 'timeout' or 'error'; got 'slow'" in (
        message
    )


def test_naive_timestamp_and_missing_key_are_reported_together(tmp_path: Path) -> None:
    text = """\
        now: "2026-07-08T11:17:00+08:00"
        logs:
          - timestamp: "2026-07-08T11:00:00"
            level: WARN
            message: hi
        """
    message = _error_for(tmp_path, text)
    assert "2 problem(s)" in message
    assert "logs[0].timestamp (line 3): Input should have timezone info" in message
    assert "logs[0].service (line 3): missing required key 'service'" in message


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    with pytest.raises(WorldError, match=r"world file not found: .*absent\.yaml"):
        load_world(missing)


def test_unknown_world_name_lists_the_available_ones() -> None:
    with pytest.raises(WorldError, match=r"unknown world name 'nope'; available worlds: .*default"):
        load_world("nope")


def test_invalid_yaml_names_file_and_line(tmp_path: Path) -> None:
    message = _error_for(tmp_path, 'now: "2026-07-08T11:17:00+08:00"\nalerts: [\n  - x: [1,\n')
    assert str(tmp_path / "world.yaml") in message
    assert "not valid YAML" in message
    assert "(line " in message


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    message = _error_for(tmp_path, "- just\n- a list\n")
    assert "the top level must be a mapping" in message
    assert "got list" in message


def test_inline_mapping_error_uses_the_label() -> None:
    with pytest.raises(WorldError) as caught:
        load_world({"now": "yesterday"}, label="scenarios/hikari.yaml")
    assert str(caught.value).startswith("invalid world scenarios/hikari.yaml: 1 problem(s)")
    assert "now: Input should be a valid datetime" in str(caught.value)


def test_world_model_rejects_unknown_top_level_key() -> None:
    with pytest.raises(WorldError, match="unknown key 'alert'; allowed keys: now, description"):
        load_world({"now": "2026-07-08T11:17:00+08:00", "alert": []})
    assert World.model_fields.keys() >= {"now", "alerts", "logs", "knowledge", "failures"}
