"""statements: clauses, tokens, backing by a claim, hedges and hidden characters."""

from __future__ import annotations

import pytest

from pytest_diageval.core.answer.statements import (
    ClaimSource,
    backing_claim,
    content_tokens,
    is_hedge,
    is_neutral,
    split_statements,
    strip_control,
)
from support.citations import MEMORY, NEG_INVENTORY


def test_split_statements_cuts_clauses_but_not_numbers() -> None:
    text = "已确认：order-service 内存 91%，JVM 堆 3.8GB/4GB。下一步 check logs. Done!\n尾句"
    assert split_statements(text) == [
        "已确认",
        "order-service 内存 91%",
        "JVM 堆 3.8GB/4GB",
        "下一步 check logs",
        "Done",
        "尾句",
    ]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("order-service 出现了一次 Full GC", ["order", "service", "出现", "full", "gc"]),
        ("内存泄漏", ["内存", "存泄", "泄漏"]),
        ("已确认：综上", []),
        ("已确认：内存泄漏", ["内存", "存泄", "泄漏"]),
    ],
)
def test_content_tokens_are_words_and_cjk_bigrams_without_framing(
    text: str, tokens: list[str]
) -> None:
    assert content_tokens(text) == tokens
    assert is_neutral(text) is (tokens == [])


SOURCES = [
    ClaimSource("claim-1", MEMORY),
    ClaimSource("claim-2", NEG_INVENTORY),
    ClaimSource("claim-3", "order-service 日志显示内存使用率过高，另有泄漏风险提示。"),
]


@pytest.mark.parametrize(
    ("statement", "backer"),
    [
        ("order-service 当前存在 HighMemoryUsage 告警", "claim-1"),  # the claim's own words
        ("内存使用率达到 91.0%", "claim-1"),  # 91 and 91.0 are one number
        ("JVM堆内存 3.8GB/4GB", None),  # in the cited log line, not in the claim's text
        ("order-service 内存使用率达到 95%", None),  # another number
        ("order-service 当前不存在 HighMemoryUsage 告警", None),  # negation parity
        ("inventory-service 存在 HikariCP 连接池耗尽", None),  # a negative claim's positive
        ("inventory-service 未检索到 HikariCP 连接池耗尽", "claim-2"),
        ("inventory-service 内存使用率达到 91%", None),  # merges two claims' words
        ("order-service 内存泄漏", None),  # 内存 and 泄漏 occur, the bigram 存泄 does not
        ("已确认", None),  # framing only backs nothing (it needs no backing)
    ],
)
def test_backing_claim_table(statement: str, backer: str | None) -> None:
    assert backing_claim(statement, SOURCES) == backer


@pytest.mark.parametrize(
    ("statement", "hedge"),
    [
        ("是否存在内存泄漏尚不能确认", True),
        ("下一步查看 GC 日志", True),
        ("需要立即重启 order-service", False),  # a hedge marker with a fix marker
        ("尚不能确认，但内存泄漏已确认", False),  # confirms once the hedge is removed
        ("无法确认根因是内存泄漏", False),  # a confirmation marker inside: not trusted
        ("not confirmed, restart now", False),
        ("内存泄漏已确认", False),  # no hedge marker at all
    ],
)
def test_is_hedge_table(statement: str, hedge: bool) -> None:
    assert is_hedge(statement) is hedge


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("内存\u202e91%", "内存91%"),  # right-to-left override
        ("order\u200b-service", "order-service"),  # zero-width space
        ("\u2066告警\u2069", "告警"),  # isolates
        ("内\u200d存", "内存"),  # zero-width joiner
        ("a\u061cb", "ab"),  # Arabic letter mark
        ("a\x00b\x1bc", "abc"),  # C0 controls
        ("a\ue000b", "ab"),  # private use
        ("第一行\n第二行\t完", "第一行\n第二行\t完"),  # newline and tab stay
        ("告警 😀 91%", "告警 😀 91%"),  # visible symbols stay
    ],
)
def test_strip_control_table(text: str, stripped: str) -> None:
    assert strip_control(text) == stripped
