"""The ``expect`` block of a scenario file: one model per expectation key, strict.

Every model forbids unknown keys and is strict (``"2"`` is not ``2``), and an expectation that
would compare nothing is refused, so a typo is an error rather than a silently weaker test.
Each key of :class:`Expect` becomes one pytest item; :data:`EXPECT_KEYS` lists them in a fixed
order. :mod:`~pytest_diageval.harness.format.scenario` holds the rest of the file format.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, cast, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pytest_diageval.agents.results import AnswerKind
from pytest_diageval.core.contract import evidence_tools
from pytest_diageval.core.contract.contracts import (
    ClaimType,
    EvidenceStatus,
    Severity,
    Verdict,
)
from pytest_diageval.core.evidence.tool_arguments import TOOL_NAMES
from pytest_diageval.core.scope.claims import SCOPE_RULES
from pytest_diageval.harness.format.rule_names import GatekeeperRule

__all__ = [
    "EXPECT_KEYS",
    "ClaimsExpectation",
    "ComposerExpectation",
    "EvidenceTool",
    "Expect",
    "GatekeeperExpectation",
    "NoEvidenceRow",
    "NonEmptyText",
    "ParseStatusName",
    "RubricExpectation",
    "ScoreRange",
    "SetAsideExpectation",
    "StrictModel",
    "TokensExpectation",
    "ToolCallsExpectation",
    "ToolName",
    "VerdictExpectation",
    "no_duplicates",
]

EvidenceTool = evidence_tools.ToolName  # a Literal: editors get an enum
ParseStatusName = Literal["valid", "failed"]
ScopeRule = Literal["scope.out_of_scope", "scope.excluded_topic", "scope.narrow_claim_type"]
assert get_args(ScopeRule) == SCOPE_RULES, "ScopeRule must equal core.scope.claims.SCOPE_RULES"

NonEmptyText = Annotated[str, Field(min_length=1, pattern=r"\S")]
_Keywords = Annotated[list[NonEmptyText], Field(min_length=1)]
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


def _an_integer(value: Any) -> Any:
    """``true == 1`` and ``1.0 == 1`` in Python, so ``Literal[1, 2]`` alone takes ``true`` and
    ``1.0`` as 1 (``expect.rounds: true`` passed as ``rounds: 1``): refuse them first."""
    if isinstance(value, bool | float):
        kind = "a boolean" if isinstance(value, bool) else "a number"
        raise ValueError(f"must be an integer, 1 or 2; got {str(value).lower()} ({kind})")
    return value


Rounds = Annotated[Literal[1, 2], BeforeValidator(_an_integer)]
"""The verifier rounds a run may take: the integer 1 or 2."""


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_empty_values(cls, value: Any) -> Any:
        # `verdict:` with nothing after it would otherwise silently drop the check.
        if value is None:
            raise ValueError("has no value: give one or remove the key")
        return value


def no_duplicates(values: list[Any] | None, what: str) -> None:
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


class ScoreRange(StrictModel):
    """Inclusive bounds on the final derived groundedness score (最终 groundedness 分数区间)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    min: _Score | None = Field(None, description="Lowest passing score, inclusive (0..1).")
    max: _Score | None = Field(None, description="Highest passing score, inclusive (0..1).")

    @model_validator(mode="after")
    def _check_bounds(self) -> Self:
        _require_any(self, ("min", "max"))
        _min_not_above_max(self.min, self.max)
        return self


class GatekeeperExpectation(StrictModel):
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


class ClaimsExpectation(StrictModel):
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
        no_duplicates(self.types, "types")
        return self


class NoEvidenceRow(StrictModel):
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


class ToolCallsExpectation(StrictModel):
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


class ComposerExpectation(StrictModel):
    """What the composer published (最终回答的组成)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    source: Literal["verbatim", "composed", "template"] | None = Field(
        None,
        description="composed: the cited evidence of the verified claims, rendered by code;"
        " template: the disclaimer / degraded template around it. (verbatim: the executor's"
        " user_facing_answer as is; no run gives it since the answer is rendered from evidence.)",
    )
    status: Literal["valid", "empty"] | None = Field(
        None, description="valid: at least one verified claim was used; empty: none."
    )
    claims_used: list[str] | None = Field(
        None, description="Exact set of claim ids whose cited evidence the answer may show."
    )
    claims_dropped: list[str] | None = Field(
        None, description="Exact set of claim ids the answer leaves out (reasons are shown)."
    )
    statements_dropped: _Count | None = Field(
        None,
        description="Statements of user_facing_answer left out: always 0 now that no"
        " statement of it is published (kept so older scenario files still load).",
    )

    @model_validator(mode="after")
    def _check_something(self) -> Self:
        _require_any(
            self, ("source", "status", "claims_used", "claims_dropped", "statements_dropped")
        )
        no_duplicates(self.claims_used, "claims_used")
        no_duplicates(self.claims_dropped, "claims_dropped")
        return self


class TokensExpectation(StrictModel):
    """A token budget for the whole scenario (promptfoo's cost assertion, in tokens)."""

    max: _Count = Field(
        description="At most this many tokens (prompt + completion) over all the scenario's"
        " model requests, as the answers report them: a cassette's recorded usage, the"
        " scripted model's estimate (4 characters a token). Token 预算。"
    )


class RubricExpectation(StrictModel):
    """A graded rubric: the grader scores the published answer against the criteria (a check,
    never the verdict; recorded and scripted as stage ``grader``). 评分标准。"""

    criteria: Annotated[str, Field(min_length=1, max_length=2000, pattern=r"\S")] = Field(
        description="What a good final answer does, in the author's words; the grader reads"
        " it with the query, the final answer and the verified claims only."
    )
    min_score: _Score = Field(description="Lowest passing grader score, inclusive (0..1). 最低分。")


class SetAsideExpectation(StrictModel):
    """The claims the question's scope set aside in the final round (never judged, never shown)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    claims: list[str] | None = Field(None, description="Exact set of claim ids ([]: none).")
    rules: list[ScopeRule] | None = Field(None, description="Exact set of the rules they broke.")
    # 'query_logs service=payment-service' (scope.out_of_scope_call); the planner's own words
    calls: list[str] | None = Field(None, description="Exact set of the calls the scope refused.")
    plan_steps: list[str] | None = Field(None, description="Exact set of the plan steps withheld.")

    @model_validator(mode="after")
    def _check_something(self) -> Self:
        _require_any(self, ("claims", "rules", "calls", "plan_steps"))
        no_duplicates(self.claims, "claims")
        return self


class Expect(StrictModel):
    """What the run must show. Every key present becomes its own pytest item."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})
    # Keys a project registered (harness.format.registry), validated when the context holds
    # {"checks": registry}; their values are kept here, beside the fields.
    _registered: dict[str, Any] = PrivateAttr(default_factory=dict)

    verdict: VerdictExpectation | None = Field(
        None, description="Final derived verdict, or a list of allowed ones. 最终判定。"
    )
    groundedness: ScoreRange | None = Field(None, description="Final derived score range.")
    rounds: Rounds | None = Field(None, description="Verifier rounds run (1 or 2).")
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
    rubric: RubricExpectation | None = None
    set_aside: SetAsideExpectation | None = None

    @field_validator("verdict")
    @classmethod
    def _unique_verdicts(cls, value: VerdictExpectation | None) -> VerdictExpectation | None:
        no_duplicates(value if isinstance(value, list) else None, "verdict")
        return value

    @field_validator("forbidden_keywords", "required_keywords", "answer_forbidden_keywords")
    @classmethod
    def _unique_keywords(cls, value: list[str] | None) -> list[str] | None:
        no_duplicates([v.casefold() for v in value] if value else None, "the keyword list")
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _registered_checks(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        """With registered checks, validate with the registry's Expect (one pass, so every
        problem has its place), then keep the registered keys' values beside the fields."""
        checks = (info.context or {}).get("checks")
        model = checks.expect_model() if checks is not None and cls is Expect else cls
        if model is cls or not isinstance(data, dict):
            return handler(data)
        full = model.model_validate(data, context=info.context)
        given = full.model_fields_set
        values = {name: getattr(full, name) for name in EXPECT_KEYS if name in given}
        expect = cast(Self, cls.model_construct(given & set(EXPECT_KEYS), **values))
        expect._registered = {
            name: getattr(full, name)
            for name in type(full).model_fields
            if name not in EXPECT_KEYS and getattr(full, name) is not None
        }
        return expect

    @model_validator(mode="after")
    def _at_least_one(self) -> Self:
        keys = type(self).model_fields  # a registry's Expect has its registered keys too
        if not self._registered and all(getattr(self, name) is None for name in keys):
            raise ValueError(
                f"no expectation given: list at least one of {', '.join(keys)}"
                " (each key becomes one test item)"
            )
        return self

    def present_keys(self) -> list[str]:
        """The expectation keys this scenario sets, in the fixed order of :data:`EXPECT_KEYS`,
        then its registered keys in the order they were registered."""
        builtin = [name for name in EXPECT_KEYS if getattr(self, name) is not None]
        return [*builtin, *self._registered]

    def value_of(self, key: str) -> Any:
        """The expected value of one key (``KeyError`` for a key that is not an expectation)."""
        if key in self._registered:
            return self._registered[key]
        if key not in EXPECT_KEYS:
            raise KeyError(f"unknown expectation key {key!r}; known: {', '.join(EXPECT_KEYS)}")
        return getattr(self, key)


EXPECT_KEYS: tuple[str, ...] = tuple(Expect.model_fields)
