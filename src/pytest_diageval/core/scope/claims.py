"""Is a claim about the question? The scope rules, judged against a question's scope.

Three rules, each a claim-level finding with a public name (what scenarios and auditors will
match on), each from 004's narrow-scope lines:

======================  =====================================================================
rule                    what it finds
======================  =====================================================================
``scope.out_of_scope``  the claim names a service, or an alert, that the question's scope
                        does not hold (when the question named any): 004 "扩展到用户未要求的
                        服务、订单、告警、数据库、连接池或下游依赖" is what the Executor must not do
``scope.excluded_topic``  the claim names a service or topic the user excluded: 004 "用户说
                        “不要分析连接池”时，claim 中不出现 HikariCP / connection pool"
``scope.narrow_claim_type``  a claim type a narrow question does not allow: 004 "用户说“只确认
                        HighMemoryUsage”时，Executor 不输出“内存泄漏已确认”"
======================  =====================================================================

A claim is about what its text names and what the items it cites name (issue 37): the
``item_texts`` are those items' own fields (an alert's name, service and metric, a log's
service and message), so a claim "连接数耗尽" citing the ``HikariPool-1`` log is about the
connection pool, and a claim citing an order-service log is about order-service. Services
and alerts are read from the text and every item; a topic from the text, or from the items
when each of them names it; the prompts' example subjects from the text only (an
item is the world's, never a copied example). Topics are read through ``scope_vocabulary.yaml``
(:func:`~.floor.topics_about`), and so are the question's exclusions (:func:`~.floor.scope_floor`):
``排除缓存`` is the topic Redis, met by a claim naming Redis. A narrow question that names an
alert and no topic holds that alert's topics only (004: "用户说“只确认 HighCPUUsage”时，Executor
不输出订单、OOM、DB、HikariCP"): a claim about another topic is ``scope.out_of_scope``.

This module only judges, deterministically, from the claim's text, its items and its type.
What the pipeline does with a finding (:mod:`.session`, ``core/judge/verdict.py`` step 5) is
the same for all three rules: the claim is *set aside* — never judged, never a finding, never
in the answer, audited with its rules and reason — and by itself changes neither the
gatekeeper's severity nor the verdict, which rests on the in-scope claims (004:
"只能围绕用户明确要求的目标对象和主题输出 claim"). The gatekeeper still grades every
binding of a set-aside claim (004: "伪造 / 张冠李戴类 REJECT"). When no claim
is left in scope, the round is LOW_CONFID with score 0.0 (``scope.no_claim_in_scope``; 004:
"如果证据不足，只输出 missing_info，不要补充合理化解释").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_diageval.core.contract.scope_contract import ScopeContract
from pytest_diageval.core.scope.floor import (
    alert_topics,
    is_topic,
    literal_pattern,
    named_services,
    topics_about,
)
from pytest_diageval.core.text.normalised import normalise

__all__ = [
    "EXCLUDED_TOPIC",
    "NARROW_CLAIM_TYPE",
    "OUT_OF_SCOPE",
    "SCOPE_RULES",
    "ScopeProblem",
    "excluded_named",
    "scope_problems",
]

OUT_OF_SCOPE = "scope.out_of_scope"
EXCLUDED_TOPIC = "scope.excluded_topic"
NARROW_CLAIM_TYPE = "scope.narrow_claim_type"
SCOPE_RULES = (OUT_OF_SCOPE, EXCLUDED_TOPIC, NARROW_CLAIM_TYPE)


@dataclass(frozen=True)
class ScopeProblem:
    """One rule a claim breaks, and why, in words a reviewer reads."""

    rule: str
    message: str


def scope_problems(
    claim_type: str,
    claim_text: str,
    scope: ScopeContract,
    services: Sequence[str],
    alerts: Sequence[str] = (),
    aliases: Mapping[str, Sequence[str]] | None = None,
    foreign: Sequence[str] = (),
    *,
    item_texts: Sequence[str] = (),
) -> list[ScopeProblem]:
    """Every scope rule the claim breaks, in :data:`SCOPE_RULES` order (empty: in scope).

    ``foreign``: names no question asks about (the prompts' example subjects): a claim naming
    one is out of scope whatever the question names. ``item_texts``: the texts of the items
    the claim's passed bindings cite (:func:`.session.cited_item_texts`); what they name,
    the claim is about. Without them the claim is judged by its text alone."""
    problems: list[ScopeProblem] = []
    text = normalise(claim_text)
    whole = "\n".join([text, *(normalise(item) for item in item_texts)])
    aliases = aliases or {}
    named = named_services(whole, services, aliases)
    outside = [service for service in named if scope.services and service not in scope.services]
    outside += [a for a in alerts if scope.alerts and _names(whole, a) and a not in scope.alerts]
    topics = _topics(
        text, [normalise(item) for item in item_texts], [*services, *foreign], aliases, alerts
    )
    outside += _outside_topics(topics, scope)
    if outside:
        asked = scope.services + scope.alerts + scope.topics
        problems.append(
            ScopeProblem(
                OUT_OF_SCOPE,
                f"the claim is about {', '.join(outside)}; the question asks about"
                f" {', '.join(asked)}",
            )
        )
    copied = [name for name in foreign if _names(text, name) and name not in outside]
    if copied:
        problems.append(
            ScopeProblem(
                OUT_OF_SCOPE,
                f"the claim is about {', '.join(copied)}, a subject of the prompts' examples,"
                " which no question asks about",
            )
        )
    excluded = _excluded_among(whole, scope, named, topics)
    if excluded:
        problems.append(
            ScopeProblem(
                EXCLUDED_TOPIC, f"the claim names {', '.join(excluded)}, which the user excluded"
            )
        )
    if claim_type not in scope.claim_types:
        problems.append(
            ScopeProblem(
                NARROW_CLAIM_TYPE,
                f"a {claim_type} claim answers more than the narrow question asks"
                f" ({', '.join(scope.narrow_markers)}); allowed: {', '.join(scope.claim_types)}",
            )
        )
    return problems


def excluded_named(text: str, scope: ScopeContract, services_named: Sequence[str]) -> list[str]:
    """The excluded items a normalised ``text`` names: an excluded service among
    ``services_named``, a topic by its vocabulary forms, anything else as written."""
    return _excluded_among(text, scope, services_named, topics_about(text, (), {}))


def _excluded_among(
    text: str, scope: ScopeContract, services_named: Sequence[str], topics: Sequence[str]
) -> list[str]:
    """The excluded items among the services and topics a text is about, or written in it."""
    return [
        item
        for item in scope.excluded
        if item in services_named
        or item in topics
        or (not is_topic(item) and literal_pattern(item).search(text) is not None)
    ]


def _topics(
    text: str,
    items: Sequence[str],
    names: Sequence[str],
    aliases: Mapping[str, Sequence[str]],
    alerts: Sequence[str],
) -> list[str]:
    """The topics a claim is about: those its text names, and those every item it cites names.

    An item names what the claim is about when the claim rests on it alone; a topic one of
    several items only mentions in passing (the GC count in a memory log cited beside the
    memory alert) is not the claim's, and the answer withholds that item's rendering anyway.
    ``names``: the services (and foreign subjects) whose names are names, not topics."""
    found = topics_about(text, names, aliases, alerts)
    per_item = [topics_about(item, names, aliases, alerts) for item in items]
    if per_item:
        found += [t for t in per_item[0] if all(t in topics for topics in per_item[1:])]
    return list(dict.fromkeys(found))


def _outside_topics(topics: Sequence[str], scope: ScopeContract) -> list[str]:
    """The topics a narrow question about its alerts (and no topic) does not hold."""
    if not scope.narrow or scope.topics or not scope.alerts:
        return []
    held = {topic for alert in scope.alerts for topic in alert_topics(alert)}
    if not held:
        return []  # an alert the vocabulary does not know restricts no topic
    return [topic for topic in topics if topic not in held and topic not in scope.excluded]


def _names(text: str, name: str) -> bool:
    """Whether the normalised ``text`` names ``name`` in any spelling of its parts: recorded,
    billing-gateway came back as "Billing Gateway", "Billing-Gateway" and "BillingGateway"."""
    return _compact(normalise(name)) in _compact(text)


def _compact(text: str) -> str:
    """``text`` without separators (spaces, hyphens, underscores, dots)."""
    return re.sub(r"[\s\-_.]+", "", text)
