"""The ``diageval`` command: ``command`` parses and runs it; ``authoring`` holds the commands
that write scenario files from a recording.

The top of the package beside the plugin: may import the core, the agents,
``harness.format`` and ``local``.
"""

__all__ = ["authoring", "command"]
