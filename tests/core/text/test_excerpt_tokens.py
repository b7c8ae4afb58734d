"""``tokenise`` remembers its results: the same tokens as computing them afresh, immutable,
keyed by the exact text, and a bounded number of texts kept."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.text.excerpt_tokens import TOKENISED_CACHE_SIZE, normalise, tokenise

ALERT_ROW = "HighMemoryUsage firing: order-service JVM 堆内存 3.8GB/4GB，current=91%"


def test_a_remembered_result_equals_a_fresh_one_on_the_worlds_rows() -> None:
    world = default_world()
    assert len(world.logs) >= 3
    texts = [ALERT_ROW, "ＨｉｇｈＭｅｍｏｒｙＵｓａｇｅ：９１％…", "...thres 91.0% isn't"]
    texts += [f"[{log.level}][{log.service}] {log.message}" for log in world.logs][:20]
    for text in texts:
        fresh = tokenise.__wrapped__(text)
        assert tokenise(text) == fresh
        assert tokenise(text) is tokenise(text)  # the second call is the remembered one
    assert normalise("ＨｉｇｈＭｅｍｏｒｙＵｓａｇｅ：９１％…") == "high memory usage 91"


@given(st.text(alphabet=st.sampled_from("aB 9.。不没…'’HighMemory内存ＪＶＭ:%"), max_size=40))
def test_remembered_tokens_are_the_computed_ones(text: str) -> None:
    assert tokenise(text) == tokenise.__wrapped__(text)
    assert tokenise(text) == tokenise.__wrapped__(text)


def test_the_shared_result_cannot_be_changed() -> None:
    tokenised = tokenise(ALERT_ROW)
    assert isinstance(tokenised.tokens, tuple)
    assert isinstance(tokenised.whole_tokens(), tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tokenised.tokens = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        tokenised.tokens[0].key = "changed"  # type: ignore[misc]


def test_texts_that_differ_only_in_form_get_their_own_entries() -> None:
    composed, decomposed = "café 91", "cafe\u0301 91"
    assert tokenise(composed) is not tokenise(decomposed)
    assert [t.key for t in tokenise(decomposed).tokens] == ["café", "91"]
    assert tokenise("91.0%").tokens[0].surface == "91.0"
    assert tokenise("91%").tokens[0].surface == "91"
    assert tokenise("91.0%").tokens[0].key == tokenise("91%").tokens[0].key == "91"


def test_the_number_of_texts_kept_is_bounded() -> None:
    for number in range(TOKENISED_CACHE_SIZE + 50):
        tokenise(f"order-service 第 {number} 行")
    info = tokenise.cache_info()
    assert info.maxsize == TOKENISED_CACHE_SIZE
    assert info.currsize == TOKENISED_CACHE_SIZE
