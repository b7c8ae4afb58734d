"""What the code decides about a contract: excerpt matching, evidence that gives orders, the
facts a sentence asserts (``key_facts``, with its vocabulary ``fact_vocabulary.yaml``), the
gatekeeper's citation rules, each fact's support ceiling, the score and the verdict, the
rule evaluation kept over the model's own verdict, and the verifier's view of the trace.

May import ``core.contract`` and ``core.evidence``. Other subpackages import only the modules
in ``__all__``.
"""

__all__ = [
    "claim_support",
    "excerpt_tokens",
    "fact_support",
    "gatekeeper",
    "key_facts",
    "rule_evaluation",
    "verdict",
    "verifier_view",
]
