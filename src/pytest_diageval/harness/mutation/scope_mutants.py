"""The scope kinds of mutant: a claim about what the question did not ask, added to
a PASS next to its claims, cited and verified like them.

* ``scope-service`` (``scope-service-<claim id>-all``): the claim's text moved to another
  service of the world, one the question does not name, as a second claim with the same
  citations; the verifier labels it as it labelled the claim (direct).
* ``scope-excluded`` (``scope-excluded-<claim id>-all``): the claim's text followed by a
  confirmation of the first service or topic the question excluded (不要分析 / 排除 …), as a
  second claim with the same citations, labelled direct.

Both append the new claim's text to ``user_facing_answer``: the harm is that text reaching the
user at PASS (:attr:`~.mutants.Mutant.forged_text`), as with ``extra-sentence``. A question that
names no service (every service is in its scope) or excludes nothing leaves the kind
equivalent by construction; claims the scope already set aside in the PASS are no base.

:func:`without_set_aside_targets`: a mutant whose harm is a PASS (no forged text) and whose
target is a claim the scope set aside in the PASS is equivalent by construction: that claim
carries nothing (the PASS rests on the others), so forging its citations changes nothing a
guard may judge. Mutants that put text in the answer still run.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from pytest_diageval.agents.results import ChatResult
from pytest_diageval.core.contract.scope_contract import ScopeContract
from pytest_diageval.harness.mutation.mutants import Mutant, MutationBase

__all__ = ["EXCLUDED_ID", "MOVED_ID", "scope_mutants", "without_set_aside_targets"]

Data = dict[str, Any]
MOVED_ID = "scope-moved"
EXCLUDED_ID = "scope-excluded"
EXCLUDED_SENTENCE = "{claim}；已确认 {item} 同样存在异常。"
"""The confirmation ``scope-excluded`` adds (``claim`` without its final 。)."""


def scope_mutants(base: MutationBase, baseline: ChatResult) -> list[Mutant]:
    """The scope mutants of a PASS run, per claim the scope kept, in contract order."""
    last = baseline.last_round
    aside = set() if last is None else {claim.claim_id for claim in last.set_aside}
    scope = baseline.scope or ScopeContract()
    contract = base.contract.model_dump(mode="json", exclude_none=True)
    verifier = base.verifier.model_dump(mode="json", exclude_none=True)
    mutants = []
    for claim in contract["claims"]:
        if claim["claim_id"] in aside:
            continue
        moved = _moved(claim, scope, base.services)
        mutants.append(_mutant("scope-service", claim, moved, MOVED_ID, contract, verifier))
        excluded = _excluded(claim, scope)
        mutants.append(_mutant("scope-excluded", claim, excluded, EXCLUDED_ID, contract, verifier))
    return mutants


def _moved(claim: Data, scope: ScopeContract, services: Sequence[str]) -> tuple[str, str] | str:
    """(new text, what changed), or why there is nothing to move."""
    if not scope.services:
        return "the question names no service: a claim about any service is in its scope"
    named = [s for s in scope.services if s in claim["claim_text"]]
    others = [s for s in services if s not in scope.services and s not in scope.excluded]
    if not named or not others:
        return "the claim names no service of the question, or the world has no other"
    text = claim["claim_text"].replace(named[0], others[0])
    return text, f"a second claim: {claim['claim_id']} moved from {named[0]} to {others[0]}"


def _excluded(claim: Data, scope: ScopeContract) -> tuple[str, str] | str:
    if not scope.excluded:
        return "the question excludes nothing"
    item = scope.excluded[0]
    text = EXCLUDED_SENTENCE.format(claim=claim["claim_text"].rstrip("。. "), item=item)
    return text, f"a second claim: {claim['claim_id']} and a confirmation of {item}"


def _mutant(
    kind: str,
    claim: Data,
    edit: tuple[str, str] | str,
    new_id: str,
    contract: Data,
    verifier: Data,
) -> Mutant:
    token = claim["claim_id"] if re.fullmatch(r"[\w.]+(?:-[\w.]+)*", claim["claim_id"]) else "claim"
    if isinstance(edit, str):
        return Mutant(kind, token, "all", change="nothing", equivalent=edit)
    text, change = edit
    forged_contract = copy.deepcopy(contract)
    added = {**copy.deepcopy(claim), "claim_id": new_id, "claim_text": text}
    forged_contract["claims"].append(added)
    forged_contract["user_facing_answer"] = forged_contract.get("user_facing_answer", "") + text
    forged_verifier = copy.deepcopy(verifier)
    facts = [f for f in forged_verifier["facts_checked"] if f.get("claim_id") == token]
    copies = [{**copy.deepcopy(f), "claim_id": new_id, "fact": text} for f in facts]
    forged_verifier["facts_checked"] += copies
    forged_verifier["critical_fact_count"] += sum(1 for f in copies if f["is_critical"])
    return Mutant(
        kind,
        token,
        "all",
        f"{change} ({text!r})",
        forged_contract,
        forged_verifier,
        forged_text=text,
    )


def without_set_aside_targets(mutants: Sequence[Mutant], baseline: ChatResult) -> list[Mutant]:
    """``mutants``, those aimed at a set-aside claim's support made equivalent (see above)."""
    last = baseline.last_round
    aside = set() if last is None else {claim.claim_id for claim in last.set_aside}
    return [
        dataclasses.replace(mutant, equivalent=_SET_ASIDE_REASON)
        if mutant.claim in aside and mutant.forged_text is None and mutant.equivalent is None
        else mutant
        for mutant in mutants
    ]


_SET_ASIDE_REASON = (
    "the claim is outside the question's scope: set aside in the PASS, it carries nothing"
)
