"""The reference agent's answers, computed by running its calls on the same tools.

:func:`reference_script` runs the planned calls (:mod:`.plan`) through a scratch recorder
and store over the scenario's world (the tools are deterministic functions of the world, and
a session's invocation ids are 1..n in call order), then writes what a careful model would
send, as script entries for the scripted transport:

1. the plan: one step per call;
2. the calls, in one executor turn;
3. the contract: one claim per call. A call that found items is an ``observation`` citing
   every item verbatim (its ``raw_path`` and the item's whole ref text as excerpt); a call
   that found nothing is a ``negative_observation`` citing the collection path (``$.logs``,
   ``$.alerts``) with the tool's own no-hit message; a failed call is missing information,
   never a claim. Each claim states what it says as points (``docs/points.md``): each cited
   item's name and state (an alert) or level and service (a log), a no-hit's empty result, so
   the code decides the claim and never reads its text;
4. the verifier's labels: ``direct_evidence`` for each claim, with the trace entries of the
   claim's own call (built by the same trace summary the pipeline builds); nothing else.

The prose (summary, claim texts, answer) is plain and read by nothing: the answer a user
reads is rendered by code from the cited items, and the points decide each claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from typing import Any

from pytest_diageval.agents.chat_service import _scope_names
from pytest_diageval.agents.reference.plan import ReferenceCall, plan_calls
from pytest_diageval.core.contract.evidence_tools import QUERY_LOGS, QUERY_METRICS
from pytest_diageval.core.contract.limits import (
    CONTRACT_LIST_CAPS,
    CONTRACT_TEXT_CHARS,
    PLAN_STEPS_MAX,
    PLAN_TEXT_CHARS,
)
from pytest_diageval.core.evidence.recorder import (
    EVIDENCE_LIST_KEYS,
    RecordedCall,
    ToolInvocationRecorder,
    extract_evidence_items,
)
from pytest_diageval.core.evidence.store import Store
from pytest_diageval.core.evidence.tools import Toolbox
from pytest_diageval.core.evidence.trace_summary import summarize_invocations
from pytest_diageval.core.evidence.world import World
from pytest_diageval.core.scope.session import session_scope

__all__ = ["ROUND_ENTRIES", "reference_script"]

_SESSION = "reference"
_NO_HIT_TEXT: dict[str, str] = {QUERY_METRICS: "告警", QUERY_LOGS: "日志"}


ROUND_ENTRIES = 4
"""Script entries per round: planner, executor calls, executor contract, verifier."""


def reference_script(query: str, world: World, *, rounds: int = 1) -> list[dict[str, Any]]:
    """The reference agent's answers to ``query`` in ``world``: ``rounds`` rounds of
    ``ROUND_ENTRIES`` script entries each. A later round (asked only after a LOW_CONFID below
    0.5) makes the same calls again, with that round's invocation ids and trace entries."""
    names = _scope_names(world, query)
    scope, _ = session_scope(query, names)
    calls = plan_calls(query, scope, names)
    recorded, trace_refs = _run(calls, world, rounds)
    plan = "；".join(call.step for call in calls)[:PLAN_TEXT_CHARS]
    entries: list[dict[str, Any]] = []
    for outcomes in recorded:
        claims, missing = _claims(calls, outcomes)
        entries += [
            {
                "stage": "planner",
                "content": {"plan": plan, "steps": [c.step for c in calls][:PLAN_STEPS_MAX]},
            },
            {
                "stage": "executor",
                "tool_calls": [{"name": c.tool, "arguments": c.arguments} for c in calls],
            },
            {"stage": "executor", "content": _contract(claims, missing)},
            {"stage": "verifier", "content": _verifier(claims, trace_refs)},
        ]
    return entries


def _run(
    calls: Sequence[ReferenceCall], world: World, rounds: int
) -> tuple[list[list[RecordedCall]], dict[int, list[dict[str, Any]]]]:
    """Each round's outcomes of the calls, and per invocation id the trace entries that hold
    it (numbered over the whole session, as the pipeline numbers them)."""
    with closing(Store()) as store:
        store.create_session(_SESSION, "", world.now.isoformat())
        recorder = ToolInvocationRecorder(store, Toolbox(world), _SESSION)
        recorded = [
            [recorder.call(call.tool, call.arguments, round=number) for call in calls]
            for number in range(1, rounds + 1)
        ]
        summary = summarize_invocations(recorder.invocations())
    refs: dict[int, list[dict[str, Any]]] = {}
    for item in summary:
        entry = {"trace_ref": item.trace_ref, "source_invocation_ids": item.source_invocation_ids}
        for invocation in item.source_invocation_ids:
            refs.setdefault(invocation, []).append(entry)
    return recorded, refs


def _claims(
    calls: Sequence[ReferenceCall], recorded: Sequence[RecordedCall]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One claim per call that completed; a failed call is missing information."""
    claims: list[dict[str, Any]] = []
    missing: list[dict[str, Any]] = []
    budget = CONTRACT_LIST_CAPS["evidence_bindings"]
    for call, outcome in zip(calls, recorded, strict=True):
        if not outcome.success or outcome.invocation_id is None:
            text = f"{call.step} 调用失败，没有可引用的证据。"
            missing.append({"info_id": f"missing-{len(missing) + 1}", "description": text})
            continue
        claim_id = f"claim-{len(claims) + 1}"
        if outcome.evidence_refs:
            bindings = _bindings(call, outcome)[: max(budget, 1)]
            claims.append(_observation(claim_id, call, bindings, outcome))
        else:
            bindings = [_no_hit_binding(call, outcome)]
            claims.append(_negative(claim_id, call, bindings))
        budget -= len(bindings)
        if budget <= 0:
            break
    return claims, missing


def _bindings(call: ReferenceCall, outcome: RecordedCall) -> list[dict[str, Any]]:
    assert outcome.invocation_id is not None
    return [
        {
            "tool_name": call.tool,
            "source_invocation_id": outcome.invocation_id,
            "raw_path": ref.raw_path,
            "evidence_excerpt": ref.text[:CONTRACT_TEXT_CHARS],
        }
        for ref in outcome.evidence_refs
    ]


def _no_hit_binding(call: ReferenceCall, outcome: RecordedCall) -> dict[str, Any]:
    assert outcome.invocation_id is not None
    output = outcome.output or {}
    return {
        "tool_name": call.tool,
        "source_invocation_id": outcome.invocation_id,
        "raw_path": f"$.{EVIDENCE_LIST_KEYS[call.tool]}",
        "evidence_excerpt": str(output.get("message") or "无结果"),
    }


def _subject(call: ReferenceCall) -> str:
    return str(call.arguments.get("service") or "")


def _asked(call: ReferenceCall) -> str:
    """What the call searched for, as a claim names it (an alert name, then the keywords)."""
    words = [call.arguments.get("alert_name"), *(call.arguments.get("keywords") or [])]
    return " ".join(str(word) for word in words if word)


def _observation(
    claim_id: str, call: ReferenceCall, bindings: list[dict[str, Any]], outcome: RecordedCall
) -> dict[str, Any]:
    kind = "告警" if call.tool == QUERY_METRICS else "日志"
    alert = call.arguments.get("alert_name")  # a keyword may be a synonym the items never show
    text = f"{_subject(call)} 的{kind}中检索到{f' {alert} ' if alert else ''}相关记录。"
    return {
        "claim_id": claim_id,
        "claim_type": "observation",
        "claim_text": text.strip(),
        "support_level": "direct",
        "evidence_bindings": bindings,
        "points": _item_points(bindings, outcome),
    }


_POINTED_FIELDS = ("alert_name", "state", "level", "service")
"""The fields a reference claim points at on each cited item, the first two it has: what the
item is (an alert's name and state, a log's level and service)."""


def _item_points(bindings: list[dict[str, Any]], outcome: RecordedCall) -> list[dict[str, Any]]:
    """What the claim states, as points (``docs/points.md``): each cited item's name and state
    (or level and service), copied from the item, so the code decides the claim, not its text.
    A claim holds at most ``CONTRACT_LIST_CAPS["points"]`` points: the first items get them."""
    items = extract_evidence_items(outcome.tool_name, outcome.output or {})
    fields = {item.raw_path: item.fields for item in items}
    points: list[dict[str, Any]] = []
    for number, binding in enumerate(bindings, start=1):
        item = fields.get(binding["raw_path"], {})
        named = [name for name in _POINTED_FIELDS if isinstance(item.get(name), str)][:2]
        points += [
            {"binding": number, "field": name, "relation": "equals", "value": item[name]}
            for name in named
        ]
    return points[: CONTRACT_LIST_CAPS["points"]]


def _negative(claim_id: str, call: ReferenceCall, bindings: list[dict[str, Any]]) -> dict[str, Any]:
    kind = _NO_HIT_TEXT[call.tool]
    text = f"{_subject(call)} 的{kind}中未检索到 {_asked(call)}。"
    return {
        "claim_id": claim_id,
        "claim_type": "negative_observation",
        "claim_text": text.strip(),
        "support_level": "direct",
        "evidence_bindings": bindings,
        "points": [{"binding": 1, "field": "results", "relation": "equals", "value": "0"}],
    }


def _contract(claims: list[dict[str, Any]], missing: list[dict[str, Any]]) -> dict[str, Any]:
    summary = "；".join(claim["claim_text"] for claim in claims) or "没有可引用的证据。"
    return {
        "answer_version": "2",
        "diagnosis_summary": summary[:CONTRACT_TEXT_CHARS],
        "claims": claims,
        "hypotheses": [],
        "missing_info": missing,
        "recommended_actions": [],
        "user_facing_answer": summary[:CONTRACT_TEXT_CHARS],
    }


def _verifier(
    claims: list[dict[str, Any]], trace_refs: dict[int, list[dict[str, Any]]]
) -> dict[str, Any]:
    facts = []
    for claim in claims:
        invocations = {b["source_invocation_id"] for b in claim["evidence_bindings"]}
        refs = [ref for i in sorted(invocations) for ref in trace_refs.get(i, [])]
        facts.append(
            {
                "fact": claim["claim_text"],
                "claim_id": claim["claim_id"],
                "is_critical": True,
                "verification": "direct_evidence",
                "detail": "引用的工具结果原文直接支持。",
                "evidence_refs": refs,
            }
        )
    return {
        "verdict": "PASS" if facts else "LOW_CONFID",
        "groundedness_score": 1.0 if facts else 0.0,
        "critical_fact_count": len(facts),
        "facts_checked": facts,
        "rationale": "每条 claim 只引用其工具调用返回的原文。",
    }
