"""Grounded claims: the rules on what a claim may say at all, and on negative claims.

:mod:`.claim_support` gives each claim a ceiling from its checked bindings; a binding that
passed proves the *quote* is real, not that the *claim* says what the quote says. What a
positive claim asserts (numbers, labels, times, entities, polarity, modality, causation) is
compared with its items by :mod:`.claim_structure`; this module holds the rules that read the
claim's own kind of statement (004: "Verifier 判为 PASS 必须基于“真实引用 + 可推导结论”两个条件同时
成立"). Each failure caps the claim at no_evidence under its own rule:

* ``claim.action_in_claim``: recommends a fix its items do not report (a claim states what
  the evidence shows);
* ``claim.denial_without_no_hit``: denies that something exists or occurred, citing items that
  state no negation, without being a ``negative_observation``;
* ``claim.negative_kind``: denies logs (alerts) with no no-hit search of logs (alerts);
* ``claim.negative_terms``: denies a term none of its no-hit searches asked for;
* ``claim.negative_filter``: cites a search filtered more narrowly (a log level) than it says;
* ``claim.conclusion_not_cited``: a negative_observation that concludes a cause;
* ``claim.contradicts_claim``: it and another standing claim read one item with opposite
  polarity (the item decides first, through ``claim.polarity_contradicts_item``).

A service the claim names is :mod:`.claim_support`'s ``claim.subject_not_cited`` (the service a
call asked for counts as cited there), so one cause gets one rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from pytest_diageval.core.contract.contracts import CheckedBinding, Claim, ToolInvocation
from pytest_diageval.core.contract.evidence_tools import QUERY_LOGS, QUERY_METRICS
from pytest_diageval.core.text.key_facts import (
    Facts,
    extract,
    normalise,
    services,
)
from pytest_diageval.core.text.quantities import structure_vocabulary

__all__ = [
    "contradicting_claims",
    "denies",
    "negative_problem",
    "negative_statement_problem",
    "ungrounded",
]

_DENIAL_RE = re.compile(
    r"(?:不|未|没有|并未|从未|无)(?:曾)?(?:存在|出现|发生|检索到|发现|触发|命中|查到)(?![率数])"
    r"|(?:没有|没|并无|未见)(?:任何)?(?:相关的?)?(?:告警|日志|错误|报错|异常记录)"
    r"|\bnot found\b|\bno (?:\w+ ){0,3}(?:found|hits?|matches)\b|\bdid not (?:occur|appear|fire)\b"
    r"|\b(?:there (?:is|are|were|was) )?no (?:active |firing )?(?:alerts?|errors?|logs?)\b"
)
# "结果为 0 条", "returned zero results": a search reported empty, said without a negation word.
_EMPTY_RESULT = re.compile(
    r"(?:结果|返回|命中|找到)(?:为|了)?\s*0\s*条|(?:0|zero)\s+(?:results|hits|matches|entries|rows)"
    r"|returned (?:nothing|no results|0)|came back empty|empty result"
)
_CLAUSE_RE = re.compile(r"[，,。；;：:！!？?]")
_LOG_WORDS = ("日志", "log")
_ALERT_WORDS = ("告警", "alert")
_LEVEL_WORDS = {
    "error": ("error", "错误", "报错"),
    "warn": ("warn", "警告"),
    "info": ("info",),
    "debug": ("debug", "调试"),
}


def ungrounded(claim_text: str, cited_texts: Sequence[str]) -> tuple[str, str] | None:
    """``(rule, reason)`` when a positive claim recommends an action its items do not report
    (a claim states what was seen; a fix belongs in recommended_actions) or denies that
    something exists where no item states a negation (only a negative_observation citing a
    no-hit may deny: "未发现可用连接" restates "Connection is not available"); else None.
    What the claim asserts is compared with its items by :mod:`.claim_structure`."""
    cited = [extract(text) for text in cited_texts]
    reported = frozenset().union(*(item.actions for item in cited))
    for clause in _CLAUSE_RE.split(claim_text):  # the advice and the action in one clause
        facts = _without_services(extract(clause))
        if facts.modality == "recommended" and facts.actions - reported:
            action = sorted(facts.actions - reported)[0]
            return (
                "claim.action_in_claim",
                f"it recommends an action ({action}), which no item shows",
            )
    if denies(claim_text) and all(item.polarity == "positive" for item in cited):
        return (
            "claim.denial_without_no_hit",
            "it denies that something exists or occurred;"
            " only a negative_observation citing a search that found nothing may",
        )
    return None


def denies(text: str) -> bool:
    """The text says something does not exist or did not occur (不存在, 未检索到, not found)."""
    return _DENIAL_RE.search(normalise(text)) is not None


def negative_statement_problem(
    claim_text: str, no_hit_texts: Sequence[str]
) -> tuple[str, str] | None:
    """A negative_observation must be negative (any negation: 未检索到, 没有 … 日志, 无命中),
    recommend nothing, and conclude only what its searches show (nothing: a search that found
    nothing concludes no cause)."""
    facts = extract(claim_text)
    if facts.actions and facts.modality == "recommended":
        action = sorted(facts.actions)[0]
        return "claim.action_in_claim", f"it recommends an action ({action}), which no search shows"
    if facts.polarity != "negative" and not _EMPTY_RESULT.search(normalise(claim_text)):
        return (
            "claim.polarity_contradicts_item",
            "a negative_observation that denies nothing;"
            " its searches found nothing, so it asserts what they do not show",
        )
    if facts.causal and not any(extract(text).causal for text in no_hit_texts):
        marker = sorted(facts.causal)[0]
        return (
            "claim.conclusion_not_cited",
            f"it concludes a cause ({marker}); a search that found nothing shows no cause",
        )
    return None


def negative_problem(claim_text: str, searches: Sequence[ToolInvocation]) -> tuple[str, str] | None:
    """``(rule, reason)`` when the no-hit searches a negative claim cites do not cover what it
    denies: the same kind of evidence, every term it names, no narrower filter."""
    lowered = claim_text.lower()
    tools = {search.tool_name for search in searches}
    for words, tool, kind in (
        (_LOG_WORDS, QUERY_LOGS, "logs"),
        (_ALERT_WORDS, QUERY_METRICS, "alerts"),
    ):
        if any(word in lowered for word in words) and tool not in tools:
            return "claim.negative_kind", f"it denies {kind}, but no cited no-hit searched {kind}"
    terms = [term.lower() for search in searches for term in _terms(search)]
    services = {str(s.input_params.get("service", "")).lower() for s in searches}
    for entity in sorted(extract(claim_text).entities - services):
        if not any(entity in term or term in entity for term in terms):
            return (
                "claim.negative_terms",
                f"it denies {entity!r}, which none of its no-hit searches asked for",
            )
    for search in searches:
        level = str(search.input_params.get("level") or "").lower()
        if not level:
            continue
        if not any(word in lowered for word in _LEVEL_WORDS.get(level, (level,))):
            return (
                "claim.negative_filter",
                f"invocation {search.id} searched {level.upper()} logs only;"
                " the claim states no level",
            )
        wider = _wider_levels(normalise(claim_text), level)
        if wider:
            return (
                "claim.negative_filter",
                f"invocation {search.id} searched {level.upper()} logs only; the claim"
                f" speaks of {wider}",
            )
    return None


def _wider_levels(text: str, level: str) -> str | None:
    """A level the claim denies beyond the one searched ("ERROR or WARN", "at any level")."""
    words = structure_vocabulary()
    found = words.any_level.search(text)
    if found is not None:
        return repr(found.group())
    named = sorted(name for name, pattern in words.levels.items() if pattern.search(text))
    others = [name for name in named if not level.startswith(name)]
    return f"{', '.join(others).upper()} logs as well" if others else None


def contradicting_claims(
    claims: Sequence[Claim], passed: Mapping[str, Sequence[CheckedBinding]]
) -> dict[str, str]:
    """Claim id -> the id of another claim that cites one of the same items with the opposite
    polarity: one piece of evidence cannot derive a conclusion and its negation, so neither
    stands (the code cannot tell which reading is right)."""
    cites = {c.claim_id: {_target(r) for r in passed.get(c.claim_id, ())} for c in claims}
    facts = {c.claim_id: extract(c.claim_text) for c in claims}
    found: dict[str, str] = {}
    for first in claims:
        for second in claims:
            a, b = first.claim_id, second.claim_id
            if a != b and cites[a] & cites[b] and _opposite(facts[a], facts[b]):
                found.setdefault(a, b)
    return found


def _opposite(first: Facts, second: Facts) -> bool:
    """Opposite polarity about the same things: one claim's entities and numbers are all
    among the other's ("存在 X 告警" against "不存在 X 告警"), not two claims that merely share
    an item and happen to differ in a negation word."""
    if first.polarity == second.polarity:
        return False
    small, large = sorted((first, second), key=lambda f: len(f.entities) + len(f.numbers))
    return (
        bool(small.entities) and small.entities <= large.entities and small.numbers <= large.numbers
    )


def _without_services(facts: Facts) -> Facts:
    return replace(facts, entities=facts.entities - services(facts))


def _target(row: CheckedBinding) -> tuple[int | None, str]:
    return row.source_invocation_id, (row.raw_path or "").strip()


def _terms(search: ToolInvocation) -> list[str]:
    keywords = search.input_params.get("keywords")
    if isinstance(keywords, str):
        keywords = keywords.split(",")
    found = [str(k) for k in keywords or [] if str(k).strip()]
    for name in ("alert_name", "query"):
        value = search.input_params.get(name)
        if isinstance(value, str) and value.strip():
            found.append(value)
    return found
