"""Sentences of a free-text answer, and whether a verified claim backs each one.

The composer publishes the executor's ``user_facing_answer`` word for word only when every
sentence in it is backed (004: "Composer 只表达 Verifier 允许输出的内容"). Deciding that from
prose must err on the side of *not* backed: a false "not backed" only makes the composer build
the answer from the verified claims instead, a false "backed" would publish an unchecked
sentence. A sentence (:func:`~pytest_diageval.core.text.key_facts.split_sentences`: cut at
。！？； and newlines, never at a colon, so ``11:17:00`` stays whole) is **backed** by one claim
when

* it equals the claim's text once both are normalised (NFKC, digits, markup, case, closing
  punctuation): a restatement is always published; or
* **facts**: every number, entity and timestamp it asserts
  (:mod:`~pytest_diageval.core.text.key_facts`) is in the claim's text or in the claim's
  gatekeeper-verified evidence (what its passed bindings' excerpts matched), its polarity is
  the claim's, its modality is no stronger than the claim's (a "可能" claim cannot back
  "已确认"), and any causal connective or action verb it carries is in the claim's own text
  (never the evidence's: a log that says "重启" licenses no restart); **and**
* **words**: every content token of it (Latin words and numbers as
  :mod:`~pytest_diageval.core.text.excerpt_tokens` reads them, CJK runs as overlapping
  character bigrams, :data:`FRAMING_WORDS` and :data:`FUNCTION_CHARS` dropped) occurs in the
  claim's text or that evidence, so a conclusion such as "内存泄漏" cannot ride on a claim that
  shares only its subject and numbers.

A sentence with strikethrough markup or a leftover combining mark (:func:`hides_text`) is
backed by nothing: a reader may see "~~未~~检索到" as a finding while the words say "not found".
There is no hedge exception: a sentence that "only says what is not known" is dropped like any
other unbacked sentence. A sentence of framing only (no content token, no action, confirms
nothing) needs no backing. A sentence that merges two claims is backed by neither (the composer
lists both instead).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_diageval.core.text.excerpt_tokens import word_keys
from pytest_diageval.core.text.key_facts import (
    Facts,
    contained,
    extract,
    normalise,
    service_segments,
)

__all__ = [
    "FRAMING_WORDS",
    "FUNCTION_CHARS",
    "ClaimSource",
    "backing_claim",
    "content_tokens",
    "hides_text",
    "is_neutral",
    "strip_control",
]

FRAMING_WORDS: tuple[str, ...] = (
    "已确认", "经核验", "核验结果", "结论", "综上", "确认", "目前", "当前", "此外", "另外",
    "同时", "显示", "其中", "也", "有", "并且", "而且", "因此",
)  # fmt: skip
FUNCTION_CHARS = frozenset("了的在是对和与及或一次个条中也为被将把从到着过地得之其该这那此并而所")
"""CJK characters that carry no content of their own (dropped before bigrams)."""
_KEEP_CONTROLS = frozenset("\n\t")
_STRUCK_RE = re.compile(r"~~|</?(?:del|s|strike)\b", re.IGNORECASE)


@dataclass(frozen=True)
class ClaimSource:
    """What may back a sentence: a verified claim's id, its text and what its passed bindings'
    excerpts matched in their items (its gatekeeper-verified evidence)."""

    claim_id: str
    claim_text: str
    evidence: tuple[str, ...] = ()


def strip_control(text: str) -> str:
    """Drop control and format characters (bidi overrides, zero-width joiners, …) except
    newline and tab: they can hide or reorder what a reader sees."""
    return "".join(
        ch
        for ch in text
        if ch in _KEEP_CONTROLS or unicodedata.category(ch) not in ("Cc", "Cf", "Co", "Cs")
    )


def content_tokens(text: str) -> list[str]:
    """Word and number keys, and CJK bigrams, of ``text`` without framing words."""
    for word in FRAMING_WORDS:
        text = text.replace(word, " ")
    return word_keys(text, FUNCTION_CHARS)


def backing_claim(sentence: str, claims: Sequence[ClaimSource]) -> str | None:
    """The id of a claim that backs ``sentence`` on its own; None when none does."""
    if hides_text(sentence):
        return None
    wanted_text = _comparable(sentence)
    for claim in claims:
        if wanted_text == _comparable(claim.claim_text):
            return claim.claim_id
    wanted = content_tokens(sentence)
    if not wanted:
        return None
    facts = extract(sentence)
    for claim in claims:
        available = set(content_tokens(" ".join((claim.claim_text, *claim.evidence))))
        if (
            all(token in available for token in wanted)
            and _facts_backed(facts, claim)
            and _subjects_kept(sentence, claim)
        ):
            return claim.claim_id
    return None


def hides_text(sentence: str) -> bool:
    """Markup or marks that make a reader see other text than the words: strikethrough
    (``~~未~~``, ``<del>``) or a combining mark left after NFC (``未\u0336``, an overlay that
    strikes a negation out). The checker cannot know how the answer will be rendered, so such
    a sentence is backed by nothing."""
    text = unicodedata.normalize("NFC", sentence)
    marks = any(unicodedata.category(ch) in ("Mn", "Me") for ch in text)
    return marks or _STRUCK_RE.search(text) is not None


def is_neutral(sentence: str) -> bool:
    """Only framing words and punctuation, no action, no confirmation: asserts nothing."""
    if content_tokens(sentence):
        return False
    facts = extract(sentence)
    return not (facts.actions or facts.causal or facts.confirms)


def _facts_backed(facts: Facts, claim: ClaimSource) -> bool:
    own = extract(claim.claim_text)
    cited = [extract(text) for text in claim.evidence]
    backing = Facts(
        numbers=own.numbers.union(*(c.numbers for c in cited)),
        entities=own.entities.union(*(c.entities for c in cited)),
        timestamps=own.timestamps.union(*(c.timestamps for c in cited)),
        polarity=own.polarity,
        modality=own.modality,
        causal=own.causal,
        actions=own.actions,
        confirms=own.confirms,
    )
    return contained(facts, backing) is None


def _subjects_kept(sentence: str, claim: ClaimSource) -> bool:
    """What the sentence says of each service, the claim (or its evidence) says of the same
    service: sets of facts cannot see "A 正常，B 耗尽" restated as "B 正常，A 耗尽"."""
    said: dict[frozenset[str], set[str]] = {}
    for text in (claim.claim_text, *claim.evidence):
        for subjects, group in service_segments(text):
            said.setdefault(subjects, set()).update(content_tokens(group))
    return all(
        not subjects or set(content_tokens(group)) <= said.get(subjects, set())
        for subjects, group in service_segments(sentence)
    )


def _comparable(text: str) -> str:
    return " ".join(normalise(strip_control(text)).split()).rstrip("。.!！?？;；")
