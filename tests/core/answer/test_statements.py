"""statements: tokens, backing of a sentence by one claim (facts and words), hidden characters."""

from __future__ import annotations

import pytest

from pytest_diageval.core.answer.statements import (
    ClaimSource,
    backing_claim,
    content_tokens,
    is_neutral,
    strip_control,
)
from support.citations import MEMORY, NEG_INVENTORY

LOG = (
    "[2026-07-08T11:17:00+08:00][WARN][order-service] 内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB,"
    " GC次数: 128"
)


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


SOURCES = [
    ClaimSource("claim-1", MEMORY, (LOG,)),
    ClaimSource("claim-2", NEG_INVENTORY),
    ClaimSource("claim-3", "order-service 可能存在内存泄漏风险。"),
    ClaimSource("claim-4", "HikariCP 连接池已打满：active=50/50，idle=0，waiting=32。"),
    ClaimSource("claim-5", "order-service 连接池正常，inventory-service 连接池耗尽。"),
]


@pytest.mark.parametrize(
    ("sentence", "backer"),
    [
        ("order-service 当前存在 HighMemoryUsage 告警", "claim-1"),  # the claim's own words
        (MEMORY, "claim-1"),  # equal to the claim: always backed
        ("ORDER-SERVICE 当前存在 HIGHMEMORYUSAGE 告警，内存使用率达到 ９１%", "claim-1"),  # folded
        ("内存使用率达到 91.0%", "claim-1"),  # 91 and 91.0 are one number
        ("order-service JVM堆内存 3.8GB/4GB", "claim-1"),  # from the claim's verified evidence
        ("2026-07-08T11:17:00 order-service 内存使用率过高", "claim-1"),  # ':' cuts nothing
        ("已确认：order-service 当前存在 HighMemoryUsage 告警", "claim-1"),  # framing
        ("order-service 内存使用率达到 4%", None),  # a number changed
        ("order-service JVM堆内存 91GB/3.8GB", None),  # numbers permuted
        ("order-service 内存使用率达到 ٩١%", "claim-1"),  # Arabic-Indic digits are 91
        ("order-service 内存使用率达到 ٤%", None),  # ... and 4 is 4
        ("2026-07-08T11:18:00 order-service 内存使用率过高", None),  # another minute
        ("inventory-service 当前存在 HighMemoryUsage 告警", None),  # subject swapped
        ("inventory-service 连接池正常，order-service 连接池耗尽", None),  # roles swapped
        ("order-service 连接池正常，inventory-service 连接池耗尽", "claim-5"),
        ("order-service 连接池正常", "claim-5"),
        ("inventory-service 连接池正常", None),
        ("order-service 当前不存在 HighMemoryUsage 告警", None),  # polarity
        ("order-service 当前~~不~~存在 HighMemoryUsage 告警", None),  # a struck-out negation
        ("order-service 当前不\u0336存在 HighMemoryUsage 告警", None),  # a combining overlay
        # The reader sees "检索到" struck free of its 未; the words still say "not found".
        ("inventory-service 日志中~~未~~检索到 HikariCP 连接池耗尽", None),
        ("inventory-service 日志中<del>未</del>检索到 HikariCP 连接池耗尽", None),
        ("inventory-service 日志中~~未检索到~~ HikariCP 连接池耗尽", None),  # a whole word
        ("inventory-service 日志中未\u0336检索到 HikariCP 连接池耗尽", None),
        ("inventory-service 存在 HikariCP 连接池耗尽", None),  # a negative claim's positive
        ("inventory-service 日志中未检索到 HikariCP 连接池耗尽", "claim-2"),
        ("inventory-service 内存使用率达到 91%", None),  # merges two claims' words
        ("order-service 可能存在内存泄漏风险", "claim-3"),
        ("已确认 order-service 存在内存泄漏风险", None),  # the modal dropped
        ("order-service 存在内存泄漏", None),  # ... and without a confirmation word
        ("order-service 内存使用率达到 91%，因此存在内存泄漏风险", None),  # a causal join
        ("order-service 内存使用率达到 91%，请立即重启", None),  # an action
        ("order-service 内存使用率达到 91%，建议ｒｅｓｔａｒｔ", None),  # full-width action
        ("active=0/50，idle=0，waiting=32", None),  # a labelled number changed
        ("是否存在内存泄漏尚不能确认", None),  # no hedge exception
        ("内存使用率达到 91%，确认无误", None),  # a confirmation synonym carries nothing
        ("order-service 内存泄漏", None),  # 内存 and 泄漏 occur, the bigram 存泄 does not
        ("已确认", None),  # framing only backs nothing (it needs no backing)
    ],
)
def test_backing_claim_table(sentence: str, backer: str | None) -> None:
    assert backing_claim(sentence, SOURCES) == backer


@pytest.mark.parametrize(
    ("sentence", "neutral"),
    [("综上。", True), ("已确认", False), ("请立即重启", False), ("内存 91%", False)],
)
def test_a_neutral_sentence_asserts_nothing(sentence: str, neutral: bool) -> None:
    assert is_neutral(sentence) is neutral


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
