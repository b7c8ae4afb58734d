"""The scope of a question: what a claim may be about (004's ``scope_contract``).

004 chose a prompt-only narrow scope first and named when to add a ``scope_contract`` and a
Gatekeeper scope check: "Prompt 调整后，Executor 仍频繁输出用户明确排除的服务或主题",
"Planner 已经能稳定识别用户 scope，但 Executor 不遵守". This is its structure; the code derives
a floor from the query (:mod:`pytest_diageval.core.scope.floor`) that the planner may narrow,
never widen.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.contract.contracts import ClaimType

__all__ = ["ALL_CLAIM_TYPES", "NARROW_CLAIM_TYPES", "ScopeContract"]

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
