"""Answer templates: direct, disclaimer and degraded text, and the raw-output guard."""

from __future__ import annotations

import json

import pytest

from pytest_diageval.core import templates
from pytest_diageval.core.contracts import (
    CheckedBinding,
    ExecutorContract,
    FactChecked,
    GatekeeperResult,
)
from pytest_diageval.core.routing import RouteDecision
from pytest_diageval.core.templates import (
    DEGRADED_HEADER,
    DISCLAIMER,
    EVIDENCE_GAPS_HEADING,
    FALLBACK_NEXT_STEPS,
    NEXT_STEPS_HEADING,
    RawLeakError,
    assert_no_raw_leak,
    find_raw_leak,
    is_evidence_gathering,
    render_answer,
)
from pytest_diageval.core.verdict import VerdictDecision, fallback_decision

ALERT = "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。"
HEAP = "order-service JVM 堆内存使用接近上限，当前为 3.8GB/4GB。"
RUNBOOK = "知识库排查手册建议结合 GC 日志判断内存压力来源。"
HIKARI_CLAIM = "order-service 的 HikariCP 连接池已耗尽（active=50/50），是慢响应的根因。"
HIKARI_FACT = "order-service HikariCP 连接池耗尽"
LEAK_CLAIM = "order-service 已确认存在内存泄漏。"
LEAK_FACT = "order-service 存在内存泄漏"
USER_FACING = "order-service 当前存在 HighMemoryUsage 告警（91%），JVM 堆内存 3.8GB/4GB。"
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

GATE_PASS = GatekeeperResult(status="pass", severity="none")
GATE_REJECT = GatekeeperResult(
    status="fail",
    severity="reject",
    failed_rules=["evidence.excerpt_mismatch"],
    checked_bindings=[
        CheckedBinding(
            claim_id="claim-3",
            tool_name="query_logs",
            source_invocation_id=2,
            raw_path="$.logs[0]",
            status="fail",
            grade="reject",
            rule="evidence.excerpt_mismatch",
        )
    ],
)


def _fact(text: str, verification: str, claim_id: str | None, critical: bool = True) -> FactChecked:
    return FactChecked(
        fact=text, is_critical=critical, verification=verification, claim_id=claim_id
    )


def _decision(verdict: str, score: float, facts: list[FactChecked]) -> VerdictDecision:
    return VerdictDecision(
        model_verdict=verdict,  # type: ignore[arg-type]
        model_score=score,
        derived_verdict=verdict,  # type: ignore[arg-type]
        derived_score=score,
        facts=facts,
    )


def _route(action: str) -> RouteDecision:
    return RouteDecision(action=action, reason="test", round=1)  # type: ignore[arg-type]


PASS_DECISION = _decision(
    "PASS",
    1.0,
    [_fact(ALERT, "direct_evidence", "claim-1"), _fact(HEAP, "direct_evidence", "claim-2")],
)
# The verifier supported claims 1 (direct) and 2 (indirect), found no evidence for the
# HikariCP root cause (claim 3) and never looked at claim 4.
LOW_DECISION = _decision(
    "LOW_CONFID",
    0.5333,
    [
        _fact(ALERT, "direct_evidence", "claim-1"),
        _fact(HEAP, "indirect_support", "claim-2"),
        _fact(HIKARI_FACT, "no_evidence", "claim-3"),
        _fact(RUNBOOK, "indirect_support", None, critical=False),
    ],
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
    }
    arguments.update(kwargs)
    return render_answer(_route(action), **arguments)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- direct


def test_direct_shows_the_contract_user_facing_answer() -> None:
    assert _render("direct", PASS_DECISION) == USER_FACING


def test_direct_without_a_contract_shows_a_prose_final_answer() -> None:
    prose = "order-service 存在 HighMemoryUsage 告警，内存使用率 91%。"
    assert _render("direct", PASS_DECISION, contract=None, executor_final_answer=prose) == prose


def test_direct_never_shows_raw_json_and_lists_supported_findings_instead() -> None:
    answer = _render("direct", PASS_DECISION, contract=None)
    assert answer == f"已确认的发现：\n1. {ALERT}\n2. {HEAP}"
    json_answer = CONTRACT.model_copy(update={"user_facing_answer": '{"answer": "ok"}'})
    assert _render("direct", PASS_DECISION, contract=json_answer).startswith("已确认的发现：")


# --------------------------------------------------------------------------- disclaimer


def test_disclaimer_lists_supported_claims_and_verifier_gaps_only() -> None:
    answer = _render("disclaimer", LOW_DECISION)
    assert answer == (
        f"{DISCLAIMER}\n\n"
        f"已确认的发现：\n1. {ALERT}\n2. {HEAP}\n3. {RUNBOOK}\n\n"
        f"{EVIDENCE_GAPS_HEADING}\n- {HIKARI_FACT}（未找到支持该结论的工具证据）"
    )
    for unsupported in (HIKARI_CLAIM, LEAK_CLAIM, "内存泄漏", USER_FACING, "缺少堆 dump"):
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
    answer = _render("disclaimer", LOW_DECISION, gatekeeper=gate)
    assert ALERT in answer
    assert HEAP not in answer


def test_disclaimer_after_a_verifier_fallback_confirms_nothing() -> None:
    answer = _render("disclaimer", fallback_decision("no verifier output", GATE_PASS))
    assert answer == (
        f"{DISCLAIMER}\n\n（核验步骤未能完成，本次回答中的任何结论都未经核验。）\n\n"
        "已确认的发现：\n（暂无经核验确认的发现。）"
    )


# --------------------------------------------------------------------------- degraded


def test_degraded_shows_direct_facts_gaps_and_evidence_gathering_steps_only() -> None:
    answer = _render("degraded", REJECT_DECISION)
    assert answer == (
        f"{DEGRADED_HEADER}\n\n"
        f"已确认的事实：\n- {ALERT}\n\n"
        f"{EVIDENCE_GAPS_HEADING}\n- {LEAK_FACT}（未找到支持该结论的工具证据）\n\n"
        f"{NEXT_STEPS_HEADING}\n- {GATHER}"
    )
    for hidden in (HEAP, HIKARI_FACT, HIKARI_CLAIM, FIX, USER_FACING):
        assert hidden not in answer


def test_degraded_after_a_gatekeeper_reject_shows_no_fact_and_fixed_steps() -> None:
    answer = _render("degraded", REJECT_DECISION, gatekeeper=GATE_REJECT)
    assert "（执行器引用的证据未能通过核验，本次不展示任何结论。）" in answer
    for hidden in (ALERT, HEAP, HIKARI_FACT, GATHER, FIX):
        assert hidden not in answer
    assert answer.endswith("\n".join(f"- {step}" for step in FALLBACK_NEXT_STEPS))


def test_degraded_without_gathering_actions_falls_back_to_fixed_steps() -> None:
    only_fix = CONTRACT.model_copy(
        update={"recommended_actions": [CONTRACT.recommended_actions[1]]}
    )
    answer = _render("degraded", REJECT_DECISION, contract=only_fix)
    assert FIX not in answer
    assert FALLBACK_NEXT_STEPS[0] in answer


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
    )
    answer = _render("disclaimer", leaky)
    assert find_raw_leak(answer) is None
    assert "alerts" not in answer
    assert EVIDENCE_GAPS_HEADING not in answer


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
    monkeypatch.setattr(templates, "NO_FINDINGS", "（见 evidence_refs）")
    with pytest.raises(RawLeakError, match="evidence_refs"):
        _render("disclaimer", fallback_decision("no verifier output", GATE_PASS))


def test_assert_no_raw_leak_raises_with_the_reason() -> None:
    assert_no_raw_leak(USER_FACING)
    with pytest.raises(RawLeakError, match="a whole JSON value"):
        assert_no_raw_leak(RAW_FINAL_ANSWER)


@pytest.mark.parametrize(
    ("action", "gathers"),
    [
        (GATHER, True),
        ("查询 user-service 在 11:00-11:20 的慢请求日志", True),
        ("Check HikariCP pool metrics for order-service", True),
        (FIX, False),
        ("确认后回滚 payment-service 的最近一次发布", False),
        ("扩容 user-service 实例", False),
        ("关注后续情况", False),  # names no way to gather evidence
        *[(step, True) for step in FALLBACK_NEXT_STEPS],
    ],
)
def test_is_evidence_gathering_table(action: str, gathers: bool) -> None:
    assert is_evidence_gathering(action) is gathers
