"""The evidence a claim may cite: the mock world (alerts, logs, runbooks), the three tools that
search it, their argument checks, the recorder that turns each call into one
``tool_invocation`` row, the SQLite store that keeps those rows and the session's audit trail,
and the bounded trace summary the verifier reads.

May import ``core.contract`` only. Other subpackages import only the modules in ``__all__``.
"""

__all__ = [
    "recorder",
    "store",
    "tool_arguments",
    "tool_search",
    "tools",
    "trace_summary",
    "world",
    "yaml_limits",
]
