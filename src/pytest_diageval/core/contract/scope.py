"""The scope of a question: what a claim may be about (004's ``scope_contract``).

004 chose a prompt-only narrow scope first and named when to add a ``scope_contract`` and a
Gatekeeper scope check: "Prompt 调整后，Executor 仍频繁输出用户明确排除的服务或主题",
"Planner 已经能稳定识别用户 scope，但 Executor 不遵守". This is its structure; the code derives
a floor from the query (:mod:`pytest_diageval.core.scope.floor`) that the planner may narrow,
never widen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.contract.contracts import ClaimType, ToolInvocation

__all__ = [
    "ALL_CLAIM_TYPES",
    "NARROW_CLAIM_TYPES",
    "OUT_OF_SCOPE_CALL",
    "DecodingScope",
    "ScopeContract",
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
    """

    services: tuple[str, ...] | None = None
    alerts: tuple[str, ...] | None = None
    claim_types: tuple[ClaimType, ...] = ALL_CLAIM_TYPES
    excluded: tuple[str, ...] = ()

    @classmethod
    def of(cls, scope: ScopeContract) -> DecodingScope:
        excluded = tuple(scope.excluded)
        if not scope.narrow:
            return cls(claim_types=tuple(scope.claim_types), excluded=excluded)
        return cls(
            services=tuple(scope.services) or None,
            alerts=tuple(scope.alerts) or None,
            claim_types=tuple(scope.claim_types),
            excluded=excluded,
        )

    def refusal(self, arguments: Mapping[str, Any]) -> str | None:
        """Why a call with these arguments is outside the scope (None: it is inside)."""
        for argument, field in _SCOPED_ARGUMENTS.items():
            allowed: tuple[str, ...] | None = getattr(self, field)
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
        return name.casefold() in {item.casefold() for item in self.excluded}

    def admits(self, invocation: ToolInvocation) -> bool:
        """Whether a binding may cite ``invocation`` (its arguments are inside the scope)."""
        return self.refusal(invocation.input_params) is None
