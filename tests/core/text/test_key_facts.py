"""key_facts: the facts of real sentences (the default world's rows, the scenarios' claims and
answers), the vocabulary file read back, and why a sentence is or is not contained."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from importlib import resources
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.text.excerpt_tokens import NEGATION_WORDS
from pytest_diageval.core.text.key_facts import (
    MODALITY_STRENGTH,
    VOCABULARY_FILE,
    Facts,
    contained,
    extract,
    normalise,
    service_segments,
    split_sentences,
    stronger,
)

MEMORY_LOG = (
    "[2026-07-08T11:17:00+08:00][WARN][order-service] "
    "内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB, GC次数: 128"
)
NEUTRAL = "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。"
ALIASES = {"订单服务": "order-service", "order service": "order-service"}


def _vocabulary() -> dict[str, Any]:
    text = resources.files("pytest_diageval.core.text").joinpath(VOCABULARY_FILE).read_text()
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def _in(form: str) -> Facts:
    """A surface form in a neutral carrier sentence."""
    return extract(f"order-service {form} 告警")


# ------------------------------------------------------------------------------ normalise


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ｒｅｓｔａｒｔ ＨｉｇｈＭｅｍｏｒｙＵｓａｇｅ：９１％", "restart highmemoryusage:91%"),
        ("内存使用率 ٩١٫٥%", "内存使用率 91.5%"),  # Arabic-Indic digits and decimal separator
        ("不\u0336存在 e\u20dd", "不存在 e"),  # combining overlay and enclosing mark removed
        ("a\u200bb\u200dc\u202e91%\u2066d\ufeff", "abc91%d"),  # zero-width and bidi removed
        ("**加粗** ~~删除~~ `kill -9`", "加粗 删除 kill -9"),
        ("# 标题\n> 引用\n- 列表\n1. 第一步", "标题\n引用\n列表\n第一步"),
        ("行一\r\n行二\u2028行三\t列", "行一\n行二\n行三\t列"),
    ],
)
def test_normalise(raw: str, expected: str) -> None:
    assert normalise(raw) == expected
    assert normalise(expected) == expected


@given(
    st.text(alphabet=st.sampled_from("aB 9٩.%~*_`#>-\n\r\t不\u0336\u200bＲｒİß１。ﬁ"), max_size=40)
)
def test_normalise_is_idempotent(text: str) -> None:
    once = normalise(text)
    assert normalise(once) == once


@given(
    st.text(
        alphabet=st.sampled_from("aZ -_./:=%,9٩。，不无可能已确认重启~`\u0336\u200b"), max_size=50
    )
)
def test_extract_reads_any_text_the_same_way_twice(text: str) -> None:
    facts = extract(text, ALIASES)
    assert facts == extract(text, ALIASES)
    assert all(key == normalise(key) for key in facts.numbers | facts.entities)
    assert contained(facts, facts) is None  # every sentence backs itself


def test_a_hidden_negation_stays_visible_to_polarity() -> None:
    """Strikethrough is stripped, not obeyed: the struck 不 still counts as a negation."""
    plain = extract("order-service 存在告警")
    for hidden in (
        "order-service ~~不~~存在告警",
        "order-service 不\u0336存在告警",
        "order-service \u200b不\u200d存在告警",
        "order-service \u202e不\u202c存在告警",
        "order-service ～～不～～存在告警",  # full-width tildes fold to ~~
    ):
        facts = extract(hidden)
        assert normalise(hidden) == "order-service 不存在告警"
        assert facts.polarity == "negative", hidden
        assert contained(facts, plain) == "polarity negative differs from the claim's positive"
    assert extract("The order-service is n\u0336o\u0336t\u200b healthy").polarity == "negative"


# ------------------------------------------------------------------------------- sentences


def test_split_sentences_cuts_at_sentence_ends_only() -> None:
    text = (
        "已确认：order-service 内存 91%，JVM 堆 3.8GB/4GB。下一步 check logs. Done!\n"
        "日志在 11:17:00 出现; 采样 86.2, 91.0？对；尾句\n1. 第一步\n2) 第二步！告警!内存"
    )
    assert split_sentences(text) == [
        "已确认：order-service 内存 91%，JVM 堆 3.8GB/4GB",
        "下一步 check logs",
        "Done",
        "日志在 11:17:00 出现",
        "采样 86.2, 91.0",
        "对",
        "尾句",
        "1. 第一步",
        "2) 第二步",
        "告警",
        "内存",
    ]
    assert split_sentences(MEMORY_LOG) == [MEMORY_LOG]


# --------------------------------------------------------------------------------- numbers


def test_a_world_row_reads_as_its_quantities_service_and_time() -> None:
    facts = extract(MEMORY_LOG)
    assert facts.numbers == {"91%", "3.8gb/4gb", "128"}
    assert facts.entities == {"order-service"}
    assert facts.timestamps == {"2026-07-08T11:17:00"}


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("内存使用率 91%", "内存使用率 4%", False),
        ("内存使用率 91.0%", "内存使用率 91%", True),
        ("内存使用率 91 %", "内存使用率 ９１％", True),
        ("JVM 堆内存 3.8GB/4GB", "JVM 堆内存 91GB/3.8GB", False),
        ("JVM 堆内存 3.8GB/4GB", "JVM 堆内存 3.80 GB / 4 GB", True),
        ("JVM 堆内存 3.8/4GB", "JVM 堆内存 3.8GB/4GB", True),  # the unit reaches back
        ("active=50/50", "active=0/50", False),
        ("idle=0，waiting=32", "idle=32，waiting=0", False),  # a label binds its value
        ("已持续 25 分钟", "已持续 25m", True),
        ("持续 15m", "持续 15ms", False),
        ("过去 10 分钟发生 15 次 Full GC", "过去10分钟内发生 15 次 Full GC", True),
        ("库存同步完成: 1240 个 SKU", "库存同步完成: 1,240 个 SKU", True),
    ],
)
def test_numbers_compare_by_value_with_their_unit(first: str, second: str, same: bool) -> None:
    assert (extract(first).numbers == extract(second).numbers) is same
    assert extract(first).numbers


@pytest.mark.parametrize(
    ("text", "entities", "numbers"),
    [
        ("处理订单 order-123 失败: java.lang.OutOfMemoryError",
         {"order-123", "outofmemoryerror"}, set()),
        ("HikariPool-1 - request timed out after 30000ms", {"hikaripool-1"}, {"30000ms"}),
        ("pod order-service-7d9f8-abcde 重启 3 次",
         {"order-service-7d9f8-abcde", "order-service"}, {"3"}),
        ("GET /api/v1/users/profile 耗时 4200ms", {"/api/v1/users/profile"}, {"4200ms"}),
        ("P99 4.2s，阈值 3s", {"p99"}, {"4.2s", "3s"}),
        ("ORA-01555 与 HTTP 503", {"ora-01555", "http 503"}, set()),
        ("SQLTransientConnectionException on HikariCP",
         {"sqltransientconnectionexception", "hikaricp"}, set()),
        ("GET payment:idempotency:txn-20260708-5521 2000ms", {"txn-20260708-5521"}, {"2000ms"}),
        ("查询 t_order 执行 4820ms，版本 1.2.3，地址 10.0.0.1",
         {"t_order", "1.2.3", "10.0.0.1"}, {"4820ms"}),
    ],
)  # fmt: skip
def test_numbers_inside_ids_names_and_paths_are_not_numbers(
    text: str, entities: set[str], numbers: set[str]
) -> None:
    facts = extract(text)
    assert facts.entities == entities
    assert facts.numbers == numbers


def test_every_world_log_line_gives_its_service_and_time_and_no_number_from_them() -> None:
    logs = default_world().logs
    assert len(logs) >= 20
    for log in logs:
        line = f"[{log.timestamp.isoformat()}][{log.level}][{log.service}] {log.message}"
        facts = extract(line)
        assert log.service in facts.entities
        assert log.timestamp.strftime("%Y-%m-%dT%H:%M:%S") in facts.timestamps
        assert facts.numbers == extract(log.message).numbers, line


# ------------------------------------------------------------------------------ timestamps


def test_timestamps_are_normalised_and_compared() -> None:
    first = extract("告警在 2026-07-08T11:17:00+08:00 触发")
    second = extract("告警在 2026-07-08T11:18:00 触发")
    assert first.timestamps == {"2026-07-08T11:17:00"}
    assert first.timestamps != second.timestamps
    assert contained(first, second) == "timestamp 2026-07-08T11:17:00 not in the claim"
    assert extract("现在是 2026-07-08 11:17").timestamps == {"2026-07-08T11:17"}
    assert extract("2026年7月8日 起").timestamps == {"2026-07-08"}
    assert extract("最早出现在 10:52:30（85.4%）").timestamps == {"10:52:30"}
    assert extract("最早出现在 10:52:30（85.4%）").numbers == {"85.4%"}


def test_a_coarser_time_is_backed_by_a_finer_one() -> None:
    claim = extract("payment-service 在 2026-07-08T11:08:41+08:00 出现 Redis 命令超时")
    assert contained(extract("payment-service 在 11:08:41 出现 Redis 命令超时"), claim) is None
    assert contained(extract("payment-service 在 2026-07-08 出现超时"), claim) is None
    assert contained(extract("payment-service 在 11:08 出现超时"), claim) is None
    missing = contained(extract("payment-service 在 11:09:41 出现超时"), claim)
    assert missing == "timestamp 11:09:41 not in the claim"


# -------------------------------------------------------------------------------- entities


def test_a_swapped_subject_is_not_contained() -> None:
    sentence = extract("order-service 内存使用率 91%")
    backing = extract("inventory-service 内存使用率 91%")
    assert contained(sentence, backing) == "entity order-service not in the claim"
    assert contained(sentence, extract("order-service 内存使用率 91%")) is None


def test_aliases_name_their_canonical_entity() -> None:
    assert extract("订单服务告警", ALIASES).entities == {"order-service"}
    english = extract("The Order  Service has been restarted", ALIASES)
    assert english.entities == {"order-service"}
    assert english.actions == {"restart"}
    assert extract("ＯＲＤＥＲ ＳＥＲＶＩＣＥ 告警", ALIASES).entities == {"order-service"}
    assert extract("border services 告警", ALIASES).entities == set()
    assert extract("订单服务告警").entities == set()  # without the table, no alias
    sentence = extract("订单服务 内存使用率 91%", ALIASES)
    assert contained(sentence, extract("order-service 内存使用率 91%")) is None


def test_a_neutral_observation() -> None:
    assert extract(NEUTRAL) == Facts(
        numbers=frozenset({"91%"}),
        entities=frozenset({"order-service", "highmemoryusage"}),
        timestamps=frozenset(),
        polarity="positive",
        modality="observed",
        causal=frozenset(),
        actions=frozenset(),
        confirms=False,
    )


# ------------------------------------------------------------------------ markers and modality


def test_modality_and_confirmation() -> None:
    possible = extract("可能存在内存泄漏风险")
    confirmed = extract("已确认 order-service 存在内存泄漏")
    assert possible.modality == "possible"
    assert (confirmed.modality, confirmed.confirms) == ("observed", True)
    assert contained(confirmed, possible) is not None
    hedged = extract("order-service 可能存在内存泄漏风险")
    reason = contained(confirmed, hedged)
    assert reason == "modality observed is stronger than the claim's possible"
    assert contained(hedged, extract("order-service 存在内存泄漏")) is None  # observed backs it
    assert extract("建议下一步采集 order-service 的堆 dump").modality == "recommended"
    assert extract("Root cause confirmed: order-service memory leak").confirms
    assert not extract("是否存在内存泄漏尚不能确认，需要堆 dump").confirms
    assert not extract("无法确认是否存在内存泄漏").confirms
    assert stronger("observed", "possible")
    assert not stronger("recommended", "possible")
    assert MODALITY_STRENGTH["observed"] > MODALITY_STRENGTH["possible"]


def test_causal_connectives_and_actions() -> None:
    assert extract("内存持续上涨，因此触发告警").causal == {"因此"}
    assert extract("连接被占满，所以请求超时").causal == {"所以"}
    assert extract("order-service 出现故障").causal == set()
    for text in ("请立即重启 order-service", "重新启动实例", "ｒｅｓｔａｒｔ order-service"):
        assert extract(text).actions == {"restart"}, text
    assert extract("restart order-service").actions == {"restart"}
    assert extract("回滚最近发布的版本").actions == {"roll_back", "deploy"}
    assert extract("调高 maximumPoolSize").actions == {"raise_limit"}
    assert extract("扩容到 6 个实例").actions == {"scale_out"}
    assert extract("缩容到 2 个实例").actions == {"scale_in"}
    assert extract("The order service has been restarted").actions == {"restart"}
    assert extract("GET 请求在 2000ms 后超时").modality == "observed"  # 请求 is not 请


def test_neutral_words_are_never_markers() -> None:
    vocabulary = _vocabulary()
    sections = ["negation", "possible", "recommended", "confirmation", "causal"]
    listed = {form for section in sections for form in vocabulary[section]}
    listed |= {form for forms in vocabulary["actions"].values() for form in forms}
    assert not listed & {"有", "是", "的", "在", "出现", "存在", "发生", "增大", "关闭"}
    facts = extract(NEUTRAL.replace("当前", "非常"))  # 非常 is not 非
    assert (facts.polarity, facts.modality, facts.causal, facts.actions) == (
        "positive", "observed", frozenset(), frozenset()
    )  # fmt: skip


def test_every_surface_form_of_the_vocabulary_is_detected() -> None:
    vocabulary = _vocabulary()
    for form in [*vocabulary["negation"], *NEGATION_WORDS]:
        assert _in(form).polarity == "negative", form
    for form in vocabulary["possible"]:
        assert _in(form).modality == "possible", form
    for form in vocabulary["recommended"]:
        assert _in(form).modality == "recommended", form
    for form in vocabulary["confirmation"]:
        assert _in(form).confirms, form
    for form in vocabulary["causal"]:
        assert _in(form).causal == {normalise(form)}, form
    for name, forms in vocabulary["actions"].items():
        for form in forms:
            assert name in _in(form).actions, (name, form)
    for unit, forms in vocabulary["units"].items():
        for form in forms:
            assert _in(f"7{form}").numbers == {f"7{unit}"}, form
    for form in vocabulary["counters"]:
        assert _in(f"7 {form}").numbers == {"7"}, form


def test_no_not_marker_is_read_as_its_section() -> None:
    blanks = _vocabulary()["not_markers"]
    readers: dict[str, Callable[[Facts], bool]] = {
        "negation": lambda f: f.polarity == "negative",
        "possible": lambda f: f.modality == "possible",
        "recommended": lambda f: f.modality == "recommended",
        "confirmation": lambda f: f.confirms,
        "causal": lambda f: bool(f.causal),
    }
    assert set(blanks) <= set(readers)
    for section, forms in blanks.items():
        for form in forms:
            assert not readers[section](_in(form)), (section, form)


def test_english_inflections_and_word_edges() -> None:
    assert extract("order-service was rebooted twice").actions == {"restart"}
    assert extract("the deployment rolled back").actions == {"roll_back"}
    assert extract("node order-service-node-1 now nominal").polarity == "positive"
    assert extract("because of a leak").causal == {"because"}
    assert extract("the log suggests a leak").modality == "possible"
    assert extract("we suggest a heap dump").modality == "recommended"


# ------------------------------------------------------------------ contained, on scenarios


@pytest.mark.parametrize(
    ("sentence", "claim", "reason"),
    [
        ("order-service 存在 HighMemoryUsage 告警，内存使用率 91%。",
         "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%，JVM堆内存 3.8GB/4GB。",
         None),
        ("order-service 日志中有内存使用率过高 91.0% 的记录。",
         "order-service 存在 HighMemoryUsage 告警，内存使用率 91%。", None),
        ("order-service 的 HikariCP 连接池已打满（active=50/50，waiting=32），原因是长事务。",
         "order-service 的 HikariCP 连接池已打满（active=50/50）。",
         "number waiting=32 not in the claim"),
        ("order-service 的 HikariCP 连接池已打满（50/50）。",
         "order-service 的 HikariCP 连接池已打满：active=50/50，idle=0，waiting=32。", None),
        ("order-service 的 HighMemoryUsage 告警已持续 2 小时。",
         "order-service 当前存在 HighMemoryUsage 告警：内存使用率 91%（阈值 85%，持续 15m）。",
         "number 2h not in the claim"),
        ("payment-service 的 CPU 使用率已回落到 75%，低于阈值，无需处理。",
         "payment-service 存在 HighCPUUsage 告警，CPU 使用率 92%，超过阈值 80%。",
         "number 75% not in the claim"),
        ("order-service 出现数据库慢查询（t_order 查询 4820ms），原因是 user_id 列缺少索引。",
         "order-service 出现数据库慢查询，查询 t_order 的 SELECT 执行了 4820ms。",
         "entity user_id not in the claim"),
        ("inventory-service 和 order-service 的日志中都未检索到 HikariCP 连接池耗尽的真实证据。",
         "order-service 日志中未检索到 HikariCP 连接池耗尽的真实证据。",
         "entity inventory-service not in the claim"),
        ("order-service 已确认内存泄漏，建议立即重启。", "order-service 存在内存泄漏。",
         "action restart not in the claim"),
        ("payment-service 的 CPU 告警是流量高峰导致的。",
         "payment-service 存在 HighCPUUsage 告警，CPU 使用率 92%。",
         "causal connective 导致 not in the claim"),
        ("order-service 的连接池运行正常，没有发生连接池耗尽。",
         "order-service 发生了数据库连接池耗尽。",
         "polarity negative differs from the claim's positive"),
        ("order-service 内存泄漏已确认。", "order-service 可能存在内存泄漏风险。",
         "modality observed is stronger than the claim's possible"),
        ("order-service 可能存在内存泄漏，建议确认。",
         "order-service 可能存在内存泄漏风险。", None),
        ("已确认 order-service 可能存在内存泄漏。", "order-service 可能存在内存泄漏风险。",
         "confirmation not in the claim"),
    ],
)  # fmt: skip
def test_contained_on_scenario_sentences(sentence: str, claim: str, reason: str | None) -> None:
    assert contained(extract(sentence), extract(claim)) == reason


def test_facts_are_frozen() -> None:
    facts = extract(NEUTRAL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.polarity = "negative"  # type: ignore[misc]
    assert isinstance(facts.numbers, frozenset)
    assert extract(NEUTRAL) == facts  # deterministic


def test_service_segments_group_clauses_under_the_service_they_speak_of() -> None:
    text = (
        "order-service 连接池正常，idle=5，inventory-service 在 11:13:47 连接池耗尽：active=50/50"
    )
    assert service_segments(text) == [
        (frozenset({"order-service"}), "order-service 连接池正常，idle=5"),
        (
            frozenset({"inventory-service"}),
            "inventory-service 在 11:13:47 连接池耗尽，active=50/50",
        ),
    ]
    assert service_segments("内存使用率 91%") == [(frozenset(), "内存使用率 91%")]


def test_a_cached_extraction_is_shared_and_cannot_change() -> None:
    text = "order-service 内存使用率 91%"
    first = extract(text)
    assert extract(text) is first  # cached
    assert extract(text, {"订单服务": "order-service"}) == first  # aliases bypass the cache
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.numbers = frozenset()  # type: ignore[misc]
