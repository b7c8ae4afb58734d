"""The composer and its templates: direct, disclaimer and degraded answers, rendered from the
cited items (never the executor's prose), and the raw-output guard. Decisions are hand-built;
their claim ceilings come from the real ``claim_ceilings`` over the gatekeeper rows given; the
invocation rows carry real tool outputs (the recorder's own refs and items)."""

from __future__ import annotations

import dataclasses
import datetime
import json

import pytest

from pytest_diageval.core.answer import answer_templates, wording
from pytest_diageval.core.answer.answer_templates import (
    DEGRADED_HEADER,
    DISCLAIMER,
    EVIDENCE_GAPS_HEADING,
    FACT_GAP,
    FALLBACK_NEXT_STEPS,
    NEXT_STEPS_HEADING,
    NO_FINDINGS,
    RawLeakError,
    assert_no_raw_leak,
    find_raw_leak,
)
from pytest_diageval.core.answer.composer import compose_answer, confirmed_part
from pytest_diageval.core.answer.confirmed import render_confirmed
from pytest_diageval.core.answer.routing import RouteDecision
from pytest_diageval.core.contract.contracts import (
    CheckedBinding,
    ExecutorContract,
    FactChecked,
    GatekeeperResult,
    RetrievalDetails,
    ToolInvocation,
    ToolTraceSummaryItem,
    VerifierOutput,
)
from pytest_diageval.core.evidence.recorder import extract_evidence_items, extract_evidence_refs
from pytest_diageval.core.judge.claim_support import claim_ceilings
from pytest_diageval.core.judge.verdict import VerdictDecision, derive_verdict, fallback_decision

ALERT = "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。"
HEAP = "order-service JVM 堆内存使用接近上限，当前为 3.8GB/4GB。"
RUNBOOK = "知识库排查手册建议结合 GC 日志判断内存压力来源。"
HIKARI_CLAIM = "order-service 的 HikariCP 连接池已耗尽（active=50/50），是慢响应的根因。"
HIKARI_FACT = "order-service HikariCP 连接池耗尽"
LEAK_CLAIM = "order-service 已确认存在内存泄漏。"
LEAK_FACT = "order-service 存在内存泄漏"
USER_FACING = "order-service 当前存在 HighMemoryUsage 告警（91%）。JVM 堆内存当前为 3.8GB/4GB。"
GATHER = "继续查看 order-service 的 GC 日志、堆 dump 或对象分配统计。"
FIX = "重启 order-service 并调大 JVM 堆内存到 8GB。"


def _binding(invocation: int, path: str, excerpt: str) -> dict[str, object]:
    tool = "query_metrics" if path.startswith("$.alerts") else "query_logs"
    return {
        "tool_name": tool,
        "source_invocation_id": invocation,
        "raw_path": path,
        "evidence_excerpt": excerpt,
    }


CONTRACT = ExecutorContract.model_validate(
    {
        "answer_version": "2",
        "diagnosis_summary": "order-service 内存告警",
        "claims": [
            {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim_text": ALERT,
                "evidence_bindings": [
                    _binding(1, "$.alerts[1]", "HighMemoryUsage firing, current=91%")
                ],
            },
            {
                "claim_id": "claim-2",
                "claim_type": "observation",
                "claim_text": HEAP,
                "evidence_bindings": [_binding(1, "$.alerts[1]", "JVM heap usage 3.8GB/4GB")],
            },
            {
                "claim_id": "claim-3",
                "claim_type": "root_cause",
                "claim_text": HIKARI_CLAIM,
                "evidence_bindings": [_binding(2, "$.logs[0]", "HikariPool-1 active=50/50")],
            },
            {
                "claim_id": "claim-4",
                "claim_type": "root_cause",
                "claim_text": LEAK_CLAIM,
                "evidence_bindings": [_binding(1, "$.alerts[1]", "JVM heap usage 3.8GB/4GB")],
            },
        ],
        "hypotheses": [{"hypothesis_text": "order-service 可能存在内存泄漏风险。"}],
        "recommended_actions": [
            {"action_id": "action-1", "action_text": GATHER},
            {"action_id": "action-2", "action_text": FIX},
        ],
        "missing_info": ["缺少堆 dump"],
        "user_facing_answer": USER_FACING,
    }
)
RAW_FINAL_ANSWER = json.dumps(CONTRACT.model_dump(), ensure_ascii=False)

MEMORY_ALERT = {
    "alert_name": "HighMemoryUsage",
    "service": "order-service",
    "state": "firing",
    "severity": "critical",
    "current": "91%",
    "threshold": "85%",
    "duration": "15m",
    "description": "JVM heap usage 3.8GB/4GB",
}
CPU_ALERT = {**MEMORY_ALERT, "alert_name": "HighCPUUsage", "service": "payment-service"}
POOL_LOG = {
    "timestamp": "2026-07-08T11:14:02+08:00",
    "level": "WARN",
    "service": "order-service",
    "message": "HikariCP pool stats: HikariPool-1 active=50/50, idle=0, waiting=32",
}


def _row(invocation: int, tool: str, output: dict[str, object]) -> ToolInvocation:
    details = RetrievalDetails(
        evidence_status="supported",
        evidence_refs=extract_evidence_refs(tool, output),
        evidence_items=extract_evidence_items(tool, output),
    )
    return ToolInvocation(
        id=invocation,
        session_id="s",
        round=1,
        tool_name=tool,
        input_params={"service": "order-service"},
        duration_ms=1,
        success=True,
        retrieval_details=details,
    )


ROWS = [
    _row(1, "query_metrics", {"alerts": [CPU_ALERT, MEMORY_ALERT]}),
    _row(2, "query_logs", {"logs": [POOL_LOG]}),
]
# The one item claims 1, 2 and 4 cite, rendered from its fields (one line, merged).
ALERT_LINE = (
    "告警 HighMemoryUsage：触发中，级别 critical，当前 91%，阈值 85%，持续 15m"
    "（来源：query_metrics #1 $.alerts[1]）"
)
RENDERED = f"{wording.ZH.confirmed_heading}\norder-service：\n- {ALERT_LINE}"


def _rows(failing: str | None = None) -> list[CheckedBinding]:
    """One gatekeeper row per binding of CONTRACT; the claim ``failing`` fails excerpt_mismatch."""
    rows = []
    for claim in CONTRACT.claims:
        for b in claim.evidence_bindings:
            fails = claim.claim_id == failing
            rows.append(
                CheckedBinding(
                    claim_id=claim.claim_id,
                    tool_name=b.tool_name,
                    source_invocation_id=b.source_invocation_id,
                    raw_path=b.raw_path,
                    evidence_excerpt=b.evidence_excerpt,
                    status="fail" if fails else "pass",
                    grade="reject" if fails else "none",
                    rule="evidence.excerpt_mismatch" if fails else None,
                    matched_text=None if fails else b.evidence_excerpt,
                )
            )
    return rows


GATE_PASS = GatekeeperResult(status="pass", severity="none", checked_bindings=_rows())
GATE_REJECT = GatekeeperResult(
    status="fail",
    severity="reject",
    failed_rules=["evidence.excerpt_mismatch"],
    checked_bindings=_rows(failing="claim-3"),
)


def _fact(text: str, verification: str, claim_id: str | None, critical: bool = True) -> FactChecked:
    return FactChecked(
        fact=text, is_critical=critical, verification=verification, claim_id=claim_id, detail="-"
    )


def _decision(
    verdict: str,
    score: float,
    facts: list[FactChecked],
    incident: list[int] | None = None,
    gate: GatekeeperResult = GATE_PASS,
) -> VerdictDecision:
    return VerdictDecision(
        model_verdict=verdict,  # type: ignore[arg-type]
        model_score=score,
        derived_verdict=verdict,  # type: ignore[arg-type]
        derived_score=score,
        facts=facts,
        incident_evidence_facts=incident or [],
        claim_ceilings=list(claim_ceilings(CONTRACT.claims, gate, []).values()),
    )


def _route(action: str) -> RouteDecision:
    return RouteDecision(action=action, reason="test", round=1)  # type: ignore[arg-type]


PASS_DECISION = _decision(
    "PASS",
    1.0,
    [_fact(ALERT, "direct_evidence", "claim-1"), _fact(HEAP, "direct_evidence", "claim-2")],
    incident=[0, 1],
)
# The verifier supported claims 1 (direct) and 2 (indirect), found no evidence for the
# HikariCP root cause (claim 3) and never looked at claim 4; the runbook fact cites only a
# runbook entry, so it is not among the facts that cite incident evidence.
LOW_DECISION = _decision(
    "LOW_CONFID",
    0.5333,
    [
        _fact(ALERT, "direct_evidence", "claim-1"),
        _fact(HEAP, "indirect_support", "claim-2"),
        _fact(HIKARI_FACT, "no_evidence", "claim-3"),
        _fact(RUNBOOK, "indirect_support", None, critical=False),
    ],
    incident=[0, 1],
)
REJECT_DECISION = _decision(
    "REJECT",
    0.0,
    [
        _fact(ALERT, "direct_evidence", "claim-1"),
        _fact(HEAP, "indirect_support", "claim-2"),
        _fact(HIKARI_FACT, "contradicted", "claim-3"),
        _fact(LEAK_FACT, "no_evidence", "claim-4"),
    ],
)


def _render(action: str, decision: VerdictDecision, **kwargs: object) -> str:
    arguments: dict[str, object] = {
        "decision": decision,
        "contract": CONTRACT,
        "executor_final_answer": RAW_FINAL_ANSWER,
        "gatekeeper": GATE_PASS,
        "invocations": ROWS,
        "question": "order-service 是否存在 HighMemoryUsage 告警？",
    }
    arguments.update(kwargs)
    return compose_answer(_route(action), **arguments).answer  # type: ignore[arg-type]


# --------------------------------------------------------------------------- direct


def test_direct_renders_the_cited_item_never_the_user_facing_answer() -> None:
    answer = _render("direct", PASS_DECISION)
    # claims 3 and 4 were never checked by the verifier: named by position, never quoted
    assert answer == f"{RENDERED}\n\n未通过核验、未列入的声明：claim-3、claim-4。"
    for prose in (USER_FACING, ALERT, HEAP):
        assert prose not in answer


def test_direct_without_a_contract_has_nothing_verified_to_show() -> None:
    prose = "order-service 存在 HighMemoryUsage 告警，内存使用率 91%。"
    answer = _render("direct", PASS_DECISION, contract=None, executor_final_answer=prose)
    assert answer == answer_templates.NO_DIRECT_ANSWER


def test_direct_never_shows_raw_json_and_renders_the_verified_evidence_instead() -> None:
    json_answer = CONTRACT.model_copy(update={"user_facing_answer": '{"answer": "ok"}'})
    answer = _render("direct", PASS_DECISION, contract=json_answer)
    assert answer.startswith(f"{RENDERED}\n\n")


# --------------------------------------------------------------------------- disclaimer


def test_disclaimer_lists_supported_claims_and_verifier_gaps_only() -> None:
    answer = _render("disclaimer", LOW_DECISION)
    assert answer == (
        f"{DISCLAIMER}\n\n{RENDERED}\n\n"
        f"{EVIDENCE_GAPS_HEADING}\n- claim-3（root_cause）缺少工具证据"
    )
    # The runbook fact is supported, but runbook guidance is never a confirmed finding; the
    # gap names the unsupported claim, never its text or the verifier's wording of it.
    for unsupported in (
        HIKARI_CLAIM, HIKARI_FACT, LEAK_CLAIM, "内存泄漏", USER_FACING, "缺少堆 dump", RUNBOOK
    ):  # fmt: skip
        assert unsupported not in answer


def test_disclaimer_drops_a_claim_whose_binding_failed_the_gatekeeper() -> None:
    gate = GatekeeperResult(
        status="fail",
        severity="low_confid",
        failed_rules=["evidence.raw_path_missing"],
        checked_bindings=[
            CheckedBinding(claim_id="claim-2", status="fail", rule="evidence.raw_path_missing")
        ],
    )
    composition = compose_answer(
        _route("disclaimer"),
        decision=LOW_DECISION,
        contract=CONTRACT,
        gatekeeper=gate,
        invocations=ROWS,
    )
    # claim-1's own binding cites the alert (no row of it failed); claim-2 is dropped.
    assert composition.output.claims_used == ["claim-1"]
    assert [d.claim_id for d in composition.output.claims_dropped][:1] == ["claim-2"]
    assert HEAP not in composition.answer


def test_disclaimer_after_a_verifier_fallback_confirms_nothing() -> None:
    answer = _render("disclaimer", fallback_decision("no verifier output", GATE_PASS))
    assert answer == (
        f"{DISCLAIMER}\n\n（核验步骤未能完成，本次回答中的任何结论都未经核验。）\n\n"
        "（暂无经核验确认的发现。）"
    )
    assert "已确认" not in answer  # the heading stands only above verified claims


# --------------------------------------------------------------------------- degraded


def test_degraded_shows_direct_facts_gaps_by_claim_id_and_the_fixed_steps_only() -> None:
    answer = _render("degraded", REJECT_DECISION)
    assert answer == (
        f"{DEGRADED_HEADER}\n\n"
        f"{wording.ZH.confirmed_facts_heading}\norder-service：\n- {ALERT_LINE}\n\n"
        f"{EVIDENCE_GAPS_HEADING}\n- claim-4（root_cause）缺少工具证据\n\n"
        f"{NEXT_STEPS_HEADING}\n" + "\n".join(f"- {step}" for step in FALLBACK_NEXT_STEPS)
    )
    # Even the executor's evidence-gathering action is its word: only the fixed list shows.
    for hidden in (ALERT, HEAP, HIKARI_FACT, HIKARI_CLAIM, LEAK_FACT, LEAK_CLAIM, FIX, GATHER):
        assert hidden not in answer


def test_degraded_after_a_gatekeeper_reject_shows_no_fact_and_fixed_steps() -> None:
    answer = _render("degraded", REJECT_DECISION, gatekeeper=GATE_REJECT)
    assert "（执行器引用的证据未能通过核验，本次不展示任何结论。）" in answer
    for hidden in (ALERT, ALERT_LINE, HEAP, HIKARI_FACT, GATHER, FIX):
        assert hidden not in answer
    assert answer.endswith("\n".join(f"- {step}" for step in FALLBACK_NEXT_STEPS))


def test_degraded_with_no_supported_fact_has_no_confirmed_heading() -> None:
    nothing = _decision("REJECT", 0.0, [_fact(LEAK_FACT, "contradicted", "claim-4")])
    answer = _render("degraded", nothing)
    assert f"{DEGRADED_HEADER}\n\n{NO_FINDINGS}\n\n" in answer
    assert "已确认" not in answer


# --------------------------------------------------------------------------- derived facts

# What the probe saw: an executor root cause the verifier never checked.
PROBE_CLAIM = "根因已确认: order-service HikariCP 连接池耗尽 active=50/50, 立即重启"
UNCHECKED_GAP = "- claim-3（root_cause）缺少工具证据"
GATE_PARSE_FAILED = GatekeeperResult(
    status="fail", severity="low_confid", failed_rules=["executor.parse_failed"]
)


def _entry(trace_ref: str, tool: str, invocation: int, level: str) -> ToolTraceSummaryItem:
    return ToolTraceSummaryItem(
        trace_ref=trace_ref,
        tool_name=tool,
        source_invocation_ids=[invocation],
        success=True,
        input_summary="service=order-service",
        output_summary=f"{tool} summary",
        evidence_level=level,  # type: ignore[arg-type]
        invocation_count=1,
        no_hit_invocation_count=0,
        failed_invocation_count=0,
    )


SUMMARY = [
    _entry("trace-1", "query_metrics", 1, "direct"),
    _entry("trace-2", "query_logs", 2, "direct"),
    _entry("trace-3", "lookup_knowledge", 3, "indirect"),
]


def _checked(text: str, label: str, trace: str, claim_id: str | None) -> dict[str, object]:
    invocation = int(trace.removeprefix("trace-"))
    return {
        "fact": text,
        "claim_id": claim_id,
        "is_critical": True,
        "verification": label,
        "detail": f"labelled {label}",
        "evidence_refs": [{"trace_ref": trace, "source_invocation_ids": [invocation]}],
    }


def _derive(
    facts: list[dict[str, object]], gate: GatekeeperResult, contract: ExecutorContract | None
) -> VerdictDecision:
    output = VerifierOutput.model_validate(
        {
            "verdict": "PASS",
            "groundedness_score": 1.0,
            "critical_fact_count": len(facts),
            "facts_checked": facts,
            "rationale": "checked",
        }
    )
    claims = contract.claims if contract is not None else []
    return derive_verdict(output, gate, SUMMARY, {1, 2, 3}, claims)


def _probe_contract(claim_id: str = "claim-3") -> ExecutorContract:
    claims = [c.model_copy() for c in CONTRACT.claims[:2]]
    root = CONTRACT.claims[2].model_copy(update={"claim_id": claim_id, "claim_text": PROBE_CLAIM})
    return CONTRACT.model_copy(update={"claims": [*claims, root]})


# The verifier checked claims 1 and 2 and never looked at claim 3, the probe's root cause.
CHECKED_1_2 = [
    _checked(ALERT, "direct_evidence", "trace-1", "claim-1"),
    _checked(HEAP, "direct_evidence", "trace-1", "claim-2"),
]


def test_disclaimer_names_an_unchecked_claim_without_quoting_it() -> None:
    contract = _probe_contract()
    decision = _derive(CHECKED_1_2, GATE_PASS, contract)
    # The audit record keeps the claim text; the answer never shows it.
    assert (decision.facts[2].fact, decision.derived_verdict) == (PROBE_CLAIM, "LOW_CONFID")
    answer = _render("disclaimer", decision, contract=contract)
    assert answer == f"{DISCLAIMER}\n\n{RENDERED}\n\n{EVIDENCE_GAPS_HEADING}\n{UNCHECKED_GAP}"
    assert "HikariCP" not in answer


def test_degraded_after_a_gatekeeper_reject_names_an_unchecked_claim_without_quoting_it() -> None:
    contract = _probe_contract()
    decision = _derive(CHECKED_1_2, GATE_REJECT, contract)
    assert decision.derived_verdict == "REJECT"
    answer = _render("degraded", decision, contract=contract, gatekeeper=GATE_REJECT)
    assert f"{EVIDENCE_GAPS_HEADING}\n{UNCHECKED_GAP}\n\n" in answer
    for hidden in (PROBE_CLAIM, "HikariCP", "立即重启", ALERT, ALERT_LINE):
        assert hidden not in answer


@pytest.mark.parametrize(
    "claim_id", ["根因 HikariCP 连接池耗尽", "restart-order-service", "rollback-v2.3.1-now"]
)
def test_an_unchecked_claim_is_named_by_its_position_never_by_its_own_id(claim_id: str) -> None:
    contract = _probe_contract(claim_id=claim_id)
    answer = _render("disclaimer", _derive(CHECKED_1_2, GATE_PASS, contract), contract=contract)
    assert answer.endswith(f"{EVIDENCE_GAPS_HEADING}\n- claim-3（root_cause）缺少工具证据")
    for hidden in ("HikariCP", "restart", "rollback", claim_id):
        assert hidden not in answer


def test_without_a_contract_no_fact_is_ever_confirmed() -> None:
    facts = [
        _checked(ALERT, "direct_evidence", "trace-1", None),
        _checked(RUNBOOK, "indirect_support", "trace-3", None),
        _checked(HEAP, "direct_evidence", "trace-2", "claim-7"),  # no such contract claim
    ]
    decision = _derive(facts, GATE_PARSE_FAILED, None)
    # The fact naming claim-7 supports nothing (fact.claim_unknown): (1 + 0.6 + 0) / 3.
    assert (decision.derived_verdict, decision.derived_score) == ("LOW_CONFID", 0.5333)
    answer = _render("disclaimer", decision, contract=None)
    # Without a parsed contract no claim was checked by code: the verifier's facts are its
    # word alone, so none is listed, the incident ones no more than the runbook one; the
    # rejected one is a gap, named generically.
    assert answer == f"{DISCLAIMER}\n\n{NO_FINDINGS}\n\n{EVIDENCE_GAPS_HEADING}\n- {FACT_GAP}"


def test_a_placeholder_fact_copied_from_the_prompt_is_never_shown() -> None:
    # Recorded in live-forged-trap: the verifier echoed its prompt's example fact.
    facts = [
        _checked("<事实>", "direct_evidence", "trace-2", None),
        _checked("‹事实›", "direct_evidence", "trace-2", None),
        _checked("……", "direct_evidence", "trace-1", None),
        _checked("<依据>", "no_evidence", "trace-2", None),
    ]
    decision = _derive(facts, GATE_PARSE_FAILED, None)
    assert decision.incident_evidence_facts == [0, 1, 2, 3]
    answer = _render("disclaimer", decision, contract=None)
    # The no_evidence placeholder is a fact outside any claim: named generically, not quoted.
    assert answer == f"{DISCLAIMER}\n\n{NO_FINDINGS}\n\n{EVIDENCE_GAPS_HEADING}\n- {FACT_GAP}"


# --------------------------------------------------------------------------- guards


def test_render_refuses_retry_and_a_route_that_contradicts_the_verdict() -> None:
    with pytest.raises(ValueError, match="retry"):
        _render("retry", LOW_DECISION)
    with pytest.raises(ValueError, match="needs derived_verdict 'PASS'"):
        _render("direct", REJECT_DECISION)


def test_model_text_that_looks_raw_never_reaches_an_answer() -> None:
    leaky = _decision(
        "LOW_CONFID",
        0.6,
        [
            _fact('{"alerts": [{"name": "HighMemoryUsage"}]}', "indirect_support", None),
            _fact("raw_path $.alerts[1] 显示 91%", "indirect_support", None),
            _fact("```json```", "no_evidence", None),
        ],
        incident=[0, 1, 2],  # cited incident evidence: only the raw-output guard drops them
    )
    answer = _render("disclaimer", leaky)
    assert find_raw_leak(answer) is None
    assert "alerts" not in answer
    assert answer.endswith(f"{EVIDENCE_GAPS_HEADING}\n- {FACT_GAP}")


@pytest.mark.parametrize(
    ("text", "leak"),
    [
        ('{"verdict": "PASS"}', "a whole JSON value"),
        ("[1, 2, 3]", "a whole JSON value"),
        ('结论如下 {"claims": [', "a JSON object key ('\"claims\":')"),
        ("结果 [{} ]", "a JSON array of objects ('[{')"),
        ("```\nlogs\n```", "code fence"),
        ("见 $.logs[0]", "a raw evidence path ('$.logs[')"),
        ("claim_id 为 claim-1", "a machine field name ('claim_id')"),
        ("order-service 内存使用率 91%，JVM 堆内存 3.8GB/4GB。", None),
        ("【低置信度提示】P99 为 4.2s（阈值 3s）", None),
        ("日志显示 [WARN] 内存使用率过高", None),
    ],
)
def test_find_raw_leak_table(text: str, leak: str | None) -> None:
    assert find_raw_leak(text) == leak


def test_render_checks_the_finished_answer_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only fixed text is left unscreened; if it ever carried machine output, rendering stops.
    broken = dataclasses.replace(wording.ZH, no_findings="（见 evidence_refs）")
    monkeypatch.setattr(wording, "ZH", broken)
    with pytest.raises(RawLeakError, match="evidence_refs"):
        _render("disclaimer", fallback_decision("no verifier output", GATE_PASS))


def test_assert_no_raw_leak_raises_with_the_reason() -> None:
    assert_no_raw_leak(USER_FACING)
    with pytest.raises(RawLeakError, match="a whole JSON value"):
        assert_no_raw_leak(RAW_FINAL_ANSWER)


@pytest.mark.parametrize(
    ("text", "stripped"),
    [
        ("内存\u202e91%", "内存91%"),  # right-to-left override
        ("order\u200b-service", "order-service"),  # zero-width space
        ("\u2066告警\u2069", "告警"),  # isolates
        ("内\u200d存", "内存"),  # zero-width joiner
        ("a\u061cb", "ab"),  # Arabic letter mark
        ("a\x00b\x1bc", "abc"),  # C0 controls
        ("a\ue000b", "ab"),  # private use
        ("第一行\n第二行\t完", "第一行\n第二行\t完"),  # newline and tab stay
        ("告警 😀 91%", "告警 😀 91%"),  # visible symbols stay
    ],
)
def test_strip_control_table(text: str, stripped: str) -> None:
    assert answer_templates.strip_control(text) == stripped


@pytest.mark.parametrize(
    ("text", "hides"),
    [
        ("order-service ~~未~~发现告警", True),
        ("<del>未</del>发现", True),
        ("未\u0336发现", True),
        ("order-service 未发现告警", False),
    ],
)
def test_hides_text_table(text: str, hides: bool) -> None:
    assert answer_templates.hides_text(text) is hides


def test_an_english_question_is_answered_in_english() -> None:
    """The question's language decides the fixed texts and the labels of every rendered
    field; the item's own values (its message, its numbers) are never translated."""
    answer = _render(
        "disclaimer", LOW_DECISION, question="Is there a HighMemoryUsage alert on order-service?"
    )
    assert answer == (
        f"{wording.EN.disclaimer}\n\n{wording.EN.confirmed_heading}\norder-service:\n"
        "- Alert HighMemoryUsage: firing, severity critical, current 91%, threshold 85%, for 15m"
        " (source: query_metrics #1 $.alerts[1])\n\n"
        f"{wording.EN.evidence_gaps_heading}\n- claim-3 (root_cause) has no tool evidence"
    )


def test_a_log_time_is_shown_in_the_worlds_zone_and_the_zone_is_said_once() -> None:
    utc_log = {**POOL_LOG, "timestamp": "2026-07-08T03:14:02+00:00"}
    rows = [ROWS[0], _row(2, "query_logs", {"logs": [utc_log]})]
    zone = datetime.timezone(datetime.timedelta(hours=8))
    evidence = render_confirmed(["claim-3"], GATE_PASS, rows, wording.ZH, zone=zone)
    assert evidence.groups["order-service"] == [
        "日志 2026-07-08 11:14:02 WARN：HikariCP pool stats: HikariPool-1 active=50/50, idle=0,"
        " waiting=32（来源：query_logs #2 $.logs[0]）"
    ]
    assert evidence.timed
    assert confirmed_part(evidence, wording.ZH, "heading", zone)[-1] == "（时间均为 UTC+08:00）"
    alert_only = render_confirmed(["claim-1"], GATE_PASS, rows, wording.ZH, zone=zone)
    assert "（时间均为 UTC+08:00）" not in confirmed_part(alert_only, wording.ZH, "heading", zone)
