"""The scope of a question: what a claim may be about (004's ``scope_contract``).

004 chose a prompt-only narrow scope first and named when to add a ``scope_contract`` and a
Gatekeeper scope check: "Prompt 调整后，Executor 仍频繁输出用户明确排除的服务或主题",
"Planner 已经能稳定识别用户 scope，但 Executor 不遵守". This is its structure; the code derives
a floor from the query (:mod:`pytest_diageval.core.scope.floor`) that the planner may narrow,
never widen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.contract.contracts import ClaimType, ToolInvocation

__all__ = [
    "ALL_CLAIM_TYPES",
    "NARROW_CLAIM_TYPES",
    "OUT_OF_SCOPE_CALL",
    "DecodingScope",
    "ScopeContract",
    "excluded",
]

ALL_CLAIM_TYPES: tuple[ClaimType, ...] = (
    "observation",
    "negative_observation",
    "root_cause",
    "risk",
)
NARROW_CLAIM_TYPES: tuple[ClaimType, ...] = ("observation", "negative_observation")
"""004: a narrow question is answered by "工具证据直接支持的 observation / negative_observation
claim"; 用户说“只确认 HighMemoryUsage”时，Executor 不输出“内存泄漏已确认”."""


class ScopeContract(BaseModel):
    """What the question lets a claim be about. An empty ``services`` / ``alerts`` /
    ``topics`` list means the question named none (no restriction of that kind)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    services: list[str] = Field(default_factory=list, description="Services in scope.")
    services_from_alerts: bool = Field(
        default=False,
        description="The question named an alert and no service: the services are the alert's.",
    )
    alerts: list[str] = Field(default_factory=list, description="Alert names in scope.")
    topics: list[str] = Field(default_factory=list, description="Topics named (HikariCP, OOM).")
    excluded: list[str] = Field(
        default_factory=list,
        description="Services and topics the user excluded (不要分析 / 排除 / 不用看 …).",
    )
    narrow: bool = Field(default=False, description="A narrow question (只确认, 只看, …).")
    narrow_markers: list[str] = Field(
        default_factory=list, description="The words that made it narrow, as written."
    )
    claim_types: list[ClaimType] = Field(default_factory=lambda: list(ALL_CLAIM_TYPES))


def excluded(items: Sequence[str], name: str) -> bool:
    """Whether ``name`` is among the excluded ``items``, case-insensitively (the one reading of an
    exclusion by name, for the scope and for the decoding)."""
    return name.casefold() in {item.casefold() for item in items}


OUT_OF_SCOPE_CALL = "scope.out_of_scope_call"
"""The audited name of an evidence call refused because it names a service or alert outside a
narrow question's scope (the reply to the model, and the call's ``error``, start with it)."""
_SCOPED_ARGUMENTS = {"service": "services", "alert_name": "alerts"}


@dataclass(frozen=True)
class DecodingScope:
    """What the session's requests may let a model generate (issue 25 part 3).

    ``services`` / ``alerts`` are ``None`` (every one the world offers, today's enums) unless
    the question is narrow and names some: only then do they become the tools' ``service`` /
    ``alert_name`` enums, the only values a call may use, and the only invocations a binding
    may cite. A broad question, or a narrow one naming no service, keeps the full enums: the
    floor decides, never narrower than the question allows, never wider. ``excluded`` is what
    the question excludes: a service or alert among it leaves every enum, and a call naming it
    is refused, whatever else the question names (a live model asked "不要分析 … user-service"
    called user-service three times).

    ``by_alert``: a narrow question that names an alert asks whether that alert fires;
    ``query_metrics`` then takes the alert by name, required, and no keywords. Recorded live, the
    model never filled ``alert_name`` unasked: it wrote ``high_memory_usage`` or the question's
    excluded topics as keywords (AND-ed with every other filter), and found nothing.
    ``excluded_in`` finds excluded topics in a keyword (the scope rules' own reading, bound by
    :func:`pytest_diageval.core.scope.session.decoding_scope`): a call searching for one is
    refused like a call naming an excluded service. ``foreign`` are the names the
    prompts' former worked examples were about (a service or alert of their own world): a call whose
    ``service``, ``alert_name`` or a keyword names one is refused too, since no question asks
    about them, as no claim may be (recorded live, a model searched order-service's logs for
    ``billing-gateway``).
    """

    services: tuple[str, ...] | None = None
    alerts: tuple[str, ...] | None = None
    claim_types: tuple[ClaimType, ...] = ALL_CLAIM_TYPES
    excluded: tuple[str, ...] = ()
    by_alert: bool = False
    excluded_in: Callable[[str], Sequence[str]] | None = field(default=None, compare=False)
    foreign: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        scope: ScopeContract,
        excluded_in: Callable[[str], Sequence[str]] | None = None,
        foreign: Sequence[str] = (),
    ) -> DecodingScope:
        excluded, outside = tuple(scope.excluded), tuple(foreign)
        if not scope.narrow:
            return cls(
                claim_types=tuple(scope.claim_types),
                excluded=excluded,
                excluded_in=excluded_in,
                foreign=outside,
            )
        return cls(
            services=tuple(scope.services) or None,
            alerts=tuple(scope.alerts) or None,
            claim_types=tuple(scope.claim_types),
            excluded=excluded,
            by_alert=bool(scope.alerts),
            excluded_in=excluded_in,
            foreign=outside,
        )

    def refusal(self, arguments: Mapping[str, Any]) -> str | None:
        """Why a call with these arguments is outside the scope (None: it is inside)."""
        return (
            self._named_refusal(arguments)
            or self._keyword_refusal(arguments.get("keywords"))
            or self._foreign_refusal(arguments)
        )

    def _foreign_refusal(self, arguments: Mapping[str, Any]) -> str | None:
        keywords = arguments.get("keywords")
        words = [keywords] if isinstance(keywords, str) else keywords
        named = [(argument, arguments.get(argument)) for argument in _SCOPED_ARGUMENTS] + [
            ("keywords", word) for word in (words if isinstance(words, list) else [])
        ]
        for argument, value in named:
            if not isinstance(value, str):
                continue
            for name in self.foreign:
                if name.casefold() in value.casefold():
                    return (
                        f"{OUT_OF_SCOPE_CALL}: {argument}={value.strip()} is outside the"
                        f" question's scope (it names {name}, a subject of the prompts' former"
                        " examples, which no question asks about); the call was not run"
                    )
        return None

    def _keyword_refusal(self, keywords: Any) -> str | None:
        if self.excluded_in is None or not keywords:
            return None
        words = [keywords] if isinstance(keywords, str) else keywords
        if not isinstance(words, list):
            return None  # the tool's own validation answers a malformed list
        for word in words:
            found = self.excluded_in(word) if isinstance(word, str) else ()
            if found:
                return (
                    f"{OUT_OF_SCOPE_CALL}: keywords={word.strip()} is outside the question's"
                    f" scope (it searches for {', '.join(found)}, which the question excludes);"
                    " the call was not run"
                )
        return None

    def _named_refusal(self, arguments: Mapping[str, Any]) -> str | None:
        for argument, kind in _SCOPED_ARGUMENTS.items():
            allowed: tuple[str, ...] | None = getattr(self, kind)
            value = arguments.get(argument)
            # A blank or missing value is "no filter" (the tools' own reading): not refused here.
            if not isinstance(value, str) or not value.strip():
                continue
            if self.excludes(value.strip()):
                return (
                    f"{OUT_OF_SCOPE_CALL}: {argument}={value.strip()} is outside the question's"
                    " scope (the question excludes it); the call was not run"
                )
            if allowed is not None and value.strip() not in allowed:
                return (
                    f"{OUT_OF_SCOPE_CALL}: {argument}={value.strip()} is outside the question's"
                    f" scope ({', '.join(allowed)}); the call was not run"
                )
        return None

    def excludes(self, name: str) -> bool:
        """Whether the question excludes this service or alert (the scope keeps what it
        excludes normalised: ``排除 SlowResponse`` is ``slowresponse``)."""
        return excluded(self.excluded, name)

    def admits(self, invocation: ToolInvocation) -> bool:
        """Whether a binding may cite ``invocation`` (its arguments are inside the scope)."""
        return self.refusal(invocation.input_params) is None
