"""The scenario file format: one diagnosis query, its world, its model answers, its expectations.

Every model forbids unknown keys and is strict (``"2"`` is not ``2``, ``"true"`` is not
``true``), so a typo in a scenario is an error rather than a silently weaker test. Each key of
:class:`Expect` becomes one pytest item; :data:`EXPECT_KEYS` lists them in a fixed order. The
field descriptions end up in the JSON Schema (``diageval schema``), where editors show them.

A scenario is plain data: the world stays a name, a path or a mapping until
:func:`pytest_diageval.harness.loader.load_scenario_world` loads it, and the cassette path is
decided by :func:`pytest_diageval.harness.loader.resolve_cassette_path`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pytest_diageval.agents.results import AnswerKind
from pytest_diageval.agents.scripted import ScriptEntry
from pytest_diageval.core.contracts import (
    EVIDENCE_TOOLS,
    ClaimType,
    EvidenceStatus,
    Severity,
    Verdict,
)
from pytest_diageval.core.tool_arguments import TOOL_NAMES
from pytest_diageval.harness.rule_names import GatekeeperRule, gatekeeper_rule_names

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
    "Scenario",
    "ScoreRange",
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

EvidenceTool = Literal["query_metrics", "query_logs", "lookup_knowledge"]
# The Literal gives editors an enum; this fails at import if it drifts from the tools.
assert get_args(EvidenceTool) == EVIDENCE_TOOLS, "EvidenceTool must equal EVIDENCE_TOOLS"
ParseStatusName = Literal["valid", "failed"]

_NonEmptyText = Annotated[str, Field(min_length=1, pattern=r"\S")]
_Keywords = Annotated[list[_NonEmptyText], Field(min_length=1)]
_Count = Annotated[int, Field(ge=0)]
_Score = Annotated[float, Field(ge=0.0, le=1.0)]
VerdictExpectation = Verdict | Annotated[list[Verdict], Field(min_length=1)]


def _known_tool(name: str) -> str:
    # A misspelt name would make `exclude` pass (and `include` fail) for the wrong reason.
    if name not in TOOL_NAMES:
        raise ValueError(f"{name!r} is not one of {', '.join(TOOL_NAMES)}")
    return name


ToolName = Annotated[
    str, AfterValidator(_known_tool), Field(json_schema_extra={"enum": list(TOOL_NAMES)})
]
"""A tool the executor can call (``core.tool_arguments.TOOL_NAMES``): evidence or helper."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_empty_values(cls, value: Any) -> Any:
        # `verdict:` with nothing after it would otherwise silently drop the check.
        if value is None:
            raise ValueError("has no value: give one or remove the key")
        return value


def _no_duplicates(values: list[Any] | None, what: str) -> None:
    if values is not None and len(set(values)) != len(values):
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        raise ValueError(f"{what} lists {', '.join(repeated)} more than once")


def _min_not_above_max(low: float | None, high: float | None) -> None:
    if low is not None and high is not None and low > high:
        raise ValueError(f"min ({low}) is greater than max ({high}): no value could pass")


def _require_any(model: BaseModel, names: tuple[str, ...]) -> None:
    """An expectation with nothing to compare would pass vacuously: refuse it.

    A key counts when it differs from its default: ``failed_rules: []`` (default None) is an
    exact set ("no rule failed"), while ``failed_rules_include: []`` (default []) checks nothing.
    """
    fields = type(model).model_fields
    if all(
        getattr(model, name) == fields[name].get_default(call_default_factory=True)
        for name in names
    ):
        raise ValueError(f"give at least one of {', '.join(names)}")


# --------------------------------------------------------------------------- expectations


class ScoreRange(_Strict):
    """Inclusive bounds on the final derived groundedness score (最终 groundedness 分数区间)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    min: _Score | None = Field(None, description="Lowest passing score, inclusive (0..1).")
    max: _Score | None = Field(None, description="Highest passing score, inclusive (0..1).")

    @model_validator(mode="after")
    def _check_bounds(self) -> Self:
        _require_any(self, ("min", "max"))
        _min_not_above_max(self.min, self.max)
        return self


class GatekeeperExpectation(_Strict):
    """The last round's gatekeeper result (最后一轮 Gatekeeper 结果)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    severity: Severity | None = Field(
        None, description="Exact severity: none | low_confid | reject."
    )
    failed_rules: list[GatekeeperRule] | None = Field(
        None, description="Exact set of failed rules ([] = no rule failed). 失败规则的精确集合。"
    )
    failed_rules_include: list[GatekeeperRule] = Field(
        default_factory=list, description="Rules that must be among the failed rules (subset)."
    )
    warnings_include: list[GatekeeperRule] = Field(
        default_factory=list, description="Rules that must be among the warnings (subset)."
    )

    @model_validator(mode="after")
    def _check_something(self) -> Self:
        _require_any(self, ("severity", "failed_rules", "failed_rules_include", "warnings_include"))
        return self


class ClaimsExpectation(_Strict):
    """The claims of the last round's executor contract (最后一轮结构化 claims)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    max: _Count | None = Field(None, description="At most this many claims.")
    min: _Count | None = Field(None, description="At least this many claims.")
    types: Annotated[list[ClaimType], Field(min_length=1)] | None = Field(
        None, description="Allowed claim types: every claim must have one of them."
    )

    @model_validator(mode="after")
    def _check_bounds(self) -> Self:
        _require_any(self, ("max", "min", "types"))
        _min_not_above_max(self.min, self.max)
        _no_duplicates(self.types, "types")
        return self


class NoEvidenceRow(_Strict):
    """At least one invocation of ``tool`` has all the given values (无证据语义)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 2})

    tool: EvidenceTool = Field(description="The evidence tool whose invocation rows are checked.")
    evidence_status: EvidenceStatus | None = Field(
        None, description="retrieval_details.evidence_status of the row."
    )
    success: bool | None = Field(None, description="Whether the call succeeded.")
    total: _Count | None = Field(None, description="retrieval_details.total (hits) of the row.")

    @model_validator(mode="after")
    def _check_something(self) -> Self:
        _require_any(self, ("evidence_status", "success", "total"))
        return self


class ToolCallsExpectation(_Strict):
    """The executor's tool calls over all rounds, by tool name (Executor 工具调用)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    include: list[ToolName] = Field(default_factory=list, description="Tools called at least once.")
    exclude: list[ToolName] = Field(default_factory=list, description="Tools never called.")
    max: _Count | None = Field(None, description="At most this many calls in total.")
    min: _Count | None = Field(None, description="At least this many calls in total.")

    @model_validator(mode="after")
    def _check_consistent(self) -> Self:
        _require_any(self, ("include", "exclude", "max", "min"))
        _min_not_above_max(self.min, self.max)
        both = sorted(set(self.include) & set(self.exclude))
        if both:
            raise ValueError(f"{', '.join(both)} cannot be both included and excluded")
        return self


class ComposerExpectation(_Strict):
    """What the composer published (最终回答的组成)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    source: Literal["verbatim", "composed", "template"] | None = Field(
        None,
        description="verbatim: the executor's user_facing_answer as is; composed: built from"
        " the verified claims; template: the disclaimer / degraded template.",
    )
    status: Literal["valid", "empty"] | None = Field(
        None, description="valid: at least one verified claim was used; empty: none."
    )
    claims_used: list[str] | None = Field(
        None, description="Exact set of claim ids the answer states as findings."
    )
    claims_dropped: list[str] | None = Field(
        None, description="Exact set of claim ids the answer leaves out (reasons are shown)."
    )
    statements_dropped: _Count | None = Field(
        None, description="Statements of user_facing_answer no verified claim backs."
    )

    @model_validator(mode="after")
    def _check_something(self) -> Self:
        _require_any(
            self, ("source", "status", "claims_used", "claims_dropped", "statements_dropped")
        )
        _no_duplicates(self.claims_used, "claims_used")
        _no_duplicates(self.claims_dropped, "claims_dropped")
        return self


class TokensExpectation(_Strict):
    """A token budget for the whole scenario (promptfoo's cost assertion, in tokens)."""

    max: _Count = Field(
        description="At most this many tokens (prompt + completion) over all the scenario's"
        " model requests, as the answers report them: a cassette's recorded usage, the"
        " scripted model's estimate (4 characters a token). Token 预算。"
    )


class Expect(_Strict):
    """What the run must show. Every key present becomes its own pytest item."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    verdict: VerdictExpectation | None = Field(
        None, description="Final derived verdict, or a list of allowed ones. 最终判定。"
    )
    groundedness: ScoreRange | None = Field(None, description="Final derived score range.")
    rounds: Literal[1, 2] | None = Field(None, description="Verifier rounds run (1 or 2).")
    answer: AnswerKind | None = Field(
        None, description="Kind of final answer: direct | disclaimer | degraded."
    )
    parse_status: ParseStatusName | None = Field(
        None, description="Last round's executor output parse status: valid | failed."
    )
    gatekeeper: GatekeeperExpectation | None = None
    forbidden_keywords: _Keywords | None = Field(
        None,
        description="None may occur (case-insensitive) in any claim_text of any round or in"
        " the final answer. 禁止出现的关键词。",
    )
    required_keywords: _Keywords | None = Field(
        None, description="Each must occur (case-insensitive) in the final answer. 必须出现。"
    )
    answer_forbidden_keywords: _Keywords | None = Field(
        None,
        description="None may occur (case-insensitive) in the final answer; claims are not"
        " scanned (what the guards guarantee whatever the model wrote). 最终回答中禁止出现。",
    )
    claims: ClaimsExpectation | None = None
    no_evidence: Annotated[list[NoEvidenceRow], Field(min_length=1)] | None = Field(
        None, description="Per evidence tool: a row with these no-evidence semantics exists."
    )
    tool_calls: ToolCallsExpectation | None = None
    composer: ComposerExpectation | None = None
    tokens: TokensExpectation | None = None

    @field_validator("verdict")
    @classmethod
    def _unique_verdicts(cls, value: VerdictExpectation | None) -> VerdictExpectation | None:
        _no_duplicates(value if isinstance(value, list) else None, "verdict")
        return value

    @field_validator("forbidden_keywords", "required_keywords", "answer_forbidden_keywords")
    @classmethod
    def _unique_keywords(cls, value: list[str] | None) -> list[str] | None:
        _no_duplicates([v.casefold() for v in value] if value else None, "the keyword list")
        return value

    @model_validator(mode="after")
    def _at_least_one(self) -> Self:
        if not self.present_keys():
            raise ValueError(
                f"no expectation given: list at least one of {', '.join(EXPECT_KEYS)}"
                " (each key becomes one test item)"
            )
        return self

    def present_keys(self) -> list[str]:
        """The expectation keys this scenario sets, in the fixed order of :data:`EXPECT_KEYS`."""
        return [name for name in EXPECT_KEYS if getattr(self, name) is not None]

    def value_of(self, key: str) -> Any:
        """The expected value of one key (``KeyError`` for a key that is not an expectation)."""
        if key not in EXPECT_KEYS:
            raise KeyError(f"unknown expectation key {key!r}; known: {', '.join(EXPECT_KEYS)}")
        return getattr(self, key)


EXPECT_KEYS: tuple[str, ...] = tuple(Expect.model_fields)


# --------------------------------------------------------------------------- scenario


class LLMSpec(_Strict):
    """Where the model's answers come from: a recorded cassette or a script (exactly one)."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["cassette"]}, {"required": ["script"]}]}
    )

    cassette: _NonEmptyText | None = Field(
        None, description="Cassette file, relative to this scenario file. 录制的 cassette 路径。"
    )
    script: Annotated[list[ScriptEntry], Field(min_length=1)] | None = Field(
        None,
        description="Answers of the scripted model, one entry per model request, in order:"
        " {stage, content} | {stage, tool_calls: [{name, arguments}]} | {stage, raw}"
        " | {stage, raw_arguments}; `content` is checked against the stage's model"
        " (Plan, ExecutorContract, VerifierOutput) unless the entry says `invalid: true`.",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.cassette is None) == (self.script is None):
            given = "both" if self.cassette is not None else "neither"
            raise ValueError(f"give exactly one of 'cassette' or 'script' ({given} given)")
        return self


class Scenario(_Strict):
    """One diagnosis scenario (one file). 一个诊断场景。"""

    model_config = ConfigDict(title="pytest-diageval scenario")

    id: Annotated[str, Field(pattern=ID_PATTERN, max_length=100)] | None = Field(
        None,
        description="Unique id in a run (node ids, cassette name); default: the file's stem.",
    )
    title: _NonEmptyText = Field(description="What the scenario proves, for reviewers.")
    tags: list[Annotated[str, Field(pattern=TAG_PATTERN)]] = Field(
        default_factory=list, description="Identifiers that become pytest markers (-m TAG)."
    )
    query: _NonEmptyText = Field(description="The user's diagnosis question. 用户问题。")
    world: _NonEmptyText | dict[str, Any] = Field(
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
        _no_duplicates(tags, "tags")
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
