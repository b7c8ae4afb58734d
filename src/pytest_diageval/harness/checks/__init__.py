"""The checks: one evaluator per ``expect`` key, the outcome each returns, the evidence lines a
failure shows and how a failing item reads.

May import the core, the agents and ``harness.format``. Other subpackages import only the
modules in ``__all__``.
"""

__all__ = ["evaluators", "evidence_lines", "failures", "outcome", "pass_at_k"]
