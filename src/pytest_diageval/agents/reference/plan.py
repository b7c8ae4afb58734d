"""Which evidence calls the reference agent makes: read from the question's scope, no model.

The scope is the session's own (:func:`~pytest_diageval.core.scope.session.session_scope`
over the world's names, as :class:`~pytest_diageval.agents.chat_service.ChatService` reads
it), so the calls stay on the question's subject:

* a named alert: ``query_metrics`` for that alert on each service in scope (an alert named
  with no service is anchored to the services it belongs to);
* a named topic (``HikariCP``, ``内存``, ``Redis`` …): ``query_logs`` on each service with the
  topic names as keywords, and ``query_metrics`` with them too when the question asks about an
  alert (``告警``, ``alert``) and names none;
* a service and nothing else: everything about it, ``query_metrics`` and ``query_logs``;
* nothing at all: the current alerts (``query_metrics`` without arguments).

Excluded services and topics are never in the scope's lists, so no call is ever made on them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from pytest_diageval.core.contract.evidence_tools import QUERY_LOGS, QUERY_METRICS
from pytest_diageval.core.contract.scope_contract import ScopeContract
from pytest_diageval.core.evidence.tool_arguments import KEYWORDS_OFFERED
from pytest_diageval.core.scope.session import ScopeNames

__all__ = ["MAX_CALLS", "ReferenceCall", "plan_calls", "topic_keywords"]

MAX_CALLS = 6
"""At most this many calls: one claim each, and a verifier answer labels at most six facts."""

_PATTERN = re.compile(r"[\\\[\](){}+*?|^$]")
_ASKS_ALERT = re.compile(r"告警|报警|alert", re.IGNORECASE)


@dataclass(frozen=True)
class ReferenceCall:
    """One evidence call: its tool and the arguments the reference agent sends."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def step(self) -> str:
        """The call as a plan step (``query_logs order-service HikariCP``)."""
        values = [self.arguments.get(key) for key in ("service", "alert_name")]
        words = [str(value) for value in values if value]
        words += list(self.arguments.get("keywords") or [])
        return " ".join([self.tool, *words])


def plan_calls(query: str, scope: ScopeContract, names: ScopeNames) -> list[ReferenceCall]:
    """The calls the reference agent makes for ``query`` in ``scope`` (at most ``MAX_CALLS``)."""
    services: list[str | None] = list(scope.services) or [None]
    calls: list[ReferenceCall] = []
    for service in services:
        calls += _alert_calls(service, scope, names)
        calls += _topic_calls(service, scope, asks_alert=bool(_ASKS_ALERT.search(query)))
        if not scope.alerts and not scope.topics:
            calls.append(ReferenceCall(QUERY_METRICS, _arguments(service=service)))
            if service is not None:
                calls.append(ReferenceCall(QUERY_LOGS, _arguments(service=service)))
    unique: dict[str, ReferenceCall] = {}
    for call in calls:  # a repeat (two alerts of one service asked twice) is made once
        unique.setdefault(call.step, call)
    return list(unique.values())[:MAX_CALLS]


def _alert_calls(
    service: str | None, scope: ScopeContract, names: ScopeNames
) -> list[ReferenceCall]:
    """``query_metrics`` for each named alert: on this service, or (no service in scope) on
    each service the alert belongs to."""
    calls = []
    for alert in scope.alerts:
        owners: list[str | None] = (
            [service] if service else list(names.alert_services.get(alert, ()))
        )
        for owner in owners or [None]:
            calls.append(ReferenceCall(QUERY_METRICS, _arguments(service=owner, alert_name=alert)))
    return calls


def _topic_calls(
    service: str | None, scope: ScopeContract, *, asks_alert: bool
) -> list[ReferenceCall]:
    if not scope.topics:
        return []
    keywords = topic_keywords(scope.topics)
    calls = [ReferenceCall(QUERY_LOGS, _arguments(service=service, keywords=keywords))]
    if asks_alert and not scope.alerts:
        calls.insert(
            0, ReferenceCall(QUERY_METRICS, _arguments(service=service, keywords=keywords))
        )
    return calls


def topic_keywords(topics: list[str]) -> list[str]:
    """The keywords of a search for ``topics``: the topics' names, then the plain forms the
    scope vocabulary reads them by (``响应变慢`` is also ``慢请求``), at most the schema's five."""
    forms = _topic_forms()
    words = [*topics, *(form for topic in topics for form in forms.get(topic, []))]
    unique = {word.casefold(): word for word in reversed(words)}  # first spelling wins
    ordered = [unique[key] for key in dict.fromkeys(word.casefold() for word in words)]
    return ordered[:KEYWORDS_OFFERED]


@functools.cache
def _topic_forms() -> dict[str, list[str]]:
    """The scope vocabulary's forms of each topic that are plain words (not a pattern)."""
    text = resources.files("pytest_diageval.core.scope").joinpath("scope_vocabulary.yaml")
    topics = yaml.safe_load(text.read_text("utf-8"))["topics"]
    return {
        str(name): [str(form) for form in forms if not _PATTERN.search(str(form))]
        for name, forms in topics.items()
    }


def _arguments(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value}
