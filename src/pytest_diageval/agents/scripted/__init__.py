"""The scripted model: a stand-in for the model endpoint that answers each stage's requests
from a scenario's ``script`` entries (``model``), the typed check of those entries
(``content``), which function a request forces and which recorded call carries its answer
(``forced_call``), the token estimate a scripted answer reports (``token_estimate``), and why
a run asked for more than its script holds (``rounds``: a retry round nobody scripted).

Above the rest of ``agents``: may import the core and the agents' root modules (``llm``).
Other subpackages import only the modules in ``__all__``.
"""

__all__ = ["content", "forced_call", "model", "rounds", "token_estimate"]
