"""Every rule the pipeline can report: its public name, its grade, what it stops, its seed line.

One row per rule name that lands in a report (a gatekeeper row's ``rule``, a claim ceiling's
``rule``, an override's ``rule``, a scope audit's rule, a stopped tool call). The code reads the
grade from here: a gatekeeper row's severity (:func:`severity`), a claim's ceiling
(:func:`ceiling`), the label a fact is lowered to (:func:`lowered_to`); no grade is written at
the place that reports the rule. Scenario files name these rules, so a name is never changed.
``docs/rules.md`` is generated from this table (``python -m pytest_diageval.core.contract.rules``).

The ``grade`` means, per family: ``gatekeeper``: the row's severity; ``claim``: the claim's
ceiling; ``fact``: the label the fact is lowered to; ``verdict`` (and a scope override): the
verdict it sets (:func:`sets`). ``None`` where the rule has no fixed grade (it moves a value
the code computes, or only audits).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal, cast, get_args

from pytest_diageval.core.contract.contracts import FactVerification, Severity, Verdict

__all__ = [
    "RULES",
    "Family",
    "Rule",
    "ceiling",
    "lowered_to",
    "rule",
    "rule_names",
    "rules_markdown",
    "sets",
    "severity",
]

Family = Literal["gatekeeper", "claim", "fact", "verdict", "scope", "executor", "trace"]


@dataclass(frozen=True)
class Rule:
    """One reportable rule."""

    name: str
    family: Family
    grade: str | None
    stops: str
    seed: str | None = None  # "004: <the line it implements>", quoted from the design seeds


_R = Rule
RULES: tuple[Rule, ...] = (
    # ---------------------------------------------------------------- gatekeeper (per binding)
    _R("evidence.invocation_ref", "gatekeeper", "reject",
       "a cited invocation id that does not exist or belongs to another session",
       "004: source_invocation_id 不存在。source_invocation_id 不属于当前 session。"),
    _R("evidence.tool_mismatch", "gatekeeper", "reject",
       "a real invocation id cited with another tool_name than its call's",
       "004: source_invocation_id 存在，但 tool_name 与真实 invocation 不一致。"),
    _R("evidence.raw_path", "gatekeeper", "reject",
       "a raw path that is malformed, not among the call's evidence_refs, or an empty-result"
       " path on a call that found something or failed",
       "004: raw_path 不存在于该 invocation 的 retrieval_details.evidence_refs。"),
    _R("evidence.excerpt_mismatch", "gatekeeper", "reject",
       "an excerpt the cited item's text does not support (a changed number, a flipped negation)",
       "004: evidence_excerpt 与 evidence_refs[].text 明显不匹配。"),
    _R("evidence.bindings_empty", "gatekeeper", "low_confid",
       "a claim with support_level direct or indirect that binds no evidence",
       "004: evidence_bindings 为空。"),
    _R("evidence.raw_path_missing", "gatekeeper", "low_confid",
       "a binding with an invocation id but no raw path (the path is never guessed)",
       "004: raw_path 缺失，但 source_invocation_id 存在。"),
    _R("evidence.refs_unavailable", "gatekeeper", "low_confid",
       "a citation of a legacy invocation row that has no evidence_refs",
       "004: 旧工具调用未生成 retrieval_details.evidence_refs。"),
    _R("evidence.excerpt_too_short", "gatekeeper", "low_confid",
       "an excerpt too short or too generic (metadata only) to compare",
       "004: evidence_excerpt 太短或太泛，无法稳定比对。"),
    _R("evidence.excerpt_missing", "gatekeeper", "low_confid",
       "a real id and path with no excerpt: nothing was quoted"),
    _R("evidence.invocation_missing", "gatekeeper", "low_confid",
       "a binding with no single invocation id that cannot be backfilled",
       "004: Executor 输出格式不完整，但没有伪造具体 invocation / raw_path / excerpt。"),
    _R("evidence.instruction_like", "gatekeeper", "low_confid",
       "a real citation of an item that reads as an instruction to the model or is written to "
       "a machine reader"),
    _R("evidence.invocation_auto_backfill", "gatekeeper", "low_confid",
       "a binding whose invocation id the code filled in: it never carries a PASS",
       "004: 自动回填后的 binding 如果缺少 raw_path，Gatekeeper 必须标记为 severity=low_confid，"
       "不得作为 PASS 依据。"),
    _R("executor.parse_failed", "gatekeeper", "low_confid",
       "an executor output that does not parse into the contract: no citation can be checked",
       "004: Executor 输出格式不完整，但没有伪造具体 invocation / raw_path / excerpt。"),
    _R("executor.claims_empty", "gatekeeper", "low_confid",
       "a contract with no claims: nothing its answer says is bound to evidence"),
    # ---------------------------------------------------------------- claim ceilings
    _R("claim.no_bindings", "claim", "no_evidence",
       "a claim that binds no evidence, whatever support_level it declares",
       "000: a claim with fabricated or missing evidence references SHALL NOT be classified as"
       " `direct_evidence`"),
    _R("claim.bindings_failed", "claim", "no_evidence",
       "a claim none of whose bindings passed the gatekeeper",
       "000: a claim with fabricated or missing evidence references SHALL NOT be classified as"
       " `direct_evidence`"),
    _R("claim.runbook_binding", "claim", "indirect_support",
       "a claim resting on runbook guidance (lookup_knowledge) becoming a confirmed fact",
       "004: runbook 内容只能进入 missing_info 或证据收集动作，不能变成 confirmed claim。"),
    _R("claim.subject_not_cited", "claim", "no_evidence",
       "a claim naming a service none of its cited items is about"),
    _R("claim.no_hit_not_support", "claim", "no_evidence",
       "a positive claim cited only on searches that found nothing"),
    _R("claim.negative_without_no_hit", "claim", "no_evidence",
       "a negative_observation that cites no completed search that found nothing"),
    _R("claim.negative_subject", "claim", "no_evidence",
       "a negative_observation whose no-hit searches looked at another subject"),
    _R("claim.negative_kind", "claim", "no_evidence",
       "a negative_observation denying logs or alerts no cited no-hit searched"),
    _R("claim.negative_terms", "claim", "no_evidence",
       "a negative_observation denying a term none of its no-hit searches asked for"),
    _R("claim.negative_filter", "claim", "no_evidence",
       "a negative_observation wider than its search's level filter"),
    _R("claim.number_not_cited", "claim", "no_evidence",
       "a claim stating a number none of its cited items shows"),
    _R("claim.entity_not_cited", "claim", "no_evidence",
       "a claim stating an entity none of its cited items shows"),
    _R("claim.timestamp_not_cited", "claim", "no_evidence",
       "a claim stating a time none of its cited items shows"),
    _R("claim.action_in_claim", "claim", "no_evidence",
       "a claim recommending an action (a fix belongs in recommended_actions)"),
    _R("claim.denial_without_no_hit", "claim", "no_evidence",
       "a positive claim that denies something exists (only a cited no-hit may)"),
    _R("claim.polarity_contradicts_item", "claim", "no_evidence",
       "a claim whose polarity every cited item reads the other way"),
    _R("claim.subject_swapped", "claim", "no_evidence",
       "a claim saying of one service what the items say of another"),
    _R("claim.conclusion_not_cited", "claim", "no_evidence",
       "a causal conclusion whose words no cited item shows"),
    _R("claim.contradicts_claim", "claim", "no_evidence",
       "two claims reading one item with opposite polarity (neither stands)"),
    _R("claim.topic_not_cited", "claim", "no_evidence",
       "a claim naming a diagnosis (内存泄漏, 慢查询) none of its cited items is about"),
    _R("claim.label_swapped", "claim", "no_evidence",
       "a claim giving an item's number another label (its threshold as the current value)"),
    _R("claim.runbook_as_fact", "claim", "no_evidence",
       "a claim stating a runbook's general guidance as this incident's fact",
       "004: runbook 内容只能进入 missing_info 或证据收集动作，不能变成 confirmed claim"),
    _R("claim.modality_hardened", "claim", "indirect_support",
       "a claim stating as settled what its item only suspects (疑似, may)"),
    _R("claim.causal_across_items", "claim", "indirect_support",
       "a causal claim joining items that no item links (cause in one, effect in another)"),
    _R("claim.item_addresses_reader", "claim", "indirect_support",
       "a claim backed by an item written to a machine reader (\"to any tool reading this\")"),
    _R("claim.negative_window", "claim", "no_evidence",
       "a negative claim about a window wider than, or outside, the one its no-hit searched"),
    _R("claim.support_level", "claim", None,
       "a ceiling above the support_level the claim itself declares (it gets that level)"),
    _R("point.false", "claim", "no_evidence",
       "a claim's point that its item's field contradicts (docs/points.md)"),
    _R("point.binding_missing", "claim", "no_evidence",
       "a point naming no binding of its claim, or one the gatekeeper did not pass"),
    _R("point.field_missing", "claim", "no_evidence",
       "a point naming a field its item does not have"),
    _R("point.not_comparable", "claim", "no_evidence",
       "a point the code cannot decide (no single quantity or time of the value's kind, a"
       " relation outside the closed set, value and other_field both or neither)"),
    # ---------------------------------------------------------------- verifier facts
    _R("fact.claim_unknown", "fact", "no_evidence",
       "a verifier fact naming a claim_id the contract does not have"),
    _R("fact.criticality", "fact", None,
       "a verifier fact about a claim marked non-critical (criticality belongs to the code)"),
    _R("fact.claim_ceiling", "fact", None,
       "a verifier label above its claim's ceiling (lowered to the ceiling)",
       "004: Verifier 判为 PASS 必须基于“真实引用 + 可推导结论”两个条件同时成立"),
    _R("fact.ref_not_bound", "fact", "no_evidence",
       "a fact about a claim citing evidence the claim never bound"),
    _R("fact.evidence_refs_empty", "fact", "no_evidence",
       "a supporting label on a fact that cites no evidence_refs",
       "000: a claim with fabricated or missing evidence references SHALL NOT be classified as"
       " `direct_evidence`"),
    _R("fact.evidence_ref_unknown", "fact", "no_evidence",
       "a supporting label whose refs name no trace_ref or invocation of this session",
       "000: each claim's evidence bindings SHALL reference existing trace or invocation"
       " identifiers when those identifiers are available"),
    _R("fact.trace_ref_unknown", "fact", "no_evidence",
       "a fact citing a trace_ref the session's trace summary does not have"),
    _R("fact.evidence_not_fresh", "fact", "no_evidence",
       "a supporting label resting only on failed, no-hit or deduped calls"),
    _R("fact.evidence_level_cap", "fact", "indirect_support",
       "direct_evidence resting only on indirect entries (runbook guidance)"),
    _R("verifier.claim_unchecked", "fact", "no_evidence",
       "a claim the verifier left out: the code adds it as an unsupported critical fact"),
    # ---------------------------------------------------------------- verdict overrides
    _R("verdict.matrix", "verdict", None,
       "a model verdict that disagrees with the verdict the matrix derives from the facts",
       "000: the final verdict SHALL still follow the existing groundedness and evidence"
       " classification rules"),
    _R("verdict.score", "verdict", None,
       "a model groundedness_score other than the one computed from the fact labels",
       "000: groundedness_score SHALL be computed from the mapped values of critical facts"),
    _R("verdict.runbook_only", "verdict", "LOW_CONFID",
       "a PASS resting on runbook guidance",
       "004: runbook 内容只能进入 missing_info 或证据收集动作，不能变成 confirmed claim。"),
    _R("verifier.fallback", "verdict", "LOW_CONFID",
       "a verdict taken from a verifier output that could not be used"),
    _R("gatekeeper.reject", "verdict", "REJECT",
       "any verdict other than REJECT 0.0 over forged citations",
       "004: severity=reject：Verifier 不得输出 PASS，最终倾向 REJECT。"),
    _R("gatekeeper.low_confid", "verdict", "LOW_CONFID",
       "a PASS over citations the gatekeeper graded low_confid",
       "004: severity=low_confid：Verifier 不得输出 PASS，最终输出 LOW_CONFID。"),
    # ---------------------------------------------------------------- scope
    _R("scope.out_of_scope", "scope", None,
       "a claim about a target outside a narrow question's scope",
       "004: 只能围绕用户明确要求的目标对象和主题输出 claim。"),
    _R("scope.excluded_topic", "scope", None,
       "a claim on a topic the narrow question excludes",
       "004: 你不得扩展到用户未要求的服务、订单、告警、数据库、连接池或下游依赖。"),
    _R("scope.narrow_claim_type", "scope", None,
       "a root_cause or risk claim in a narrow question",
       "004: 只输出 observation / negative_observation 类型 claim。"),
    _R("scope.set_aside", "scope", None,
       "verifier facts about a claim set aside for scope counting in the verdict"),
    _R("scope.no_claim_in_scope", "scope", "LOW_CONFID",
       "a PASS when every claim was set aside for scope"),
    _R("scope.out_of_scope_call", "scope", None,
       "an evidence call naming a service or alert outside a narrow question's scope"),
    _R("scope.out_of_scope_plan_step", "scope", None,
       "a plan step outside a narrow question's scope reaching the executor"),
    # ---------------------------------------------------------------- executor tool loop
    _R("executor.repeated_argument_error", "executor", None,
       "a tool call repeating arguments that already failed validation"),
    _R("executor.repeated_call", "executor", None,
       "a verbatim repeat of a tool call that completed"),
    # ---------------------------------------------------------------- trace (the rule score)
    _R("trace.no_tool_calls", "trace", None,
       "a rule score above 0 for a session with no evidence row"),
    _R("trace.direct_evidence", "trace", None,
       "nothing: it adds the direct-evidence bonus to the rule score"),
    _R("trace.corroborated", "trace", None,
       "nothing: it adds a bonus when direct rows come from two or more tools"),
    _R("trace.indirect_evidence", "trace", None,
       "nothing: it adds the indirect-evidence (runbook) bonus"),
    _R("trace.failed_calls", "trace", None,
       "a rule score that ignores failed calls (a penalty each, capped)"),
    _R("trace.mostly_no_hit", "trace", None,
       "a rule score that ignores a trace of mostly empty or deduped calls"),
)  # fmt: skip
"""The table, grouped by family in the order the pipeline runs."""


def rule(name: str) -> Rule:
    """The row of ``name``; a name not in the table is a bug of the caller, said plainly."""
    found = next((row for row in RULES if row.name == name), None)
    if found is None:
        raise KeyError(f"{name!r} is not a rule of pytest_diageval.core.contract.rules")
    return found


def rule_names(*families: Family) -> frozenset[str]:
    """The names of the rules of ``families`` (every rule when none is given)."""
    return frozenset(r.name for r in RULES if not families or r.family in families)


def _graded(name: str, family: Family | tuple[Family, ...], allowed: tuple[str, ...]) -> str:
    row = rule(name)
    families = family if isinstance(family, tuple) else (family,)
    if row.family not in families or row.grade not in allowed:
        wanted = " or ".join(families)
        raise ValueError(f"rule {name!r} ({row.family}, grade {row.grade!r}) has no {wanted} grade")
    return row.grade


def severity(name: str) -> Severity:
    """The severity of a gatekeeper rule's row."""
    return cast(Severity, _graded(name, "gatekeeper", get_args(Severity)))


def ceiling(name: str) -> FactVerification:
    """The ceiling a claim rule puts on its claim."""
    return cast(FactVerification, _graded(name, "claim", get_args(FactVerification)))


def lowered_to(name: str) -> FactVerification:
    """The label a fact rule lowers its fact to."""
    return cast(FactVerification, _graded(name, "fact", get_args(FactVerification)))


def sets(name: str) -> Verdict:
    """The verdict a verdict override (or a scope override) sets."""
    return cast(Verdict, _graded(name, ("verdict", "scope"), get_args(Verdict)))


_FAMILY_TITLES: dict[Family, tuple[str, str]] = {
    "gatekeeper": ("Gatekeeper: each citation", "severity"),
    "claim": ("Claim ceilings: the most a claim's own bindings carry", "ceiling"),
    "fact": ("Verifier facts: labels the code lowers", "lowered to"),
    "verdict": ("Verdict overrides", "sets"),
    "scope": ("Scope of a narrow question", "grade"),
    "executor": ("Executor tool loop", "grade"),
    "trace": ("Rule score of the tool trace (effects: core/judge/rule_evaluation.py)", "grade"),
}


def rules_markdown() -> str:
    """``docs/rules.md``: the table as Markdown, one section per family."""
    lines = [
        "# Rules",
        "",
        "<!-- Generated from src/pytest_diageval/core/contract/rules.py by"
        " `python -m pytest_diageval.core.contract.rules > docs/rules.md`; do not edit. -->",
        "",
        "Every rule name the pipeline can report, as scenario files name it"
        " (`expect.gatekeeper.failed_rules`, `expect.scope`). The grade column is what the code"
        " reads; a dash means the rule moves a value the code computes or only audits.",
    ]
    for family, (title, grade_title) in _FAMILY_TITLES.items():
        header = f"| rule | {grade_title} | stops | seed |"
        lines += ["", f"## {title}", "", header, "|---|---|---|---|"]
        for row in RULES:
            if row.family == family:
                cells = (f"`{row.name}`", row.grade or "–", row.stops, row.seed or "–")
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(rules_markdown())
