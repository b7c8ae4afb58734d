"""Statements of a free-text answer, and whether a verified claim backs each one.

The composer publishes the executor's ``user_facing_answer`` word for word only when every
statement in it is backed (004: "Composer 只表达 Verifier 允许输出的内容"). Deciding that from
prose must err on the side of *not* backed: a false "not backed" only makes the composer build
the answer from the verified claims instead, a false "backed" would publish an unchecked
sentence. Hence the rules are strict and simple:

* **Statements** are clauses: the text is cut at sentence and clause punctuation
  (``。！？；，：`` and their ASCII forms, newlines).
* **Tokens**: Latin words and numbers as ``core.excerpt_tokens`` reads them (NFKC, casefold,
  numbers by value), CJK runs as overlapping character *bigrams* (``内存泄漏`` = 内存 存泄 泄漏),
  so a statement cannot be stitched together from common single characters.
* **Backed** by one claim: every content token of the statement occurs in that claim's text,
  and the statement carries exactly the negation markers of the claim text (``不 未 没 无 not
  no …``): a negative observation cannot back its positive restatement, nor a positive claim
  its denial. The claim's evidence texts are not pooled in: a statement could take its subject
  from the claim and its facts from an unrelated item the claim happens to cite. A statement
  that merges two claims is not backed (the composer lists both instead).
* **Framing** (:data:`FRAMING_WORDS`: 已确认, 经核验, 结论 …) carries no content and is ignored;
  a statement of framing only is neutral. CJK function characters (:data:`FUNCTION_CHARS`:
  了 的 在 对 一 次 …) are dropped before the bigrams are formed, on both sides, so "出现了一次"
  reads as "出现"; negations are never among them.
* **Hedges** say what is *not* known (:data:`HEDGE_MARKERS`: 尚不能确认, 无法确认, 需要 …): such a
  statement is allowed without a claim, unless it also confirms something
  (:data:`CONFIRMATION_MARKERS`, once the hedge phrase is removed) or proposes a fix
  (:data:`FIX_MARKERS`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pytest_diageval.core.judge.excerpt_tokens import NEGATION_WORDS, tokenise

__all__ = [
    "CONFIRMATION_MARKERS",
    "FIX_MARKERS",
    "FRAMING_WORDS",
    "FUNCTION_CHARS",
    "HEDGE_MARKERS",
    "ClaimSource",
    "backing_claim",
    "content_tokens",
    "is_hedge",
    "is_neutral",
    "split_statements",
    "strip_control",
]

_SPLIT_RE = re.compile(r"[。！？；，：、!?;,:\n]+|(?<=[A-Za-z0-9%)])\.(?:\s|$)")
FRAMING_WORDS: tuple[str, ...] = (
    "已确认", "经核验", "核验结果", "结论", "综上", "确认", "目前", "当前", "此外", "另外",
    "同时", "显示", "其中", "也", "有", "并且", "而且", "因此",
)  # fmt: skip
FUNCTION_CHARS = frozenset("了的在是对和与及或一次个条中也为被将把从到着过地得之其该这那此并而所")
"""CJK characters that carry no content of their own (dropped before bigrams)."""
HEDGE_MARKERS: tuple[str, ...] = (
    "尚不能确认", "不能确认", "无法确认", "尚未确认", "未能确认", "不足以确认", "有待确认",
    "待确认", "尚不清楚", "尚不能判断", "无法判断", "需要", "需进一步", "下一步",
    "cannot be confirmed", "not confirmed", "unconfirmed", "not yet known",
)  # fmt: skip
CONFIRMATION_MARKERS: tuple[str, ...] = (
    "已确认", "确认存在", "确认为", "确认是", "已证实", "证实", "确定是", "就是", "根因是",
    "是根因", "导致了", "已发生", "confirmed", "root cause is", "caused by",
)  # fmt: skip
FIX_MARKERS: tuple[str, ...] = (
    "重启", "扩容", "缩容", "回滚", "修改", "调整", "调大", "调小", "增大", "减小", "升级",
    "降级", "修复", "优化", "部署", "发布", "删除", "清理", "清空", "限流", "熔断", "切换",
    "迁移", "替换", "关闭", "禁用", "kill", "restart", "rollback", "scale", "fix", "deploy",
)  # fmt: skip
_CJK_NEGATIONS = frozenset(word for word in NEGATION_WORDS if len(word) == 1)
_KEEP_CONTROLS = frozenset("\n\t")


@dataclass(frozen=True)
class ClaimSource:
    """What may back a statement: a verified claim's id and text."""

    claim_id: str
    claim_text: str


def strip_control(text: str) -> str:
    """Drop control and format characters (bidi overrides, zero-width joiners, …) except
    newline and tab: they can hide or reorder what a reader sees."""
    return "".join(
        ch
        for ch in text
        if ch in _KEEP_CONTROLS or unicodedata.category(ch) not in ("Cc", "Cf", "Co", "Cs")
    )


def split_statements(text: str) -> list[str]:
    """The clauses of ``text``, stripped, empty ones dropped."""
    return [part.strip() for part in _SPLIT_RE.split(text) if part and part.strip()]


def is_hedge(statement: str) -> bool:
    """Says what is not known (or which evidence to gather next), and confirms or fixes
    nothing."""
    lowered = statement.lower()
    if not any(marker in lowered for marker in HEDGE_MARKERS):
        return False
    rest = lowered
    for marker in HEDGE_MARKERS:
        rest = rest.replace(marker, " ")
    confirms = any(marker in rest for marker in CONFIRMATION_MARKERS)
    fixes = any(marker in lowered for marker in FIX_MARKERS)
    return not confirms and not fixes


def content_tokens(text: str) -> list[str]:
    """Word and number keys, and CJK bigrams, of ``text`` without framing words."""
    for word in FRAMING_WORDS:
        text = text.replace(word, " ")
    return _tokens(text)


def backing_claim(statement: str, claims: Sequence[ClaimSource]) -> str | None:
    """The id of a claim that backs ``statement`` on its own; None when none does."""
    wanted = content_tokens(statement)
    if not wanted:
        return None
    negations = _negations(statement)
    for claim in claims:
        if _negations(claim.claim_text) != negations:
            continue
        available = set(content_tokens(claim.claim_text))
        if all(token in available for token in wanted):
            return claim.claim_id
    return None


def is_neutral(statement: str) -> bool:
    """Only framing words and punctuation: says nothing that needs backing."""
    return not content_tokens(statement)


def _tokens(text: str) -> list[str]:
    keys: list[str] = []
    run: list[str] = []
    end = -1
    for token in tokenise(text).tokens:
        if token.kind == "cjk" and token.key in FUNCTION_CHARS:
            pass  # dropped: the run goes on across it
        elif token.kind == "cjk" and token.start == end:
            run.append(token.key)
        else:
            keys.extend(_bigrams(run))
            run = [token.key] if token.kind == "cjk" else []
            if token.kind != "cjk" and not token.is_filler:
                keys.append(token.key)
        end = token.end
    keys.extend(_bigrams(run))
    return keys


def _bigrams(run: Iterable[str]) -> list[str]:
    chars = list(run)
    if len(chars) == 1:
        return chars
    return [chars[i] + chars[i + 1] for i in range(len(chars) - 1)]


def _negations(text: str) -> frozenset[str]:
    lowered = text.lower()
    found = {ch for ch in lowered if ch in _CJK_NEGATIONS}
    found.update(t.key for t in tokenise(text).tokens if t.key in NEGATION_WORDS)
    return frozenset(found)
