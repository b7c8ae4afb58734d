"""The model-facing structures: the executor's contract, the verifier's output, the gatekeeper's
result, their per-session JSON Schemas (the contract's and the verifier's), size limits and the
bounds of free text, the table of the evidence tools, the table of every rule the pipeline
reports, and the renaming of repeated claim ids before a contract is parsed.

The bottom of the core: it imports nothing of this package. Other subpackages import only
the modules named in ``__all__``.
"""

__all__ = [
    "claim_ids",
    "contract_schema",
    "contracts",
    "evidence_tools",
    "gatekeeper_rules",
    "limits",
    "rules",
    "scope_contract",
    "text_bounds",
    "verifier_schema",
]
