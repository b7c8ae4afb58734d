"""Size limits of what a model writes: the contract, the plan, the verifier's answer.

Re-exported by :mod:`pytest_diageval.core.contract.contracts`, whose models enforce them;
kept apart so the models read without the reasons for each number.
"""

from __future__ import annotations

__all__ = [
    "CONTRACT_ANSWER_CHARS",
    "CONTRACT_ID_CHARS",
    "CONTRACT_LIST_CAPS",
    "CONTRACT_TEXT_CHARS",
    "PLAN_STEPS_MAX",
    "PLAN_TEXT_CHARS",
    "VERIFIER_FACTS_CAP",
]

CONTRACT_ID_CHARS = 64
CONTRACT_TEXT_CHARS = 500
CONTRACT_ANSWER_CHARS = 2000
CONTRACT_LIST_CAPS: dict[str, int] = {
    "claims": 10,
    "evidence_bindings": 40,
    "hypotheses": 5,
    "recommended_actions": 5,
    "missing_info": 10,
    "basis_claim_ids": 10,
    "points": 10,
}
"""Sizes a contract may not exceed (characters, items), so that the verifier's input has a
bound (``core.verifier_view``). ``evidence_bindings`` counts every binding of the contract
(claims and actions together): 004 limits claims, never the bindings of one claim
("限制 claim 数量不限制 evidence_bindings 数量"), so only the total is capped. ``points``
caps one claim's points (``docs/points.md``). A longer contract
does not parse: nothing is cut from it, so the verifier always sees every claim whole.
``tool_name`` and ``raw_path`` are not capped: an absurd one is the gatekeeper's to reject."""
VERIFIER_FACTS_CAP = 6
"""How many facts one verifier answer may label."""

PLAN_STEPS_MAX = 4
PLAN_TEXT_CHARS = 200
"""Caps of a plan. The step count is in the schema the model is sent (``maxItems``), so a
grammar-constrained model cannot run away (a small model once wrote ``"<step64>"`` until it hit
the token cap); the text length is checked on parsing only, because a grammar expands a length
bound into that many rules (as ``core.contract_schema`` explains). A plan over either cap does
not parse; instructor re-asks once with the error."""
