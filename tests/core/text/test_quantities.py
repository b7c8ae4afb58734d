"""core.text.quantities reads numbers with their units and labels, and times with their zones."""

from __future__ import annotations

import pytest

from pytest_diageval.core.text.quantities import read


def _values(text: str) -> list[tuple[float, str, str | None]]:
    return [(q.value, q.dim, q.label) for q in read(text).quantities]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("等了 30 秒", [(30000.0, "duration", "timeout")]),
        ("request timed out after 30000ms", [(30000.0, "duration", "timeout")]),
        ("P99 4.2 秒", [(4200.0, "duration", None)]),
        ("十五次 Full GC", [(15.0, "plain", None)]),
        ("百分之九十一", [(91.0, "percent", None)]),
        ("积压 5.8 万条", [(58000.0, "plain", None)]),
        ("two seconds", [(2000.0, "duration", None)]),
        ("3.1 million items", [(3100000.0, "plain", None)]),
        ("next retry in 5m0s", [(300000.0, "duration", None)]),
        ("about 1229 MiB", [(1229.0 * 1024**2, "size", None)]),
        ("半小时", []),  # no unit read: nothing claimed that could be compared wrongly
        ("这一条件", []),  # 一 alone is never a count
    ],
)
def test_numbers_are_read_in_one_base_unit(
    text: str, expected: list[tuple[float, str, str | None]]
) -> None:
    assert _values(text) == expected


def test_labels_bind_to_their_numbers_before_and_after() -> None:
    assert _values("当前 92%，阈值 80%，持续 25m") == [
        (92.0, "percent", "current"),
        (80.0, "percent", "threshold"),
        (1500000.0, "duration", "duration"),
    ]
    # "高于阈值" after 91% does not make 91% the threshold; "阈值 85%" does.
    assert _values("91% 高于阈值 85%") == [(91.0, "percent", None), (85.0, "percent", "threshold")]
    assert _values("active=50/50，32 个线程在等待") == [
        (50.0, "plain", "active"),
        (50.0, "plain", "total"),
        (32.0, "plain", "waiting"),
    ]
    assert [q.label for q in read("堆内存从 3.8GB 降到 3.5GB").quantities] == ["before", "after"]


def test_http_status_codes_are_not_seconds() -> None:
    assert _values("returned 502s") == [(502.0, "plain", None)]
    assert _values("lag 420s") == [(420000.0, "duration", None)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("UTC 03:13:47", [(None, None, 3, 13, 47, "utc")]),
        ("11点17分", [(None, None, 11, 17, None, None)]),
        ("7月8日", [(7, 8, None, None, None, None)]),
        ("2026-07-08T11:13:47+08:00", [(7, 8, 11, 13, 47, "+08:00")]),
        (
            "北京时间 10:30 至 11:00",
            [(None, None, 10, 30, None, "+08:00"), (None, None, 11, 0, None, "+08:00")],
        ),
        (
            "08:00 Beijing time on 1 December 2026",
            [(None, None, 8, 0, None, "+08:00"), (12, 1, None, None, None, None)],
        ),
    ],
)
def test_times_carry_the_zone_they_name(text: str, expected: list[tuple[object, ...]]) -> None:
    moments = read(text).moments
    assert [(m.month, m.day, m.hour, m.minute, m.second, m.zone) for m in moments] == expected


def test_a_time_moves_between_zones() -> None:
    moment = read("2026-07-08T11:13:47+08:00").moments[0].shifted_to("utc")
    assert moment is not None
    assert (moment.day, moment.hour, moment.minute, moment.second) == (8, 3, 13, 47)
    assert read("11:13:47").moments[0].shifted_to("utc") is None  # no zone of its own
