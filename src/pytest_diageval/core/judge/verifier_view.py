"""What the verifier model reads: 004 §4's structure, 004 §5's seven trace fields, bounded.

:class:`~pytest_diageval.core.contract.contracts.VerifierInput` is what the code holds (the whole
contract, the whole gatekeeper result, the whole trace summary; the audit keeps all of it).
:func:`verifier_view` is the JSON document the model is sent, built from it:

* top level, exactly :data:`VIEW_KEYS`: ``original_query``, ``executor_structured_output``,
  ``gatekeeper_result``, ``tool_trace_summary``, ``executor_output_parse_status``,
  ``retry_context`` (004 §4) and ``executor_final_answer``, which 000 lists among the
  verifier's explicit inputs for the natural-language fallback: the raw text when the
  contract did not parse, ``null`` when it did (the text is then the contract itself);
* ``executor_structured_output``: the contract's seven fields (000), claims with 004's
  ``claim_id``, ``claim_type``, ``claim_text``, ``evidence_bindings``, and bindings with
  004's four fields (``tool_name``, ``source_invocation_id``, ``raw_path``,
  ``evidence_excerpt``); the executor's own ``support_level`` and the legacy 000 fields do
  not reach the verifier;
* ``gatekeeper_result``: 004 §3 (``status``, ``severity``, ``checked_bindings``,
  ``failed_rules``, ``warnings``, ``errors``); each row keeps ``claim_id`` / ``action_id``,
  the citation, ``status``, ``matched_text`` and the failed ``rule``. The gatekeeper-verified
  excerpts are the verifier's primary evidence: every binding's excerpt sits in its claim and
  its verdict (``status``, ``matched_text``) in the row of the same position;
* ``tool_trace_summary``: only :data:`TRACE_FIELDS`, 004 §5's seven; ``input_summary``,
  ``failed_invocation_count``, ``query_samples``, ``retrieval_layers``,
  ``relevance_levels``, ``source_documents`` (and ``success``, ``round``,
  ``deduped_invocation_count``) stay in the audit.

The bound. Everything a model wrote is capped (strings by :data:`TEXT_CAPS`, lists by
:data:`LIST_CAPS`; a cut string ends with :data:`CUT_MARK`, a cut list is named in
``executor_output_parse_status.detail``), and every trace entry is bounded by construction
(``OUTPUT_SUMMARY_CHARS``). So the whole view of a session with ``n`` summary entries is at
most :func:`verifier_view_bound` ``(n)`` characters of JSON; at the executor's call budget
(8 evidence calls a round, 2 rounds: at most 16 entries) that is :data:`BUDGET_VIEW_CHARS`.
Cutting only ever hides text from the verifier, and the code never lets an unchecked claim
pass, so a cut can lower a verdict, never raise it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pytest_diageval.core.contract.contracts import (
    CONTRACT_ANSWER_CHARS,
    CONTRACT_ID_CHARS,
    CONTRACT_LIST_CAPS,
    CONTRACT_TEXT_CHARS,
    CheckedBinding,
    Claim,
    EvidenceBinding,
    ExecutorContract,
    GatekeeperResult,
    RecommendedAction,
    RetryContext,
    ToolTraceSummaryItem,
    VerifierInput,
)
from pytest_diageval.core.contract.evidence_tools import LOOKUP_KNOWLEDGE
from pytest_diageval.core.evidence.store import stable_json
from pytest_diageval.core.evidence.trace_summary import OUTPUT_SUMMARY_CHARS

__all__ = [
    "BUDGET_TRACE_ENTRIES",
    "BUDGET_VIEW_CHARS",
    "CUT_MARK",
    "LIST_CAPS",
    "TEXT_CAPS",
    "TRACE_FIELDS",
    "VIEW_KEYS",
    "verifier_view",
    "verifier_view_bound",
]

VIEW_KEYS: tuple[str, ...] = (
    "original_query",
    "executor_structured_output",
    "gatekeeper_result",
    "tool_trace_summary",
    "executor_output_parse_status",
    "retry_context",
    "executor_final_answer",
)
TRACE_FIELDS: tuple[str, ...] = (
    "trace_ref",
    "tool_name",
    "source_invocation_ids",
    "evidence_level",
    "output_summary",
    "invocation_count",
    "no_hit_invocation_count",
)
CUT_MARK = "…[已截断]"
TEXT_CAPS: dict[str, int] = {
    "query": 4000,
    "final_answer": 8000,
    "answer": 2 * CONTRACT_ANSWER_CHARS,
    "summary": 2 * CONTRACT_TEXT_CHARS,
    "text": 2 * CONTRACT_TEXT_CHARS,
    "id": 2 * CONTRACT_ID_CHARS,
    "matched": 600,
    "message": 300,
    "output_summary": 2 * OUTPUT_SUMMARY_CHARS,
}
"""Caps in characters of the *JSON-encoded* string (an escaped quote counts 2, a control
character 6), so the bound holds whatever the text holds. Contract strings are capped at
half of these in raw characters when the contract is parsed (``CONTRACT_*_CHARS``), so
ordinary text is never cut; only text made mostly of escapes could be. The gatekeeper's own
texts (``matched_text``, messages) are cut shorter: the binding's excerpt and its ``status``
are what the verifier judges by."""
LIST_CAPS: dict[str, int] = {**CONTRACT_LIST_CAPS, "evidence_gaps": 10, "rule_names": 32}
"""Caps of lists. Those of the contract are refused when it is parsed
(``executor.parse_failed``), so the view never drops a claim; the verifier's own gap list
(``retry_context.evidence_gaps``) is the only list the view cuts. Rule names are the
gatekeeper's and fewer than ``rule_names``."""
BUDGET_TRACE_ENTRIES = 16
"""Summary entries of a session at the executor's call budget: 8 evidence calls a round
(``ExecutorBudget.max_tool_calls``), 2 rounds; entries never outnumber invocations."""
_INT64 = range(-(2**63), 2**63)


def _encoded_length(char: str) -> int:
    return len(json.dumps(char, ensure_ascii=False)) - 2


def _cut(text: str | None, cap: str) -> str | None:
    """``text`` whose JSON encoding fits ``TEXT_CAPS[cap]``, cut with :data:`CUT_MARK`."""
    if text is None:
        return None
    limit = TEXT_CAPS[cap]
    if len(text) * 6 <= limit or len(json.dumps(text, ensure_ascii=False)) - 2 <= limit:
        return text
    budget, kept = limit - len(CUT_MARK), []
    for char in text:
        budget -= _encoded_length(char)
        if budget < 0:
            break
        kept.append(char)
    return "".join(kept) + CUT_MARK


def _id(value: int | None) -> int | None:
    """An id SQLite cannot hold is no invocation (its gatekeeper row says so): ``null``."""
    return value if value is None or value in _INT64 else None


def _binding(binding: EvidenceBinding) -> dict[str, Any]:
    return {
        "tool_name": _cut(binding.tool_name, "id"),
        "source_invocation_id": _id(binding.source_invocation_id),
        "raw_path": _cut(binding.raw_path, "id"),
        "evidence_excerpt": _cut(binding.evidence_excerpt, "text"),
    }


def _claim(claim: Claim) -> dict[str, Any]:
    return {
        "claim_id": _cut(claim.claim_id, "id"),
        "claim_type": claim.claim_type,
        "claim_text": _cut(claim.claim_text, "text"),
        "evidence_bindings": [_binding(b) for b in claim.evidence_bindings],
    }


def _action(action: RecommendedAction) -> dict[str, Any]:
    return {
        "action_id": _cut(action.action_id, "id"),
        "action_text": _cut(action.action_text, "text"),
        "reason": _cut(action.reason, "text"),
        "evidence_bindings": [_binding(b) for b in action.evidence_bindings],
    }


def _contract(contract: ExecutorContract) -> dict[str, Any]:
    hypotheses = [
        {
            "hypothesis_id": _cut(h.hypothesis_id, "id"),
            "hypothesis_text": _cut(h.hypothesis_text, "text"),
            "basis_claim_ids": [_cut(i, "id") for i in h.basis_claim_ids],
            "missing_info": _cut(h.missing_info, "text"),
        }
        for h in contract.hypotheses
    ]
    missing = [
        {"info_id": _cut(m.info_id, "id"), "description": _cut(m.description, "text")}
        for m in contract.missing_info
    ]
    return {
        "answer_version": _cut(contract.answer_version, "id"),
        "diagnosis_summary": _cut(contract.diagnosis_summary, "summary"),
        "claims": [_claim(claim) for claim in contract.claims],
        "hypotheses": hypotheses,
        "recommended_actions": [_action(a) for a in contract.recommended_actions],
        "missing_info": missing,
        "user_facing_answer": _cut(contract.user_facing_answer, "answer"),
    }


def _row(row: CheckedBinding) -> dict[str, Any]:
    return {
        "claim_id": _cut(row.claim_id, "id"),
        "action_id": _cut(row.action_id, "id"),
        "tool_name": _cut(row.tool_name, "id"),
        "source_invocation_id": _id(row.source_invocation_id),
        "raw_path": _cut(row.raw_path, "id"),
        "status": row.status,
        "matched_text": _cut(row.matched_text, "matched"),
        "rule": row.rule,
    }


def _gatekeeper(result: GatekeeperResult) -> dict[str, Any]:
    def messages(items: Sequence[Any]) -> list[dict[str, Any]]:
        return [{"rule": m.rule, "message": _cut(m.message, "message")} for m in items]

    return {
        "status": result.status,
        "severity": result.severity,
        "checked_bindings": [_row(row) for row in result.checked_bindings],
        "failed_rules": list(result.failed_rules),
        "warnings": messages(result.warnings),
        "errors": messages(result.errors),
    }


def _trace(item: ToolTraceSummaryItem) -> dict[str, Any]:
    entry = item.model_dump(include=set(TRACE_FIELDS))
    entry["output_summary"] = _cut(item.output_summary, "output_summary")
    return {field: entry[field] for field in TRACE_FIELDS}


def _retry(context: RetryContext | None) -> dict[str, Any] | None:
    if context is None:
        return None
    gaps = context.evidence_gaps[: LIST_CAPS["evidence_gaps"]]
    return {
        "round": context.round,
        "previous_verdict": context.previous_verdict,
        "previous_groundedness_score": context.previous_groundedness_score,
        "evidence_gaps": [_cut(gap, "text") for gap in gaps],
        "gatekeeper_failed_rules": list(context.gatekeeper_failed_rules),
    }


def verifier_view(verifier_input: VerifierInput) -> dict[str, Any]:
    """The document the verifier model reads (see the module docstring)."""
    contract = verifier_input.executor_structured_output
    status = verifier_input.executor_output_parse_status
    return {
        "original_query": _cut(verifier_input.original_query, "query"),
        "executor_structured_output": None if contract is None else _contract(contract),
        "gatekeeper_result": _gatekeeper(verifier_input.gatekeeper_result),
        "tool_trace_summary": [_trace(item) for item in verifier_input.tool_trace_summary],
        "executor_output_parse_status": {
            "status": status.status,
            "detail": _cut(status.detail, "summary"),
        },
        "retry_context": _retry(verifier_input.retry_context),
        "executor_final_answer": None
        if contract is not None
        else _cut(verifier_input.executor_final_answer, "final_answer"),
    }


# --------------------------------------------------------------------------- the bound


def verifier_view_bound(trace_entries: int) -> int:
    """Characters of the widest possible view with ``trace_entries`` summary entries.

    The widest view is built field by field: every list at its cap, every string at its
    encoded cap, every id a 20-character int64, every enum at its longest value, and
    ``executor_structured_output`` and ``executor_final_answer`` both present (a real view has
    one of them). JSON overhead depends only on the structure, so this is an upper bound.
    """
    return len(stable_json(_widest_view(trace_entries)))


def _widest_view(trace_entries: int) -> dict[str, Any]:
    def text(cap: str) -> str:
        return "x" * TEXT_CAPS[cap]

    wide_id = -(2**63)
    binding = {
        "tool_name": text("id"),
        "source_invocation_id": wide_id,
        "raw_path": text("id"),
        "evidence_excerpt": text("text"),
    }
    # Bindings are capped in total; where they sit does not change the size.
    bindings = [binding] * LIST_CAPS["evidence_bindings"]
    claim = {
        "claim_id": text("id"),
        "claim_type": "negative_observation",
        "claim_text": text("text"),
        "evidence_bindings": [],
    }
    hypothesis = {
        "hypothesis_id": text("id"),
        "hypothesis_text": text("text"),
        "basis_claim_ids": [text("id")] * LIST_CAPS["basis_claim_ids"],
        "missing_info": text("text"),
    }
    action = {
        "action_id": text("id"),
        "action_text": text("text"),
        "reason": text("text"),
        "evidence_bindings": [],
    }
    contract = {
        "answer_version": text("id"),
        "diagnosis_summary": text("summary"),
        "claims": [{**claim, "evidence_bindings": bindings}] + [claim] * (LIST_CAPS["claims"] - 1),
        "hypotheses": [hypothesis] * LIST_CAPS["hypotheses"],
        "recommended_actions": [action] * LIST_CAPS["recommended_actions"],
        "missing_info": [{"info_id": text("id"), "description": text("text")}]
        * LIST_CAPS["missing_info"],
        "user_facing_answer": text("answer"),
    }
    # One row per binding, plus one per claim that has none (evidence.bindings_empty).
    rows = len(bindings) + LIST_CAPS["claims"]
    row = {
        "claim_id": text("id"),
        "action_id": text("id"),
        "tool_name": text("id"),
        "source_invocation_id": wide_id,
        "raw_path": text("id"),
        "status": "pass",
        "matched_text": text("matched"),
        "rule": text("id"),
    }
    message = {"rule": text("id"), "message": text("message")}
    rules = [text("id")] * LIST_CAPS["rule_names"]
    gatekeeper = {
        "status": "pass",
        "severity": "low_confid",
        "checked_bindings": [row] * rows,
        "failed_rules": rules,
        "warnings": [message] * rows,
        "errors": [message] * rows,
    }
    entry = {
        "trace_ref": text("id"),
        "tool_name": LOOKUP_KNOWLEDGE,
        "source_invocation_ids": [wide_id],
        "evidence_level": "indirect",
        "output_summary": text("output_summary"),
        "invocation_count": wide_id,
        "no_hit_invocation_count": wide_id,
    }
    retry = {
        "round": wide_id,
        "previous_verdict": "LOW_CONFID",
        "previous_groundedness_score": -1.2345678901234567e-300,
        "evidence_gaps": [text("text")] * LIST_CAPS["evidence_gaps"],
        "gatekeeper_failed_rules": rules,
    }
    return {
        "original_query": text("query"),
        "executor_structured_output": contract,
        "gatekeeper_result": gatekeeper,
        "tool_trace_summary": [entry] * trace_entries,
        "executor_output_parse_status": {"status": "failed", "detail": text("summary")},
        "retry_context": retry,
        "executor_final_answer": text("final_answer"),
    }


BUDGET_VIEW_CHARS = verifier_view_bound(BUDGET_TRACE_ENTRIES)
"""The bound at the executor's call budget (:data:`BUDGET_TRACE_ENTRIES` entries)."""
