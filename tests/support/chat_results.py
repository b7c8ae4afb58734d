"""Real ChatResults for tests, built from the real core on the packaged default world.

Tool calls go through the recorder into a real in-memory store, citations through the
gatekeeper, the verdict is derived from a verifier output, and routing and the answer template
are the real ones. Only the model's words (contract, verifier output) are written by the test,
as a script would. The four sessions at the end mirror the seeds' acceptance matrix.
"""

from __future__ import annotations

from typing import Any

from pytest_diageval.agents.results import ChatResult, RoundResult, ToolCallSummary
from pytest_diageval.core.answer.composer import compose_answer
from pytest_diageval.core.answer.routing import build_retry_context, decide_route
from pytest_diageval.core.contract.contracts import ExecutorContract, ParseStatus, VerifierOutput
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.trace_summary import ToolTraceSummaryService
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.judge.gatekeeper import Gatekeeper, parse_failure_result
from pytest_diageval.core.judge.verdict import derive_verdict, fallback_decision
from support.contracts import contract as full_contract

__all__ = [
    "SESSION",
    "Run",
    "binding",
    "errored",
    "fact",
    "forged_reject",
    "highcpu_pass",
    "hikaricp_negative",
    "parse_failed",
    "verifier",
]

SESSION = "diag-test"


class Run:
    """One diagnosis session assembled round by round from the real core pieces."""

    def __init__(self, query: str) -> None:
        world = default_world()
        self.query = query
        self.store = Store()
        self.store.create_session(SESSION, query, world.now.isoformat())
        self.recorder = ToolInvocationRecorder(self.store, Toolbox(world), SESSION)
        self.rounds: list[RoundResult] = []
        self._calls: list[ToolCallSummary] = []
        self._call_count = 0

    def call(self, name: str, **arguments: Any) -> None:
        """The executor calls a tool in the round being built."""
        self._call_count += 1
        recorded = self.recorder.call(name, arguments, round=len(self.rounds) + 1)
        self._calls.append(
            ToolCallSummary(
                call_id=f"call_{self._call_count}",
                name=name,
                arguments=arguments,
                invocation_id=recorded.invocation_id,
                error=recorded.error_message,
            )
        )

    def finish_round(
        self, contract: dict[str, Any] | None, verifier: dict[str, Any] | None, raw: str = ""
    ) -> None:
        number = len(self.rounds) + 1
        parsed = None if contract is None else ExecutorContract.model_validate(contract)
        if parsed is None:
            status = ParseStatus(status="failed", detail="executor output is not JSON")
            gate = parse_failure_result(status.detail)
        else:
            status = ParseStatus(status="valid", detail="parsed as ExecutorContract")
            gate = Gatekeeper(self.store).check(parsed, SESSION)
        summary = ToolTraceSummaryService(self.store).build(SESSION)
        output = (
            None
            if verifier is None
            else VerifierOutput.model_validate(_resolve_trace_refs(verifier, summary))
        )
        ids = [row.id for row in self.store.list_invocations(SESSION)]
        decision = (
            fallback_decision("verifier output missing", gate)
            if output is None
            else derive_verdict(
                output,
                gate,
                summary,
                ids,
                parsed.claims if parsed is not None else (),
                invocations=self.store.list_invocations(SESSION),
            )
        )
        previous = self.rounds[-1] if self.rounds else None
        self.rounds.append(
            RoundResult(
                round=number,
                retry_context=None
                if previous is None
                else build_retry_context(previous.decision, previous.gatekeeper),
                plan=None,
                executor_final_answer=raw if parsed is None else parsed.user_facing_answer,
                executor_contract=parsed,
                parse_status=status,
                tool_calls=self._calls,
                gatekeeper=gate,
                tool_trace_summary=summary,
                verifier_output=output,
                verifier_failure=None if output is not None else "verifier output missing",
                decision=decision,
                route=decide_route(decision, number, verifier_fallback=output is None),
            )
        )
        self._calls = []

    def result(self) -> ChatResult:
        last = self.rounds[-1]
        composition = compose_answer(
            last.route,
            decision=last.decision,
            contract=last.executor_contract,
            executor_final_answer=last.executor_final_answer,
            gatekeeper=last.gatekeeper,
            invocations=self.store.list_invocations(SESSION),
            question=self.query,
        )
        return ChatResult(
            session_id=SESSION,
            query=self.query,
            status="completed",
            rounds=self.rounds,
            final_verdict=last.decision.derived_verdict,
            final_score=last.decision.derived_score,
            answer_kind="direct" if last.route.action == "direct" else last.route.action,
            final_answer=composition.answer,
            composer_output=composition.output,
            invocations=self.store.list_invocations(SESSION),
        )


def binding(invocation: int, raw_path: str, excerpt: str, tool: str) -> dict[str, Any]:
    return {
        "tool_name": tool,
        "source_invocation_id": invocation,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }


def fact(
    text: str,
    verification: str,
    ids: list[int],
    critical: bool = True,
    claim_id: str | None = None,
) -> dict[str, Any]:
    refs = [{"trace_ref": BY_ID, "source_invocation_ids": ids}] if ids else []
    return {
        "fact": text,
        "claim_id": claim_id,
        "is_critical": critical,
        "verification": verification,
        "detail": f"labelled {verification}",
        "evidence_refs": refs,
    }


BY_ID = "<the trace entry of the first id>"
"""A fact's ref before ``finish_round`` names the summary entry of its first invocation id."""


def _resolve_trace_refs(verifier: dict[str, Any], summary: list[Any]) -> dict[str, Any]:
    """``verifier`` with each :data:`BY_ID` ref naming the entry that holds its first id (a
    made-up trace ref is rejected: ``fact.trace_ref_unknown``)."""
    by_id = {i: item.trace_ref for item in summary for i in item.source_invocation_ids}
    facts = [
        {
            **fact,
            "evidence_refs": [
                {**ref, "trace_ref": by_id[ref["source_invocation_ids"][0]]}
                if ref["trace_ref"] == BY_ID
                else ref
                for ref in fact["evidence_refs"]
            ],
        }
        for fact in verifier["facts_checked"]
    ]
    return {**verifier, "facts_checked": facts}


def verifier(verdict: str, score: float, *facts: dict[str, Any]) -> dict[str, Any]:
    return {
        "verdict": verdict,
        "groundedness_score": score,
        "critical_fact_count": sum(1 for f in facts if f["is_critical"]),
        "facts_checked": list(facts),
        "rationale": "as labelled",
    }


def highcpu_pass() -> ChatResult:
    """Matrix 1: narrow HighCPUUsage on payment-service, one cited alert, PASS 1.0."""
    run = Run("只确认 payment-service 的 HighCPUUsage 告警")
    run.call("query_metrics", service="payment-service")
    run.call("get_current_time")
    excerpt = "CPU usage 92% on payment-service"
    contract = full_contract(
        [
            {
                "claim_id": "c1",
                "claim_type": "observation",
                "claim_text": "payment-service CPU 使用率 92%，超过阈值 80%，已持续 25m",
                "evidence_bindings": [binding(1, "$.alerts[0]", excerpt, "query_metrics")],
            }
        ],
        user_facing_answer="已确认：payment-service 的 HighCPUUsage 告警，CPU 92%，阈值 80%。",
    )
    facts = fact("payment-service CPU 92% 超过阈值 80%", "direct_evidence", [1], claim_id="c1")
    run.finish_round(contract, verifier("PASS", 1.0, facts))
    return run.result()


def hikaricp_negative() -> ChatResult:
    """Matrix 5: no HikariCP evidence on inventory-service; LOW_CONFID 0.0, retried once."""
    run = Run("请确认 inventory-service 是否存在 HikariCP 连接池耗尽，只确认这一件事。")
    contract = full_contract(
        [
            {
                "claim_id": "c1",
                "claim_type": "negative_observation",
                "claim_text": "inventory-service 日志中未检索到 HikariCP 相关记录",
                "support_level": "none",
            }
        ],
        user_facing_answer="未检索到 inventory-service 的 HikariCP 连接池证据。",
    )
    gap = fact("inventory-service 存在 HikariCP 连接池耗尽", "no_evidence", [])
    run.call("query_logs", service="inventory-service", keywords=["HikariCP"])
    run.finish_round(contract, verifier("LOW_CONFID", 0.0, gap))
    run.call("query_logs", service="inventory-service", keywords=["connection pool"])
    run.finish_round(contract, verifier("LOW_CONFID", 0.0, gap))
    return run.result()


def forged_reject() -> ChatResult:
    """Matrix 6: a forged raw path and an invented excerpt; the model says PASS, code REJECT."""
    run = Run("payment-service CPU 高的原因是什么？")
    run.call("query_metrics", service="payment-service")
    run.call("query_logs", service="order-service", keywords=["HikariCP"])
    contract = full_contract(
        [
            {
                "claim_id": "c1",
                "claim_type": "root_cause",
                "claim_text": "payment-service 因 HikariPool 连接池耗尽导致 CPU 飙升",
                "evidence_bindings": [binding(1, "$.alerts[99]", "CPU usage 92%", "query_metrics")],
            },
            {
                "claim_id": "c2",
                "claim_type": "observation",
                "claim_text": "order-service 连接池 active=50/50",
                "evidence_bindings": [
                    binding(2, "$.logs[0]", "payment-service deadlock detected", "query_logs")
                ],
            },
        ],
        user_facing_answer="根因是 HikariPool 连接池耗尽。",
    )
    facts = fact("payment-service CPU 高由连接池耗尽导致", "direct_evidence", [1, 2], claim_id="c1")
    run.finish_round(contract, verifier("PASS", 0.95, facts))
    return run.result()


def parse_failed() -> ChatResult:
    """Malformed executor output and a missing verifier output: LOW_CONFID fallback."""
    run = Run("order-service 内存为什么高？")
    run.call("query_metrics", service="order-service")
    run.finish_round(None, None, raw="我认为是内存泄漏 {not json")
    return run.result()


def errored() -> ChatResult:
    return ChatResult(
        session_id=SESSION,
        query="q",
        status="error",
        error="LLM unavailable (planner, round 1): connection refused",
    )
