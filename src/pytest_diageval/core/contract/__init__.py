"""The model-facing structures: the executor's contract, the verifier's output, the gatekeeper's
result, their per-session JSON Schemas (the contract's and the verifier's) and size limits,
and the gatekeeper's rule names.

The bottom of the core: it imports nothing of this package. Other subpackages import only
the modules named in ``__all__``.
"""

__all__ = ["contracts", "gatekeeper_rules", "limits", "schema", "scope", "verifier_schema"]
