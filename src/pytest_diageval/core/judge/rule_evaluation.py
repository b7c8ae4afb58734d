"""Rule evaluation: an evidence score from the persisted tool trace alone (no model).

Each ``tool_invocation`` row is classified on its own (rows, not merged summary entries, so
every call counts once):

==============================================  =============  ==============
row                                             outcome        evidence level
==============================================  =============  ==============
``success`` false or status ``failed``          ``failed``     none
legacy: no ``retrieval_details.evidence_refs``  ``legacy``     none
status ``deduped``                              ``deduped``    none
status ``no_evidence`` or no evidence refs      ``no_hit``     none
refs, ``lookup_knowledge``                      ``supported``  indirect
refs, ``query_metrics`` / ``query_logs``        ``supported``  direct
==============================================  =============  ==============

This is the per-row rule of ``core.evidence.trace_summary`` (knowledge lookups are indirect because
a runbook is guidance, never a fact about the current incident), except that legacy rows
count as no evidence here: the rule score trusts only what the recorder's contract states,
it does not re-read output previews.

The score starts at 0 and adds the effect of every rule that fires, then is clamped to
[0, 1] and rounded to 4 decimals (exact :class:`~fractions.Fraction` sums):

=========================  ==========================================  ==================
rule                       fires when                                  effect
=========================  ==========================================  ==================
``trace.no_tool_calls``    the session has no evidence row             score 0.0, stop
``trace.direct_evidence``  at least one direct row                     +0.6
``trace.corroborated``     direct rows from at least two tools         +0.2
``trace.indirect_evidence`` at least one indirect row                   +0.2
``trace.failed_calls``     failed rows                                 -0.1 each, max -0.3
``trace.mostly_no_hit``    no-hit + deduped rows are over half of all  -0.1
=========================  ==========================================  ==================
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_diageval.core.contract.contracts import EvidenceLevel, ToolInvocation
from pytest_diageval.core.contract.evidence_tools import GUIDANCE_TOOLS
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.judge.verdict import round_score

__all__ = [
    "RULE_SET_VERSION",
    "EvaluationService",
    "EvidenceCounts",
    "FiredRule",
    "RowOutcome",
    "RuleEvaluation",
    "classify_row",
    "evaluate_rows",
]

RULE_SET_VERSION = "1"
RowOutcome = Literal["supported", "failed", "no_hit", "deduped", "legacy"]

_INDIRECT_TOOLS = GUIDANCE_TOOLS
_DIRECT_BONUS = Fraction(3, 5)
_CORROBORATION_BONUS = Fraction(1, 5)
_INDIRECT_BONUS = Fraction(1, 5)
_FAILED_PENALTY_EACH = Fraction(1, 10)
_FAILED_PENALTY_MAX = Fraction(3, 10)
_NO_HIT_PENALTY = Fraction(1, 10)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class EvidenceCounts(_Strict):
    """Rows per evidence level (direct/indirect/none) and per no-evidence outcome."""

    direct: int = 0
    indirect: int = 0
    none: int = 0
    failed: int = 0
    no_hit: int = 0
    deduped: int = 0


class FiredRule(_Strict):
    rule: str
    effect: float
    detail: str


class RuleEvaluation(_Strict):
    """The ``self_evaluation.rule_evaluation`` channel."""

    rule_set_version: str = RULE_SET_VERSION
    tool_call_count: int = Field(ge=0)
    evidence_counts: EvidenceCounts
    evidence_score: float = Field(ge=0.0, le=1.0)
    fired_rules: list[FiredRule]


def classify_row(row: ToolInvocation) -> tuple[RowOutcome, EvidenceLevel]:
    """The outcome and evidence level of one persisted evidence row (table above)."""
    details = row.retrieval_details
    if not row.success or (details is not None and details.evidence_status == "failed"):
        return "failed", "none"
    if details is None or details.evidence_refs is None:
        return "legacy", "none"
    if details.evidence_status == "deduped":
        return "deduped", "none"
    if details.evidence_status == "no_evidence" or not details.evidence_refs:
        return "no_hit", "none"
    return "supported", "indirect" if row.tool_name in _INDIRECT_TOOLS else "direct"


def evaluate_rows(rows: Sequence[ToolInvocation]) -> RuleEvaluation:
    """Count the rows and apply the rule set."""
    counts = _count(rows)
    if not rows:
        fired = [FiredRule(rule="trace.no_tool_calls", effect=0.0, detail="no evidence rows")]
        return RuleEvaluation(
            tool_call_count=0, evidence_counts=counts, evidence_score=0.0, fired_rules=fired
        )
    effects = _fire_rules(rows, counts)
    score = round_score(sum((effect for _, effect, _ in effects), Fraction(0)))
    return RuleEvaluation(
        tool_call_count=len(rows),
        evidence_counts=counts,
        evidence_score=score,
        fired_rules=[
            FiredRule(rule=rule, effect=float(effect), detail=detail)
            for rule, effect, detail in effects
        ],
    )


class EvaluationService:
    """Computes and persists ``rule_evaluation`` for one session from its tool rows."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def evaluate(self, session_id: str) -> RuleEvaluation:
        return evaluate_rows(self.store.list_invocations(session_id))

    def persist(self, session_id: str) -> RuleEvaluation:
        """Write the channel with the store's read-modify-write (other channels stay)."""
        evaluation = self.evaluate(session_id)
        self.store.update_self_evaluation(
            session_id, "rule_evaluation", evaluation.model_dump(mode="json")
        )
        return evaluation


# --------------------------------------------------------------------------- helpers


def _count(rows: Sequence[ToolInvocation]) -> EvidenceCounts:
    outcomes: Counter[str] = Counter()
    for row in rows:
        outcome, level = classify_row(row)
        outcomes[level] += 1
        outcomes[outcome] += 1
    return EvidenceCounts(
        direct=outcomes["direct"],
        indirect=outcomes["indirect"],
        none=outcomes["none"],
        failed=outcomes["failed"],
        no_hit=outcomes["no_hit"],
        deduped=outcomes["deduped"],
    )


def _fire_rules(
    rows: Sequence[ToolInvocation], counts: EvidenceCounts
) -> list[tuple[str, Fraction, str]]:
    """``(rule, effect, detail)`` for every rule that fires, in the table's order."""
    fired: list[tuple[str, Fraction, str]] = []
    direct_tools = sorted({row.tool_name for row in rows if classify_row(row)[1] == "direct"})
    if counts.direct:
        fired.append(("trace.direct_evidence", _DIRECT_BONUS, f"{counts.direct} direct rows"))
    if len(direct_tools) >= 2:
        detail = f"direct rows from {', '.join(direct_tools)}"
        fired.append(("trace.corroborated", _CORROBORATION_BONUS, detail))
    if counts.indirect:
        fired.append(
            ("trace.indirect_evidence", _INDIRECT_BONUS, f"{counts.indirect} indirect rows")
        )
    if counts.failed:
        penalty = min(_FAILED_PENALTY_MAX, _FAILED_PENALTY_EACH * counts.failed)
        fired.append(("trace.failed_calls", -penalty, f"{counts.failed} failed rows"))
    empty = counts.no_hit + counts.deduped
    if 2 * empty > len(rows):
        detail = f"{empty} of {len(rows)} rows returned no new evidence"
        fired.append(("trace.mostly_no_hit", -_NO_HIT_PENALTY, detail))
    return fired
