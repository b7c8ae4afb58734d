"""The executor's final contract as a function: ``submit_evidence_contract`` and its schema.

The executor ends by calling ``submit_evidence_contract``; its parameters are the
evidence-attribution contract's JSON Schema, generated per session from the invocations that
really happened (the store's rows, the gatekeeper's own source of truth). A server that
constrains decoding with the schema (llama.cpp's grammar, OpenAI's strict mode) then cannot
produce a citation of an invocation that never happened:

* each ``evidence_binding`` is ``anyOf`` one alternative per citable invocation, each fixing
  ``tool_name`` and ``source_invocation_id`` (``const``) and offering only that invocation's
  raw paths (``enum``), so tool, id and path cannot be mixed across invocations;
* a citable invocation is a completed evidence call with ``evidence_refs`` (its raw paths) or
  a completed search that found nothing (its collection path, ``$.logs`` / ``$.alerts``,
  :data:`~.gatekeeper_rules.NO_HIT_RAW_PATHS`); failed, deduped and helper calls offer none;
* before any citable invocation, bindings are empty arrays;
* with a narrow question's scope (:class:`~.scope_contract.DecodingScope`), the caller passes
  only the invocations the scope admits, and ``claim_type`` is an ``enum`` of the types the question
  allows (observation / negative_observation): a small model under a grammar then cannot cite
  another service's evidence or write a root cause for "只确认 …".

Offered on request (``points=True``: a recording with ``--diageval-points offer``), each claim
may carry up to two ``points`` (``docs/points.md``): a binding number, a field from the fields
of the items it can cite (:func:`point_fields`), a relation of the closed set and a value; the
code decides them, and a claim with points is judged by them, not by its text.

The excerpt stays free text: it is where the gatekeeper judges a model's quote. Nothing here
replaces a check: hosted models may ignore a schema, and the gatekeeper checks every binding
as before. List sizes are smaller than the parser's caps (``CONTRACT_LIST_CAPS``): a small
model under a grammar must not be invited to write ten claims. Every object lists all its
properties as required and forbids others (what strict mode asks for); no string length is
bounded here because a grammar expands a length bound into that many rules. Ids are bounded
instead by being names: ``claim_id`` is one of ``claim-1`` … ``claim-3`` (one per claim the
schema offers) and ``basis_claim_ids`` names only those, hypotheses, actions and missing
information are ``hypothesis-N`` / ``action-N`` / ``missing-N``. Recorded with free-text ids,
a small model wrote a 65-character id that the parser's cap (``CONTRACT_ID_CHARS``) refused, and
``"}, {"`` as a claim id. (A model can still repeat ``claim-1``; :mod:`.claim_ids` renumbers
repeats that nothing refers to.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

from pytest_diageval.core.contract.contracts import (
    POINT_RELATIONS,
    ClaimType,
    SupportLevel,
    ToolInvocation,
)
from pytest_diageval.core.contract.evidence_tools import evidence_tool
from pytest_diageval.core.contract.gatekeeper_rules import NO_HIT_RAW_PATHS

__all__ = [
    "ANSWER_VERSION",
    "SCHEMA_LIST_CAPS",
    "SUBMIT_CONTRACT_FUNCTION",
    "binding_alternatives",
    "citable_paths",
    "contract_parameters",
    "no_hit_fields",
    "point_fields",
    "submit_contract_tool",
]

SUBMIT_CONTRACT_FUNCTION = "submit_evidence_contract"
ANSWER_VERSION = "2"
SCHEMA_LIST_CAPS: dict[str, int] = {
    "claims": 3,
    "evidence_bindings": 3,
    "hypotheses": 1,
    "recommended_actions": 1,
    "missing_info": 2,
    "basis_claim_ids": 3,
    "points": 2,
}
"""How many items the schema offers per list (the parser accepts up to ``CONTRACT_LIST_CAPS``).

Small on purpose: recorded against a grammar, Gemma 3 270M filled every list to the schema's
cap with copies (four identical claims when four were allowed) and ran out of tokens before
``user_facing_answer``; narrow questions allow two claims anyway (004's HARD-GATE)."""

_DESCRIPTION = (
    "提交最终的证据归因契约（取证结束后调用一次）。每条 evidence_binding 只能引用本会话真实发生的"
    "工具调用及其 raw_path；evidence_excerpt 从该 raw_path 的证据文本中原样摘取。"
    " Submit the final evidence-attribution contract once evidence gathering is done."
)


def citable_paths(invocation: ToolInvocation) -> list[str]:
    """The raw paths a binding may cite on ``invocation`` ([] when it offers none)."""
    details = invocation.retrieval_details
    if not invocation.success or details is None:
        return []
    if details.evidence_status == "no_evidence" and invocation.tool_name in NO_HIT_RAW_PATHS:
        return [NO_HIT_RAW_PATHS[invocation.tool_name]]
    if details.evidence_status != "supported":
        return []
    return list(dict.fromkeys(ref.raw_path for ref in details.evidence_refs or []))


def binding_alternatives(invocations: Sequence[ToolInvocation]) -> list[dict[str, Any]]:
    """One binding schema per citable invocation, in invocation order."""
    alternatives = []
    for invocation in sorted(invocations, key=lambda row: row.id):
        paths = citable_paths(invocation)
        if not paths:
            continue
        alternatives.append(
            _object(
                tool_name={"type": "string", "const": invocation.tool_name},
                source_invocation_id={"type": "integer", "const": invocation.id},
                raw_path={"type": "string", "enum": paths},
                evidence_excerpt={"type": "string"},
            )
        )
    return alternatives


def contract_parameters(
    invocations: Sequence[ToolInvocation],
    claim_types: Sequence[ClaimType] | None = None,
    *,
    points: bool = False,
) -> dict[str, Any]:
    """The JSON Schema of the contract, with bindings limited to ``invocations`` and claim
    types to ``claim_types`` (default: every type); with ``points``, each claim may carry up
    to two points on the fields of the items it can cite (``docs/points.md``)."""
    bindings = _bindings(binding_alternatives(invocations))
    types = list(claim_types) if claim_types else list(get_args(ClaimType))
    claim_ids = _ids("claim", "claims")
    claim = _object(
        claim_id=claim_ids,
        claim_type={"type": "string", "enum": types},
        claim_text={"type": "string"},
        support_level={"type": "string", "enum": list(get_args(SupportLevel))},
        evidence_bindings=bindings,
        **({"points": _points(invocations)} if points else {}),
    )
    hypothesis = _object(
        hypothesis_id=_ids("hypothesis", "hypotheses"),
        hypothesis_text={"type": "string"},
        basis_claim_ids=_array(claim_ids, "basis_claim_ids"),
        missing_info={"type": "string"},
    )
    action = _object(
        action_id=_ids("action", "recommended_actions"),
        action_text={"type": "string"},
        reason={"type": "string"},
        evidence_bindings=bindings,
    )
    missing = _object(info_id=_ids("missing", "missing_info"), description={"type": "string"})
    return _object(
        answer_version={"type": "string", "const": ANSWER_VERSION},
        diagnosis_summary={"type": "string"},
        claims=_array(claim, "claims"),
        hypotheses=_array(hypothesis, "hypotheses"),
        recommended_actions=_array(action, "recommended_actions"),
        missing_info=_array(missing, "missing_info"),
        user_facing_answer={"type": "string"},
    )


def submit_contract_tool(
    invocations: Sequence[ToolInvocation],
    claim_types: Sequence[ClaimType] | None = None,
    *,
    points: bool = False,
) -> dict[str, Any]:
    """The OpenAI ``tools`` entry of ``submit_evidence_contract`` for this session so far."""
    return {
        "type": "function",
        "function": {
            "name": SUBMIT_CONTRACT_FUNCTION,
            "description": _DESCRIPTION,
            "parameters": contract_parameters(invocations, claim_types, points=points),
        },
    }


# --------------------------------------------------------------------------- internals


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _ids(prefix: str, cap: str) -> dict[str, Any]:
    """``prefix-1`` … ``prefix-N``, one name per item the schema offers in the list ``cap``."""
    return {
        "type": "string",
        "enum": [f"{prefix}-{n}" for n in range(1, SCHEMA_LIST_CAPS[cap] + 1)],
    }


def _array(items: dict[str, Any], cap: str) -> dict[str, Any]:
    return {"type": "array", "items": items, "maxItems": SCHEMA_LIST_CAPS[cap]}


def point_fields(invocations: Sequence[ToolInvocation]) -> list[str]:
    """The field names a point may name on what ``invocations`` let a binding cite: each cited
    item's own fields, and a no-hit's sent arguments and ``results`` (``docs/points.md``), in
    invocation order, each once."""
    names: dict[str, None] = {}
    for invocation in sorted(invocations, key=lambda row: row.id):
        paths = citable_paths(invocation)
        details = invocation.retrieval_details
        if not paths or details is None:
            continue
        if details.evidence_status == "no_evidence":
            names.update(dict.fromkeys(no_hit_fields(invocation)))
            continue
        for item in details.evidence_items or []:
            if item.raw_path in paths:
                names.update(dict.fromkeys(item.fields))
    return list(names)


def no_hit_fields(invocation: ToolInvocation) -> dict[str, Any]:
    """What a point may name on a search that found nothing (``docs/points.md``): the
    arguments the call sent, in the tool's order, and ``results``, which is 0."""
    tool = evidence_tool(invocation.tool_name)
    sent = invocation.input_params
    names = tool.arguments if tool is not None else tuple(sent)
    return {**{name: sent[name] for name in names if name in sent}, "results": 0}


def _points(invocations: Sequence[ToolInvocation]) -> dict[str, Any]:
    """A claim's points: a binding number, a field of the citable items, a relation of the
    closed set and a value (one shape: ``other_field`` is left out, a grammar is smaller)."""
    fields = point_fields(invocations)
    if not fields:
        return {"type": "array", "items": {"type": "string"}, "maxItems": 0}
    point = _object(
        binding={
            "type": "integer",
            "enum": list(range(1, SCHEMA_LIST_CAPS["evidence_bindings"] + 1)),
        },
        field={"type": "string", "enum": fields},
        relation={"type": "string", "enum": list(POINT_RELATIONS)},
        value={"type": "string"},
    )
    return _array(point, "points")


def _bindings(alternatives: list[dict[str, Any]]) -> dict[str, Any]:
    if not alternatives:
        # Nothing citable yet: the only honest binding list is the empty one.
        # (``items`` too: llama.cpp's grammar converter needs it even for an empty array.)
        return {"type": "array", "items": {"type": "string"}, "maxItems": 0}
    items = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
    return _array(items, "evidence_bindings")
