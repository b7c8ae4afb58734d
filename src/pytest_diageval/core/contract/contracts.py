"""Every structure that crosses a boundary of the pipeline, as pydantic v2 models.

Field names are exactly those of the seeds (``../shared/seeds``); ``004_…`` wins where
it differs from ``000_…``. Models that a language model produces (executor contract,
verifier output, plan) ignore unknown keys, so that a chatty model still parses, but
validate every key they know, and require what the seeds mark required (000: the seven
top-level fields of the contract; 004: ``tool_name`` on every binding). Their integers are
strict: a JSON ``true``, ``1.0`` or ``"1"`` is not invocation 1 (lax pydantic would coerce
each), and no range is imposed here: an id no session can hold is the gatekeeper's to
reject. Models the code produces are strict (``extra="forbid"``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from pytest_diageval.core.contract.evidence_tools import EVIDENCE_TOOL_TABLE
from pytest_diageval.core.contract.limits import (
    CONTRACT_ANSWER_CHARS,
    CONTRACT_ID_CHARS,
    CONTRACT_LIST_CAPS,
    CONTRACT_TEXT_CHARS,
    PLAN_STEPS_MAX,
    PLAN_TEXT_CHARS,
    VERIFIER_FACTS_CAP,
)

__all__ = [
    "CONTRACT_ANSWER_CHARS",
    "CONTRACT_ID_CHARS",
    "CONTRACT_LIST_CAPS",
    "CONTRACT_TEXT_CHARS",
    "EVIDENCE_TOOLS",
    "HELPER_TOOLS",
    "PLAN_STEPS_MAX",
    "PLAN_TEXT_CHARS",
    "POINT_RELATIONS",
    "VERIFIER_FACTS_CAP",
    "CheckedBinding",
    "Claim",
    "ClaimType",
    "EvidenceBinding",
    "EvidenceItem",
    "EvidenceLevel",
    "EvidencePoint",
    "EvidenceRef",
    "EvidenceStatus",
    "ExecutorContract",
    "FactChecked",
    "FactEvidenceRef",
    "FactVerification",
    "GatekeeperResult",
    "Hypothesis",
    "MissingInfo",
    "ParseStatus",
    "Plan",
    "RecommendedAction",
    "RetrievalDetails",
    "RetryContext",
    "RuleMessage",
    "Severity",
    "SupportLevel",
    "ToolInvocation",
    "ToolTraceSummaryItem",
    "Verdict",
    "VerifierInput",
    "VerifierOutput",
]

EVIDENCE_TOOLS: tuple[str, ...] = tuple(tool.name for tool in EVIDENCE_TOOL_TABLE)
"""Tools whose output can be cited as evidence; each call is one ``tool_invocation`` row."""
HELPER_TOOLS: tuple[str, ...] = ("get_current_time",)
"""Tools that help the executor but are never evidence and never recorded as rows."""

ClaimType = Literal["observation", "negative_observation", "root_cause", "risk"]
SupportLevel = Literal["direct", "indirect", "none"]
EvidenceLevel = Literal["direct", "indirect", "none"]
EvidenceStatus = Literal["supported", "no_evidence", "failed", "deduped"]
Severity = Literal["none", "low_confid", "reject"]
Verdict = Literal["PASS", "LOW_CONFID", "REJECT"]
FactVerification = Literal["direct_evidence", "indirect_support", "no_evidence", "contradicted"]


_Id = Annotated[str, Field(max_length=CONTRACT_ID_CHARS)]
_Text = Annotated[str, Field(max_length=CONTRACT_TEXT_CHARS)]


class _ModelOutput(BaseModel):
    """Base of what a language model writes: unknown keys are ignored, known keys validated."""

    model_config = ConfigDict(extra="ignore")


class _CodeOutput(BaseModel):
    """Base of what the code writes: nothing unexpected may ride along."""

    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------- executor


class EvidenceBinding(_ModelOutput):
    """One citation: which invocation, where in its output, and the quoted text.

    The newest design (``004_…``) cites ``source_invocation_id`` + ``raw_path``; its binding
    table marks ``tool_name`` 必填, so a binding without one does not parse. The older shape
    (``source_type``, ``source_id``, ``source_invocation_ids``) is accepted and normalised: a
    one-element id list becomes ``source_invocation_id``. Nothing else missing is invented
    here; the gatekeeper grades what is missing.
    """

    tool_name: str
    source_invocation_id: StrictInt | None = None
    raw_path: str | None = None
    evidence_excerpt: _Text | None = None
    source_type: str | None = None
    source_id: str | None = None
    source_invocation_ids: list[StrictInt] | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise_legacy_ids(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("source_invocation_id") is not None:
            return data
        legacy = data.get("source_invocation_ids")
        if isinstance(legacy, list) and len(legacy) == 1:
            data = {**data, "source_invocation_id": legacy[0]}
        return data


POINT_RELATIONS: tuple[str, ...] = (
    "equals", "contains", "above", "below", "at_least", "at_most", "before", "after",
)  # fmt: skip
"""The closed set of relations a point may name (``docs/points.md``). The parser keeps any
string (a model's wrong relation is refused by the checker as ``point.not_comparable``, not by
failing the whole contract); the scenario schema offers these."""


class EvidencePoint(_ModelOutput):
    """What a claim states about one cited item, as data the code checks (``docs/points.md``).

    ``binding`` counts the claim's own ``evidence_bindings`` from 1; ``field`` names a field of
    the item that binding cites; ``relation`` is one of ``equals``, ``contains``, ``above``,
    ``below``, ``at_least``, ``at_most``, ``before``, ``after``; the field is compared with
    ``value`` or with ``other_field`` of the same item. Nothing is checked here (a point the
    model got wrong still parses): :mod:`~pytest_diageval.core.judge.claim_points` decides it.
    """

    binding: StrictInt
    field: _Id
    relation: Annotated[
        str, Field(max_length=CONTRACT_ID_CHARS, json_schema_extra={"enum": list(POINT_RELATIONS)})
    ]
    value: _Text | None = None
    other_field: _Id | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        """``value: 0`` (YAML) or ``"value": 91`` (JSON) is the text ``"0"`` / ``"91"``; a
        boolean stays what it is, and fails."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value


class Claim(_ModelOutput):
    claim_id: _Id
    claim_type: ClaimType
    claim_text: _Text
    # The 004 examples omit support_level: a claim is a confirmed finding, so it asserts
    # direct support unless it says otherwise, and an empty binding list is then graded.
    support_level: SupportLevel = "direct"
    evidence_bindings: list[EvidenceBinding] = Field(default_factory=list)
    # What the claim states, as points on its cited items; when present the code checks
    # these and does not read claim_text (docs/points.md).
    points: list[EvidencePoint] = Field(
        default_factory=list, max_length=CONTRACT_LIST_CAPS["points"]
    )


class Hypothesis(_ModelOutput):
    hypothesis_id: _Id | None = None
    hypothesis_text: _Text
    basis_claim_ids: list[_Id] = Field(
        default_factory=list, max_length=CONTRACT_LIST_CAPS["basis_claim_ids"]
    )
    missing_info: _Text | None = None

    @model_validator(mode="before")
    @classmethod
    def _accept_plain_text(cls, data: Any) -> Any:
        return {"hypothesis_text": data} if isinstance(data, str) else data


class MissingInfo(_ModelOutput):
    info_id: _Id | None = None
    description: _Text

    @model_validator(mode="before")
    @classmethod
    def _accept_plain_text(cls, data: Any) -> Any:
        return {"description": data} if isinstance(data, str) else data


class RecommendedAction(_ModelOutput):
    action_id: _Id | None = None
    action_text: _Text
    reason: _Text | None = None
    evidence_bindings: list[EvidenceBinding] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _accept_plain_text(cls, data: Any) -> Any:
        return {"action_text": data} if isinstance(data, str) else data


class ExecutorContract(_ModelOutput):
    """The executor's evidence-attribution contract (its final message).

    000: the final output "SHALL contain ``answer_version``, ``diagnosis_summary``,
    ``claims``, ``hypotheses``, ``recommended_actions``, ``missing_info``, and
    ``user_facing_answer``": all seven are required (an empty list or string is a value).
    """

    answer_version: _Id
    diagnosis_summary: _Text
    claims: list[Claim] = Field(max_length=CONTRACT_LIST_CAPS["claims"])
    hypotheses: list[Hypothesis] = Field(max_length=CONTRACT_LIST_CAPS["hypotheses"])
    recommended_actions: list[RecommendedAction] = Field(
        max_length=CONTRACT_LIST_CAPS["recommended_actions"]
    )
    missing_info: list[MissingInfo] = Field(max_length=CONTRACT_LIST_CAPS["missing_info"])
    user_facing_answer: str = Field(max_length=CONTRACT_ANSWER_CHARS)

    @model_validator(mode="after")
    def _bindings_within_cap(self) -> ExecutorContract:
        cap = CONTRACT_LIST_CAPS["evidence_bindings"]
        total = sum(len(claim.evidence_bindings) for claim in self.claims) + sum(
            len(action.evidence_bindings) for action in self.recommended_actions
        )
        if total > cap:
            raise ValueError(f"the contract has {total} evidence_bindings; at most {cap}")
        return self

    @model_validator(mode="after")
    def _claim_ids_unique(self) -> ExecutorContract:
        # Claims are judged by id: a second claim under an id would hide behind the first.
        ids = [claim.claim_id for claim in self.claims]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"claim_id must be unique; repeated: {', '.join(repeated)}")
        return self


class ParseStatus(_CodeOutput):
    status: Literal["valid", "failed"]
    detail: str


def _plan_text(text: str) -> str:
    if len(text) > PLAN_TEXT_CHARS:
        raise ValueError(f"at most {PLAN_TEXT_CHARS} characters, got {len(text)}")
    return text


_PlanText = Annotated[str, AfterValidator(_plan_text)]


class Plan(_ModelOutput):
    """The planner's structured output."""

    plan: _PlanText
    steps: list[_PlanText] = Field(default_factory=list, max_length=PLAN_STEPS_MAX)


# --------------------------------------------------------------------------- tool rows


class EvidenceRef(_CodeOutput):
    """A claim-addressable piece of one invocation's output, in ``retrieval_details``."""

    raw_path: str
    text: str


class EvidenceItem(_CodeOutput):
    """One citable item of an invocation's output, field by field as the tool returned it.

    The answer's confirmed part is rendered from these fields by code (never from a claim's
    text); ``raw_path`` is the item's :class:`EvidenceRef` path. Kept in the audit row only:
    the model is shown the refs, never these."""

    raw_path: str
    fields: dict[str, Any]


class RetrievalDetails(_CodeOutput):
    evidence_status: EvidenceStatus
    # None means the row predates evidence refs (a legacy row); [] means none were usable.
    evidence_refs: list[EvidenceRef] | None = None
    # The cited items' own fields, parallel to evidence_refs; None on rows made without them.
    evidence_items: list[EvidenceItem] | None = None
    total: int | None = None
    retrieval_layer: str | None = None
    l0_count: int | None = None
    l1_count: int | None = None
    relevance_level: str | None = None
    dedup_reason: str | None = None
    source_documents: list[str] | None = None


class ToolInvocation(_CodeOutput):
    """One persisted ``tool_invocation`` row."""

    id: int
    session_id: str
    round: int
    tool_name: str
    input_params: dict[str, Any]
    duration_ms: int
    success: bool
    error_message: str | None = None
    output_preview: str | None = None
    output_truncated: bool = False
    retrieval_details: RetrievalDetails | None = None


# --------------------------------------------------------------------------- gatekeeper


class RuleMessage(_CodeOutput):
    rule: str
    message: str


class CheckedBinding(_CodeOutput):
    """One cited piece of evidence and what the gatekeeper found for it."""

    claim_id: str | None = None
    action_id: str | None = None
    tool_name: str | None = None
    source_invocation_id: int | None = None
    raw_path: str | None = None
    evidence_excerpt: str | None = None
    status: Literal["pass", "fail"]
    grade: Severity = "none"
    matched_text: str | None = None
    rule: str | None = None
    message: str | None = None


class GatekeeperResult(_CodeOutput):
    status: Literal["pass", "fail"]
    severity: Severity
    checked_bindings: list[CheckedBinding] = Field(default_factory=list)
    failed_rules: list[str] = Field(default_factory=list)
    warnings: list[RuleMessage] = Field(default_factory=list)
    errors: list[RuleMessage] = Field(default_factory=list)

    @model_validator(mode="after")
    def _pass_means_no_severity(self) -> GatekeeperResult:
        if (self.status == "pass") != (self.severity == "none"):
            raise ValueError("status=pass if and only if severity=none")
        return self


# --------------------------------------------------------------------------- verifier


class FactEvidenceRef(_ModelOutput):
    trace_ref: str
    source_invocation_ids: list[StrictInt] = Field(default_factory=list)


class FactChecked(_ModelOutput):
    fact: str
    is_critical: bool
    verification: FactVerification
    detail: str  # 000: each item SHALL include fact, is_critical, verification and detail
    evidence_refs: list[FactEvidenceRef] = Field(default_factory=list)
    claim_id: str | None = None


class VerifierOutput(_ModelOutput):
    verdict: Verdict
    groundedness_score: StrictFloat = Field(ge=0.0, le=1.0)
    critical_fact_count: StrictInt = Field(ge=0)
    # A bound in the schema the verifier is sent (a grammar-constrained 270M model labelled
    # one fact once per trace entry until its tokens ran out); claims are at most four there.
    facts_checked: list[FactChecked] = Field(max_length=VERIFIER_FACTS_CAP)
    rationale: str


class ToolTraceSummaryItem(_CodeOutput):
    trace_ref: str
    tool_name: str
    source_invocation_ids: list[int]
    success: bool
    input_summary: str
    output_summary: str
    evidence_level: EvidenceLevel
    invocation_count: int
    no_hit_invocation_count: int
    failed_invocation_count: int
    deduped_invocation_count: int = 0
    round: int = 1
    query_samples: list[str] | None = None
    retrieval_layers: list[str] | None = None
    relevance_levels: list[str] | None = None
    source_documents: list[str] | None = None


class RetryContext(_CodeOutput):
    """What the second round is told about the first (and nothing else)."""

    round: int = 2
    previous_verdict: Verdict
    previous_groundedness_score: float
    evidence_gaps: list[str] = Field(default_factory=list)
    gatekeeper_failed_rules: list[str] = Field(default_factory=list)


class VerifierInput(_CodeOutput):
    """Exactly the explicit inputs of the verifier. ``extra="forbid"`` is the guarantee
    that planner or executor intermediate reasoning can never ride along."""

    original_query: str
    executor_final_answer: str
    executor_structured_output: ExecutorContract | None = None
    executor_output_parse_status: ParseStatus
    gatekeeper_result: GatekeeperResult
    tool_trace_summary: list[ToolTraceSummaryItem]
    retry_context: RetryContext | None = None

    @model_validator(mode="after")
    def _structured_only_when_parsed(self) -> VerifierInput:
        parsed = self.executor_output_parse_status.status == "valid"
        if parsed != (self.executor_structured_output is not None):
            raise ValueError(
                "executor_structured_output is present exactly when the parse status is valid"
            )
        return self
