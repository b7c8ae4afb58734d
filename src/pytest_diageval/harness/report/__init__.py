"""Reports for people and machines: the terminal table and audit trail, the JSON report, the
HTML page (``templates/``), the baseline comparison, the review plugin, the CI summary and the
audit spool.

May import the core, the agents, ``harness.format``, ``harness.checks``, ``harness.cassettes``
and ``harness.runner``. Other subpackages import only the modules in ``__all__``.
"""

__all__ = ["ci_summary", "columns", "reporter", "review"]
