"""Repeated claim ids get fresh names before the contract is parsed.

A claim id is only a name by which the code refers to a claim: the gatekeeper's rows, the
verifier's facts and a hypothesis's ``basis_claim_ids`` name claims by it. Recorded with
free-text ids, and again under a grammar that offers ``claim-1`` … ``claim-3`` (:mod:`.schema`),
a small model named all its claims ``claim-1`` (7 of 27 live samples before the rename, one of
the first ten after), and the whole contract failed to parse: every claim was lost, including
claims the gatekeeper would have passed.

Each claim after the first under a repeated id is renamed to the lowest free ``claim-N``, so
each is judged under a name of its own and none can hide behind another (what
``ExecutorContract`` guards against). A hypothesis that names the repeated id named every claim
so called, so its ``basis_claim_ids`` then name all of them: nothing is guessed about which one
the model meant, and nothing the code decides reads that list (only the verifier is shown it).

The renaming is the code's and is said in the parse status; the model's text is not changed.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["renumber_repeated_claim_ids"]

CLAIM_ID_PREFIX = "claim-"


def renumber_repeated_claim_ids(body: str) -> tuple[Any, list[str]]:
    """The contract ``body`` (JSON text) decoded, with each repeated claim id after the first
    renamed to the lowest free ``claim-N`` and hypotheses' references to it widened to every
    claim it named, and what was renamed (``claim-1 → claim-2``).

    Anything else (not JSON, not a contract, no repeats) comes back as ``(None, [])``: the
    parser then reads ``body`` itself and says what is wrong.
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
    if not repeated:
        return None, []
    used = {i for i in ids if i is not None}
    names: dict[str, list[str]] = {i: [i] for i in repeated}  # old id -> the names it now has
    renamed_claims, renamed, seen = [], [], set()
    for claim, claim_id in zip(claims, ids, strict=True):
        if claim_id in names and claim_id in seen:
            fresh = _lowest_free(used)
            used.add(fresh)
            names[claim_id].append(fresh)
            renamed.append(f"{claim_id} → {fresh}")
            claim = {**claim, "claim_id": fresh}
        seen.add(claim_id)
        renamed_claims.append(claim)
    hypotheses = data.get("hypotheses")
    if isinstance(hypotheses, list):
        data = {**data, "hypotheses": [_widened(h, names) for h in hypotheses]}
    return {**data, "claims": renamed_claims}, renamed


def _claim_id(claim: Any) -> str | None:
    value = claim.get("claim_id") if isinstance(claim, dict) else None
    return value if isinstance(value, str) else None


def _widened(hypothesis: Any, names: dict[str, list[str]]) -> Any:
    """``hypothesis`` with each repeated id of its basis replaced by every name it now has."""
    basis = hypothesis.get("basis_claim_ids") if isinstance(hypothesis, dict) else None
    if not isinstance(basis, list) or not any(i in names for i in basis if isinstance(i, str)):
        return hypothesis
    wide = [n for i in basis for n in (names.get(i, [i]) if isinstance(i, str) else [i])]
    unique = [n for position, n in enumerate(wide) if n not in wide[:position]]
    return {**hypothesis, "basis_claim_ids": unique}


def _lowest_free(used: set[str]) -> str:
    n = 1
    while f"{CLAIM_ID_PREFIX}{n}" in used:
        n += 1
    return f"{CLAIM_ID_PREFIX}{n}"
