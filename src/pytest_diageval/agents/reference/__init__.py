"""The reference agent: a deterministic planner, executor and verifier that need no model.

It reads the question's scope, calls the evidence tools on the question's subject
(``plan``), cites every matching item verbatim, states a negative observation from a real
no-hit and labels what its bindings support (``answers``). Its answers are script entries
served by the scripted model's transport (``transport``), so its requests are the pipeline's
real requests and everything downstream (gatekeeper, verdict, composer, reports) is
unchanged.

Above the rest of ``agents``: may import the core, the agents' root modules (``chat_service``,
for the session's scope names) and ``agents.scripted``. Other subpackages import only the
names in ``__all__``.
"""

from pytest_diageval.agents.reference.answers import reference_script
from pytest_diageval.agents.reference.plan import ReferenceCall, plan_calls
from pytest_diageval.agents.reference.transport import ReferenceTransport, reference_llm
from pytest_diageval.agents.reference.yardstick import EvidenceRecall, evidence_recall

__all__ = [
    "EvidenceRecall",
    "ReferenceCall",
    "ReferenceTransport",
    "evidence_recall",
    "plan_calls",
    "reference_llm",
    "reference_script",
]
