"""statement_edits: each edit changes one fact of a real claim's text, or says why it cannot."""

from __future__ import annotations

import pytest

from pytest_diageval.harness.mutation.kinds import STATEMENT_KINDS
from pytest_diageval.harness.mutation.statement_edits import statement_edits

MEMORY = "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%，JVM堆内存 3.8GB/4GB。"
NEGATIVE = "inventory-service 日志中未检索到 HikariCP 连接池耗尽的真实证据。"
TIMED = "payment-service 在 11:08:41 出现 Redis 命令超时，GET 请求 2000ms 后超时。"
ALERT = "order-service HighMemoryUsage 告警，当前 91%，阈值 85%。"
EDITS = statement_edits(
    ["order-service", "inventory-service", "payment-service"],
    {"order-service": ["订单服务"], "payment-service": ["支付服务"]},
)


@pytest.mark.parametrize(
    ("kind", "text", "edited"),
    [
        ("statement-number", MEMORY, MEMORY.replace("91%", "182%")),
        ("statement-number", TIMED, TIMED.replace("2000ms", "4000ms")),
        ("statement-unit", MEMORY, MEMORY.replace("91%", "91GB")),
        ("statement-subject", MEMORY, MEMORY.replace("order-service", "inventory-service")),
        ("statement-alias", MEMORY, MEMORY.replace("order-service", "支付服务")),
        ("statement-modality", MEMORY, "可能" + MEMORY),
        ("statement-polarity", MEMORY, MEMORY.replace("当前存在", "当前不存在")),
        ("statement-polarity", NEGATIVE, NEGATIVE.replace("未检索到", "检索到")),
        ("statement-causal", MEMORY, MEMORY[:-1] + "，因此根因是内存泄漏。"),
        ("statement-action", MEMORY, MEMORY[:-1] + "，请立即重启并调高连接池上限。"),
        ("statement-timestamp", TIMED, TIMED.replace("11:08", "11:09")),
        ("statement-markup", NEGATIVE, NEGATIVE.replace("未检索到", "~~未检索到~~")),
        ("statement-markup", MEMORY, MEMORY.replace("order-service", "~~order-service~~")),
        ("statement-digits", MEMORY, MEMORY.replace("91%", "١٨٢%")),
        ("statement-label", ALERT, "order-service HighMemoryUsage 告警，当前 85%，阈值 91%。"),
        ("statement-zone", TIMED, TIMED.replace("11:08:41", "UTC 11:08:41")),
    ],
)
def test_each_edit_changes_what_the_statement_asserts(kind: str, text: str, edited: str) -> None:
    result = EDITS[kind](text)
    assert not isinstance(result, str), result
    assert result[0] == edited


@pytest.mark.parametrize(
    ("kind", "text", "reason"),
    [
        ("statement-number", "order-service 存在内存泄漏。", "the statement states no quantity"),
        ("statement-timestamp", MEMORY, "the statement states no time"),
        (
            "statement-label",
            MEMORY,
            "the statement binds no current value and threshold to swap",
        ),
        ("statement-zone", "UTC 03:08 出现超时。", "the statement states no time without a zone"),
        (
            "statement-subject",
            "内存泄漏。",
            "the statement names no service, or the world has no other",
        ),
    ],
)
def test_an_edit_with_nothing_to_change_says_why(kind: str, text: str, reason: str) -> None:
    assert EDITS[kind](text) == reason


def test_every_statement_kind_has_an_edit() -> None:
    assert sorted(EDITS) == sorted(STATEMENT_KINDS)
