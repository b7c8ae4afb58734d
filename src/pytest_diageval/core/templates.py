"""Answer templates: the only text a user sees, built from fixed Chinese constants.

``direct`` (PASS) shows the executor contract's ``user_facing_answer``. ``disclaimer``
(LOW_CONFID) and ``degraded`` (REJECT) never edit or quote the executor's prose: their body
is *built* from what the verifier supported, because deleting unsupported sentences out of
free text cannot be done reliably, while listing supported claims can.

* disclaimer: :data:`DISCLAIMER`, then the confirmed findings (contract claims whose every
  verifier fact is direct/indirect support, with no failed gatekeeper binding, plus supported
  verifier facts that belong to no contract claim; either kind only when it cites incident
  evidence, never runbooks alone), then the evidence gaps — only the critical ``no_evidence``
  facts.
* degraded: :data:`DEGRADED_HEADER`, the confirmed facts (critical facts still
  ``direct_evidence`` after derivation; none when the gatekeeper graded reject), the evidence
  gaps and next-step suggestions that gather evidence (see :func:`is_evidence_gathering`).

A gap the code added for a claim the verifier never checked carries the executor's claim
text; it is shown only as :data:`UNCHECKED_CLAIM_GAP`, never quoted.

Every piece of model text that enters an answer is screened by :func:`find_raw_leak` and
dropped if it looks like raw JSON, a code fence or a machine field, or if it says nothing (a
prompt placeholder such as ``<事实>`` copied back, or punctuation only); the finished answer is
checked once more by :func:`assert_no_raw_leak`. Tool outputs are JSON objects, so the JSON
check is also what keeps raw tool output out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from pytest_diageval.core.contracts import Claim, ExecutorContract, GatekeeperResult
from pytest_diageval.core.fact_support import CLAIM_UNCHECKED_RULE, INCIDENT_EVIDENCE_TOOLS
from pytest_diageval.core.routing import RouteDecision
from pytest_diageval.core.verdict import VerdictDecision

__all__ = [
    "CONFIRMED_FACTS_HEADING",
    "CONFIRMED_FINDINGS_HEADING",
    "DEGRADED_HEADER",
    "DISCLAIMER",
    "EVIDENCE_GAPS_HEADING",
    "FALLBACK_NEXT_STEPS",
    "NEXT_STEPS_HEADING",
    "RawLeakError",
    "assert_no_raw_leak",
    "find_raw_leak",
    "is_evidence_gathering",
    "render_answer",
]

DISCLAIMER = "【低置信度提示】以下结论未能全部得到工具证据支持，请谨慎参考。"
DEGRADED_HEADER = (
    "【无法可靠回答】现有工具证据不足以可靠回答该问题。"
    "以下仅列出经证据直接确认的事实、证据缺口和建议的下一步取证动作。"
)
CONFIRMED_FINDINGS_HEADING = "已确认的发现："
CONFIRMED_FACTS_HEADING = "已确认的事实："
EVIDENCE_GAPS_HEADING = "证据缺口："
NEXT_STEPS_HEADING = "下一步建议（仅限补充取证）："
NO_FINDINGS = "（暂无经核验确认的发现。）"
NO_FACTS_AFTER_GATEKEEPER_REJECT = "（执行器引用的证据未能通过核验，本次不展示任何结论。）"
NO_GAPS = "（核验未列出具体的证据缺口。）"
VERIFIER_FALLBACK_NOTICE = "（核验步骤未能完成，本次回答中的任何结论都未经核验。）"
NO_DIRECT_ANSWER = "（执行器未给出可展示的回答。）"
GAP_SUFFIX = "（未找到支持该结论的工具证据）"
UNCHECKED_CLAIM_GAP = "声明 {claim_id} 未经核验"
UNCHECKED_CLAIM_GAP_NO_ID = "执行器的一条声明未经核验"
FALLBACK_NEXT_STEPS: tuple[str, ...] = (
    "重新查询相关服务当前的告警与监控指标，确认告警状态与数值。",
    "检索相关服务在告警时间窗口内的错误与警告日志。",
    "查阅知识库中对应告警的排查手册，确认还需要收集哪些证据。",
)
MAX_NEXT_STEPS = 5

_SUPPORTING = frozenset({"direct_evidence", "indirect_support"})
_EXPECTED_VERDICT = {"direct": "PASS", "disclaimer": "LOW_CONFID", "degraded": "REJECT"}

# Evidence-gathering means: it names a way to look (a gathering marker) and changes nothing
# (no fix marker). Both lists are deliberately small; an action that fails either is dropped.
_GATHERING_MARKERS = (
    "查看", "检查", "查询", "确认", "收集", "采集", "获取", "核对", "排查", "观察",
    "对比", "检索", "抓取", "导出", "分析", "dump", "query", "check", "inspect", "collect",
)  # fmt: skip
_FIX_MARKERS = (
    "重启", "扩容", "缩容", "回滚", "修改", "调整", "调大", "调小", "增大", "减小", "升级",
    "降级", "修复", "优化", "部署", "发布", "删除", "清理", "清空", "限流", "熔断", "切换",
    "迁移", "替换", "关闭", "禁用", "kill", "restart", "rollback", "scale", "fix", "deploy",
)  # fmt: skip

_MACHINE_FIELDS = (
    "answer_version", "claim_id", "claim_text", "claim_type", "diagnosis_summary",
    "evidence_bindings", "evidence_blocks", "evidence_excerpt", "evidence_refs",
    "evidence_status", "facts_checked", "groundedness_score", "missing_info",
    "output_preview", "raw_path", "recommended_actions", "retrieval_details",
    "source_invocation_id", "source_invocation_ids", "user_facing_answer",
)  # fmt: skip
_MACHINE_FIELD_RE = re.compile(
    r"(?<![A-Za-z0-9_])(" + "|".join(_MACHINE_FIELDS) + r")(?![A-Za-z0-9_])"
)
_JSON_KEY_RE = re.compile(r'"[^"\n]{1,80}"\s*:')
_JSON_ARRAY_RE = re.compile(r"\[\s*[{\[]")
_RAW_PATH_RE = re.compile(r"\$\.[A-Za-z_]+\[")
# claim_id is model text too: only an id-shaped one is named in an answer.
_SAFE_CLAIM_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,23}")
# A whole line that is one bracketed token is a template slot (``<事实>``), not a statement.
_PLACEHOLDER_RE = re.compile(r"[<‹〈＜{]\s*[^<>‹›〈〉＜＞{}]*\s*[>›〉＞}]")


class RawLeakError(ValueError):
    """A finished answer would show raw JSON, a code fence or machine fields to the user."""


def find_raw_leak(text: str) -> str | None:
    """Describe why ``text`` looks like raw machine output; None when it reads as prose."""
    if "```" in text:
        return "code fence"
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and _parses_as_json(stripped):
        return "a whole JSON value"
    for pattern, what in (
        (_JSON_KEY_RE, "a JSON object key"),
        (_JSON_ARRAY_RE, "a JSON array of objects"),
        (_RAW_PATH_RE, "a raw evidence path"),
        (_MACHINE_FIELD_RE, "a machine field name"),
    ):
        match = pattern.search(text)
        if match:
            return f"{what} ({match.group(0)!r})"
    return None


def assert_no_raw_leak(answer: str) -> None:
    """Raise :class:`RawLeakError` if ``answer`` shows raw machine output."""
    leak = find_raw_leak(answer)
    if leak is not None:
        raise RawLeakError(f"final answer would leak raw output to the user: {leak}")


def is_evidence_gathering(action_text: str) -> bool:
    """True for an action that gathers evidence and proposes no fix."""
    lowered = action_text.lower()
    gathers = any(marker in lowered for marker in _GATHERING_MARKERS)
    fixes = any(marker in lowered for marker in _FIX_MARKERS)
    return gathers and not fixes


def render_answer(
    route: RouteDecision,
    *,
    decision: VerdictDecision,
    contract: ExecutorContract | None,
    executor_final_answer: str,
    gatekeeper: GatekeeperResult,
) -> str:
    """The user-facing answer for a final route (never ``retry``)."""
    _check_route_matches_verdict(route, decision)
    if route.action == "direct":
        answer = _direct(decision, contract, executor_final_answer)
    elif route.action == "disclaimer":
        answer = _disclaimer(decision, contract, gatekeeper)
    else:
        answer = _degraded(decision, contract, gatekeeper)
    assert_no_raw_leak(answer)
    return answer


# --------------------------------------------------------------------------- templates


def _direct(
    decision: VerdictDecision, contract: ExecutorContract | None, executor_final_answer: str
) -> str:
    if contract is not None:
        candidate = contract.user_facing_answer.strip()
    else:
        # Without a parsed contract the raw answer is shown only if it reads as prose.
        candidate = executor_final_answer.strip()
    if _is_presentable(candidate):
        return candidate
    findings = _presentable(_supported_claim_texts(decision, contract, failed_claims=set()))
    if not findings:
        return NO_DIRECT_ANSWER
    return _section(CONFIRMED_FINDINGS_HEADING, _numbered(findings))


def _disclaimer(
    decision: VerdictDecision, contract: ExecutorContract | None, gatekeeper: GatekeeperResult
) -> str:
    failed = {b.claim_id for b in gatekeeper.checked_bindings if b.status == "fail" and b.claim_id}
    findings = _presentable(_supported_claim_texts(decision, contract, failed_claims=failed))
    parts = [DISCLAIMER]
    if any(o.rule == "verifier.fallback" for o in decision.overrides):
        parts.append(VERIFIER_FALLBACK_NOTICE)
    parts.append(_section(CONFIRMED_FINDINGS_HEADING, _numbered(findings) or [NO_FINDINGS]))
    gaps = _gap_lines(decision)
    if gaps:
        parts.append(_section(EVIDENCE_GAPS_HEADING, gaps))
    return "\n\n".join(parts)


def _degraded(
    decision: VerdictDecision, contract: ExecutorContract | None, gatekeeper: GatekeeperResult
) -> str:
    if gatekeeper.severity == "reject":
        fact_lines = [NO_FACTS_AFTER_GATEKEEPER_REJECT]
    else:
        facts = [
            f.fact for f in decision.facts if f.is_critical and f.verification == "direct_evidence"
        ]
        fact_lines = _bulleted(_presentable(facts)) or [NO_FINDINGS]
    return "\n\n".join(
        [
            DEGRADED_HEADER,
            _section(CONFIRMED_FACTS_HEADING, fact_lines),
            _section(EVIDENCE_GAPS_HEADING, _gap_lines(decision) or [NO_GAPS]),
            _section(NEXT_STEPS_HEADING, _bulleted(_next_steps(contract, gatekeeper))),
        ]
    )


# --------------------------------------------------------------------------- content


def _supported_claim_texts(
    decision: VerdictDecision, contract: ExecutorContract | None, *, failed_claims: set[str]
) -> list[str]:
    """Confirmed findings: supported contract claims, then supported claim-less facts that
    cite incident evidence (when the executor output did not parse, every fact is claim-less,
    and a runbook-only one must not turn into a finding)."""
    labels_by_claim: dict[str, list[str]] = {}
    for fact in decision.facts:
        if fact.claim_id is not None:
            labels_by_claim.setdefault(fact.claim_id, []).append(fact.verification)
    claims = contract.claims if contract is not None else []
    claim_ids = {claim.claim_id for claim in claims}
    texts = [
        claim.claim_text
        for claim in claims
        if claim.support_level != "none"
        and claim.claim_id not in failed_claims
        and _cites_incident_evidence(claim)
        and _all_supporting(labels_by_claim.get(claim.claim_id, []))
    ]
    incident = set(decision.incident_evidence_facts)
    texts += [
        fact.fact
        for index, fact in enumerate(decision.facts)
        if fact.claim_id not in claim_ids
        and fact.claim_id not in failed_claims
        and fact.verification in _SUPPORTING
        and index in incident
    ]
    return texts


def _cites_incident_evidence(claim: Claim) -> bool:
    """Runbooks guide what to look up; a claim resting on them alone is never a finding."""
    return any(b.tool_name in INCIDENT_EVIDENCE_TOOLS for b in claim.evidence_bindings)


def _all_supporting(labels: Sequence[str]) -> bool:
    # A claim the verifier never looked at is not supported.
    return bool(labels) and all(label in _SUPPORTING for label in labels)


def _gap_lines(decision: VerdictDecision) -> list[str]:
    unchecked = {o.fact_index for o in decision.overrides if o.rule == CLAIM_UNCHECKED_RULE}
    gaps = [
        _unchecked_claim_gap(fact.claim_id) if index in unchecked else fact.fact
        for index, fact in enumerate(decision.facts)
        if fact.is_critical and fact.verification == "no_evidence"
    ]
    return [f"- {gap}{GAP_SUFFIX}" for gap in _presentable(gaps)]


def _unchecked_claim_gap(claim_id: str | None) -> str:
    # The fact's text is the executor's unverified claim: name the claim, never quote it.
    if claim_id is not None and _SAFE_CLAIM_ID_RE.fullmatch(claim_id):
        return UNCHECKED_CLAIM_GAP.format(claim_id=claim_id)
    return UNCHECKED_CLAIM_GAP_NO_ID


def _next_steps(contract: ExecutorContract | None, gatekeeper: GatekeeperResult) -> list[str]:
    # Forged citations taint the executor's actions as well: fixed suggestions only.
    if contract is None or gatekeeper.severity == "reject":
        return list(FALLBACK_NEXT_STEPS)
    failed = {
        b.action_id for b in gatekeeper.checked_bindings if b.status == "fail" and b.action_id
    }
    texts = [
        action.action_text
        for action in contract.recommended_actions
        if action.action_id not in failed and is_evidence_gathering(action.action_text)
    ]
    kept = _presentable(texts)[:MAX_NEXT_STEPS]
    return kept or list(FALLBACK_NEXT_STEPS)


def _presentable(texts: Iterable[str | None]) -> list[str]:
    """One line each, no duplicates, nothing uninformative or looking like raw output."""
    kept: list[str] = []
    for text in texts:
        line = " ".join((text or "").split())
        if line not in kept and _is_presentable(line):
            kept.append(line)
    return kept


def _is_presentable(text: str) -> bool:
    """Says something (a word, not just a slot or punctuation) and does not look raw."""
    informative = any(ch.isalnum() for ch in text) and not _PLACEHOLDER_RE.fullmatch(text)
    return informative and find_raw_leak(text) is None


# --------------------------------------------------------------------------- layout


def _section(heading: str, lines: Sequence[str]) -> str:
    return "\n".join([heading, *lines])


def _numbered(items: Sequence[str]) -> list[str]:
    return [f"{index}. {item}" for index, item in enumerate(items, start=1)]


def _bulleted(items: Sequence[str]) -> list[str]:
    return [f"- {item}" for item in items]


def _parses_as_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _check_route_matches_verdict(route: RouteDecision, decision: VerdictDecision) -> None:
    if route.action == "retry":
        raise ValueError("render_answer: route 'retry' is not a final answer; run another round")
    expected = _EXPECTED_VERDICT[route.action]
    if decision.derived_verdict != expected:
        raise ValueError(
            f"render_answer: route {route.action!r} needs derived_verdict {expected!r},"
            f" got {decision.derived_verdict!r}"
        )
