"""The page section of one scenario round, from the report's plain dicts (the JSON data).

Private helper of :mod:`pytest_diageval.harness.report.html`. The point of the page is the
link between a claim and its evidence, so this module gives every evidence item of every tool
output an anchor, every claim (and recommended action) the anchors of what it cites, and every
cited item the claims that cite it. The gatekeeper's row of each binding, the verifier's label
and the code's final label of each claim sit beside the claim. Everything reads the dicts with
``.get``: a report written by an older or newer plugin still renders.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["pretty_json", "round_view"]

Data = Mapping[str, Any]


def pretty_json(value: Any) -> str:
    """Indented JSON with Chinese kept readable; a JSON string is parsed first when it can
    be (a truncated tool output preview is shown as it is)."""
    if isinstance(value, str):
        text = value
        try:
            value = json.loads(text)
        except ValueError:
            return text
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def round_view(anchor: str, round_data: Data, invocations: Sequence[Data]) -> dict[str, Any]:
    """Everything the page shows of one round; ``anchor`` prefixes every element id."""
    prefix = f"{anchor}-r{round_data.get('round', 0)}"
    contract = round_data.get("executor_contract") or {}
    gatekeeper = round_data.get("gatekeeper") or {}
    decision = round_data.get("decision") or {}
    items = _evidence_items(anchor, invocations)
    citers = _citers(prefix, contract, gatekeeper.get("checked_bindings") or [], items)
    _labels(citers["claims"], round_data, decision)
    set_aside = list(round_data.get("set_aside") or [])
    _mark_set_aside(citers["claims"], set_aside)
    return {
        "number": round_data.get("round"),
        "retry_context": round_data.get("retry_context"),
        "plan": round_data.get("plan"),
        "plan_set_aside": list(round_data.get("plan_set_aside") or []),
        "planner_error": round_data.get("planner_error"),
        "tool_calls": _tool_calls(round_data.get("tool_calls") or [], invocations, items),
        "parse_status": round_data.get("parse_status") or {},
        "executor_turns": round_data.get("executor_turns"),
        "budget_exhausted": round_data.get("executor_budget_exhausted"),
        "repeated_stop": _REPEAT_STOPS.get(round_data.get("executor_stop_reason") or ""),
        "executor_final_answer": round_data.get("executor_final_answer", ""),
        "contract": contract,
        "claims": citers["claims"],
        "actions": citers["actions"],
        "unbound_rows": citers["unbound_rows"],
        "gatekeeper": gatekeeper,
        "verifier": round_data.get("verifier_output"),
        "verifier_failure": round_data.get("verifier_failure"),
        "decision": decision,
        "overrides": _overrides(decision, citers["claims"]),
        "claimless_facts": _claimless_facts(decision, citers["claims"]),
        "route": round_data.get("route") or {},
        "composer": round_data.get("composer_output"),
        "set_aside": set_aside,
    }


def _mark_set_aside(claims: Sequence[dict[str, Any]], set_aside: Sequence[Data]) -> None:
    """Each claim the question's scope set aside carries its rules and reason."""
    by_id = {claim.get("claim_id"): claim for claim in set_aside}
    for claim in claims:
        claim["set_aside"] = by_id.get(claim["name"])


# --------------------------------------------------------------------------- evidence items


def _evidence_items(anchor: str, invocations: Sequence[Data]) -> dict[tuple[Any, str], Any]:
    """(invocation id, raw_path) → the item's view; each item lists who cites it."""
    items: dict[tuple[Any, str], Any] = {}
    for invocation in invocations:
        details = invocation.get("retrieval_details") or {}
        for index, ref in enumerate(details.get("evidence_refs") or []):
            raw_path = str(ref.get("raw_path"))
            items[(invocation.get("id"), raw_path)] = {
                "anchor": f"{anchor}-inv{invocation.get('id')}-ref{index}",
                "raw_path": raw_path,
                "text": ref.get("text", ""),
                "cited_by": [],
            }
    return items


_REPEAT_STOPS = {
    "repeated_argument_error": (
        "a refused call repeated verbatim (executor.repeated_argument_error)"
    ),
    "repeated_call": "a completed call repeated verbatim (executor.repeated_call)",
}


def _tool_calls(
    calls: Sequence[Data], invocations: Sequence[Data], items: Mapping[tuple[Any, str], Any]
) -> list[dict[str, Any]]:
    by_id = {invocation.get("id"): invocation for invocation in invocations}
    views = []
    for call in calls:
        invocation = by_id.get(call.get("invocation_id"))
        views.append(
            {
                "name": call.get("name"),
                "call_id": call.get("call_id"),
                "arguments": pretty_json(call.get("arguments")),
                "invocation_id": call.get("invocation_id"),
                "error": call.get("error"),
                "invocation": None if invocation is None else _invocation(invocation, items),
            }
        )
    return views


def _invocation(invocation: Data, items: Mapping[tuple[Any, str], Any]) -> dict[str, Any]:
    details = invocation.get("retrieval_details") or {}
    own = [view for (key, _), view in items.items() if key == invocation.get("id")]
    return {
        "id": invocation.get("id"),
        "success": invocation.get("success"),
        "error_message": invocation.get("error_message"),
        "evidence_status": details.get("evidence_status"),
        "total": details.get("total"),
        "truncated": invocation.get("output_truncated"),
        "output": pretty_json(invocation.get("output_preview") or ""),
        "items": own,
        "cited": any(view["cited_by"] for view in own),
    }


# --------------------------------------------------------------------------- claims, actions


def _citers(
    prefix: str, contract: Data, rows: Sequence[Data], items: Mapping[tuple[Any, str], Any]
) -> dict[str, Any]:
    """Claims and recommended actions with their bindings, each binding beside the gatekeeper
    row the gatekeeper wrote for it (rows come in binding order per claim or action)."""
    claim_rows = _rows_by(rows, "claim_id")
    action_rows = _rows_by(rows, "action_id")
    claims = [
        _citer(f"{prefix}-claim{n}", claim.get("claim_id"), claim, claim_rows, items)
        for n, claim in enumerate(contract.get("claims") or [])
    ]
    actions = [
        _citer(f"{prefix}-action{n}", action.get("action_id"), action, action_rows, items)
        for n, action in enumerate(contract.get("recommended_actions") or [])
    ]
    used = {id(row) for citer in [*claims, *actions] for b in citer["bindings"] for row in b["row"]}
    unbound = [row for row in rows if id(row) not in used]
    return {"claims": claims, "actions": actions, "unbound_rows": unbound}


def _rows_by(rows: Sequence[Data], key: str) -> dict[Any, Iterator[Data]]:
    grouped: dict[Any, list[Data]] = {}
    for row in rows:
        if row.get(key) is not None:
            grouped.setdefault(row.get(key), []).append(row)
    return {name: iter(group) for name, group in grouped.items()}


def _citer(
    anchor: str,
    name: Any,
    source: Data,
    rows: Mapping[Any, Iterator[Data]],
    items: Mapping[tuple[Any, str], Any],
) -> dict[str, Any]:
    own_rows = rows.get(name, iter(()))
    bindings = []
    for number, binding in enumerate(source.get("evidence_bindings") or [], start=1):
        row = next(own_rows, None)
        item = items.get((binding.get("source_invocation_id"), str(binding.get("raw_path"))))
        status = None if row is None else row.get("status")
        if item is not None:
            item["cited_by"].append(
                {"anchor": anchor, "name": name, "binding": number, "status": status}
            )
        bindings.append(
            {
                "number": number,
                "binding": binding,
                "target": None if item is None else item["anchor"],
                "row": [] if row is None else [row],
            }
        )
    return {
        "anchor": anchor,
        "name": name,
        "source": source,
        "bindings": bindings,
        "targets": " ".join(b["target"] for b in bindings if b["target"]),
        "verifier_facts": [],
        "final_facts": [],
        "overrides": [],
        "ceiling": None,
        "set_aside": None,
    }


def _labels(claims: Sequence[dict[str, Any]], round_data: Data, decision: Data) -> None:
    """The verifier's label, the code's ceiling and final label of each claim, by ``claim_id``."""
    verifier = round_data.get("verifier_output") or {}
    by_id = {claim["name"]: claim for claim in claims}
    for fact in verifier.get("facts_checked") or []:
        if fact.get("claim_id") in by_id:
            by_id[fact["claim_id"]]["verifier_facts"].append(fact)
    for index, fact in enumerate(decision.get("facts") or []):
        if fact.get("claim_id") in by_id:
            by_id[fact["claim_id"]]["final_facts"].append({"index": index, **fact})
    # The most the claim's own checked bindings can carry (the code's claim-first step).
    for ceiling in decision.get("claim_ceilings") or []:
        if ceiling.get("claim_id") in by_id:
            by_id[ceiling["claim_id"]]["ceiling"] = ceiling


def _overrides(decision: Data, claims: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every override, with the claim its fact belongs to (when it has one); each claim also
    lists its own overrides."""
    facts = decision.get("facts") or []
    by_name = {claim["name"]: claim for claim in claims}
    anchors = {name: claim["anchor"] for name, claim in by_name.items()}
    views = []
    for override in decision.get("overrides") or []:
        index = override.get("fact_index")
        fact = facts[index] if isinstance(index, int) and 0 <= index < len(facts) else {}
        claim_id = fact.get("claim_id")
        view = {**override, "claim_id": claim_id, "claim_anchor": anchors.get(claim_id)}
        views.append(view)
        if claim_id in by_name:
            by_name[claim_id]["overrides"].append(view)
    return views


def _claimless_facts(decision: Data, claims: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    names = {claim["name"] for claim in claims}
    return [
        {"index": index, **fact}
        for index, fact in enumerate(decision.get("facts") or [])
        if fact.get("claim_id") not in names
    ]
