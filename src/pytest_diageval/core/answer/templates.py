"""Answer templates: the fixed Chinese text around what the composer lets through.

The composer (:mod:`.composer`) decides *what* an answer may say (the used claims of
:mod:`.verified_claims`); this module lays it out and screens it:

* disclaimer (LOW_CONFID): :data:`DISCLAIMER`, then the confirmed findings (the used claims,
  indirect ones marked), then the evidence gaps — the critical ``no_evidence`` facts.
* degraded (REJECT): :data:`DEGRADED_HEADER`, the directly supported used claims (none when the
  gatekeeper graded reject), the evidence gaps and the fixed next steps
  (:data:`FALLBACK_NEXT_STEPS`).
* composed (PASS whose answer cannot be published verbatim): :data:`COMPOSED_HEADING`, the used
  claims, and :func:`left_out_line`.

Nothing unverified is quoted (000: REJECT output "SHALL NOT include unverified raw answer
content"). A gap is about a claim that failed: its text is the executor's word, and a fact's
text is the verifier's, so a gap names the claim by id and type
(:data:`CLAIM_GAP`, "claim-2（root_cause）缺少工具证据"), or says that a fact outside the claims
lacks evidence (:data:`FACT_GAP`). Next steps come from the fixed list only: an executor's
"action" may carry a fix or a conclusion ("根因已确认"). "已确认" headings stand only above
verified claims; with none, the answer says so without the heading.

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

from pytest_diageval.core.answer.routing import RouteDecision
from pytest_diageval.core.answer.statements import strip_control
from pytest_diageval.core.contract.contracts import Claim, ExecutorContract, GatekeeperResult
from pytest_diageval.core.judge.verdict import NO_CLAIM_IN_SCOPE, VerdictDecision

__all__ = [
    "CLAIM_GAP",
    "COMPOSED_HEADING",
    "CONFIRMED_FACTS_HEADING",
    "CONFIRMED_FINDINGS_HEADING",
    "DEGRADED_HEADER",
    "DISCLAIMER",
    "EVIDENCE_GAPS_HEADING",
    "FACT_GAP",
    "FALLBACK_NEXT_STEPS",
    "INDIRECT_MARK",
    "NEXT_STEPS_HEADING",
    "NO_CLAIM_IN_SCOPE_GAP",
    "NO_DIRECT_ANSWER",
    "RawLeakError",
    "assert_no_raw_leak",
    "check_route_matches_verdict",
    "degraded_answer",
    "disclaimer_answer",
    "find_raw_leak",
    "is_presentable",
    "left_out_line",
    "numbered",
    "section",
]

DISCLAIMER = "【低置信度提示】以下结论未能全部得到工具证据支持，请谨慎参考。"
DEGRADED_HEADER = (
    "【无法可靠回答】现有工具证据不足以可靠回答该问题。"
    "以下仅列出经证据直接确认的事实、证据缺口和建议的下一步取证动作。"
)
CONFIRMED_FINDINGS_HEADING = "已确认的发现："
COMPOSED_HEADING = "经核验确认的结论："
INDIRECT_MARK = "（间接支持）"
LEFT_OUT_STATEMENTS = "执行器回答中另有 {count} 处表述未能对应到经核验的声明，未予展示。"
LEFT_OUT_CLAIMS = "未通过核验、未列入的声明：{ids}。"
CONFIRMED_FACTS_HEADING = "已确认的事实："
EVIDENCE_GAPS_HEADING = "证据缺口："
NEXT_STEPS_HEADING = "下一步建议（仅限补充取证）："
NO_FINDINGS = "（暂无经核验确认的发现。）"
NO_FACTS_AFTER_GATEKEEPER_REJECT = "（执行器引用的证据未能通过核验，本次不展示任何结论。）"
NO_GAPS = "（核验未列出具体的证据缺口。）"
VERIFIER_FALLBACK_NOTICE = "（核验步骤未能完成，本次回答中的任何结论都未经核验。）"
NO_DIRECT_ANSWER = "（执行器未给出可展示的回答。）"
CLAIM_GAP = "{claim_id}（{claim_type}）缺少工具证据"
CLAIM_GAP_NO_ID = "执行器的一条声明（{claim_type}）缺少工具证据"
FACT_GAP = "核验列出的一条声明之外的事实缺少工具证据"
NO_CLAIM_IN_SCOPE_GAP = "执行器的声明都超出了问题的范围，问题范围内的事实没有工具证据"
FALLBACK_NEXT_STEPS: tuple[str, ...] = (
    "重新查询相关服务当前的告警与监控指标，确认告警状态与数值。",
    "检索相关服务在告警时间窗口内的错误与警告日志。",
    "查阅知识库中对应告警的排查手册，确认还需要收集哪些证据。",
)

_EXPECTED_VERDICT = {"direct": "PASS", "disclaimer": "LOW_CONFID", "degraded": "REJECT"}


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


def disclaimer_answer(
    decision: VerdictDecision, contract: ExecutorContract | None, findings: Sequence[str]
) -> str:
    """LOW_CONFID: the disclaimer, the findings the composer allows, the evidence gaps."""
    parts = [DISCLAIMER]
    if any(o.rule == "verifier.fallback" for o in decision.overrides):
        parts.append(VERIFIER_FALLBACK_NOTICE)
    kept = numbered(_presentable(findings))
    parts.append(section(CONFIRMED_FINDINGS_HEADING, kept) if kept else NO_FINDINGS)
    gaps = _gap_lines(decision, contract)
    if gaps:
        parts.append(section(EVIDENCE_GAPS_HEADING, gaps))
    return "\n\n".join(parts)


def degraded_answer(
    decision: VerdictDecision,
    contract: ExecutorContract | None,
    gatekeeper: GatekeeperResult,
    direct_findings: Sequence[str],
) -> str:
    """REJECT: the header, directly supported findings, gaps and the fixed next steps."""
    facts = [] if gatekeeper.severity == "reject" else _bulleted(_presentable(direct_findings))
    if facts:
        confirmed = section(CONFIRMED_FACTS_HEADING, facts)
    else:
        confirmed = (
            NO_FACTS_AFTER_GATEKEEPER_REJECT if gatekeeper.severity == "reject" else NO_FINDINGS
        )
    return "\n\n".join(
        [
            DEGRADED_HEADER,
            confirmed,
            section(EVIDENCE_GAPS_HEADING, _gap_lines(decision, contract) or [NO_GAPS]),
            section(NEXT_STEPS_HEADING, _bulleted(FALLBACK_NEXT_STEPS)),
        ]
    )


def left_out_line(statements: int, dropped_claim_ids: Sequence[str]) -> str:
    """What a composed PASS answer left out, without quoting any of it ('' if nothing)."""
    lines = []
    if statements:
        lines.append(LEFT_OUT_STATEMENTS.format(count=statements))
    safe = [i for i in dropped_claim_ids if _SAFE_CLAIM_ID_RE.fullmatch(i)]
    if safe:
        lines.append(LEFT_OUT_CLAIMS.format(ids="、".join(safe)))
    return "\n".join(lines)


# --------------------------------------------------------------------------- content


def _gap_lines(decision: VerdictDecision, contract: ExecutorContract | None) -> list[str]:
    """One line per claim with a critical no_evidence fact, named by id and type, never
    quoted; one line for facts outside the claims."""
    claims = {c.claim_id: c for c in contract.claims} if contract is not None else {}
    gaps = [
        _claim_gap(claims.get(fact.claim_id or ""))
        for fact in decision.facts
        if fact.is_critical and fact.verification == "no_evidence"
    ]
    if any(override.rule == NO_CLAIM_IN_SCOPE for override in decision.overrides):
        gaps.append(NO_CLAIM_IN_SCOPE_GAP)  # a fixed line: a set-aside claim is never quoted
    return [f"- {gap}" for gap in dict.fromkeys(gaps)]


def _claim_gap(claim: Claim | None) -> str:
    if claim is None:
        return FACT_GAP
    if _SAFE_CLAIM_ID_RE.fullmatch(claim.claim_id):
        return CLAIM_GAP.format(claim_id=claim.claim_id, claim_type=claim.claim_type)
    return CLAIM_GAP_NO_ID.format(claim_type=claim.claim_type)


def _presentable(texts: Iterable[str | None]) -> list[str]:
    """One line each, no duplicates, nothing uninformative or looking like raw output."""
    kept: list[str] = []
    for text in texts:
        line = " ".join(strip_control(text or "").split())
        if line not in kept and is_presentable(line):
            kept.append(line)
    return kept


def is_presentable(text: str) -> bool:
    """Says something (a word, not just a slot or punctuation) and does not look raw."""
    informative = any(ch.isalnum() for ch in text) and not _PLACEHOLDER_RE.fullmatch(text)
    return informative and find_raw_leak(text) is None


# --------------------------------------------------------------------------- layout


def section(heading: str, lines: Sequence[str]) -> str:
    return "\n".join([heading, *lines])


def numbered(items: Sequence[str]) -> list[str]:
    return [f"{index}. {item}" for index, item in enumerate(items, start=1)]


def _bulleted(items: Sequence[str]) -> list[str]:
    return [f"- {item}" for item in items]


def _parses_as_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def check_route_matches_verdict(route: RouteDecision, decision: VerdictDecision) -> None:
    if route.action == "retry":
        raise ValueError("compose_answer: route 'retry' is not a final answer; run another round")
    expected = _EXPECTED_VERDICT[route.action]
    if decision.derived_verdict != expected:
        raise ValueError(
            f"compose_answer: route {route.action!r} needs derived_verdict {expected!r},"
            f" got {decision.derived_verdict!r}"
        )
