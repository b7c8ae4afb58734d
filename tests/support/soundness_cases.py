"""The generated cases of the soundness property (tests/core/answer/test_soundness_property.py).

One session of the default world, built once (nothing after the tool calls writes to the
store), the text pools whose provenance the property judges by, the generated contract and
verifier output, and the pure core pipeline chained as ``ChatService`` chains it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_diageval.core.answer.composer import Composition, compose_answer
from pytest_diageval.core.answer.routing import decide_route
from pytest_diageval.core.contract.contracts import (
    ExecutorContract,
    GatekeeperResult,
    ToolTraceSummaryItem,
    VerifierOutput,
)
from pytest_diageval.core.evidence.recorder import ToolInvocationRecorder
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.trace_summary import ToolTraceSummaryService
from pytest_diageval.core.evidence.world import default_world
from pytest_diageval.core.judge.gatekeeper import Gatekeeper
from pytest_diageval.core.judge.verdict import VerdictDecision, derive_verdict

__all__ = [
    "ACTIONS",
    "CLAIM_TEXTS",
    "EXTRAS",
    "FRAMING",
    "HEDGES",
    "HIDDEN",
    "INCIDENT_REFS",
    "NEGATIVE_KEYS",
    "NO_HIT_ID",
    "PARAPHRASES",
    "RUNBOOK_REFS",
    "SESSION",
    "TEMPLATE",
    "TRACE_REFS",
    "GenBinding",
    "GenClaim",
    "Generated",
    "Outcome",
    "Piece",
    "Ref",
    "clean",
    "run_pipeline",
]

SESSION = "soundness"
# The session every example replays: ids 1..5 in this order.
CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("query_metrics", {"service": "order-service"}),  # 1: $.alerts[0] HighMemoryUsage
    ("query_logs", {"service": "order-service", "keywords": ["内存"]}),  # 2: $.logs[0..4]
    ("lookup_knowledge", {"query": "HighMemoryUsage"}),  # 3: runbook blocks
    ("query_logs", {"service": "inventory-service", "keywords": ["HikariCP"]}),  # 4: no hit
    ("query_metrics", {"service": "payment-service"}),  # 5: $.alerts[0] HighCPUUsage
)
NO_HIT_ID = 4
INCIDENT_TOOLS = frozenset({"query_metrics", "query_logs"})

# Claim texts by key. A negative observation grounds only on the no-hit of what it names:
# invocation 4 searched inventory-service for HikariCP, so "neg_inventory" can, "neg_order"
# (order-service, which does have pool errors) cannot.
CLAIM_TEXTS: dict[str, str] = {
    "memory": "order-service 当前存在 HighMemoryUsage 告警，内存使用率达到 91%。",
    "full_gc": "order-service 过去10分钟内发生 15 次 Full GC，平均耗时 850ms。",
    "cpu": "payment-service 当前存在 HighCPUUsage 告警，CPU 使用率 92%。",
    "leak": "order-service 的内存泄漏是本次告警的根因。",
    "neg_inventory": "inventory-service 日志中未检索到 HikariCP 连接池耗尽的真实证据。",
    "neg_order": "order-service 日志中未检索到 HikariCP 连接池耗尽的真实证据。",
}
NEGATIVE_KEYS = ("neg_inventory", "neg_order")
GROUNDED_NEGATIVE_KEYS = frozenset({"neg_inventory"})
# Restatements of a claim: some reuse its words (the composer may publish them), some do not.
PARAPHRASES: dict[str, tuple[str, ...]] = {
    "memory": ("order-service 内存使用率达到 91%", "order-service 的内存告警正在触发，使用率 91%"),
    "full_gc": ("order-service 发生 15 次 Full GC", "订单服务十分钟里 Full GC 十五次"),
    "cpu": ("payment-service CPU 使用率 92%", "支付服务 CPU 告警正在触发"),
    "leak": ("order-service 内存泄漏是根因",),
    "neg_inventory": ("inventory-service 未检索到 HikariCP 连接池耗尽",),
    "neg_order": ("order-service 未检索到 HikariCP 连接池耗尽",),
}
# Sentences outside every claim: each must never reach the user, on any route. The marker is
# the part that must not appear (the whole sentence may be split by the composer's clauses).
EXTRAS: dict[str, tuple[str, ...]] = {
    "内存泄漏已确认，请立即重启。": ("内存泄漏已确认", "请立即重启"),
    "order-service 当前不存在 HighMemoryUsage 告警。": ("当前不存在",),
    "根因是数据库连接池耗尽，建议立即扩容。": ("数据库连接池耗尽", "立即扩容"),
    "根因尚不能确认，需要立即回滚 order-service 的最新版本。": ("立即回滚",),
    "inventory-service 存在 HikariCP 连接池耗尽。": ("inventory-service 存在",),
    "payment-service 当前存在 HighMemoryUsage 告警。": (
        "payment-service 当前存在 HighMemoryUsage",
    ),
    "Memory leak confirmed, restart order-service now.": ("Memory leak confirmed",),
}
# Recommended actions: only the evidence-gathering one may reach the degraded answer's steps.
ACTIONS: dict[str, tuple[str, ...]] = {
    "继续查看 order-service 的 GC 日志与堆 dump。": (),
    "检查后立即重启 order-service 并扩容实例。": ("立即重启 order-service",),
}
HEDGES = ("是否存在内存泄漏尚不能确认，需要堆 dump 或对象分配统计。", "其余原因尚不能确认。")
FRAMING = ("已确认：", "经核验，", "综上，")
# Characters that reorder or hide text; the composer must strip every one of them.
HIDDEN = ("\u202e", "\u200b", "\u2066", "\u200d", "\u061c")
FAITHFUL_EXCERPTS = frozenset({"prefix", "body"})


# --------------------------------------------------------------------------- the session


@dataclass(frozen=True)
class Ref:
    invocation_id: int
    tool: str
    raw_path: str
    text: str


@dataclass(frozen=True)
class Session:
    store: Store
    refs: tuple[Ref, ...]
    summary: tuple[ToolTraceSummaryItem, ...]

    def trace_of(self, invocation_id: int) -> str:
        return next(
            item.trace_ref for item in self.summary if invocation_id in item.source_invocation_ids
        )


def fresh_session() -> Session:
    store = Store()
    store.create_session(SESSION, "order-service 是否存在 HighMemoryUsage 告警？", "2026-07-08")
    recorder = ToolInvocationRecorder(store, Toolbox(default_world()), SESSION)
    for name, arguments in CALLS:
        recorder.call(name, arguments, round=1)
    refs = tuple(
        Ref(row.id, row.tool_name, ref.raw_path, ref.text)
        for row in store.list_invocations(SESSION)
        if row.retrieval_details is not None
        for ref in row.retrieval_details.evidence_refs or []
    )
    summary = tuple(ToolTraceSummaryService(store).build(SESSION))
    return Session(store, refs, summary)


TEMPLATE = fresh_session()
QUESTION = "order-service 是否存在 HighMemoryUsage 告警？"
INCIDENT_REFS = tuple(r for r in TEMPLATE.refs if r.tool in INCIDENT_TOOLS)
RUNBOOK_REFS = tuple(r for r in TEMPLATE.refs if r.tool == "lookup_knowledge")
TRACE_REFS = tuple(item.trace_ref for item in TEMPLATE.summary)


# --------------------------------------------------------------------------- generated output


@dataclass(frozen=True)
class GenBinding:
    kind: str  # how the citation was made (see ``bindings``)
    excerpt: str  # prefix | body | digit | invented | none | no_hit_message
    binding: dict[str, Any]
    tool: str  # the tool of the ref it was drawn from

    def grounds_positive(self) -> bool:
        return self.kind == "faithful" and self.excerpt in FAITHFUL_EXCERPTS

    def grounds_negative(self) -> bool:
        return self.kind == "no_hit" and self.excerpt in ("no_hit_message", "none")


@dataclass(frozen=True)
class GenClaim:
    claim_id: str
    key: str
    claim_type: str
    support_level: str
    text: str  # as sent, hidden characters included
    bindings: tuple[GenBinding, ...]

    def grounded(self) -> bool:
        """Grounded by construction: every binding faithful, none a runbook, and at least one
        on incident evidence (for a negative observation: the no-hit of what it names)."""
        if not self.bindings:
            return False
        if any(b.tool == "lookup_knowledge" or b.kind == "runbook" for b in self.bindings):
            return False
        faithful = all(b.grounds_positive() or b.grounds_negative() for b in self.bindings)
        if self.claim_type == "negative_observation":
            named = self.key in GROUNDED_NEGATIVE_KEYS
            return faithful and named and any(b.grounds_negative() for b in self.bindings)
        return faithful and any(b.grounds_positive() for b in self.bindings)


@dataclass(frozen=True)
class Piece:
    origin: str  # claim | paraphrase | extra | hedge | framing
    key: str  # the claim key for claim / paraphrase, else the text
    text: str  # as sent


@dataclass
class Generated:
    claims: list[GenClaim]
    pieces: list[Piece]
    verifier: dict[str, Any]
    actions: list[str] = field(default_factory=list)

    def contract(self) -> ExecutorContract:
        return ExecutorContract.model_validate(
            {
                "answer_version": "2",
                "diagnosis_summary": "order-service 告警核查。",
                "claims": [
                    {
                        "claim_id": c.claim_id,
                        "claim_type": c.claim_type,
                        "claim_text": c.text,
                        "support_level": c.support_level,
                        "evidence_bindings": [b.binding for b in c.bindings],
                    }
                    for c in self.claims
                ],
                "hypotheses": [],
                "missing_info": [],
                "recommended_actions": [
                    {"action_id": f"action-{n}", "action_text": text}
                    for n, text in enumerate(self.actions, start=1)
                ],
                "user_facing_answer": "".join(p.text for p in self.pieces),
            }
        )


def clean(text: str) -> str:
    return "".join(ch for ch in text if ch not in HIDDEN)


# --------------------------------------------------------------------------- the pipeline


@dataclass(frozen=True)
class Outcome:
    decision: VerdictDecision
    composition: Composition
    gatekeeper: GatekeeperResult


def run_pipeline(case: Generated) -> Outcome:
    """The pure core, chained as ``ChatService`` chains it (one round, no retry). The session
    is built once: nothing after the tool calls writes to the store."""
    session = TEMPLATE
    contract = case.contract()
    gatekeeper = Gatekeeper(session.store).check(contract, SESSION)
    summary = ToolTraceSummaryService(session.store).build(SESSION)
    invocations = session.store.list_invocations(SESSION)
    decision = derive_verdict(
        VerifierOutput.model_validate(case.verifier),
        gatekeeper,
        summary,
        [row.id for row in invocations],
        claims=contract.claims,
        invocations=invocations,
    )
    route = decide_route(decision, 1, max_rounds=1)
    composition = compose_answer(
        route,
        decision=decision,
        contract=contract,
        executor_final_answer=contract.user_facing_answer,
        gatekeeper=gatekeeper,
        invocations=invocations,
        question=QUESTION,
    )
    return Outcome(decision, composition, gatekeeper)
