"""What the code decides about a contract: excerpt matching, evidence that gives orders, the
gatekeeper's citation rules, each claim's support ceiling (grounded in its cited items by
``claim_grounding``), fact support, the score and the verdict, the rule evaluation kept over
the model's own verdict, and the verifier's view of the trace.

May import ``core.contract``, ``core.evidence``, ``core.text`` and ``core.scope``. Other
subpackages import only the modules in ``__all__``.
"""

__all__ = [
    "claim_support",
    "fact_support",
    "gatekeeper",
    "rule_evaluation",
    "verdict",
    "verifier_view",
]
