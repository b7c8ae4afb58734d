"""The verifier's answer schema, narrowed per session to the claims and trace refs it can name.

The verifier answers through a forced function whose parameters are the JSON Schema of
:class:`~pytest_diageval.core.contract.contracts.VerifierOutput`. That generic schema lets a
fact name any claim or none (``claim_id`` optional, nullable) and cite any ``trace_ref``;
recorded against a small model, facts then pointed at claims the contract never had.
:func:`constrain_verifier_parameters` narrows it for one session, as the executor's contract
schema is narrowed to the session's invocations (:mod:`.schema`):

* each fact's ``claim_id`` is required and an ``enum`` of the contract's claim ids, in
  contract order; without claims (the contract did not parse, or has none) it is required
  and ``null``: the facts of a natural-language answer name no claim;
* each evidence ref's ``trace_ref`` is an ``enum`` of the session's ``trace-N`` refs, in
  summary order; without any, ``evidence_refs`` is an empty array (an empty ``enum`` is
  unsatisfiable, and grammar converters reject it).

Everything else stays as pydantic generated it, so the function's name, description and other
fields do not change. The parse is not narrowed: a server that ignores the schema still gets
its answer parsed, and the code rejects a fact naming an unknown claim or ``trace_ref``
(:mod:`pytest_diageval.core.judge.fact_support`, rules ``fact.claim_unknown`` and
``fact.trace_ref_unknown``), with its reason in the audit.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_diageval.core.contract.contracts import FactChecked, FactEvidenceRef

__all__ = ["constrain_verifier_parameters"]


def constrain_verifier_parameters(
    parameters: Mapping[str, Any], claim_ids: Sequence[str], trace_refs: Sequence[str]
) -> dict[str, Any]:
    """A copy of the generic verifier ``parameters`` narrowed to this session's names.

    ``parameters`` is the schema pydantic generates for ``VerifierOutput`` (with ``$defs``
    for the fact and its evidence ref); it is not modified.
    """
    narrowed = copy.deepcopy(dict(parameters))
    defs = narrowed["$defs"]
    fact, ref = defs[FactChecked.__name__], defs[FactEvidenceRef.__name__]
    claims = list(dict.fromkeys(claim_ids))
    fact["properties"]["claim_id"] = (
        {"type": "string", "enum": claims} if claims else {"type": "null"}
    )
    if "claim_id" not in fact["required"]:
        fact["required"] = [*fact["required"], "claim_id"]
    refs = list(dict.fromkeys(trace_refs))
    if refs:
        ref["properties"]["trace_ref"] = {"type": "string", "enum": refs}
    else:
        # Nothing to cite: the only honest list of refs is the empty one.
        fact["properties"]["evidence_refs"] = {**fact["properties"]["evidence_refs"], "maxItems": 0}
    return narrowed
