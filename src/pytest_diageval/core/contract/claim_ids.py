"""Repeated claim ids that nothing refers to get fresh names before the contract is parsed.

A claim id is only a name by which the code refers to a claim: the gatekeeper's rows, the
verifier's facts and a hypothesis's ``basis_claim_ids`` name claims by it. Recorded against a
grammar that offers ``claim-1`` … ``claim-3`` (:mod:`.schema`), a small model named all three
claims ``claim-1`` (7 of 27 live samples), and the whole contract failed to parse: every claim
was lost, including claims the gatekeeper would have passed.

A repeat is harmless to rename when nothing refers to it: each claim is still judged, under a
name of its own, so none can hide behind another (what ``ExecutorContract`` guards against).
When a hypothesis names a repeated id, which claim it means is the model's secret: the ids are
left as they are and the contract does not parse, as before.

The renaming is the code's and is said in the parse status; the model's text is not changed.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["renumber_repeated_claim_ids"]

CLAIM_ID_PREFIX = "claim-"


def renumber_repeated_claim_ids(body: str) -> tuple[Any, list[str]]:
    """The contract ``body`` (JSON text) decoded, with each repeated, unreferenced claim id
    after the first renamed to the lowest free ``claim-N``, and what was renamed
    (``claim-1 → claim-2``).

    Anything else (not JSON, not a contract, no repeats, a repeat named by a hypothesis) comes
    back as ``(None, [])``: the parser then reads ``body`` itself and says what is wrong.
    """
    try:
        data = json.loads(body)
    except ValueError:
        return None, []
    claims = data.get("claims") if isinstance(data, dict) else None
    if not isinstance(claims, list):
        return None, []
    ids = [_claim_id(claim) for claim in claims]
    repeated = {i for i in ids if i is not None and ids.count(i) > 1}
    if not repeated or repeated & _referenced_ids(data):
        return None, []
    used = {i for i in ids if i is not None}
    seen: set[str] = set()
    renamed_claims, renamed = [], []
    for claim, claim_id in zip(claims, ids, strict=True):
        if claim_id in repeated and claim_id in seen:
            fresh = _lowest_free(used)
            used.add(fresh)
            renamed.append(f"{claim_id} → {fresh}")
            claim = {**claim, "claim_id": fresh}
        if claim_id is not None:
            seen.add(claim_id)
        renamed_claims.append(claim)
    return {**data, "claims": renamed_claims}, renamed


def _claim_id(claim: Any) -> str | None:
    value = claim.get("claim_id") if isinstance(claim, dict) else None
    return value if isinstance(value, str) else None


def _referenced_ids(data: dict[str, Any]) -> set[str]:
    """Every claim id a hypothesis names (whatever its shape: the parser judges that)."""
    hypotheses = data.get("hypotheses")
    names: set[str] = set()
    for hypothesis in hypotheses if isinstance(hypotheses, list) else []:
        basis = hypothesis.get("basis_claim_ids") if isinstance(hypothesis, dict) else None
        if isinstance(basis, list):
            names.update(i for i in basis if isinstance(i, str))
    return names


def _lowest_free(used: set[str]) -> str:
    n = 1
    while f"{CLAIM_ID_PREFIX}{n}" in used:
        n += 1
    return f"{CLAIM_ID_PREFIX}{n}"
