"""Grounded claims: what a claim asserts must be in the evidence it cites.

:mod:`.claim_support` gives each claim a ceiling from its checked bindings; a binding that
passed proves the *quote* is real, not that the *claim* says what the quote says. These rules
compare the claim's key facts (:mod:`.key_facts`) with the items its passed bindings cite
(004: "Verifier 判为 PASS 必须基于“真实引用 + 可推导结论”两个条件同时成立"; 000: REJECT when "the
answer fabricates a key entity, error code, or conclusion that does not exist in the tool
evidence"). Each failure caps the claim at no_evidence under its own rule:

================================  ==========================================================
rule                              the claim …
================================  ==========================================================
``claim.number_not_cited``        states a number (with its unit) no cited item shows
``claim.entity_not_cited``        names an alert, exception, code, id or alias no item shows
``claim.timestamp_not_cited``     states a time no cited item carries
``claim.negative_kind``           denies logs (alerts) with no no-hit search of logs (alerts)
``claim.negative_terms``          denies a term none of its no-hit searches asked for
``claim.negative_filter``         cites a search filtered more narrowly (a log level) than it
                                  says
``claim.contradicts_claim``       and another claim cite the same item with opposite polarity
================================  ==========================================================

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
from pytest_diageval.core.text.key_facts import Facts, extract, missing_fact

__all__ = [
    "GROUNDING_RULES",
    "contradicting_claims",
    "negative_problem",
    "ungrounded",
]

GROUNDING_RULES = {
    "number": "claim.number_not_cited",
    "entity": "claim.entity_not_cited",
    "timestamp": "claim.timestamp_not_cited",
}
_BARE_RE = re.compile(r"(?:[a-z_]+=)?(\d+(?:\.\d+)?)")
_VALUE_RE = re.compile(r"(?:[a-z_]+=)?(\d+(?:\.\d+)?)")
_LOG_WORDS = ("日志", "log")
_ALERT_WORDS = ("告警", "alert")
_LEVEL_WORDS = {
    "error": ("error", "错误", "报错"),
    "warn": ("warn", "警告"),
    "info": ("info",),
    "debug": ("debug", "调试"),
}


def ungrounded(claim_text: str, cited_texts: Sequence[str]) -> tuple[str, str] | None:
    """``(rule, reason)`` when a number, entity or timestamp of the claim is in none of the
    cited item texts; else None. Services are the subject rule's (``claim.subject_not_cited``
    counts the service a call asked for), so they are left out here."""
    claim = _without_services(extract(claim_text))
    cited = [extract(text) for text in cited_texts]
    numbers = frozenset().union(*(c.numbers for c in cited))
    backing = Facts(
        numbers=numbers | _unit_cut_off(claim.numbers, numbers),
        entities=frozenset().union(*(c.entities for c in cited)),
        timestamps=frozenset().union(*(c.timestamps for c in cited)),
        polarity="positive",
        modality="observed",
        causal=frozenset(),
        actions=frozenset(),
        confirms=False,
    )
    found = missing_fact(claim, backing)
    if found is None:
        return None
    kind, fact = found
    return GROUNDING_RULES[
        kind
    ], f"the claim states {kind} {fact!r}, which none of its cited items shows"


def negative_problem(claim_text: str, searches: Sequence[ToolInvocation]) -> tuple[str, str] | None:
    """``(rule, reason)`` when the no-hit searches a negative claim cites do not cover what it
    denies: the same kind of evidence, every term it names, no narrower filter."""
    lowered = claim_text.lower()
    tools = {search.tool_name for search in searches}
    for words, tool, kind in (
        (_LOG_WORDS, "query_logs", "logs"),
        (_ALERT_WORDS, "query_metrics", "alerts"),
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
    services = frozenset(e for e in facts.entities if e.endswith("-service"))
    return replace(facts, entities=facts.entities - services)


def _unit_cut_off(claimed: frozenset[str], cited: frozenset[str]) -> frozenset[str]:
    """The claim's quantities whose value a cited item shows with no unit at all: a truncated
    preview ("current=91" of "current=91%") may cut the unit, never change the value."""
    bare = {found.group(1) for n in cited if (found := _BARE_RE.fullmatch(n))}
    return frozenset(n for n in claimed if (found := _VALUE_RE.match(n)) and found.group(1) in bare)


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
