"""The scenario file: its pydantic models and ``expect`` keys, the loader with its file, line
and column errors, the JSON Schema, script checks at load time, the outline of a file's
scenarios and the markers a scenario's tags become.

May import the core, the agents, ``harness.settings`` and ``harness.cassettes`` (a load error
names the command that re-records). Other subpackages import only the modules in ``__all__``.
"""

__all__ = [
    "errors",
    "expectations",
    "loader",
    "markers",
    "outline",
    "registry",
    "scenario",
    "schema",
]
