"""What reaches the user: the executor's statements matched against verified claims, routing
by verdict, the fixed answer templates, the composer that publishes or rebuilds the answer,
and the per-round audit record of what was decided and published.

The top of the core: may import ``core.contract``, ``core.evidence`` and ``core.judge``. Other
subpackages import only the modules in ``__all__``.
"""

__all__ = ["audit", "composer", "routing", "statements", "templates", "verified_claims"]
