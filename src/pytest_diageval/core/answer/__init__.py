"""What reaches the user: which claims an answer rests on, routing by verdict, the cited
evidence rendered by code, the fixed texts in the question's language, the templates, the
composer that assembles the answer, and the per-round audit record of what was published.

The top of the core: may import ``core.contract``, ``core.evidence``, ``core.text``,
``core.scope`` and ``core.judge``. Other subpackages import only the modules in ``__all__``.
"""

__all__ = [
    "answer_templates",
    "audit",
    "composer",
    "confirmed",
    "routing",
    "verified_claims",
    "wording",
]
