"""Grounded claims: what a claim asserts must be in the evidence it cites.

:mod:`.claim_support` gives each claim a ceiling from its checked bindings; a binding that
passed proves the *quote* is real, not that the *claim* says what the quote says. These rules
compare the claim's key facts (:mod:`.key_facts`) with the items its passed bindings cite
(004: "Verifier 判为 PASS 必须基于“真实引用 + 可推导结论”两个条件同时成立"; 000: REJECT when "the
answer fabricates a key entity, error code, or conclusion that does not exist in the tool
evidence"). Each failure caps the claim at no_evidence under its own rule:

* ``claim.number_not_cited``: states a number (with its unit) no cited item shows;
* ``claim.entity_not_cited``: names an alert, exception, code or id no item shows;
* ``claim.timestamp_not_cited``: states a time no cited item carries;
* ``claim.action_in_claim``: recommends a fix (a claim states what the evidence shows);
* ``claim.denial_without_no_hit``: denies that something exists or occurred without being a
  ``negative_observation`` (only a search that found nothing supports a denial);
* ``claim.polarity_contradicts_item``: asserts what every cited item denies, or the reverse;
* ``claim.conclusion_not_cited``: concludes (after a causal connective) what no item shows;
* ``claim.negative_kind``: denies logs (alerts) with no no-hit search of logs (alerts);
* ``claim.negative_terms``: denies a term none of its no-hit searches asked for;
* ``claim.negative_filter``: cites a search filtered more narrowly (a log level) than it says;
* ``claim.contradicts_claim``: it and another standing claim read one item with opposite
  polarity (the item decides first, through ``claim.polarity_contradicts_item``).

A service the claim names is :mod:`.claim_support`'s ``claim.subject_not_cited`` (the service a
call asked for counts as cited there), so one cause gets one rule. Like that rule, these need
the session's rows: a caller that passes none (a unit test of the templates) has only the
quoted excerpts, which are parts of items, so nothing is compared.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from pytest_diageval.core.contract.contracts import CheckedBinding, Claim, ToolInvocation
from pytest_diageval.core.contract.evidence_tools import QUERY_LOGS, QUERY_METRICS
from pytest_diageval.core.text.excerpt_tokens import word_keys
from pytest_diageval.core.text.key_facts import (
    Facts,
    extract,
    missing_fact,
    normalise,
    service_segments,
    services,
)
from pytest_diageval.core.text.normalised import clean

__all__ = [
    "GROUNDING_RULES",
    "contradicting_claims",
    "denies",
    "negative_problem",
    "negative_statement_problem",
    "ungrounded",
]

GROUNDING_RULES = {
    "number": "claim.number_not_cited",
    "entity": "claim.entity_not_cited",
    "timestamp": "claim.timestamp_not_cited",
}
_DENIAL_RE = re.compile(
    r"(?:不|未|没有|并未|从未|无)(?:曾)?(?:存在|出现|发生|检索到|发现|触发|命中|查到)"
    r"|\bnot found\b|\bno (?:\w+ ){0,3}(?:found|hits?|matches)\b|\bdid not (?:occur|appear|fire)\b"
)
_LOG_WORDS = ("日志", "log")
_ALERT_WORDS = ("告警", "alert")
_LEVEL_WORDS = {
    "error": ("error", "错误", "报错"),
    "warn": ("warn", "警告"),
    "info": ("info",),
    "debug": ("debug", "调试"),
}


def ungrounded(claim_text: str, cited_texts: Sequence[str]) -> tuple[str, str] | None:
    """``(rule, reason)`` when the claim asserts what its cited items do not show; else None.

    In order: an action (a claim states what was seen; a fix belongs in recommended_actions),
    a number, entity or timestamp in no item, a polarity every item contradicts, and a
    conclusion (what follows a causal connective) whose words no item shows. Services are the
    subject rule's (``claim.subject_not_cited`` counts the service a call asked for)."""
    claim = _without_services(extract(claim_text))
    if claim.actions:
        action = sorted(claim.actions)[0]
        return "claim.action_in_claim", f"it recommends an action ({action}), which no item shows"
    if denies(claim_text):
        return (
            "claim.denial_without_no_hit",
            "it denies that something exists or occurred;"
            " only a negative_observation citing a search that found nothing may",
        )
    cited = [extract(text) for text in cited_texts]
    found = missing_fact(claim, _union(cited))
    if found is not None:
        kind, fact = found
        reason = f"the claim states {kind} {fact!r}, which none of its cited items shows"
        return GROUNDING_RULES[kind], reason
    if cited and all(item.polarity != claim.polarity for item in cited):
        reason = f"the claim is {claim.polarity}; every item it cites reads the other way"
        return "claim.polarity_contradicts_item", reason
    return _segment_problem(claim_text, cited_texts) or _conclusion_problem(
        claim_text, claim.causal, cited_texts
    )


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
    if facts.actions:
        action = sorted(facts.actions)[0]
        return "claim.action_in_claim", f"it recommends an action ({action}), which no search shows"
    if facts.polarity != "negative":
        return (
            "claim.polarity_contradicts_item",
            "a negative_observation that denies nothing;"
            " its searches found nothing, so it asserts what they do not show",
        )
    return _conclusion_problem(claim_text, facts.causal, no_hit_texts)


def _segment_problem(claim_text: str, cited_texts: Sequence[str]) -> tuple[str, str] | None:
    """What the claim says of each service must be in the items about that service: sets of
    facts cannot see "A 有告警，B 同步完成" swapped into "B 有告警，A 同步完成"."""
    items = [(services(facts), facts) for facts in map(extract, cited_texts)]
    for subjects, group in service_segments(claim_text):
        about = [item for named, item in items if subjects and subjects <= named]
        if not about:
            continue  # no item about the service: claim.subject_not_cited's business
        found = missing_fact(_without_services(extract(group)), _union(about))
        if found is not None:
            reason = (
                f"it says {found[1]!r} of {', '.join(sorted(subjects))}, which no item"
                " about that service shows"
            )
            return "claim.subject_swapped", reason
    return None


def _union(cited: Sequence[Facts]) -> Facts:
    return Facts(
        numbers=frozenset().union(*(c.numbers for c in cited)),
        entities=frozenset().union(*(c.entities for c in cited)),
        timestamps=frozenset().union(*(c.timestamps for c in cited)),
        polarity="positive",
        modality="observed",
        causal=frozenset(),
        actions=frozenset(),
        confirms=False,
    )


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
        if level and not any(word in lowered for word in _LEVEL_WORDS.get(level, (level,))):
            return (
                "claim.negative_filter",
                f"invocation {search.id} searched {level.upper()} logs only;"
                " the claim states no level",
            )
    return None


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


def _conclusion_problem(
    claim_text: str, causal: frozenset[str], cited_texts: Sequence[str]
) -> tuple[str, str] | None:
    """What follows a causal connective is the claim's conclusion: its words must be in the
    items it cites ("…，因此根因是内存泄漏" cannot rest on an alert that says nothing of a leak)."""
    text = clean(claim_text)  # not casefolded: mixed-case names are entities
    folded = text.lower()
    starts = [folded.find(marker) + len(marker) for marker in causal if marker in folded]
    if not starts:
        return None
    conclusion = text[min(starts) :]
    concrete = _without_services(extract(conclusion))
    if concrete.entities or concrete.numbers:  # it names something: the items must show it
        found = missing_fact(concrete, _union([extract(t) for t in cited_texts]))
        if found is None:
            return None
        reason = f"its conclusion names {found[1]!r}, which none of its cited items shows"
        return "claim.conclusion_not_cited", reason
    cited = set(word_keys(" ".join(cited_texts)))  # it names nothing: its words must be there
    missing = [word for word in word_keys(conclusion) if word not in cited]
    if not missing:
        return None
    reason = f"its conclusion says {missing[0]!r}, which none of its cited items shows"
    return "claim.conclusion_not_cited", reason


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
