"""The scenario file format: one diagnosis query, its world, its model answers, its expectations.

Every model forbids unknown keys and is strict (``"2"`` is not ``2``, ``"true"`` is not
``true``), so a typo in a scenario is an error rather than a silently weaker test. Each key of
:class:`Expect` becomes one pytest item; :data:`EXPECT_KEYS` lists them in a fixed order. The
field descriptions end up in the JSON Schema (``diageval schema``), where editors show them.

The expectation models (``expect:``) live in :mod:`~pytest_diageval.harness.format.expectations`
and are re-exported here. A scenario is plain data: the world stays a name, a path or a
mapping until :func:`pytest_diageval.harness.format.loader.load_scenario_world` loads it, and the
cassette path is decided by :func:`pytest_diageval.harness.format.loader.resolve_cassette_path`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from pytest_diageval.agents.scripted.model import ScriptEntry
from pytest_diageval.harness.format.expectations import (
    EXPECT_KEYS,
    ClaimsExpectation,
    ComposerExpectation,
    EvidenceTool,
    Expect,
    GatekeeperExpectation,
    NoEvidenceRow,
    NonEmptyText,
    ParseStatusName,
    RubricExpectation,
    ScoreRange,
    SetAsideExpectation,
    StrictModel,
    TokensExpectation,
    ToolCallsExpectation,
    ToolName,
    VerdictExpectation,
    no_duplicates,
)
from pytest_diageval.harness.format.rule_names import GatekeeperRule, gatekeeper_rule_names

__all__ = [
    "EXPECT_KEYS",
    "ID_PATTERN",
    "RESERVED_TAGS",
    "TAG_PATTERN",
    "ClaimsExpectation",
    "ComposerExpectation",
    "EvidenceTool",
    "Expect",
    "GatekeeperExpectation",
    "GatekeeperRule",
    "LLMSpec",
    "NoEvidenceRow",
    "ParseStatusName",
    "RubricExpectation",
    "Scenario",
    "ScoreRange",
    "SetAsideExpectation",
    "TokensExpectation",
    "ToolCallsExpectation",
    "ToolName",
    "VerdictExpectation",
    "gatekeeper_rule_names",
]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
"""Scenario ids go into pytest node ids and cassette file names: no spaces, ``/`` or ``::``."""
TAG_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""Tags become pytest markers, so they must be identifiers (``-m negative``)."""
RESERVED_TAGS: frozenset[str] = frozenset(
    # pytest's own markers would change how an item runs (a tag `skip` would skip it), and
    # and/or/not are the operators of `-m` expressions.
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings"}
    | {"tryfirst", "trylast", "and", "or", "not"}
)

# --------------------------------------------------------------------------- scenario


class LLMSpec(StrictModel):
    """Where the model's answers come from: a recorded cassette, a script or the built-in
    reference agent (exactly one)."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["cassette"]},
                {"required": ["script"]},
                {"required": ["reference"]},
            ]
        }
    )

    cassette: NonEmptyText | None = Field(
        None, description="Cassette file, relative to this scenario file. 录制的 cassette 路径。"
    )
    script: Annotated[list[ScriptEntry], Field(min_length=1)] | None = Field(
        None,
        description="Answers of the scripted model, one entry per model request, in order:"
        " {stage, content} | {stage, tool_calls: [{name, arguments}]} | {stage, raw}"
        " | {stage, raw_arguments}; `content` is checked against the stage's model"
        " (Plan, ExecutorContract, VerifierOutput, GraderOutput) unless the entry says"
        " `invalid: true`; a `rubric` check adds a grader entry after the last round.",
    )
    reference: Literal[True] | None = Field(
        None,
        description="true: the built-in reference agent answers (no model, offline): it calls"
        " the evidence tools on the question's subject and cites what they return"
        " (docs/reference-agent.md). 内置参考 agent 作答。",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [key for key in _SOURCES if getattr(self, key) is not None]
        if len(given) != 1:
            found = ", ".join(given) if given else "neither"
            raise ValueError(
                f"give exactly one of 'cassette', 'script' or 'reference: true' ({found} given)"
            )
        return self


_SOURCES = ("cassette", "script", "reference")


class Scenario(StrictModel):
    """One diagnosis scenario (one file). 一个诊断场景。"""

    model_config = ConfigDict(title="pytest-diageval scenario")

    id: Annotated[str, Field(pattern=ID_PATTERN, max_length=100)] | None = Field(
        None,
        description="Unique id in a run (node ids, cassette name); default: the file's stem.",
    )
    title: NonEmptyText = Field(description="What the scenario proves, for reviewers.")
    tags: list[Annotated[str, Field(pattern=TAG_PATTERN)]] = Field(
        default_factory=list, description="Identifiers that become pytest markers (-m TAG)."
    )
    query: NonEmptyText = Field(description="The user's diagnosis question. 用户问题。")
    world: NonEmptyText | dict[str, Any] = Field(
        description="A packaged world name (default), a YAML path relative to this file,"
        " or an inline world mapping. 模拟世界。"
    )
    llm: LLMSpec | None = Field(
        None, description="Model answers; default: the cassette <cassette dir>/<id>.yaml."
    )
    notes: str | None = Field(None, description="Free text for reviewers. 备注。")
    expect: Expect = Field(description="Expectations; each key becomes one test item.")

    @model_validator(mode="before")
    @classmethod
    def _default_id(cls, data: Any, info: ValidationInfo) -> Any:
        """The loader passes the file's stem as ``context={"default_id": …}``."""
        default = (info.context or {}).get("default_id")
        if isinstance(data, dict) and "id" not in data and default is not None:
            return {**data, "id": default}
        return data

    @field_validator("tags")
    @classmethod
    def _check_tags(cls, tags: list[str]) -> list[str]:
        reserved = sorted(set(tags) & RESERVED_TAGS)
        if reserved:
            raise ValueError(
                f"{', '.join(reserved)} cannot be a tag: it is a pytest marker or operator"
                " that would change how the items run or are selected"
            )
        no_duplicates(tags, "tags")
        return tags

    @property
    def scenario_id(self) -> str:
        """The id (set by the loader from the file stem when the file has none)."""
        if self.id is None:
            raise ValueError(
                f"scenario {self.title!r} has no id: load it with load_scenario(), which"
                " defaults the id to the file's stem"
            )
        return self.id
